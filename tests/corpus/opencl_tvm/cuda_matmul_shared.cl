// Function: main_kernel
__kernel void main_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr, __global float* restrict C_ptr);
__kernel void main_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr, __global float* restrict C_ptr) {
  float C_local_ptr[16];
  __local float A_shared_ptr[256];
  __local float B_shared_ptr[256];
  for (int i_2_init = 0; i_2_init < 4; ++i_2_init) {
    for (int j_2_init = 0; j_2_init < 4; ++j_2_init) {
      C_local_ptr[((i_2_init * 4) + j_2_init)] = 0.000000e+00f;
    }
  }
  int cse_v1 = ((convert_int(get_group_id(1))) * 4096);
  int cse_v3 = ((convert_int(get_group_id(0))) * 32);
  int cse_v4 = ((convert_int(get_local_id(0))) * 4);
  for (int k_0 = 0; k_0 < 16; ++k_0) {
    int cse_v2 = ((convert_int(get_local_id(1))) * 8);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int ax0_ax1_fused_0 = 0; ax0_ax1_fused_0 < 4; ++ax0_ax1_fused_0) {
      A_shared_ptr[(((ax0_ax1_fused_0 * 64) + ((convert_int(get_local_id(1))) * 8)) + (convert_int(get_local_id(0))))] = A_ptr[((((((convert_int(get_group_id(1))) * 4096) + (ax0_ax1_fused_0 * 1024)) + ((convert_int(get_local_id(1))) * 128)) + (k_0 * 8)) + (convert_int(get_local_id(0))))];
    }
    for (int ax0_ax1_fused_0_1 = 0; ax0_ax1_fused_0_1 < 4; ++ax0_ax1_fused_0_1) {
      B_shared_ptr[(((ax0_ax1_fused_0_1 * 64) + ((convert_int(get_local_id(1))) * 8)) + (convert_int(get_local_id(0))))] = B_ptr[((((((k_0 * 1024) + (ax0_ax1_fused_0_1 * 256)) + (((convert_int(get_local_id(1))) >> 2) * 128)) + ((convert_int(get_group_id(0))) * 32)) + (((convert_int(get_local_id(1))) & 3) * 8)) + (convert_int(get_local_id(0))))];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k_1 = 0; k_1 < 8; ++k_1) {
      for (int i_2 = 0; i_2 < 4; ++i_2) {
        for (int j_2 = 0; j_2 < 4; ++j_2) {
          int cse_v5 = ((i_2 * 4) + j_2);
          C_local_ptr[((i_2 * 4) + j_2)] = (C_local_ptr[((i_2 * 4) + j_2)] + (A_shared_ptr[((((convert_int(get_local_id(1))) * 32) + (i_2 * 8)) + k_1)] * B_shared_ptr[(((k_1 * 32) + ((convert_int(get_local_id(0))) * 4)) + j_2)]));
        }
      }
    }
  }
  for (int ax0 = 0; ax0 < 4; ++ax0) {
    for (int ax1 = 0; ax1 < 4; ++ax1) {
      C_ptr[(((((((convert_int(get_group_id(1))) * 4096) + ((convert_int(get_local_id(1))) * 512)) + (ax0 * 128)) + ((convert_int(get_group_id(0))) * 32)) + ((convert_int(get_local_id(0))) * 4)) + ax1)] = C_local_ptr[((ax0 * 4) + ax1)];
    }
  }
}

