// Function: log2_case_kernel_kernel
__kernel void log2_case_kernel_kernel(__global ushort* restrict A_1_ptr, __global ushort* restrict B_1_ptr);
__kernel void log2_case_kernel_kernel(__global ushort* restrict A_1_ptr, __global ushort* restrict B_1_ptr) {
      uint v_ = (convert_uint(A_1_ptr[(convert_int(get_local_id(0)))])) << (uint)16;
    float v__1 = hlog2((*(float *)(&(v_))));
      uint v__2 = (convert_uint(A_1_ptr[(convert_int(get_local_id(0)))])) << (uint)16;
    float v__3 = hlog2((*(float *)(&(v__2))));
  B_1_ptr[(convert_int(get_local_id(0)))] = (convert_ushort((((*(uint *)(&(v__1))) + ((((*(uint *)(&(v__3))) >> (uint)16) & (uint)1) + (uint)32767)) >> (uint)16)));
}

