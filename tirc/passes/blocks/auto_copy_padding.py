"""LowerAutoCopy's automatic padding of shared buffers (TVM's ``AutoPadder``,
``memhammer_lower_auto_copy.cc``).

For every access to a shared buffer in a lowered copy, a *typical warp* is taken: the
loops that are not thread-bound sit at their first iteration, the thread-bound ones run
over the part of their extent that falls in the first warp. Each index then is a sum of
``scale * var`` patterns, and the values it takes over the warp are listed per dimension
(the *iteration space*). The row strides are then chosen from the innermost dimension
outwards: for each, the padding (a multiple of the least padding the accesses need: a
vector's width, 8 halves for WMMA) that leaves the fewest accesses in one memory bank,
at most a quarter of the row. The buffer gets those strides (its shape stays).
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.block import SBlock
from tirc.ir.buffer import Buffer
from tirc.ir.expr import BinOp, BufferLoad, Call, PrimExpr, Var
from tirc.ir.renew import substitute
from tirc.ir.stmt import BufferStore, Evaluate, For, Stmt
from tirc.ir import wmma_ops
from tirc.ir.visitor import Mutator, Visitor
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import add, binop, imm, sub
from tirc.passes.blocks.auto_copy_common import const_int, rank

MAX_PAD_FACTOR = 0.25
MATRIX_SYNC = (wmma_ops.LOAD, wmma_ops.STORE)


class _Failed(Exception):
    pass


class _Patterns:
    """An index as ``[(extent, scale), ...]``: the values ``sum(scale * x)`` with each
    ``x`` over ``[0, extent)`` (TVM's ``PatternCollector``: what it cannot read makes
    this and every later index of the access unknown)."""

    def __init__(self, extents: dict[int, int]):
        self.extents = extents
        self.failed = False

    def of(self, e: PrimExpr) -> list[tuple[int, int]]:
        if isinstance(e, Var):
            n = self.extents.get(id(e))
            if n is None:
                raise _Failed
            return [(n, 1)] if n > 1 else []
        if not isinstance(e, BinOp):
            raise _Failed
        if e.op == "add":
            merged = self.of(e.a) + self.of(e.b)
            if not merged:
                return []
            out = [merged[0]]
            for ext, scale in merged:
                prev = out[-1]
                if ext * scale == prev[1]:
                    out[-1] = (prev[0] * ext, scale)
            return out
        b = const_int(e.b)
        if b is None or b <= 0 or e.op not in ("mul", "floordiv", "floormod"):
            raise _Failed
        inner = self.of(e.a)
        out = []
        for ext, scale in inner:
            if e.op == "mul":
                out.append((ext, scale * b))
            elif e.op == "floordiv":
                if scale >= b:
                    if scale % b:
                        raise _Failed
                    out.append((ext, scale // b))
                elif scale * ext > b:
                    if (scale * ext) % b:
                        raise _Failed
                    out.append((ext * scale // b, 1))
            elif scale < b:
                if b % scale:
                    raise _Failed
                out.append((b // scale, scale) if b // scale < ext else (ext, scale))
        return out

    def space(self, e: PrimExpr) -> list[int]:
        if self.failed:
            return []
        try:
            patterns = self.of(e)
        except _Failed:
            self.failed = True
            return []
        total = 1
        for ext, _ in patterns:
            total *= ext
        values = []
        for tid in range(total):
            index, n = 0, tid
            for ext, scale in reversed(patterns):
                index += (n % ext) * scale
                n //= ext
            values.append(index)
        return values


class AutoPadder:
    def __init__(self) -> None:
        self.spaces: dict[int, list[list[list[int]]]] = {}  # buffer -> accesses -> dims
        self.padding_min: dict[int, int] = {}
        self.padded: dict[int, Buffer] = {}

    def need_padding(self, buffer: Buffer, n: int) -> None:
        self.padding_min[id(buffer)] = max(n, self.padding_min.get(id(buffer), 1))

    # ---- analysis ------------------------------------------------------------------------

    def analyze(self, stmt: Stmt, outer_loops, thread_extent: dict[str, int]) -> None:
        warp: dict[str, int] = {}
        prod = 1
        for tag in ("threadIdx.x", "threadIdx.y", "threadIdx.z"):
            n = thread_extent.get(tag, 1)
            if prod * n >= 32:
                warp[tag] = 32 // prod
                break
            warp[tag] = n
            prod *= n
        subst = {id(l.loop_var): l.min for l in outer_loops}
        _Accesses(self, subst, warp).visit(stmt)

    def record(self, buffer: Buffer, indices, extents: dict[int, int]) -> None:
        p = _Patterns(extents)
        self.spaces.setdefault(id(buffer), []).append([p.space(i) for i in indices])

    # ---- padding -------------------------------------------------------------------------

    def pad(self, buffers) -> tuple[Buffer, ...]:
        return tuple(self._pad(b) for b in buffers)

    def _pad(self, buffer: Buffer) -> Buffer:
        spaces = self.spaces.get(id(buffer))
        shape = [const_int(e) for e in buffer.shape]
        if rank(buffer.scope) != "shared" or not spaces or not shape or None in shape:
            return buffer
        n, bits = len(shape), buffer.dtype.bits
        words = 32 * 32 // bits
        low = [list(s[n - 1]) for s in spaces]
        stride, strides = 1, []
        pad_min = self.padding_min.get(id(buffer), 1)
        for k in range(n - 2, -1, -1):
            row = stride * shape[k + 1]
            best, best_pad = None, -1
            for pad in range(0, min(int(MAX_PAD_FACTOR * row), words) + 1, pad_min):
                padded = (row + pad) % words
                conflict = 0
                for s, lo in zip(spaces, low):
                    bank = [0] * 32
                    for v1 in s[k]:
                        for v2 in lo:
                            bank[(v1 * padded + v2) * bits // 32 % 32] += 1
                    conflict = max(conflict, max(bank))
                if best is None or conflict < best:
                    best, best_pad = conflict, pad
            padded = (row + best_pad) % words
            for i, s in enumerate(spaces):
                if s[k]:
                    low[i] = [((v1 * padded + v2) * bits) % words for v1 in s[k] for v2 in low[i]]
            stride = row + best_pad
            strides.append(stride)
        dt = buffer.shape[0].dtype
        new = replace(buffer, strides=tuple(imm(dt, s) for s in reversed(strides)) + (imm(dt, 1),))
        self.padded[id(buffer)] = new
        return new

    def rewrite(self, stmt: Stmt) -> Stmt:
        return _Replace(self.padded).visit(stmt) if self.padded else stmt


def _contiguous(e: PrimExpr, var: Var, subst: dict[int, PrimExpr]) -> bool:
    """Unless provably not, ``e`` moves by one as ``var`` does (TVM's CheckVarContiguous)."""
    zero, one = substitute(e, {id(var): imm(var.dtype, 0)}), substitute(e, {id(var): imm(var.dtype, 1)})
    diff = substitute(sub(one, zero), subst)
    return not Analyzer().can_prove(binop("ne", diff, imm(diff.dtype, 1)))


class _Accesses(Visitor):
    """Records the iteration spaces of a copy's shared-memory accesses in a typical warp."""

    def __init__(self, padder: AutoPadder, subst, warp):
        self.padder = padder
        self.subst = dict(subst)
        self.warp = warp
        self.extents: dict[int, int] = {}
        self.vector: tuple[Var, int] | None = None

    def visit_For(self, s: For):
        var = s.loop_var
        if s.kind == "thread_binding":
            self.extents[id(var)] = self.warp.get(s.thread_tag, 1)
        else:
            self.subst[id(var)] = s.min
        if s.kind == "vectorized":
            self.vector = (var, const_int(s.extent) or 1)
        self.generic_visit(s)
        if s.kind == "vectorized":
            self.vector = None
        if s.kind != "thread_binding":
            self.subst.pop(id(var), None)

    def _access(self, buffer: Buffer, indices, contiguous_of) -> None:
        if rank(buffer.scope) != "shared":
            return
        ana = Analyzer()
        simplified = [ana.simplify(substitute(i, self.subst)) for i in indices]
        self.padder.record(buffer, simplified, self.extents)
        if self.vector is not None and indices:
            var, lanes = self.vector
            if _contiguous(contiguous_of(simplified, indices), var, self.subst):
                self.padder.need_padding(buffer, lanes)

    def visit_BufferStore(self, s: BufferStore):
        self._access(s.buffer, s.indices, lambda simplified, raw: raw[-1])
        self.generic_visit(s)

    def visit_BufferLoad(self, e: BufferLoad):
        self._access(e.buffer, e.indices, lambda simplified, raw: simplified[-1])
        self.generic_visit(e)

    def visit_SBlock(self, b: SBlock):
        body = b.body
        if not (isinstance(body, Evaluate) and isinstance(body.value, Call)
                and body.value.op in MATRIX_SYNC):
            return
        for m in b.match_buffers:
            src = m.source.buffer
            if rank(src.scope) != "shared":
                continue
            indices = []
            for i, r in enumerate(m.source.region):
                v = Var(f"region{i}", r.min.dtype)
                self.extents[id(v)] = const_int(r.extent) or 1
                indices.append(add(r.min, v))
            ana = Analyzer()
            simplified = [ana.simplify(substitute(i, self.subst)) for i in indices]
            self.padder.record(src, simplified, self.extents)


class _Replace(Mutator):
    """Every use of a padded buffer (accesses, block regions, match sources) uses the
    padded one."""

    def __init__(self, padded: dict[int, Buffer]):
        self.padded = padded

    def visit_buffer(self, b: Buffer) -> Buffer:
        return self.padded.get(id(b), b)
