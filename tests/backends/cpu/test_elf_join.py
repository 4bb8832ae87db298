"""Relocatable objects joined into one (``backends.elf_join``, the host object of a module
made in chunks): objects LLVM writes for three small modules that call each other,
share a global made local by the join, and each have their own private strings,
constant-pool entries and zeroed data, joined, linked with a C driver and run, on this
machine and, where qemu-user and the cross compilers are there, for AArch64 and RISC-V
64. Whole modules in chunks are tested in test_host_chunks.py."""
from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from llvmlite import binding as llvm

from tirc.backends.cpu.elf_join import join, joinable_triple
from tirc.backends.llvm.context import init_llvm
from tirc.target.kinds import host_triple

# ``shared`` is defined by the first module and used by the second; the join makes it
# local. Both define a private @.str (the same local name, two different strings) and
# use a double constant (a constant-pool entry, referenced through a local label).
FIRST = r"""
@shared = global i32 7
@.str = private unnamed_addr constant [6 x i8] c"hello\00"
define i32 @f(i32 %x) {
  %s = load i32, ptr @shared
  %c = load i8, ptr getelementptr (i8, ptr @.str, i64 1)
  %w = zext i8 %c to i32
  %a = mul i32 %x, 3
  %b = add i32 %a, %s
  %r = add i32 %b, %w
  ret i32 %r
}
define double @scale(double %x) {
  %r = fmul double %x, 1.25
  ret double %r
}
"""
SECOND = r"""
@shared = external global i32
@.str = private unnamed_addr constant [4 x i8] c"xyz\00"
declare i32 @f(i32)
define i32 @g(i32 %x) {
  %v = call i32 @f(i32 %x)
  %c = load i8, ptr getelementptr (i8, ptr @.str, i64 1)
  %w = zext i8 %c to i32
  %s = load i32, ptr @shared
  %t = add i32 %v, %w
  %r = add i32 %t, %s
  store i32 %r, ptr @shared
  ret i32 %r
}
define double @shift(double %x) {
  %r = fadd double %x, 0.75
  ret double %r
}
"""
THIRD = r"""
@buf = internal global [64 x i32] zeroinitializer
declare i32 @g(i32)
define i32 @h(i32 %i) {
  %p = getelementptr [64 x i32], ptr @buf, i64 0, i32 %i
  %v = call i32 @g(i32 %i)
  store i32 %v, ptr %p
  %q = getelementptr [64 x i32], ptr @buf, i64 0, i32 0
  %z = load i32, ptr %q
  %r = add i32 %v, %z
  ret i32 %r
}
"""
DRIVER = r"""
#include <stdio.h>
int f(int); int g(int); int h(int); double scale(double); double shift(double);
int main(void) {
  int a = f(2), b = g(2), c = h(3);  /* in this order: g changes shared */
  printf("%d %d %d %g %g\n", a, b, c, scale(2.0), shift(2.0));
  return 0;
}
"""
# f(2) = 6 + 7 + 'e'(101) = 114; g(2) = f(2) + 'y'(121) + 7 = 242, and shared becomes 242;
# h(3) = g(3) + buf[0] (0) = (9 + 242 + 101) + 121 + 242 = 715
EXPECTED = "114 242 715 2.5 2.75"

# arch -> (triple, cross compiler, qemu, sysroot)
CROSS = {
    "aarch64": ("aarch64-unknown-linux-gnu", "aarch64-linux-gnu-gcc", "qemu-aarch64",
                "/usr/aarch64-linux-gnu"),
    "riscv64": ("riscv64-unknown-linux-gnu", "riscv64-linux-gnu-gcc", "qemu-riscv64",
                "/usr/riscv64-linux-gnu"),
}


def _objects(triple: str, texts=(FIRST, SECOND, THIRD)) -> list[bytes]:
    init_llvm()
    features = "+m,+a,+f,+d,+c" if triple.startswith("riscv64") else ""
    machine = llvm.Target.from_triple(triple).create_target_machine(
        features=features, reloc="pic", opt=2, abiname="lp64d" if features else "")
    out = []
    for text in texts:
        mod = llvm.parse_assembly(text)
        mod.triple = triple
        out.append(machine.emit_object(mod))
    return out


