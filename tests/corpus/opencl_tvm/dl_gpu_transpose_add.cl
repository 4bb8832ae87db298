// Function: main_kernel
__kernel void main_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr, __global float* restrict T_add_ptr);
__kernel void main_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr, __global float* restrict T_add_ptr) {
  int cse_v1 = (((convert_int(get_group_id(0))) * 1024) + (convert_int(get_local_id(0))));
  T_add_ptr[(((convert_int(get_group_id(0))) * 1024) + (convert_int(get_local_id(0))))] = (A_ptr[(((((convert_int(get_local_id(0))) & 127) * 256) + ((convert_int(get_group_id(0))) * 8)) + ((convert_int(get_local_id(0))) >> 7))] + B_ptr[(((convert_int(get_group_id(0))) * 1024) + (convert_int(get_local_id(0))))]);
}

