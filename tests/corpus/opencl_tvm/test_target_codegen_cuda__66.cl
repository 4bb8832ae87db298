// Function: main_kernel
__kernel void main_kernel(__global uint* restrict A_1_ptr, __global int* restrict B_1_ptr, __global uint* restrict C_1_ptr);
__kernel void main_kernel(__global uint* restrict A_1_ptr, __global int* restrict B_1_ptr, __global uint* restrict C_1_ptr) {
  int cse_v1 = ((convert_int(get_local_id(0))) * 4);
  int cse_v1_1 = ((convert_int(get_local_id(0))) * 4);
  vstore4((vload4(0, A_1_ptr + ((convert_int(get_local_id(0))) * 4)) + (convert_uint4(vload4(0, B_1_ptr + ((convert_int(get_local_id(0))) * 4))))), 0, C_1_ptr + ((convert_int(get_local_id(0))) * 4));
}

