// Function: log10_case_kernel_kernel
__kernel void log10_case_kernel_kernel(__global float* restrict A_1_ptr, __global float* restrict B_1_ptr);
__kernel void log10_case_kernel_kernel(__global float* restrict A_1_ptr, __global float* restrict B_1_ptr) {
  B_1_ptr[(convert_int(get_local_id(0)))] = log10f(A_1_ptr[(convert_int(get_local_id(0)))]);
}

