"""Generate software-pipelined GEMMs for CUDA with TVM 0.27's schedule (the inputs of
tests/backends/cuda/test_pipelined_gemm.py).

Each is ``C = A @ B`` in float32 on a 16x16 thread block, one output per thread, the A
and B tiles copied to shared memory by all threads (scalar or 16-byte vector copies)
in the reduction loop (static or dynamic shared memory), which is annotated for software pipelining with the copies as
stage 0, asynchronous (``software_pipeline_async_stages=[0]``), and the compute in a
later stage: what dlight/meta-schedule GPU GEMMs ask for, without tensor cores (TVM
0.27's tensorize of the mma intrinsics crashes, so TVM's own mma GEMM tests cannot be
scheduled with it).

    /work/main/.venv/bin/python tests/corpus/gen_pipelined_gemm.py [--out DIR]
"""
import argparse
import os

import tvm
from tvm import te
from tvm.s_tir import Schedule

# name -> (M, N, K, BK, vector width of the copies, stages of [A copy, B copy, compute],
#          the tiles' storage scope)
CASES = {
    "gemm_2stage_scalar": (64, 64, 64, 16, 1, [0, 0, 1], "shared"),
    "gemm_3stage_scalar": (32, 32, 96, 16, 1, [0, 0, 2], "shared"),
    "gemm_2stage_vec4": (32, 32, 256, 64, 4, [0, 0, 1], "shared"),
    "gemm_2stage_dynamic_shared": (32, 32, 64, 16, 1, [0, 0, 1], "shared.dyn"),
}


def make(M, N, K, BK, vec, stages, scope):
    A = te.placeholder((M, K), "float32", name="A")
    B = te.placeholder((K, N), "float32", name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = Schedule(tvm.IRModule({"main": te.create_prim_func([A, B, C])}))
    c = sch.get_sblock("C")
    i, j, kk = sch.get_loops(c)
    bi, ti = sch.split(i, [None, 16])
    bj, tj = sch.split(j, [None, 16])
    k0, k1 = sch.split(kk, [None, BK])
    sch.reorder(bi, bj, ti, tj, k0, k1)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    for idx in (0, 1):
        s = sch.cache_read(c, idx, scope)
        sch.compute_at(s, k0)
        fused = sch.fuse(*sch.get_loops(s)[-2:])
        if vec > 1:
            _, ty, tx, v = sch.split(fused, [None, 16, 16, vec])
            sch.vectorize(v)
        else:
            _, ty, tx = sch.split(fused, [None, 16, 16])
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
    sch.decompose_reduction(c, k0)
    sch.annotate(k0, "software_pipeline_stage", stages)
    sch.annotate(k0, "software_pipeline_order", [0, 1, 2])
    sch.annotate(k0, "software_pipeline_async_stages", [0])
    return sch.mod


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "pipelined_gemm"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, params in CASES.items():
        with open(os.path.join(args.out, name + ".tir"), "w") as f:
            f.write(make(*params).script())


if __name__ == "__main__":
    main()
