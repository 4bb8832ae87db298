// Function: main_kernel
#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#elif defined(cl_amd_fp16)
#pragma OPENCL EXTENSION cl_amd_fp16 : enable
#else
#error "Half precision floating point not supported by OpenCL implementation on your device." 
#endif

__kernel void main_kernel(__global bool* restrict C_1_ptr, __global half* restrict a_1_ptr);
__kernel void main_kernel(__global bool* restrict C_1_ptr, __global half* restrict a_1_ptr) {
  if ((convert_int(get_local_id(0))) < 24) {
    C_1_ptr[(convert_int(get_local_id(0)))] = ((half)5.000000e-01f < a_1_ptr[(convert_int(get_local_id(0)))]);
  }
}

