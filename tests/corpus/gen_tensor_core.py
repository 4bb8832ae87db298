"""Generate the tensor-core corpus (tests/corpus/tensor_core/): TIR modules that use the
WMMA builtins (``T.tvm_load_matrix_sync``, ...), printed by TVM **0.27.0.post1**.

In TVM 0.27's wheel every generator of tensor-core TIR crashes the process (MetaSchedule's
tuning context, dlight's float16 matmul rule, ``Schedule.tensorize``), so the modules come
from text: TVM's own test files (at ``UPSTREAM_COMMIT`` of apache/tvm, read with ``git
show``) and the hand-written kernels below. Every module is parsed by TVM 0.27
(``tvm.script.from_source``) and written as its ``.script()``; ``index.json`` says where
each came from.

Sources:

* ``tests/python/s_tir/dlight/test_gpu_matmul_tensorize.py``: the ``expected`` modules of
  ``test_matmul_tensorize`` (float16), ``test_matmul_int8_tensorize`` and
  ``test_matmul_int8_tensorize_3d2d_dyn``: dlight's ``gpu.Matmul`` rule tensorized with
  the WMMA intrinsics of ``tvm.s_tir.tensor_intrin.cuda`` (what dlight printed when it
  still ran). Their loops carry ``software_pipeline_*`` annotations and their copies
  ``double_buffer_scope``; the ``*_nopipe`` variants are the same modules with those two
  annotations removed from the source before TVM parses it (the schedule without
  pipelining: same results, built without InjectSoftwarePipeline). The test functions are
  private; here they are public (``private=True`` dropped), so that the dynamic one's
  packed entry binds its shape variable.
* ``HAND`` below: small kernels written for this corpus in the form of the WMMA
  intrinsics' implementations (one warp a tile, fragments loaded straight from global
  memory): float16 -> float32 and float16 accumulators, int8/uint8 -> int32, B in row- or
  column-major order, shapes m16n16k16, m32n8k16 and m8n32k16.

* ``DLIGHT`` below: dlight's ``gpu.Matmul`` rule applied by **TVM 0.25.0** (pip
  ``apache-tvm==0.25.0`` with ``apache-tvm-ffi==0.1.12``), where it still runs (in 0.26.0
  and 0.27 it segfaults, as ``Schedule.tensorize`` does), to ``te`` matmuls C = X W^T for
  target ``cuda -arch=sm_80``; printed by TVM 0.25 (``dlight025_*``), and again with the
  pipelining annotations removed from that text and re-parsed by TVM 0.25 (``*_nopipe``).
  Run only with ``--tvm025-python`` (a Python with TVM 0.25); otherwise the files and
  their index entries are kept as they are.

How to run:  /work/main/.venv/bin/python tests/corpus/gen_tensor_core.py
             [--tvm-git-dir /work/.mirror/apache+tvm/repo] [--tvm025-python /tmp/tvm25/bin/python]
"""
import argparse
import ast
import json
import os
import re
import subprocess
import sys
import textwrap

UPSTREAM_COMMIT = "5d4dc8721307cf9677becacf0395c19be130e206"
DLIGHT = "tests/python/s_tir/dlight/test_gpu_matmul_tensorize.py"
FROM_TESTS = [  # (name, test file, test function, function inside it)
    ("dlight_matmul_f16", DLIGHT, "test_matmul_tensorize", "expected"),
    ("dlight_matmul_int8", DLIGHT, "test_matmul_int8_tensorize", "expected"),
    ("dlight_matmul_int8_3d2d_dyn", DLIGHT, "test_matmul_int8_tensorize_3d2d_dyn", "expected"),
]

