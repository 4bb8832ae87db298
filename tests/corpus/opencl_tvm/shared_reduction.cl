// Function: reduce_sum_kernel
__kernel void reduce_sum_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr);
__kernel void reduce_sum_kernel(__global float* restrict A_ptr, __global float* restrict B_ptr) {
  __local float red_ptr[256];
  red_ptr[(convert_int(get_local_id(0)))] = A_ptr[(((convert_int(get_group_id(0))) * 256) + (convert_int(get_local_id(0))))];
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 128) {
    red_ptr[(convert_int(get_local_id(0)))] = (red_ptr[(convert_int(get_local_id(0)))] + red_ptr[((convert_int(get_local_id(0))) + 128)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 64) {
    red_ptr[(convert_int(get_local_id(0)))] = (red_ptr[(convert_int(get_local_id(0)))] + red_ptr[((convert_int(get_local_id(0))) + 64)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 32) {
    red_ptr[(convert_int(get_local_id(0)))] = (red_ptr[(convert_int(get_local_id(0)))] + red_ptr[((convert_int(get_local_id(0))) + 32)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 16) {
    red_ptr[(convert_int(get_local_id(0)))] = (red_ptr[(convert_int(get_local_id(0)))] + red_ptr[((convert_int(get_local_id(0))) + 16)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 8) {
    red_ptr[(convert_int(get_local_id(0)))] = (red_ptr[(convert_int(get_local_id(0)))] + red_ptr[((convert_int(get_local_id(0))) + 8)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 4) {
    red_ptr[(convert_int(get_local_id(0)))] = (red_ptr[(convert_int(get_local_id(0)))] + red_ptr[((convert_int(get_local_id(0))) + 4)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 2) {
    red_ptr[(convert_int(get_local_id(0)))] = (red_ptr[(convert_int(get_local_id(0)))] + red_ptr[((convert_int(get_local_id(0))) + 2)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) < 1) {
    red_ptr[(convert_int(get_local_id(0)))] = (red_ptr[(convert_int(get_local_id(0)))] + red_ptr[((convert_int(get_local_id(0))) + 1)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((convert_int(get_local_id(0))) == 0) {
    B_ptr[(convert_int(get_group_id(0)))] = red_ptr[0];
  }
}

