// Function: main_kernel
__kernel void main_kernel(__global char* restrict A_1_ptr);
__kernel void main_kernel(__global char* restrict A_1_ptr) {
  vstore4(((char4)((char)-85, (char)-85, (char)-85, (char)-85)), 0, A_1_ptr + ((convert_int(get_group_id(0))) * 4));
}

