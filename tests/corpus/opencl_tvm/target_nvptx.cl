// Function: scale_kernel
__kernel void scale_kernel(__global float* restrict A_ptr);
__kernel void scale_kernel(__global float* restrict A_ptr) {
  A_ptr[(convert_int(get_local_id(0)))] = (A_ptr[(convert_int(get_local_id(0)))] * 2.000000e+00f);
}

