// Function: vec_math_kernel
__kernel void vec_math_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr);
__kernel void vec_math_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr) {
  int cse_v1 = (((convert_int(get_group_id(0))) * 512) + ((convert_int(get_local_id(0))) * 4));
  vstore4(((exp(vload4(0, A_ptr + (((convert_int(get_group_id(0))) * 512) + ((convert_int(get_local_id(0))) * 4)))) * ((float4)(5.000000e-01f, 5.000000e-01f, 5.000000e-01f, 5.000000e-01f))) + sqrt(vload4(0, A_ptr + (((convert_int(get_group_id(0))) * 512) + ((convert_int(get_local_id(0))) * 4))))), 0, B_ptr + (((convert_int(get_group_id(0))) * 512) + ((convert_int(get_local_id(0))) * 4)));
}

