// Function: gemm_kernel
#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#elif defined(cl_amd_fp16)
#pragma OPENCL EXTENSION cl_amd_fp16 : enable
#else
#error "Half precision floating point not supported by OpenCL implementation on your device." 
#endif

__kernel void gemm_kernel(__global half* restrict A_ptr, __global half* restrict B_ptr, __global float* restrict C_ptr);
__kernel void gemm_kernel(__global half* restrict A_ptr, __global half* restrict B_ptr, __global float* restrict C_ptr) {
  float acc_ptr[4];
  __local half As_ptr[1024];
  __local half Bs_ptr[1024];
  acc_ptr[0] = 0.000000e+00f;
  acc_ptr[1] = 0.000000e+00f;
  acc_ptr[2] = 0.000000e+00f;
  acc_ptr[3] = 0.000000e+00f;
  int cse_v1 = ((convert_int(get_local_id(1))) * 4096);
  int cse_v3 = ((convert_int(get_group_id(0))) * 32);
  int cse_v4 = (((convert_int(get_group_id(1))) * 32768) + ((convert_int(get_local_id(1))) * 4096));
  for (int ko = 0; ko < 32; ++ko) {
    int cse_v2 = ((convert_int(get_local_id(1))) * 128);
    int cse_v5 = (((convert_int(get_local_id(1))) * 128) + (convert_int(get_local_id(0))));
    int cse_v11 = (((((convert_int(get_group_id(1))) * 32768) + ((convert_int(get_local_id(1))) * 4096)) + (ko * 32)) + (convert_int(get_local_id(0))));
    As_ptr[(((convert_int(get_local_id(1))) * 128) + (convert_int(get_local_id(0))))] = A_ptr[(((((convert_int(get_group_id(1))) * 32768) + ((convert_int(get_local_id(1))) * 4096)) + (ko * 32)) + (convert_int(get_local_id(0))))];
    int cse_v12 = ((((ko * 32768) + ((convert_int(get_local_id(1))) * 4096)) + ((convert_int(get_group_id(0))) * 32)) + (convert_int(get_local_id(0))));
    Bs_ptr[(((convert_int(get_local_id(1))) * 128) + (convert_int(get_local_id(0))))] = B_ptr[((((ko * 32768) + ((convert_int(get_local_id(1))) * 4096)) + ((convert_int(get_group_id(0))) * 32)) + (convert_int(get_local_id(0))))];
    int cse_v8 = ((((convert_int(get_local_id(1))) * 128) + (convert_int(get_local_id(0)))) + 32);
    As_ptr[((((convert_int(get_local_id(1))) * 128) + (convert_int(get_local_id(0)))) + 32)] = A_ptr[((((((convert_int(get_group_id(1))) * 32768) + ((convert_int(get_local_id(1))) * 4096)) + (ko * 32)) + (convert_int(get_local_id(0)))) + 1024)];
    Bs_ptr[((((convert_int(get_local_id(1))) * 128) + (convert_int(get_local_id(0)))) + 32)] = B_ptr[(((((ko * 32768) + ((convert_int(get_local_id(1))) * 4096)) + ((convert_int(get_group_id(0))) * 32)) + (convert_int(get_local_id(0)))) + 1024)];
    int cse_v9 = ((((convert_int(get_local_id(1))) * 128) + (convert_int(get_local_id(0)))) + 64);
    As_ptr[((((convert_int(get_local_id(1))) * 128) + (convert_int(get_local_id(0)))) + 64)] = A_ptr[((((((convert_int(get_group_id(1))) * 32768) + ((convert_int(get_local_id(1))) * 4096)) + (ko * 32)) + (convert_int(get_local_id(0)))) + 2048)];
    Bs_ptr[((((convert_int(get_local_id(1))) * 128) + (convert_int(get_local_id(0)))) + 64)] = B_ptr[(((((ko * 32768) + ((convert_int(get_local_id(1))) * 4096)) + ((convert_int(get_group_id(0))) * 32)) + (convert_int(get_local_id(0)))) + 2048)];
    int cse_v10 = ((((convert_int(get_local_id(1))) * 128) + (convert_int(get_local_id(0)))) + 96);
    As_ptr[((((convert_int(get_local_id(1))) * 128) + (convert_int(get_local_id(0)))) + 96)] = A_ptr[((((((convert_int(get_group_id(1))) * 32768) + ((convert_int(get_local_id(1))) * 4096)) + (ko * 32)) + (convert_int(get_local_id(0)))) + 3072)];
    Bs_ptr[((((convert_int(get_local_id(1))) * 128) + (convert_int(get_local_id(0)))) + 96)] = B_ptr[(((((ko * 32768) + ((convert_int(get_local_id(1))) * 4096)) + ((convert_int(get_group_id(0))) * 32)) + (convert_int(get_local_id(0)))) + 3072)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int ki = 0; ki < 32; ++ki) {
      int cse_v6 = (((convert_int(get_local_id(1))) * 128) + ki);
      int cse_v7 = ((ki * 32) + (convert_int(get_local_id(0))));
      acc_ptr[0] = (acc_ptr[0] + ((convert_float(As_ptr[(((convert_int(get_local_id(1))) * 128) + ki)])) * (convert_float(Bs_ptr[((ki * 32) + (convert_int(get_local_id(0))))]))));
      acc_ptr[1] = (acc_ptr[1] + ((convert_float(As_ptr[((((convert_int(get_local_id(1))) * 128) + ki) + 32)])) * (convert_float(Bs_ptr[((ki * 32) + (convert_int(get_local_id(0))))]))));
      acc_ptr[2] = (acc_ptr[2] + ((convert_float(As_ptr[((((convert_int(get_local_id(1))) * 128) + ki) + 64)])) * (convert_float(Bs_ptr[((ki * 32) + (convert_int(get_local_id(0))))]))));
      acc_ptr[3] = (acc_ptr[3] + ((convert_float(As_ptr[((((convert_int(get_local_id(1))) * 128) + ki) + 96)])) * (convert_float(Bs_ptr[((ki * 32) + (convert_int(get_local_id(0))))]))));
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  int cse_v13 = (((((convert_int(get_group_id(1))) * 32768) + ((convert_int(get_local_id(1))) * 4096)) + ((convert_int(get_group_id(0))) * 32)) + (convert_int(get_local_id(0))));
  C_ptr[(((((convert_int(get_group_id(1))) * 32768) + ((convert_int(get_local_id(1))) * 4096)) + ((convert_int(get_group_id(0))) * 32)) + (convert_int(get_local_id(0))))] = acc_ptr[0];
  C_ptr[((((((convert_int(get_group_id(1))) * 32768) + ((convert_int(get_local_id(1))) * 4096)) + ((convert_int(get_group_id(0))) * 32)) + (convert_int(get_local_id(0)))) + 1024)] = acc_ptr[1];
  C_ptr[((((((convert_int(get_group_id(1))) * 32768) + ((convert_int(get_local_id(1))) * 4096)) + ((convert_int(get_group_id(0))) * 32)) + (convert_int(get_local_id(0)))) + 2048)] = acc_ptr[2];
  C_ptr[((((((convert_int(get_group_id(1))) * 32768) + ((convert_int(get_local_id(1))) * 4096)) + ((convert_int(get_group_id(0))) * 32)) + (convert_int(get_local_id(0)))) + 3072)] = acc_ptr[3];
}

