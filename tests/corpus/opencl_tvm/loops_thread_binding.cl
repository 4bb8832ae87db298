// Function: tb_kernel
__kernel void tb_kernel(__global float* restrict A_ptr);
__kernel void tb_kernel_1(__global float* restrict A_ptr);
__kernel void tb_kernel(__global float* restrict A_ptr) {
  A_ptr[(((((((convert_int(get_group_id(2))) * 2048) + ((convert_int(get_group_id(1))) * 1024)) + ((convert_int(get_group_id(0))) * 256)) + ((convert_int(get_local_id(2))) * 128)) + ((convert_int(get_local_id(1))) * 32)) + (convert_int(get_local_id(0))))] = 1.000000e+00f;
}

// Function: tb_kernel_1
__kernel void tb_kernel(__global float* restrict A_ptr);
__kernel void tb_kernel_1(__global float* restrict A_ptr);
__kernel void tb_kernel_1(__global float* restrict A_ptr) {
  A_ptr[((convert_int(get_local_id(0))) + 2)] = 2.000000e+00f;
}

