// Function: dyn_smem_kernel
#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#elif defined(cl_amd_fp16)
#pragma OPENCL EXTENSION cl_amd_fp16 : enable
#else
#error "Half precision floating point not supported by OpenCL implementation on your device." 
#endif

__kernel void dyn_smem_kernel(__global float* restrict A_1_ptr, __global half* restrict B_1_ptr, __global float* restrict C_1_ptr);
__kernel void dyn_smem_kernel(__global float* restrict A_1_ptr, __global half* restrict B_1_ptr, __global float* restrict C_1_ptr) {
  uchar buf_dyn_shmem_ptr[768];
  int cse_v2 = (((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))));
  int cse_v2_1 = (((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))));
  ((float*)buf_dyn_shmem_ptr)[((convert_int(get_local_id(0))) + 64)] = A_1_ptr[(((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))))];
  ((half*)buf_dyn_shmem_ptr)[(convert_int(get_local_id(0)))] = B_1_ptr[(((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))))];
  int cse_v1 = (127 - (convert_int(get_local_id(0))));
  int cse_v1_1 = (127 - (convert_int(get_local_id(0))));
  C_1_ptr[(((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))))] = (((float*)buf_dyn_shmem_ptr)[(191 - (convert_int(get_local_id(0))))] + (convert_float(((half*)buf_dyn_shmem_ptr)[(127 - (convert_int(get_local_id(0))))])));
}

