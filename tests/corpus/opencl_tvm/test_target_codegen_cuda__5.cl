// Function: main_kernel
__kernel void main_kernel(__global float* restrict A_1_ptr, __global float* restrict B_1_ptr, int k);
__kernel void main_kernel(__global float* restrict A_1_ptr, __global float* restrict B_1_ptr, int k) {
  for (int m_1 = 0; m_1 < 32; ++m_1) {
    int cse_v1 = (((convert_int(get_group_id(0))) * 32) + m_1);
    int cse_v1_1 = (((convert_int(get_group_id(0))) * 32) + m_1);
    if (k == 0) {
      B_1_ptr[(((convert_int(get_group_id(0))) * 32) + m_1)] = 0.000000e+00f;
    }
    B_1_ptr[(((convert_int(get_group_id(0))) * 32) + m_1)] = (B_1_ptr[(((convert_int(get_group_id(0))) * 32) + m_1)] + A_1_ptr[((((convert_int(get_group_id(0))) * 1024) + (m_1 * 32)) + k)]);
  }
}

