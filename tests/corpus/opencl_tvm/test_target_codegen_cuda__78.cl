// Function: main_kernel
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#elif defined(cl_amd_fp64)
#pragma OPENCL EXTENSION cl_amd_fp64 : enable
#else
#error "Double precision floating point not supported by OpenCL implementation on your device." 
#endif

__kernel void main_kernel(__global double* restrict A_1_ptr, __global ulong* restrict B_1_ptr, __global double* restrict C_1_ptr);
__kernel void main_kernel(__global double* restrict A_1_ptr, __global ulong* restrict B_1_ptr, __global double* restrict C_1_ptr) {
  int cse_v1 = ((convert_int(get_local_id(0))) * 4);
  int cse_v1_1 = ((convert_int(get_local_id(0))) * 4);
  vstore4((vload4(0, A_1_ptr + ((convert_int(get_local_id(0))) * 4)) + (convert_double4(vload4(0, B_1_ptr + ((convert_int(get_local_id(0))) * 4))))), 0, C_1_ptr + ((convert_int(get_local_id(0))) * 4));
}

