// Function: vector_add_kernel
__kernel void vector_add_kernel(__global float* restrict A_1_ptr, __global float* restrict B_1_ptr, __global float* restrict C_1_ptr);
__kernel void vector_add_kernel(__global float* restrict A_1_ptr, __global float* restrict B_1_ptr, __global float* restrict C_1_ptr) {
  int cse_v1 = (((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))));
  C_1_ptr[(((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))))] = (A_1_ptr[(((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))))] + B_1_ptr[(((convert_int(get_group_id(0))) * 128) + (convert_int(get_local_id(0))))]);
}

