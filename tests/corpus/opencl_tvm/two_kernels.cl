// Function: two_kernels_kernel
__kernel void two_kernels_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr);
__kernel void two_kernels_kernel_1(__global float* restrict B_ptr, __global float* restrict C_ptr);
__kernel void two_kernels_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr) {
  __local float stage_ptr[128];
  int cse_v2 = (((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))));
  stage_ptr[(convert_int(get_local_id(0)))] = (A_ptr[(((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))))] * 2.000000e+00f);
  barrier(CLK_LOCAL_MEM_FENCE);
  B_ptr[(((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))))] = stage_ptr[(127 - (convert_int(get_local_id(0))))];
}

// Function: two_kernels_kernel_1
__kernel void two_kernels_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr);
__kernel void two_kernels_kernel_1(__global float* restrict B_ptr, __global float* restrict C_ptr);
__kernel void two_kernels_kernel_1(__global float* restrict B_ptr, __global float* restrict C_ptr) {
  __local float tile_ptr[256];
  __local int flags_ptr[256];
  int cse_v3 = (((convert_int(get_group_id(0))) * 256) + (convert_int(get_local_id(0))));
  tile_ptr[(convert_int(get_local_id(0)))] = B_ptr[(((convert_int(get_group_id(0))) * 256) + (convert_int(get_local_id(0))))];
  flags_ptr[(convert_int(get_local_id(0)))] = (convert_int((0.000000e+00f < tile_ptr[(convert_int(get_local_id(0)))])));
  barrier(CLK_LOCAL_MEM_FENCE);
  int cse_v1 = (255 - (convert_int(get_local_id(0))));
  C_ptr[(((convert_int(get_group_id(0))) * 256) + (convert_int(get_local_id(0))))] = (tile_ptr[(255 - (convert_int(get_local_id(0))))] * (convert_float(flags_ptr[(255 - (convert_int(get_local_id(0))))])));
}

