// Function: main_kernel
#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#elif defined(cl_amd_fp16)
#pragma OPENCL EXTENSION cl_amd_fp16 : enable
#else
#error "Half precision floating point not supported by OpenCL implementation on your device." 
#endif

__kernel void main_kernel(__global half* restrict a_1_ptr, __global half* restrict vec_1_ptr);
__kernel void main_kernel(__global half* restrict a_1_ptr, __global half* restrict vec_1_ptr) {
  vstore8(((half8)(a_1_ptr[0], a_1_ptr[0], a_1_ptr[0], a_1_ptr[0], a_1_ptr[0], a_1_ptr[0], a_1_ptr[0], a_1_ptr[0])), 0, vec_1_ptr + 0);
}

