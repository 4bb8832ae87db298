// Function: vector_load_kernel
#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#elif defined(cl_amd_fp16)
#pragma OPENCL EXTENSION cl_amd_fp16 : enable
#else
#error "Half precision floating point not supported by OpenCL implementation on your device." 
#endif

__kernel void vector_load_kernel(__global half* restrict A_1_ptr, __global half2* restrict B_1_ptr);
__kernel void vector_load_kernel(__global half* restrict A_1_ptr, __global half2* restrict B_1_ptr) {
  int2 vec_index_ptr[1];
  vec_index_ptr[0] = ((int2)(((((convert_int(get_local_id(0))) * 2) + 1))+(-1*0), ((((convert_int(get_local_id(0))) * 2) + 1))+(-1*1)));
  int2 v_ = ((int2)(0, 0)) + (((int2)(0, 0)) + (((int2)(0, 0)) + (((int2)(0, 0)) + vec_index_ptr[0])));
  B_1_ptr[(convert_int(get_local_id(0)))] = ((half2)(A_1_ptr[v_.s0],A_1_ptr[v_.s1]));
}

