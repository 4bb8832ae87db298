// Function: allocs_kernel
#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#elif defined(cl_amd_fp16)
#pragma OPENCL EXTENSION cl_amd_fp16 : enable
#else
#error "Half precision floating point not supported by OpenCL implementation on your device." 
#endif

__kernel void allocs_kernel(__global float* restrict A_ptr, __global char* restrict B_ptr);
__kernel void allocs_kernel(__global float* restrict A_ptr, __global char* restrict B_ptr) {
  __local float S0_ptr[128];
  __local char S1_ptr[128];
  __local half S2_ptr[128];
  float S3_ptr[128];
  float L1_ptr[1];
  int L2_ptr[1];
  __global float G1_ptr[1];
  float W_ptr[1];
  S0_ptr[(convert_int(get_local_id(0)))] = A_ptr[(convert_int(get_local_id(0)))];
  S1_ptr[(convert_int(get_local_id(0)))] = B_ptr[(((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))))];
  S2_ptr[(convert_int(get_local_id(0)))] = (convert_half(S0_ptr[(convert_int(get_local_id(0)))]));
  S3_ptr[(convert_int(get_local_id(0)))] = A_ptr[(convert_int(get_local_id(0)))];
  L1_ptr[0] = S3_ptr[(convert_int(get_local_id(0)))];
  L2_ptr[0] = (convert_int(S1_ptr[(convert_int(get_local_id(0)))]));
  G1_ptr[0] = L1_ptr[0];
  G1_ptr[0] = G1_ptr[0];
  W_ptr[0] = G1_ptr[0];
  B_ptr[(convert_int(get_local_id(0)))] = (convert_char(L2_ptr[0]));
}

