// Function: thread_extent_kernel
__kernel void thread_extent_kernel(__global float* restrict A_ptr);
__kernel void thread_extent_kernel(__global float* restrict A_ptr) {
  A_ptr[(((convert_int(get_group_id(0))) * 64) + (convert_int(get_local_id(0))))] = 0.000000e+00f;
}

