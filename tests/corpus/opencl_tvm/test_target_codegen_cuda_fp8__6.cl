// Function: vector_load_kernel
#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#elif defined(cl_amd_fp16)
#pragma OPENCL EXTENSION cl_amd_fp16 : enable
#else
#error "Half precision floating point not supported by OpenCL implementation on your device." 
#endif

__kernel void vector_load_kernel(__global half* restrict A_1_ptr, __global half4* restrict B_1_ptr);
__kernel void vector_load_kernel(__global half* restrict A_1_ptr, __global half4* restrict B_1_ptr) {
  int4 vec_index_ptr[1];
  vec_index_ptr[0] = ((int4)(((((convert_int(get_local_id(0))) * 4) + 3))+(-1*0), ((((convert_int(get_local_id(0))) * 4) + 3))+(-1*1), ((((convert_int(get_local_id(0))) * 4) + 3))+(-1*2), ((((convert_int(get_local_id(0))) * 4) + 3))+(-1*3)));
  int4 v_ = ((int4)(0, 0, 0, 0)) + (((int4)(0, 0, 0, 0)) + (((int4)(0, 0, 0, 0)) + (((int4)(0, 0, 0, 0)) + vec_index_ptr[0])));
  B_1_ptr[(convert_int(get_local_id(0)))] = ((half4)(A_1_ptr[v_.s0],A_1_ptr[v_.s1],A_1_ptr[v_.s2],A_1_ptr[v_.s3]));
}

