"""A dlight ``gpu.Reduction`` rfactor buffer allocated for the whole (symbolic) tensor in
scope "local" shrinks to the one element each thread touches, as TVM's
CompactBufferAllocation shrinks it: both blocks index it by the same element through
different expressions, ``(bx * 16 + tx) // 128`` and ``bx // 8`` with ``tx < 16``, and the
union of the two is one element only where the simplifier knows TVM's rule for a
division of ``x * c1 + y`` by a multiple of ``c1``; the element is then accessed at
index 0. The function is ``sum1`` of the
mixture-of-experts model (bench/models/moe.cuda.tir, printed by TVM 0.27 after dlight)."""
from __future__ import annotations

import re

import numpy as np

from tirc.testing import simt

SUM1 = '''# from tvm.script import tirx as T
@T.prim_func(s_tir=True)
def sum1(var_mul1: T.handle, var_mul1_red: T.handle):
    T.func_attr({"op_pattern": 3, "tirx.is_scheduled": True, "tirx.noalias": True})
    num_tokens = T.int64()
    mul1 = T.match_buffer(var_mul1, (T.int64(8), num_tokens, T.int64(128)))
    mul1_red = T.match_buffer(var_mul1_red, (num_tokens, T.int64(128)))
    mul1_red_rf_local = T.sblock_alloc_buffer((T.int64(16), num_tokens, T.int64(128)), scope="local")
    for ax0_ax1_fused_0 in T.thread_binding(num_tokens * T.int64(8), thread="blockIdx.x"):
        for ax0_ax1_fused_1 in T.thread_binding(T.int64(16), thread="threadIdx.x"):
            for ax2_fused_1 in T.thread_binding(T.int64(16), thread="threadIdx.y"):
                with T.sblock("mul1_red_rf_init"):
                    vax2_fused_1 = T.axis.spatial(T.int64(16), ax2_fused_1)
                    v0 = T.axis.spatial(num_tokens, (ax0_ax1_fused_0 * T.int64(16) + ax0_ax1_fused_1) // T.int64(128))
                    v1 = T.axis.spatial(T.int64(128), (ax0_ax1_fused_0 * T.int64(16) + ax0_ax1_fused_1) % T.int64(128))
                    T.reads()
                    T.writes(mul1_red_rf_local[vax2_fused_1, v0, v1])
                    mul1_red_rf_local[vax2_fused_1, v0, v1] = T.float32(0.0)
                for ax2_fused_0, u in T.grid(T.int64(1), 1):
                    with T.sblock("mul1_red_rf_update"):
                        vax2_fused_1 = T.axis.spatial(T.int64(16), ax2_fused_1)
                        v0 = T.axis.spatial(num_tokens, (ax0_ax1_fused_0 * T.int64(16) + ax0_ax1_fused_1) // T.int64(128))
                        v1 = T.axis.spatial(T.int64(128), (ax0_ax1_fused_0 * T.int64(16) + ax0_ax1_fused_1) % T.int64(128))
                        vax2_fused_0 = T.axis.reduce(T.int64(1), ax2_fused_0)
                        T.where(ax2_fused_0 * T.int64(16) + ax2_fused_1 < T.int64(8))
                        T.reads(mul1_red_rf_local[vax2_fused_1, v0, v1], mul1[vax2_fused_0 * T.int64(16) + vax2_fused_1, v0, v1])
                        T.writes(mul1_red_rf_local[vax2_fused_1, v0, v1])
                        mul1_red_rf_local[vax2_fused_1, v0, v1] = mul1_red_rf_local[vax2_fused_1, v0, v1] + mul1[vax2_fused_0 * T.int64(16) + vax2_fused_1, v0, v1]
        for ax1_ax2_fused in T.thread_binding(T.int64(16), thread="threadIdx.x"):
            for ax0 in T.thread_binding(T.int64(16), thread="threadIdx.y"):
                with T.sblock("mul1_red"):
                    vax2_fused_1 = T.axis.reduce(T.int64(16), ax0)
                    v0 = T.axis.spatial(num_tokens, ax0_ax1_fused_0 // T.int64(8))
                    v1 = T.axis.spatial(T.int64(128), ax0_ax1_fused_0 % T.int64(8) * T.int64(16) + ax1_ax2_fused)
                    T.reads(mul1_red_rf_local[vax2_fused_1, v0, v1])
                    T.writes(mul1_red[v0, v1])
                    with T.init():
                        mul1_red[v0, v1] = T.float32(0.0)
                    mul1_red[v0, v1] = mul1_red[v0, v1] + mul1_red_rf_local[vax2_fused_1, v0, v1]
'''


def test_the_rfactor_buffer_shrinks_to_one_element_and_the_sum_is_right():
    lowered = simt.lower(SUM1, "cuda -arch=sm_90")
    from tirc.ir.printer import print_module
    text = print_module(lowered)
    sizes = re.findall(r'(\w*rf_local\w*) = T\.(?:allocate|decl_buffer|alloc_buffer|sblock_alloc_buffer)\(\(([^)]*)\)', text)
    assert sizes and all(s[1].replace("T.int64(", "").replace(")", "") in ("1", "1,") for s in sizes), sizes
    # FlattenBuffer accesses the one element at index 0 (a register, not local memory),
    # which NarrowDataType makes a 32-bit constant
    accesses = re.findall(r"mul1_red_rf_local\[([^\]]*)\]", text)
    assert accesses and set(accesses) == {"0"}, set(accesses)
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (8, 3, 128)).astype("float32")
    out = np.zeros((3, 128), "float32")
    simt.run(SUM1, "sum1", [a, out], target="cuda -arch=sm_90")
    np.testing.assert_allclose(out, a.sum(axis=0), rtol=1e-5, atol=1e-5)
