// Function: main_kernel
#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#elif defined(cl_amd_fp16)
#pragma OPENCL EXTENSION cl_amd_fp16 : enable
#else
#error "Half precision floating point not supported by OpenCL implementation on your device." 
#endif

__kernel void main_kernel(__global half* restrict W_ptr, __global half* restrict x_ptr, __global half* restrict y_ptr);
__kernel void main_kernel(__global half* restrict W_ptr, __global half* restrict x_ptr, __global half* restrict y_ptr) {
  __local half x_shared_ptr[1024];
  half y_rf_local_ptr[4];
  half W_local_ptr[8];
  half y_rf_local_1_ptr[1];
  __local half red_buf0_ptr[512];
  for (int ax1_0 = 0; ax1_0 < 1; ++ax1_0) {
    int cse_v2 = (((convert_int(get_local_id(1))) * 64) + ((convert_int(get_local_id(0))) * 2));
    vstore2(vload2(0, x_ptr + (((convert_int(get_local_id(1))) * 64) + ((convert_int(get_local_id(0))) * 2))), 0, x_shared_ptr + (((convert_int(get_local_id(1))) * 64) + ((convert_int(get_local_id(0))) * 2)));
  }
  vstore4(((half4)((half)0.000000e+00f, (half)0.000000e+00f, (half)0.000000e+00f, (half)0.000000e+00f)), 0, y_rf_local_ptr + 0);
  int cse_v1 = ((convert_int(get_local_id(0))) * 8);
  int cse_v3 = ((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8));
  vstore2(vload2(0, W_ptr + ((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8))), 0, W_local_ptr + 0);
  vstore2(vload2(0, W_ptr + (((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8)) + 2)), 0, W_local_ptr + 2);
  vstore2(vload2(0, W_ptr + (((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8)) + 4)), 0, W_local_ptr + 4);
  vstore2(vload2(0, W_ptr + (((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8)) + 6)), 0, W_local_ptr + 6);
  barrier(CLK_LOCAL_MEM_FENCE);
  vstore4((vload4(0, y_rf_local_ptr + 0) + (vload4(0, x_shared_ptr + ((convert_int(get_local_id(0))) * 8)) * vload4(0, W_local_ptr + 0))), 0, y_rf_local_ptr + 0);
  vstore4((vload4(0, y_rf_local_ptr + 0) + (vload4(0, x_shared_ptr + (((convert_int(get_local_id(0))) * 8) + 4)) * vload4(0, W_local_ptr + 4))), 0, y_rf_local_ptr + 0);
  vstore2(vload2(0, W_ptr + (((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8)) + 256)), 0, W_local_ptr + 0);
  vstore2(vload2(0, W_ptr + (((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8)) + 258)), 0, W_local_ptr + 2);
  vstore2(vload2(0, W_ptr + (((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8)) + 260)), 0, W_local_ptr + 4);
  vstore2(vload2(0, W_ptr + (((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8)) + 262)), 0, W_local_ptr + 6);
  vstore4((vload4(0, y_rf_local_ptr + 0) + (vload4(0, x_shared_ptr + (((convert_int(get_local_id(0))) * 8) + 256)) * vload4(0, W_local_ptr + 0))), 0, y_rf_local_ptr + 0);
  vstore4((vload4(0, y_rf_local_ptr + 0) + (vload4(0, x_shared_ptr + (((convert_int(get_local_id(0))) * 8) + 260)) * vload4(0, W_local_ptr + 4))), 0, y_rf_local_ptr + 0);
  vstore2(vload2(0, W_ptr + (((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8)) + 512)), 0, W_local_ptr + 0);
  vstore2(vload2(0, W_ptr + (((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8)) + 514)), 0, W_local_ptr + 2);
  vstore2(vload2(0, W_ptr + (((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8)) + 516)), 0, W_local_ptr + 4);
  vstore2(vload2(0, W_ptr + (((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8)) + 518)), 0, W_local_ptr + 6);
  vstore4((vload4(0, y_rf_local_ptr + 0) + (vload4(0, x_shared_ptr + (((convert_int(get_local_id(0))) * 8) + 512)) * vload4(0, W_local_ptr + 0))), 0, y_rf_local_ptr + 0);
  vstore4((vload4(0, y_rf_local_ptr + 0) + (vload4(0, x_shared_ptr + (((convert_int(get_local_id(0))) * 8) + 516)) * vload4(0, W_local_ptr + 4))), 0, y_rf_local_ptr + 0);
  vstore2(vload2(0, W_ptr + (((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8)) + 768)), 0, W_local_ptr + 0);
  vstore2(vload2(0, W_ptr + (((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8)) + 770)), 0, W_local_ptr + 2);
  vstore2(vload2(0, W_ptr + (((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8)) + 772)), 0, W_local_ptr + 4);
  vstore2(vload2(0, W_ptr + (((((convert_int(get_group_id(0))) * 16384) + ((convert_int(get_local_id(1))) * 1024)) + ((convert_int(get_local_id(0))) * 8)) + 774)), 0, W_local_ptr + 6);
  vstore4((vload4(0, y_rf_local_ptr + 0) + (vload4(0, x_shared_ptr + (((convert_int(get_local_id(0))) * 8) + 768)) * vload4(0, W_local_ptr + 0))), 0, y_rf_local_ptr + 0);
  vstore4((vload4(0, y_rf_local_ptr + 0) + (vload4(0, x_shared_ptr + (((convert_int(get_local_id(0))) * 8) + 772)) * vload4(0, W_local_ptr + 4))), 0, y_rf_local_ptr + 0);
  y_rf_local_1_ptr[0] = (half)0.000000e+00f;
  y_rf_local_1_ptr[0] = (y_rf_local_1_ptr[0] + y_rf_local_ptr[0]);
  y_rf_local_1_ptr[0] = (y_rf_local_1_ptr[0] + y_rf_local_ptr[1]);
  y_rf_local_1_ptr[0] = (y_rf_local_1_ptr[0] + y_rf_local_ptr[2]);
  y_rf_local_1_ptr[0] = (y_rf_local_1_ptr[0] + y_rf_local_ptr[3]);
  barrier(CLK_LOCAL_MEM_FENCE);
  ((volatile __local half*)red_buf0_ptr)[(((convert_int(get_local_id(1))) * 32) + (convert_int(get_local_id(0))))] = y_rf_local_1_ptr[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 16) {
    ((volatile __local half*)red_buf0_ptr)[(((convert_int(get_local_id(1))) * 32) + (convert_int(get_local_id(0))))] = (((volatile __local half*)red_buf0_ptr)[(((convert_int(get_local_id(1))) * 32) + (convert_int(get_local_id(0))))] + ((volatile __local half*)red_buf0_ptr)[((((convert_int(get_local_id(1))) * 32) + (convert_int(get_local_id(0)))) + 16)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 8) {
    ((volatile __local half*)red_buf0_ptr)[(((convert_int(get_local_id(1))) * 32) + (convert_int(get_local_id(0))))] = (((volatile __local half*)red_buf0_ptr)[(((convert_int(get_local_id(1))) * 32) + (convert_int(get_local_id(0))))] + ((volatile __local half*)red_buf0_ptr)[((((convert_int(get_local_id(1))) * 32) + (convert_int(get_local_id(0)))) + 8)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 4) {
    ((volatile __local half*)red_buf0_ptr)[(((convert_int(get_local_id(1))) * 32) + (convert_int(get_local_id(0))))] = (((volatile __local half*)red_buf0_ptr)[(((convert_int(get_local_id(1))) * 32) + (convert_int(get_local_id(0))))] + ((volatile __local half*)red_buf0_ptr)[((((convert_int(get_local_id(1))) * 32) + (convert_int(get_local_id(0)))) + 4)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 2) {
    ((volatile __local half*)red_buf0_ptr)[(((convert_int(get_local_id(1))) * 32) + (convert_int(get_local_id(0))))] = (((volatile __local half*)red_buf0_ptr)[(((convert_int(get_local_id(1))) * 32) + (convert_int(get_local_id(0))))] + ((volatile __local half*)red_buf0_ptr)[((((convert_int(get_local_id(1))) * 32) + (convert_int(get_local_id(0)))) + 2)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 1) {
    ((volatile __local half*)red_buf0_ptr)[(((convert_int(get_local_id(1))) * 32) + (convert_int(get_local_id(0))))] = (((volatile __local half*)red_buf0_ptr)[(((convert_int(get_local_id(1))) * 32) + (convert_int(get_local_id(0))))] + ((volatile __local half*)red_buf0_ptr)[((((convert_int(get_local_id(1))) * 32) + (convert_int(get_local_id(0)))) + 1)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) == 0) {
    y_ptr[(((convert_int(get_group_id(0))) * 16) + (convert_int(get_local_id(1))))] = ((volatile __local half*)red_buf0_ptr)[((convert_int(get_local_id(1))) * 32)];
  }
}