_TILE = '''
@T.prim_func(s_tir=True)
def main(A: T.Buffer(({M}, {K}), "{IN}"), B: T.Buffer(({BR}, {BC}), "{IN}"), C: T.Buffer(({M}, {N}), "{OUT}")):
    T.func_attr({{"global_symbol": "main", "tirx.noalias": True}})
    A_frag = T.sblock_alloc_buffer(({TM}, {TK}), "{IN}", scope="wmma.matrix_a")
    B_frag = T.sblock_alloc_buffer(({TK}, {TN}), "{IN}", scope="wmma.matrix_b")
    C_frag = T.sblock_alloc_buffer(({TM}, {TN}), "{OUT}", scope="wmma.accumulator")
    for bx in T.thread_binding({M} // {TM}, thread="blockIdx.x"):
        for by in T.thread_binding({N} // {TN}, thread="blockIdx.y"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                with T.sblock("tile"):
                    T.reads(A[bx * {TM}:bx * {TM} + {TM}, 0:{K}], B[0:{BR}, 0:{BC}])
                    T.writes(C[bx * {TM}:bx * {TM} + {TM}, by * {TN}:by * {TN} + {TN}])
                    T.tvm_fill_fragment(C_frag.data, {TM}, {TN}, {TK}, 0, T.{OUT}(0))
                    for k in range({K} // {TK}):
                        T.tvm_load_matrix_sync(A_frag.data, {TM}, {TN}, {TK}, 0, T.tvm_access_ptr(T.type_annotation("{IN}"), A.data, bx * {K} * {TM} + k * {TK}, {K} * {TM}, 1), {K}, "row_major")
                        T.tvm_load_matrix_sync(B_frag.data, {TM}, {TN}, {TK}, 0, T.tvm_access_ptr(T.type_annotation("{IN}"), B.data, {BOFF}, {TK} * {BLD}, 1), {BLD}, "{BLAYOUT}")
                        T.tvm_mma_sync(C_frag.data, 0, A_frag.data, 0, B_frag.data, 0, C_frag.data, 0)
                    T.tvm_store_matrix_sync(C_frag.data, {TM}, {TN}, {TK}, 0, T.tvm_access_ptr(T.type_annotation("{OUT}"), C.data, bx * {N} * {TM} + by * {TN}, {N} * {TM}, 2), {N}, "row_major")
'''


def _tile(m, n, k, ins, out, b_col, tm=16, tn=16, tk=16):
    # B row-major is K x N (element (kk, j) at kk * N + j); column-major it is stored N x K
    if b_col:
        fill = dict(BR=n, BC=k, BOFF=f"by * {tn} * {k} + k * {tk}", BLD=k, BLAYOUT="col_major")
    else:
        fill = dict(BR=k, BC=n, BOFF=f"k * {tk} * {n} + by * {tn}", BLD=n, BLAYOUT="row_major")
    return _TILE.format(M=m, N=n, K=k, IN=ins, OUT=out, TM=tm, TN=tn, TK=tk, **fill)


HAND = {  # name -> (source, what it computes)
    "wmma_f16_f32": (_tile(64, 48, 64, "float16", "float32", False), "C = A B, f16 in, f32 accumulate"),
    "wmma_f16_f16": (_tile(32, 32, 48, "float16", "float16", False), "C = A B, f16 in, f16 accumulate"),
    "wmma_f16_f32_bcol": (_tile(32, 64, 32, "float16", "float32", True), "C = A B^T (B stored N x K)"),
    "wmma_s8_s32": (_tile(32, 32, 64, "int8", "int32", False), "C = A B, int8 in, int32 accumulate"),
    "wmma_u8_s32_bcol": (_tile(48, 16, 32, "uint8", "int32", True), "C = A B^T, uint8 in, int32"),
    "wmma_f16_f32_m32n8k16": (_tile(64, 16, 32, "float16", "float32", True, 32, 8, 16),
                              "C = A B^T in 32 x 8 tiles"),
    "wmma_s8_s32_m8n32k16": (_tile(16, 64, 32, "int8", "int32", False, 8, 32, 16),
                             "C = A B in 8 x 32 tiles, int8 in, int32"),
}


# name -> (M, N, K, input dtype, output dtype): C[i, j] = sum_k X[i, k] * W[j, k]
DLIGHT = {
    "dlight025_matmul_f16_128x256x512": (128, 256, 512, "float16", "float16"),
    "dlight025_matmul_f16_f32_256x128x256": (256, 128, 256, "float16", "float32"),
    "dlight025_matmul_int8_128x128x256": (128, 128, 256, "int8", "int32"),
}


def _dlight_scripts() -> dict:
    """Under TVM 0.25: each DLIGHT module scheduled by dlight, as printed, and without the
    pipelining annotations (printed again after TVM re-parses that text)."""
    import tvm
    from tvm import te
    from tvm.s_tir import dlight as dl
    out = {}
    for name, (m, n, k, dt, acc) in DLIGHT.items():
        X = te.placeholder((m, k), dt, name="X")
        W = te.placeholder((n, k), dt, name="W")
        r = te.reduce_axis((0, k), name="k")
        C = te.compute((m, n), lambda i, j: te.sum(X[i, r].astype(acc) * W[j, r].astype(acc), axis=r),
                       name="compute")
        mod = tvm.IRModule({"main": te.create_prim_func([X, W, C]).with_attr("global_symbol", "main")})
        with tvm.target.Target({"kind": "cuda", "arch": "sm_80"}):
            mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul())(mod)
        text = mod.script()
        out[name] = text
        out[name + "_nopipe"] = tvm.script.from_source(_no_pipeline(text)).script()
    return out


