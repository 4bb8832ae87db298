// Function: launch_forms_kernel
__kernel void launch_forms_kernel(__global float* restrict A_ptr);
__kernel void launch_forms_kernel_1(__global float* restrict A_ptr, int n);
__kernel void launch_forms_kernel(__global float* restrict A_ptr) {
  int cse_v1 = ((((convert_int(get_group_id(0))) * 64) + ((convert_int(get_local_id(1))) * 32)) + (convert_int(get_local_id(0))));
  A_ptr[((((convert_int(get_group_id(0))) * 64) + ((convert_int(get_local_id(1))) * 32)) + (convert_int(get_local_id(0))))] = 0.000000e+00f;
  A_ptr[((((convert_int(get_group_id(0))) * 64) + ((convert_int(get_local_id(1))) * 32)) + (convert_int(get_local_id(0))))] = 0.000000e+00f;
  A_ptr[0] = 2.000000e+00f;
  A_ptr[1] = 2.000000e+00f;
}

// Function: launch_forms_kernel_1
__kernel void launch_forms_kernel(__global float* restrict A_ptr);
__kernel void launch_forms_kernel_1(__global float* restrict A_ptr, int n);
__kernel void launch_forms_kernel_1(__global float* restrict A_ptr, int n) {
  A_ptr[(convert_int(get_group_id(1)))] = 3.000000e+00f;
}

