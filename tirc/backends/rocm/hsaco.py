"""What an AMDGPU code object says about its kernels: the AMDHSA metadata, a MessagePack
map in the ELF note ``AMDGPU`` of type ``NT_AMDGPU_METADATA`` (32), as LLVM writes it
for code object versions 3 and later (AMDGPUUsage, "Code Object Metadata").

Read here without ROCm or a MessagePack library: the ELF64 section headers, the notes of
``SHT_NOTE`` sections, and the MessagePack types the metadata uses (maps, arrays,
strings, integers, booleans, floats). Per kernel: its symbol, ``group_segment_fixed_size``
(static LDS bytes), ``private_segment_fixed_size`` (scratch bytes per work-item), VGPR,
AGPR and SGPR counts, spills, kernarg size and the arguments' offsets, sizes and kinds.
"""
from __future__ import annotations

import struct

NT_AMDGPU_METADATA = 32
SHT_NOTE = 7
EM_AMDGPU = 224


class BadCodeObject(ValueError):
    pass


def metadata(data: bytes) -> dict:
    """The decoded AMDHSA metadata of code object ``data``."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise BadCodeObject("not a little-endian ELF64 file")
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    if e_machine != EM_AMDGPU:
        raise BadCodeObject(f"not an AMDGPU ELF file (e_machine {e_machine})")
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum = struct.unpack_from("<HH", data, 58)
    for i in range(shnum):
        sh_type, = struct.unpack_from("<I", data, shoff + i * shentsize + 4)
        if sh_type != SHT_NOTE:
            continue
        off, size = struct.unpack_from("<QQ", data, shoff + i * shentsize + 24)
        pos, end = off, off + size
        while pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            name = data[pos + 12:pos + 12 + namesz].rstrip(b"\0")
            desc = pos + 12 + _align4(namesz)
            if name == b"AMDGPU" and ntype == NT_AMDGPU_METADATA:
                value, _ = _unpack(data, desc)
                return value
            pos = desc + _align4(descsz)
    raise BadCodeObject("no AMDHSA metadata note")


def elf_type(data: bytes) -> int:
    """``e_type``: 3 (ET_DYN) for a linked code object."""
    return struct.unpack_from("<H", data, 16)[0]


def kernels(data: bytes) -> dict[str, dict]:
    """Per kernel symbol, its facts from the metadata."""
    out = {}
    for k in metadata(data).get("amdhsa.kernels", []):
        out[k[".name"]] = {
            "symbol": k.get(".symbol"),
            "lds_bytes": k.get(".group_segment_fixed_size", 0),
            "scratch_bytes": k.get(".private_segment_fixed_size", 0),
            "vgprs": k.get(".vgpr_count", 0),
            "agprs": k.get(".agpr_count", 0),
            "sgprs": k.get(".sgpr_count", 0),
            "vgpr_spills": k.get(".vgpr_spill_count", 0),
            "sgpr_spills": k.get(".sgpr_spill_count", 0),
            "wavefront_size": k.get(".wavefront_size"),
            "max_flat_workgroup_size": k.get(".max_flat_workgroup_size"),
            "kernarg_bytes": k.get(".kernarg_segment_size", 0),
            "args": [{"offset": a.get(".offset"), "size": a.get(".size"),
                      "kind": a.get(".value_kind"), "address_space": a.get(".address_space")}
                     for a in k.get(".args", [])],
        }
    return out


def _align4(n: int) -> int:
    return (n + 3) & ~3


def _unpack(b: bytes, i: int):
    """One MessagePack value at ``b[i:]``: (value, next index)."""
    t = b[i]
    if t <= 0x7F:
        return t, i + 1
    if t >= 0xE0:
        return t - 0x100, i + 1
    if 0x80 <= t <= 0x8F:
        return _map(b, i + 1, t & 0x0F)
    if 0x90 <= t <= 0x9F:
        return _array(b, i + 1, t & 0x0F)
    if 0xA0 <= t <= 0xBF:
        n = t & 0x1F
        return b[i + 1:i + 1 + n].decode(), i + 1 + n
    if t == 0xC0:
        return None, i + 1
    if t in (0xC2, 0xC3):
        return t == 0xC3, i + 1
    fixed = {0xCA: ">f", 0xCB: ">d", 0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q",
             0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q"}
    if t in fixed:
        fmt = fixed[t]
        return struct.unpack_from(fmt, b, i + 1)[0], i + 1 + struct.calcsize(fmt)
    sized = {0xD9: ">B", 0xDA: ">H", 0xDB: ">I", 0xC4: ">B", 0xC5: ">H", 0xC6: ">I"}
    if t in sized:
        fmt = sized[t]
        n = struct.unpack_from(fmt, b, i + 1)[0]
        start = i + 1 + struct.calcsize(fmt)
        raw = b[start:start + n]
        return (raw.decode() if t >= 0xD9 else raw), start + n
    if t in (0xDC, 0xDD, 0xDE, 0xDF):
        fmt = ">H" if t in (0xDC, 0xDE) else ">I"
        n = struct.unpack_from(fmt, b, i + 1)[0]
        start = i + 1 + struct.calcsize(fmt)
        return (_array if t in (0xDC, 0xDD) else _map)(b, start, n)
    raise BadCodeObject(f"MessagePack type 0x{t:02x} in the metadata is not understood")


def _array(b: bytes, i: int, n: int):
    out = []
    for _ in range(n):
        v, i = _unpack(b, i)
        out.append(v)
    return out, i


def _map(b: bytes, i: int, n: int):
    out = {}
    for _ in range(n):
        k, i = _unpack(b, i)
        v, i = _unpack(b, i)
        out[k] = v
    return out, i
