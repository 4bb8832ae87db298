// Function: vector_add_kernel
__kernel void vector_add_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr, __global float* restrict C_ptr);
__kernel void vector_add_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr, __global float* restrict C_ptr) {
  int cse_v1 = (((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))));
  C_ptr[(((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))))] = (A_ptr[(((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))))] + B_ptr[(((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))))]);
}

