// Function: exp10_case_kernel_kernel
__kernel void exp10_case_kernel_kernel(__global float* restrict A_1_ptr, __global float* restrict B_1_ptr);
__kernel void exp10_case_kernel_kernel(__global float* restrict A_1_ptr, __global float* restrict B_1_ptr) {
  B_1_ptr[(convert_int(get_local_id(0)))] = exp10f(A_1_ptr[(convert_int(get_local_id(0)))]);
}

