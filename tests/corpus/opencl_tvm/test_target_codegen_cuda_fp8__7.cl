// Function: main_kernel
#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#elif defined(cl_amd_fp16)
#pragma OPENCL EXTENSION cl_amd_fp16 : enable
#else
#error "Half precision floating point not supported by OpenCL implementation on your device." 
#endif

__kernel void main_kernel(__global half4* restrict A_1_ptr, __global half4* restrict B_1_ptr, __global half4* restrict C_1_ptr);
__kernel void main_kernel(__global half4* restrict A_1_ptr, __global half4* restrict B_1_ptr, __global half4* restrict C_1_ptr) {
  int cse_v1 = (((convert_int(get_group_id(0))) * 32) + (convert_int(get_local_id(0))));
  int cse_v1_1 = (((convert_int(get_group_id(0))) * 32) + (convert_int(get_local_id(0))));
  C_1_ptr[(((convert_int(get_group_id(0))) * 32) + (convert_int(get_local_id(0))))] = (A_1_ptr[(((convert_int(get_group_id(0))) * 32) + (convert_int(get_local_id(0))))] + B_1_ptr[(((convert_int(get_group_id(0))) * 32) + (convert_int(get_local_id(0))))]);
}

