// Function: main_kernel
__kernel void main_kernel(__global float* restrict X_ptr, __global int* restrict X_red_temp_v0_ptr);
__kernel void main_kernel_1(__global int* restrict X_red_ptr, __global int* restrict X_red_temp_v0_ptr);
__kernel void main_kernel(__global float* restrict X_ptr, __global int* restrict X_red_temp_v0_ptr) {
  int in_thread_X_red_temp_v0_ptr[1];
  float in_thread_X_red_temp_v1_ptr[1];
  __local int red_buf0_ptr[64];
  __local float red_buf1_ptr[64];
  __global float X_red_temp_v1_ptr[16];
  in_thread_X_red_temp_v0_ptr[0] = -1;
  in_thread_X_red_temp_v1_ptr[0] = -3.402823e+38f;
  for (int k1_0 = 0; k1_0 < 4; ++k1_0) {
    int cse_v1 = (k1_0 * 64);
    int cse_v2 = ((k1_0 * 64) + (convert_int(get_local_id(0))));
    int cse_v3 = ((((convert_int(get_group_id(0))) * 256) + (k1_0 * 64)) + (convert_int(get_local_id(0))));
    int condval;
    if (((bool)(X_ptr[((((convert_int(get_group_id(0))) * 256) + (k1_0 * 64)) + (convert_int(get_local_id(0))))] < in_thread_X_red_temp_v1_ptr[0])) || ((bool)(((bool)(in_thread_X_red_temp_v1_ptr[0] == X_ptr[((((convert_int(get_group_id(0))) * 256) + (k1_0 * 64)) + (convert_int(get_local_id(0))))])) && ((bool)(in_thread_X_red_temp_v0_ptr[0] < ((k1_0 * 64) + (convert_int(get_local_id(0))))))))) {
      condval = in_thread_X_red_temp_v0_ptr[0];
    } else {
      condval = ((k1_0 * 64) + (convert_int(get_local_id(0))));
    }
    int v_X_red_temp_v0 = condval;
    float condval_1;
    if (X_ptr[((((convert_int(get_group_id(0))) * 256) + (k1_0 * 64)) + (convert_int(get_local_id(0))))] < in_thread_X_red_temp_v1_ptr[0]) {
      condval_1 = in_thread_X_red_temp_v1_ptr[0];
    } else {
      condval_1 = X_ptr[((((convert_int(get_group_id(0))) * 256) + (k1_0 * 64)) + (convert_int(get_local_id(0))))];
    }
    float v_X_red_temp_v1 = condval_1;
    in_thread_X_red_temp_v0_ptr[0] = v_X_red_temp_v0;
    in_thread_X_red_temp_v1_ptr[0] = v_X_red_temp_v1;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  ((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))] = in_thread_X_red_temp_v0_ptr[0];
  ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))] = in_thread_X_red_temp_v1_ptr[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 32) {
    ((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))] = select(((volatile __local int*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 32)], ((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))], (convert_int((((bool)(((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 32)] < ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))])) || ((bool)(((bool)(((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))] == ((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 32)])) && ((bool)(((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))] < ((volatile __local int*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 32)]))))))));
    ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))] = select(((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 32)], ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))], (convert_int((((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 32)] < ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))]))));
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 16) {
    ((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))] = select(((volatile __local int*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 16)], ((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))], (convert_int((((bool)(((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 16)] < ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))])) || ((bool)(((bool)(((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))] == ((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 16)])) && ((bool)(((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))] < ((volatile __local int*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 16)]))))))));
    ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))] = select(((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 16)], ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))], (convert_int((((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 16)] < ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))]))));
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 8) {
    ((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))] = select(((volatile __local int*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 8)], ((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))], (convert_int((((bool)(((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 8)] < ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))])) || ((bool)(((bool)(((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))] == ((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 8)])) && ((bool)(((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))] < ((volatile __local int*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 8)]))))))));
    ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))] = select(((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 8)], ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))], (convert_int((((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 8)] < ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))]))));
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 4) {
    ((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))] = select(((volatile __local int*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 4)], ((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))], (convert_int((((bool)(((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 4)] < ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))])) || ((bool)(((bool)(((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))] == ((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 4)])) && ((bool)(((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))] < ((volatile __local int*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 4)]))))))));
    ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))] = select(((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 4)], ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))], (convert_int((((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 4)] < ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))]))));
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 2) {
    ((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))] = select(((volatile __local int*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 2)], ((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))], (convert_int((((bool)(((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 2)] < ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))])) || ((bool)(((bool)(((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))] == ((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 2)])) && ((bool)(((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))] < ((volatile __local int*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 2)]))))))));
    ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))] = select(((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 2)], ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))], (convert_int((((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 2)] < ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))]))));
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 1) {
    ((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))] = select(((volatile __local int*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 1)], ((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))], (convert_int((((bool)(((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 1)] < ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))])) || ((bool)(((bool)(((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))] == ((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 1)])) && ((bool)(((volatile __local int*)red_buf0_ptr)[(convert_int(get_local_id(0)))] < ((volatile __local int*)red_buf0_ptr)[((convert_int(get_local_id(0))) + 1)]))))))));
    ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))] = select(((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 1)], ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))], (convert_int((((volatile __local float*)red_buf1_ptr)[((convert_int(get_local_id(0))) + 1)] < ((volatile __local float*)red_buf1_ptr)[(convert_int(get_local_id(0)))]))));
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) == 0) {
    X_red_temp_v0_ptr[(convert_int(get_group_id(0)))] = ((volatile __local int*)red_buf0_ptr)[0];
    X_red_temp_v1_ptr[(convert_int(get_group_id(0)))] = ((volatile __local float*)red_buf1_ptr)[0];
  }
}

// Function: main_kernel_1
__kernel void main_kernel(__global float* restrict X_ptr, __global int* restrict X_red_temp_v0_ptr);
__kernel void main_kernel_1(__global int* restrict X_red_ptr, __global int* restrict X_red_temp_v0_ptr);
__kernel void main_kernel_1(__global int* restrict X_red_ptr, __global int* restrict X_red_temp_v0_ptr) {
  X_red_ptr[(convert_int(get_local_id(0)))] = X_red_temp_v0_ptr[(convert_int(get_local_id(0)))];
}

