// Function: log10_case_kernel_kernel
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#elif defined(cl_amd_fp64)
#pragma OPENCL EXTENSION cl_amd_fp64 : enable
#else
#error "Double precision floating point not supported by OpenCL implementation on your device." 
#endif

__kernel void log10_case_kernel_kernel(__global double* restrict A_1_ptr, __global double* restrict B_1_ptr);
__kernel void log10_case_kernel_kernel(__global double* restrict A_1_ptr, __global double* restrict B_1_ptr) {
  B_1_ptr[(convert_int(get_local_id(0)))] = log10(A_1_ptr[(convert_int(get_local_id(0)))]);
}

