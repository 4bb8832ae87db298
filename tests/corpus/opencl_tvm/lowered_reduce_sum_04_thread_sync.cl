// Function: reduce_sum_kernel
__kernel void reduce_sum_kernel(__global float* restrict A_1_ptr, __global float* restrict B_1_ptr);
__kernel void reduce_sum_kernel(__global float* restrict A_1_ptr, __global float* restrict B_1_ptr) {
  float acc_ptr[1];
  __local float S_ptr[128];
  acc_ptr[0] = 0.000000e+00f;
  for (int k = 0; k < 2; ++k) {
    acc_ptr[0] = (acc_ptr[0] + A_1_ptr[((((convert_int(get_group_id(0))) * 256) + (k * 128)) + (convert_int(get_local_id(0))))]);
  }
  S_ptr[(convert_int(get_local_id(0)))] = acc_ptr[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 64) {
    S_ptr[(convert_int(get_local_id(0)))] = (S_ptr[(convert_int(get_local_id(0)))] + S_ptr[((convert_int(get_local_id(0))) + 64)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 32) {
    S_ptr[(convert_int(get_local_id(0)))] = (S_ptr[(convert_int(get_local_id(0)))] + S_ptr[((convert_int(get_local_id(0))) + 32)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 16) {
    S_ptr[(convert_int(get_local_id(0)))] = (S_ptr[(convert_int(get_local_id(0)))] + S_ptr[((convert_int(get_local_id(0))) + 16)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 8) {
    S_ptr[(convert_int(get_local_id(0)))] = (S_ptr[(convert_int(get_local_id(0)))] + S_ptr[((convert_int(get_local_id(0))) + 8)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 4) {
    S_ptr[(convert_int(get_local_id(0)))] = (S_ptr[(convert_int(get_local_id(0)))] + S_ptr[((convert_int(get_local_id(0))) + 4)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 2) {
    S_ptr[(convert_int(get_local_id(0)))] = (S_ptr[(convert_int(get_local_id(0)))] + S_ptr[((convert_int(get_local_id(0))) + 2)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 1) {
    S_ptr[0] = (S_ptr[0] + S_ptr[1]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) == 0) {
    B_1_ptr[(convert_int(get_group_id(0)))] = S_ptr[0];
  }
}