def _function_source(text: str, test: str, inner: str) -> str:
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == test:
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef) and sub.name == inner:
                    seg = ast.get_source_segment(text, sub, padded=True)
                    start = min(d.lineno for d in sub.decorator_list) if sub.decorator_list else sub.lineno
                    lines = text.splitlines()[start - 1:sub.end_lineno]
                    return textwrap.dedent("\n".join(lines)) if seg else ""
    raise SystemExit(f"{test}.{inner} not found")


def _no_pipeline(src: str) -> str:
    src = re.sub(r', annotations=\{"software_pipeline_order": \[[^\]]*\], '
                 r'"software_pipeline_stage": \[[^\]]*\]\}', "", src)
    return src.replace('"double_buffer_scope": 0, ', "")


def _public(src: str) -> str:
    """TVM's test functions are private; a public one gets a packed entry that binds its
    shape variables (the dynamic module needs one to build)."""
    return src.replace("@T.prim_func(private=True, s_tir=True)", "@T.prim_func(s_tir=True)", 1)


def _print(src: str) -> str:
    import tvm
    func = tvm.script.from_source(src)
    return tvm.IRModule({"main": func}).script()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tvm-git-dir", default=os.environ.get("TVM_GIT_DIR", "/work/.mirror/apache+tvm/repo"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "tensor_core"))
    ap.add_argument("--tvm025-python", help="a Python with apache-tvm 0.25.0 (for DLIGHT)")
    ap.add_argument("--dlight-json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dlight_json:  # the child run under TVM 0.25
        json.dump(_dlight_scripts(), sys.stdout)
        return
    os.makedirs(args.out, exist_ok=True)
    index = {}
    old_path = os.path.join(args.out, "index.json")
    if os.path.exists(old_path) and not args.tvm025_python:
        with open(old_path) as f:
            index.update({k: v for k, v in json.load(f).items() if k.startswith("dlight025_")})

    def write(name, text, entry):
        with open(os.path.join(args.out, name + ".tir"), "w") as f:
            f.write(text)
        index[name + ".tir"] = entry

    for name, path, test, inner in FROM_TESTS:
        text = subprocess.run(["git", "-C", args.tvm_git_dir, "show", f"{UPSTREAM_COMMIT}:{path}"],
                              check=True, capture_output=True, text=True).stdout
        src = _public(_function_source(text, test, inner))
        origin = {"source": f"apache/tvm@{UPSTREAM_COMMIT}:{path}", "function": f"{test}.{inner}",
                  "printed_by": "tvm 0.27.0.post1", "made_public": True}
        write(name, _print(src), {**origin, "needs": ["InjectSoftwarePipeline", "InjectDoubleBuffer"]})
        write(name + "_nopipe", _print(_no_pipeline(src)),
              {**origin, "patch": "software_pipeline_* and double_buffer_scope annotations removed"})
    for name, (src, what) in HAND.items():
        write(name, _print(src), {"source": "hand-written (tests/corpus/gen_tensor_core.py HAND)",
                                  "computes": what, "printed_by": "tvm 0.27.0.post1"})
    if args.tvm025_python:
        got = json.loads(subprocess.run([args.tvm025_python, __file__, "--dlight-json"], check=True,
                                        capture_output=True, text=True).stdout)
        for name, text in got.items():
            base = name.removesuffix("_nopipe")
            m, n, k, dt, acc = DLIGHT[base]
            entry = {"source": "dlight gpu.Matmul on te.compute (tests/corpus/gen_tensor_core.py DLIGHT)",
                     "computes": f"C = X W^T, X {m}x{k}, W {n}x{k} {dt}, C {acc}",
                     "printed_by": "tvm 0.25.0 (apache-tvm-ffi 0.1.12)"}
            if name == base:
                entry["needs"] = ["InjectSoftwarePipeline", "InjectDoubleBuffer"]
            else:
                entry["patch"] = "software_pipeline_* and double_buffer_scope annotations removed"
            write(name, text, entry)
    with open(os.path.join(args.out, "index.json"), "w") as f:
        json.dump(index, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
