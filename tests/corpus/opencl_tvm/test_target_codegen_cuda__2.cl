// Function: main_kernel
__kernel void main_kernel(__global char2* restrict A_1_ptr, __global char2* restrict B_1_ptr);
__kernel void main_kernel(__global char2* restrict A_1_ptr, __global char2* restrict B_1_ptr) {
  int cse_v1 = (((convert_int(get_group_id(0))) * 8) + (convert_int(get_local_id(0))));
  int cse_v1_1 = (((convert_int(get_group_id(0))) * 8) + (convert_int(get_local_id(0))));
  B_1_ptr[(((convert_int(get_group_id(0))) * 8) + (convert_int(get_local_id(0))))] = A_1_ptr[(((convert_int(get_group_id(0))) * 8) + (convert_int(get_local_id(0))))];
}

