// Function: main_kernel
#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#elif defined(cl_amd_fp16)
#pragma OPENCL EXTENSION cl_amd_fp16 : enable
#else
#error "Half precision floating point not supported by OpenCL implementation on your device." 
#endif

__kernel void main_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr, __global half* restrict D_ptr, __global float* restrict bias_ptr);
__kernel void main_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr, __global half* restrict D_ptr, __global float* restrict bias_ptr) {
  int cse_v1 = (((convert_int(get_group_id(0))) * 1024) + (convert_int(get_local_id(0))));
  D_ptr[(((convert_int(get_group_id(0))) * 1024) + (convert_int(get_local_id(0))))] = (convert_half((1.000000e+00f / (1.000000e+00f + exp((0.000000e+00f - ((A_ptr[(((convert_int(get_group_id(0))) * 1024) + (convert_int(get_local_id(0))))] * B_ptr[(((convert_int(get_group_id(0))) * 1024) + (convert_int(get_local_id(0))))]) + bias_ptr[((convert_int(get_local_id(0))) & 511)])))))));
}

