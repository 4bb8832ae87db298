// Function: vector_add_kernel
__kernel void vector_add_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr, __global float* restrict C_ptr, int n);
__kernel void vector_add_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr, __global float* restrict C_ptr, int n) {
  int cse_v1 = (((convert_int(get_group_id(0))) * 256) + (convert_int(get_local_id(0))));
  if ((((convert_int(get_group_id(0))) * 256) + (convert_int(get_local_id(0)))) < n) {
    C_ptr[(((convert_int(get_group_id(0))) * 256) + (convert_int(get_local_id(0))))] = (A_ptr[(((convert_int(get_group_id(0))) * 256) + (convert_int(get_local_id(0))))] + B_ptr[(((convert_int(get_group_id(0))) * 256) + (convert_int(get_local_id(0))))]);
  }
}