def _symbols(obj: bytes) -> dict[str, int]:
    """Symbol name -> binding (0 local, 1 global), read back with our own eyes."""
    shoff, shnum = struct.unpack_from("<Q", obj, 40)[0], struct.unpack_from("<H", obj, 60)[0]
    heads = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + 64 * i) for i in range(shnum)]
    symtab = next(h for h in heads if h[1] == 2)
    strings = heads[symtab[6]]
    names = obj[strings[4]:strings[4] + strings[5]]
    out = {}
    for i in range(symtab[5] // 24):
        name, info = struct.unpack_from("<IB", obj, symtab[4] + 24 * i)
        out[names[name:names.index(b"\0", name)].decode()] = info >> 4
    return out


def _link_and_run(tmp_path: Path, obj: bytes, cc: list[str], run: list[str]) -> str:
    (tmp_path / "joined.o").write_bytes(obj)
    (tmp_path / "drv.c").write_text(DRIVER)
    exe = tmp_path / "drv"
    subprocess.run([*cc, str(tmp_path / "drv.c"), str(tmp_path / "joined.o"), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    return subprocess.run([*run, str(exe)], check=True, capture_output=True, text=True,
                          timeout=120).stdout.strip()


@pytest.mark.skipif(shutil.which("cc") is None or not joinable_triple(host_triple()),
                    reason="needs a C compiler and an ELF64 host")
def test_joined_objects_link_and_run(tmp_path):
    joined = join(_objects(host_triple()), {"shared"})
    assert _link_and_run(tmp_path, joined, ["cc"], []) == EXPECTED


@pytest.mark.parametrize("arch", sorted(CROSS))
def test_joined_objects_run_on_other_arches(arch, tmp_path):
    triple, gcc, qemu, sysroot = CROSS[arch]
    if not (shutil.which(gcc) and shutil.which(qemu) and Path(sysroot).is_dir()):
        pytest.skip(f"needs {qemu} and {gcc} (apt-get install qemu-user gcc-{arch}-linux-gnu)")
    joined = join(_objects(triple), {"shared"})
    assert _link_and_run(tmp_path, joined, [gcc], [qemu, "-L", sysroot]) == EXPECTED


def test_shared_state_becomes_local_and_the_rest_stays_global():
    syms = _symbols(bytes(join(_objects(host_triple()), {"shared"})))
    assert syms["shared"] == 0
    assert {syms[n] for n in ("f", "g", "h", "scale", "shift")} == {1}
    assert syms["buf"] == 0
    # without the local set it stays global, defined once
    assert _symbols(bytes(join(_objects(host_triple()))))["shared"] == 1


def test_one_object_joined_alone_keeps_its_symbols():
    obj = _objects(host_triple(), (FIRST,))[0]
    assert _symbols(bytes(join([obj]))).keys() >= {"f", "scale", "shared"}


def test_a_symbol_defined_twice_is_refused():
    with pytest.raises(ValueError, match="symbol f is defined twice"):
        join(_objects(host_triple(), (FIRST, FIRST.replace("@shared = global i32 7",
                                                                 "@shared = external global i32"))))


@pytest.mark.parametrize("data, why", [
    (b"\xcf\xfa\xed\xfe" + bytes(60), "not an ELF object"),  # Mach-O
    (b"\x7fELF\x01\x01\x01" + bytes(57), "not a 64-bit little-endian relocatable"),
    (b"\x7fELF\x02\x02\x01" + bytes(57), "not a 64-bit little-endian relocatable"),
])
def test_objects_it_does_not_read_are_refused(data, why):
    with pytest.raises(ValueError, match=why):
        join([data])


@pytest.mark.parametrize("triple, ok", [
    ("x86_64-unknown-linux-gnu", True), ("aarch64-linux-gnu", True),
    ("riscv64-unknown-linux-gnu", True), ("x86_64-apple-darwin", False),
    ("arm64-apple-macos", False), ("x86_64-pc-windows-msvc", False),
    ("i686-linux-gnu", False), ("armv7a-linux-gnueabihf", False),
    ("x86_64-pc-linux-gnux32", False), ("aarch64-linux-gnu_ilp32", False),
    ("aarch64_be-linux-gnu", False),
])
def test_joinable_triples(triple, ok):
    assert joinable_triple(triple) is ok
