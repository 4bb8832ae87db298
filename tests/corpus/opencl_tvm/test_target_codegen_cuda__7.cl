// Function: main_kernel
__kernel void main_kernel(__global float* restrict A_1_ptr, __global float* restrict B_1_ptr);
__kernel void main_kernel(__global float* restrict A_1_ptr, __global float* restrict B_1_ptr) {
  int cse_v1 = ((convert_int(get_local_id(0))) * 4);
  int cse_v1_1 = ((convert_int(get_local_id(0))) * 4);
  int4 v_ = ((int4)(0, 0, 0, 0)) + (((int4)((((convert_int(get_local_id(0))) * 4))+(1*0), (((convert_int(get_local_id(0))) * 4))+(1*1), (((convert_int(get_local_id(0))) * 4))+(1*2), (((convert_int(get_local_id(0))) * 4))+(1*3))) / ((int4)(37, 37, 37, 37)));
  vstore4(((float4)(A_1_ptr[v_.s0],A_1_ptr[v_.s1],A_1_ptr[v_.s2],A_1_ptr[v_.s3])), 0, B_1_ptr + ((convert_int(get_local_id(0))) * 4));
}

