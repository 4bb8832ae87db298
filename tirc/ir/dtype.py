"""Data types as TVM spells them: ``int32``, ``float16``, ``bfloat16``, ``float32x4`` ..."""
from __future__ import annotations

import re
from functools import lru_cache

from tirc.records import record

# Scalar base names and their bit widths.
_FLOAT8 = ("float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
           "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")
_BASES: dict[str, int] = {
    "bool": 1,
    # sub-byte integers, packed as DLPack lays them out (``packs``); uint1 is bool
    "int1": 1, "int2": 2, "int4": 4, "uint2": 2, "uint4": 4,
    "int8": 8, "int16": 16, "int32": 32, "int64": 64,
    "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64,
    "float16": 16, "float32": 32, "float64": 64, "bfloat16": 16,
    **{name: 8 for name in _FLOAT8},
    "float6_e2m3fn": 6, "float6_e3m2fn": 6, "float4_e2m1fn": 4,
    "handle": 64, "void": 0,
}
# the float types BF16StorageLegalize and FP8StorageLegalize store as integers
NARROW_FLOAT_BASES = ("bfloat16",) + _FLOAT8
_LANES = re.compile(r"^(?P<base>[a-z0-9_]+?)x(?P<vscale>vscalex)?(?P<lanes>[0-9]+)$")


@record(frozen=True, slots=True, cache_hash=True)
class DataType:
    """A scalar base type with a lane count (1 for scalars). A scalable vector
    (``float32xvscalex4``, AArch64 SVE / RISC-V V) has ``vscale * lanes`` lanes, a
    multiple of ``lanes`` known only when the code runs (``T.vscale()``); it has
    ``scalable`` set and at least 2 as ``lanes``, so no scalable type is a scalar."""

    base: str
    lanes: int = 1
    scalable: bool = False

    def __str__(self) -> str:
        if self.scalable:
            return f"{self.base}xvscalex{self.lanes}"
        return self.base if self.lanes == 1 else f"{self.base}x{self.lanes}"

    @property
    def bits(self) -> int:
        return _BASES[self.base]

    @property
    def is_bool(self) -> bool:
        return self.base == "bool"

    @property
    def is_int(self) -> bool:
        return self.base.startswith("int")

    @property
    def is_uint(self) -> bool:
        return self.base.startswith("uint")

    @property
    def is_integer(self) -> bool:
        """Signed or unsigned integer (not bool)."""
        return self.is_int or self.is_uint

    @property
    def is_subbyte(self) -> bool:
        """A packed sub-byte integer (int1, int2, int4, uint2, uint4): DLPack stores
        ``packs`` elements in a byte, element ``i`` of a byte in its bits
        ``[i * bits, (i + 1) * bits)`` (little bit-endian), with no padding."""
        return self.bits < 8 and self.is_integer

    @property
    def packs(self) -> int:
        """How many elements share a byte: 8 // bits for a sub-byte integer, else 1."""
        return 8 // self.bits if self.is_subbyte else 1

    @property
    def is_float(self) -> bool:
        return self.base.startswith("float") or self.base == "bfloat16"

    @property
    def is_handle(self) -> bool:
        return self.base == "handle"

    @property
    def is_void(self) -> bool:
        return self.base == "void"

    @property
    def is_scalar(self) -> bool:
        return self.lanes == 1

    def element(self) -> "DataType":
        return DataType(self.base) if self.lanes != 1 else self

    def with_lanes(self, lanes: int) -> "DataType":
        """A fixed vector (or scalar) of this element type."""
        return DataType(self.base, lanes)

    def with_lanes_of(self, other: "DataType") -> "DataType":
        """This element type with the lanes of ``other``, scalable or not."""
        return DataType(self.base, other.lanes, other.scalable)


# The most lanes a vector has: TVM's dtype (DLPack's DLDataType) holds lanes in 16 bits.
MAX_LANES = 65535


@lru_cache(maxsize=None)
def parse_dtype(text: str) -> DataType:
    """Parse a dtype name; raises ValueError naming the bad text. ``uint1`` is TVM's
    other name of ``bool`` (``T.get_active_lane_mask("uint1x4", ...)``)."""
    if text == "uint1" or text.startswith("uint1x"):
        text = "bool" + text[5:]
    if text in _BASES:
        return DataType(text)
    m = _LANES.match(text)
    if m and m.group("base") in _BASES and 1 < int(m.group("lanes")) <= MAX_LANES:
        return DataType(m.group("base"), int(m.group("lanes")), bool(m.group("vscale")))
    raise ValueError(f"unknown dtype '{text}'")


def is_dtype_name(text: str) -> bool:
    try:
        parse_dtype(text)
    except ValueError:
        return False
    return True


def base_names() -> tuple[str, ...]:
    return tuple(_BASES)


BOOL = DataType("bool")
INT32 = DataType("int32")
INT64 = DataType("int64")
UINT32 = DataType("uint32")
FLOAT32 = DataType("float32")
HANDLE = DataType("handle")
VOID = DataType("void")
