// Function: exp_case_kernel_kernel
__kernel void exp_case_kernel_kernel(__global float* restrict A_1_ptr, __global float* restrict B_1_ptr);
__kernel void exp_case_kernel_kernel(__global float* restrict A_1_ptr, __global float* restrict B_1_ptr) {
  B_1_ptr[(convert_int(get_local_id(0)))] = __expf(A_1_ptr[(convert_int(get_local_id(0)))]);
}

