// Function: main_kernel
__kernel void main_kernel(__global float* restrict T_softmax_norm_ptr, __global float* restrict X_ptr);
__kernel void main_kernel(__global float* restrict T_softmax_norm_ptr, __global float* restrict X_ptr) {
  float in_thread_T_softmax_maxelem_shared_ptr[1];
  __local float red_buf0_ptr[64];
  __local float T_softmax_maxelem_shared_ptr[1];
  float in_thread_T_softmax_expsum_shared_ptr[1];
  __local float red_buf0_ptr_1[64];
  __local float T_softmax_expsum_shared_ptr[1];
  in_thread_T_softmax_maxelem_shared_ptr[0] = -3.402823e+38f;
  int cse_v1 = ((convert_int(get_group_id(0))) * 256);
  for (int ax0_0 = 0; ax0_0 < 4; ++ax0_0) {
    in_thread_T_softmax_maxelem_shared_ptr[0] = max((float)in_thread_T_softmax_maxelem_shared_ptr[0], (float)X_ptr[((((convert_int(get_group_id(0))) * 256) + (ax0_0 * 64)) + (convert_int(get_local_id(0))))]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  ((volatile __local float*)red_buf0_ptr)[(convert_int(get_local_id(0)))] = in_thread_T_softmax_maxelem_shared_ptr[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 32) {
    ((volatile __local float*)red_buf0_ptr)[(convert_int(get_local_id(0)))] = max((float)((volatile __local float*)red_buf0_ptr)[(convert_int(get_local_id(0)))], (float)((volatile __local float*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 32)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 16) {
    ((volatile __local float*)red_buf0_ptr)[(convert_int(get_local_id(0)))] = max((float)((volatile __local float*)red_buf0_ptr)[(convert_int(get_local_id(0)))], (float)((volatile __local float*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 16)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 8) {
    ((volatile __local float*)red_buf0_ptr)[(convert_int(get_local_id(0)))] = max((float)((volatile __local float*)red_buf0_ptr)[(convert_int(get_local_id(0)))], (float)((volatile __local float*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 8)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 4) {
    ((volatile __local float*)red_buf0_ptr)[(convert_int(get_local_id(0)))] = max((float)((volatile __local float*)red_buf0_ptr)[(convert_int(get_local_id(0)))], (float)((volatile __local float*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 4)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 2) {
    ((volatile __local float*)red_buf0_ptr)[(convert_int(get_local_id(0)))] = max((float)((volatile __local float*)red_buf0_ptr)[(convert_int(get_local_id(0)))], (float)((volatile __local float*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 2)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 1) {
    ((volatile __local float*)red_buf0_ptr)[(convert_int(get_local_id(0)))] = max((float)((volatile __local float*)red_buf0_ptr)[(convert_int(get_local_id(0)))], (float)((volatile __local float*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 1)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) == 0) {
    T_softmax_maxelem_shared_ptr[0] = ((volatile __local float*)red_buf0_ptr)[0];
  }
  in_thread_T_softmax_expsum_shared_ptr[0] = 0.000000e+00f;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int ax0_0_1 = 0; ax0_0_1 < 4; ++ax0_0_1) {
    in_thread_T_softmax_expsum_shared_ptr[0] = (in_thread_T_softmax_expsum_shared_ptr[0] + exp((X_ptr[((((convert_int(get_group_id(0))) * 256) + (ax0_0_1 * 64)) + (convert_int(get_local_id(0))))] - T_softmax_maxelem_shared_ptr[0])));
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  ((volatile __local float*)red_buf0_ptr_1)[(convert_int(get_local_id(0)))] = in_thread_T_softmax_expsum_shared_ptr[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 32) {
    ((volatile __local float*)red_buf0_ptr_1)[(convert_int(get_local_id(0)))] = (((volatile __local float*)red_buf0_ptr_1)[(convert_int(get_local_id(0)))] + ((volatile __local float*)red_buf0_ptr_1)[((convert_int(get_local_id(0))) + 32)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 16) {
    ((volatile __local float*)red_buf0_ptr_1)[(convert_int(get_local_id(0)))] = (((volatile __local float*)red_buf0_ptr_1)[(convert_int(get_local_id(0)))] + ((volatile __local float*)red_buf0_ptr_1)[((convert_int(get_local_id(0))) + 16)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 8) {
    ((volatile __local float*)red_buf0_ptr_1)[(convert_int(get_local_id(0)))] = (((volatile __local float*)red_buf0_ptr_1)[(convert_int(get_local_id(0)))] + ((volatile __local float*)red_buf0_ptr_1)[((convert_int(get_local_id(0))) + 8)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 4) {
    ((volatile __local float*)red_buf0_ptr_1)[(convert_int(get_local_id(0)))] = (((volatile __local float*)red_buf0_ptr_1)[(convert_int(get_local_id(0)))] + ((volatile __local float*)red_buf0_ptr_1)[((convert_int(get_local_id(0))) + 4)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 2) {
    ((volatile __local float*)red_buf0_ptr_1)[(convert_int(get_local_id(0)))] = (((volatile __local float*)red_buf0_ptr_1)[(convert_int(get_local_id(0)))] + ((volatile __local float*)red_buf0_ptr_1)[((convert_int(get_local_id(0))) + 2)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 1) {
    ((volatile __local float*)red_buf0_ptr_1)[(convert_int(get_local_id(0)))] = (((volatile __local float*)red_buf0_ptr_1)[(convert_int(get_local_id(0)))] + ((volatile __local float*)red_buf0_ptr_1)[((convert_int(get_local_id(0))) + 1)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) == 0) {
    T_softmax_expsum_shared_ptr[0] = ((volatile __local float*)red_buf0_ptr_1)[0];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int i1_0 = 0; i1_0 < 4; ++i1_0) {
    int cse_v2 = ((((convert_int(get_group_id(0))) * 256) + (i1_0 * 64)) + (convert_int(get_local_id(0))));
    T_softmax_norm_ptr[((((convert_int(get_group_id(0))) * 256) + (i1_0 * 64)) + (convert_int(get_local_id(0))))] = (exp((X_ptr[((((convert_int(get_group_id(0))) * 256) + (i1_0 * 64)) + (convert_int(get_local_id(0))))] - T_softmax_maxelem_shared_ptr[0])) / T_softmax_expsum_shared_ptr[0]);
  }
}

