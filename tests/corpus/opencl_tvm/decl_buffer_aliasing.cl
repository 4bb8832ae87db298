// Function: decls_kernel
#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#elif defined(cl_amd_fp16)
#pragma OPENCL EXTENSION cl_amd_fp16 : enable
#else
#error "Half precision floating point not supported by OpenCL implementation on your device." 
#endif

__kernel void decls_kernel(__global float* restrict A_ptr, __global float* restrict A_ptr_1, __global int* restrict B_ptr, __global half* restrict p);
__kernel void decls_kernel(__global float* restrict A_ptr, __global float* restrict A_ptr_1, __global int* restrict B_ptr, __global half* restrict p) {
  __global float X_ptr[64];
  __local float S_ptr[32];
  float SD_ptr[256];
  int L_ptr[4];
  X_ptr[10] = A_ptr_1[0];
  ((__global int*)X_ptr)[3] = B_ptr[0];
  ((__global half*)A_ptr)[4] = (half)1.000000e+00f;
  p[(convert_int(get_local_id(0)))] = ((__global half*)A_ptr)[4];
  S_ptr[(convert_int(get_local_id(0)))] = X_ptr[10];
  SD_ptr[(convert_int(get_local_id(0)))] = S_ptr[(convert_int(get_local_id(0)))];
  ((half*)SD_ptr)[(convert_int(get_local_id(0)))] = (convert_half(SD_ptr[(convert_int(get_local_id(0)))]));
  L_ptr[3] = ((__global int*)X_ptr)[3];
  B_ptr[(convert_int(get_local_id(0)))] = L_ptr[3];
}

