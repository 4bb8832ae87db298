// Function: tanh_case_kernel_kernel
__kernel void tanh_case_kernel_kernel(__global float* restrict A_1_ptr, __global float* restrict B_1_ptr);
__kernel void tanh_case_kernel_kernel(__global float* restrict A_1_ptr, __global float* restrict B_1_ptr) {
  B_1_ptr[(convert_int(get_local_id(0)))] = tanhf(A_1_ptr[(convert_int(get_local_id(0)))]);
}

