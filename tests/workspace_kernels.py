"""Device functions that allocate a buffer outside their kernels (host code allocates
it, two kernels use it), shared by the tests of each device kind's launcher: its
memory is the device's, not host memory."""

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"

# B[i] = 2 * A[i] + 2 * A[n - 1 - i] through tmp, for any n
SYMBOLIC = HEAD + '''
@T.prim_func
def f(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32"), n: T.int32):
    tmp = T.alloc_buffer((n,), "float32")
    for i0 in T.thread_binding((n + 63) // 64, thread="blockIdx.x"):
        for i1 in T.thread_binding(64, thread="threadIdx.x"):
            if i0 * 64 + i1 < n:
                tmp[i0 * 64 + i1] = A[i0 * 64 + i1] * T.float32(2.0)
    for i0 in T.thread_binding((n + 63) // 64, thread="blockIdx.x"):
        for i1 in T.thread_binding(64, thread="threadIdx.x"):
            if i0 * 64 + i1 < n:
                B[i0 * 64 + i1] = tmp[i0 * 64 + i1] + tmp[n - 1 - i0 * 64 - i1]
'''

# the same for 1024 elements: 4096 bytes, kernels of 8 blocks of 128 threads
FIXED = HEAD + '''
@T.prim_func
def f(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
    tmp = T.alloc_buffer((1024,), "float32")
    for i0 in T.thread_binding(8, thread="blockIdx.x"):
        for i1 in T.thread_binding(128, thread="threadIdx.x"):
            tmp[i0 * 128 + i1] = A[i0 * 128 + i1] * T.float32(2.0)
    for i0 in T.thread_binding(8, thread="blockIdx.x"):
        for i1 in T.thread_binding(128, thread="threadIdx.x"):
            B[i0 * 128 + i1] = tmp[i0 * 128 + i1] + tmp[1023 - i0 * 128 - i1]
'''
