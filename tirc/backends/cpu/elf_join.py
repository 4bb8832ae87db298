"""Relocatable ELF objects joined into one, as ``ld -r`` joins them: the host object of a
module made in chunks (:mod:`tirc.backends.cpu.chunks`), each chunk emitted as an object of its own, in
the process that lowered it.

What it reads is what LLVM writes for a 64-bit little-endian ELF target whose
relocations carry addends (x86-64, AArch64, RISC-V 64: ``joinable_triple``); anything
else (a section group, REL relocations, extended section numbering) is refused with a
ValueError before a byte is written.

* **Sections.** Sections of one name, type, flags and entry size are concatenated, each
  piece at a multiple of its alignment, in the objects' order; the output keeps the
  order in which the kinds first appear. Relocation sections follow the section they
  patch. ``.llvm_addrsig`` (address-significance tables, for identical code folding
  only) is dropped: its symbol indices would need rewriting and nothing needs it.
* **Symbols.** Each object's local symbols are kept (section symbols become the output
  section's symbol, and relocations against them get the piece's offset added to their
  addend); a global symbol is defined once, wherever one object defines it, and is
  undefined in the output only if no object defines it. The names in ``local`` (the
  module-wide state the owner chunk defines for the others, ``CPUContext.share``) become
  local symbols of the output, as the LLVM link made them internal.
* **Values.** A symbol's value and a relocation's offset move by the offset of the
  piece its section landed at.
"""
from __future__ import annotations

import struct
from array import array

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")

SHT_NULL, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 0, 2, 3, 4, 8, 9
SHT_GROUP, SHT_SYMTAB_SHNDX = 17, 18
SHT_LLVM_ADDRSIG = 0x6FFF4C03
SHF_INFO_LINK, SHF_LINK_ORDER, SHF_GROUP = 0x40, 0x80, 0x200
SHN_UNDEF, SHN_LORESERVE = 0, 0xFF00
STB_LOCAL, STT_SECTION = 0, 3

JOINABLE_ARCHES = frozenset({"x86_64", "aarch64", "riscv64"})


def joinable_triple(triple: str) -> bool:
    """Whether LLVM writes objects of ``triple`` that ``join`` reads (ELF64, RELA)."""
    arch, _, rest = triple.partition("-")
    return arch in JOINABLE_ARCHES and not any(  # other object formats, 32-bit ELF ABIs
        word in rest for word in ("darwin", "macos", "ios", "windows", "win32", "uefi",
                                  "gnux32", "ilp32"))


class _Section:
    __slots__ = ("name", "type", "flags", "addralign", "entsize", "data", "size", "link",
                 "info")

    def __init__(self, name, type_, flags, addralign, entsize, data, size, link, info):
        self.name, self.type, self.flags = name, type_, flags
        self.addralign, self.entsize, self.data, self.size = addralign, entsize, data, size
        self.link, self.info = link, info


def _read(obj: bytes) -> tuple[bytes, int, int, list[_Section]]:
    """The ELF header fields the output copies, and the sections of ``obj``."""
    if len(obj) < _EHDR.size or obj[:4] != b"\x7fELF":
        raise ValueError("not an ELF object")
    (ident, e_type, machine, _version, _entry, _phoff, shoff, flags, _ehsize, _phentsize,
     _phnum, shentsize, shnum, shstrndx) = _EHDR.unpack_from(obj)
    if ident[4] != 2 or ident[5] != 1 or e_type != 1:
        raise ValueError("not a 64-bit little-endian relocatable ELF object")
    if shentsize != _SHDR.size or shnum == 0 or shstrndx >= SHN_LORESERVE:
        raise ValueError("extended section numbering")
    raw = [_SHDR.unpack_from(obj, shoff + i * shentsize) for i in range(shnum)]
    names = raw[shstrndx]
    names = bytes(obj[names[4]:names[4] + names[5]])
    view = memoryview(obj)  # section contents are views: nothing is copied until written
    sections = []
    for name, type_, sflags, _addr, offset, size, link, info, align, entsize in raw:
        data = view[0:0] if type_ == SHT_NOBITS else view[offset:offset + size]
        sections.append(_Section(_cstr(names, name), type_, sflags,
                                 max(align, 1), entsize, data, size, link, info))
    return ident, machine, flags, sections


def _cstr(table: bytes, at: int) -> bytes:
    return table[at:table.index(b"\0", at)]


def join(objects: list[bytes], local: frozenset[str] | set[str] = frozenset()) -> bytearray:
    """One relocatable object holding what ``objects`` hold; ``local``: global symbols
    defined by one of them that become local in the output. A ValueError for an object
    this does not read, or a global symbol two objects define."""
    read = [_read(o) for o in objects]
    ident, machine, eflags = read[0][:3]
    if any(r[1] != machine for r in read):
        raise ValueError("objects for different machines")
    local_names = {n.encode() for n in local}

    # Sections: (name, type, flags, entsize) -> output section; each input piece's offset.
    kinds: dict[tuple, int] = {}
    out_secs: list[list] = []  # [name, type, flags, align, entsize, pieces, size]
    place: list[dict[int, tuple[int, int]]] = []  # per object: input index -> (out, offset)
    for _, _, _, secs in read:
        where: dict[int, tuple[int, int]] = {}
        for i, s in enumerate(secs):
            if s.type in (SHT_REL, SHT_GROUP, SHT_SYMTAB_SHNDX) or s.flags & (SHF_GROUP
                                                                             | SHF_LINK_ORDER):
                raise ValueError(f"section {s.name.decode(errors='replace')} of a kind "
                                 "this does not join")
            if s.type in (SHT_NULL, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_LLVM_ADDRSIG):
                continue
            key = (s.name, s.type, s.flags, s.entsize)
            k = kinds.get(key)
            if k is None:
                k = kinds[key] = len(out_secs)
                out_secs.append([s.name, s.type, s.flags, 1, s.entsize, [], 0])
            o = out_secs[k]
            offset = -(-o[6] // s.addralign) * s.addralign
            o[3] = max(o[3], s.addralign)
            o[5].append((offset, s.data))
            o[6] = offset + s.size
            where[i] = (k + 1, offset)  # output section indices start at 1
        place.append(where)

    # Global symbols: where each is defined (object, symbol index), by name.
    symtabs = []
    defined: dict[bytes, tuple[int, int]] = {}
    for n, (_, _, _, secs) in enumerate(read):
        tab = [s for s in secs if s.type == SHT_SYMTAB]
        if len(tab) != 1:
            raise ValueError("an object without one symbol table")
        tab = tab[0]
        strings = bytes(secs[tab.link].data)
        syms = list(_SYM.iter_unpack(tab.data))
        symtabs.append((syms, strings, tab.info))
        for j in range(tab.info, len(syms)):
            name = _cstr(strings, syms[j][0])
            if syms[j][3] != SHN_UNDEF:
                if name in defined:
                    raise ValueError(f"symbol {name.decode(errors='replace')} is defined "
                                     "twice")
                defined[name] = (n, j)

    strtab = bytearray(b"\0")
    str_at: dict[bytes, int] = {}

    def string(s: bytes) -> int:
        at = str_at.get(s)
        if at is None:
            at = str_at[s] = len(strtab)
            strtab.extend(s + b"\0")
        return at

    out_syms: list[tuple] = [(0, 0, 0, 0, 0, 0)]
    section_sym = {}
    for k in range(len(out_secs)):
        section_sym[k + 1] = len(out_syms)
        out_syms.append((0, STT_SECTION, 0, k + 1, 0, 0))
    # symbol maps: per object, input index -> (output index, addend delta)
    maps: list[list[tuple[int, int]]] = []

    def moved(n: int, sym: tuple) -> tuple:
        name, info, other, shndx, value, size = sym
        if SHN_UNDEF < shndx < SHN_LORESERVE:
            shndx, offset = place[n][shndx]
            value += offset
        return (name, info, other, shndx, value, size)

    global_at: dict[bytes, int] = {}
    globals_out: list[tuple] = []
    for n, (syms, strings, first_global) in enumerate(symtabs):
        m = [(0, 0)] * len(syms)
        for j in range(1, first_global):
            sym = syms[j]
            if sym[1] & 0xF == STT_SECTION:
                k, offset = place[n].get(sym[3], (None, 0))
                m[j] = (section_sym[k], offset) if k is not None else (0, 0)
                continue
            m[j] = (len(out_syms), 0)
            out_syms.append(moved(n, (string(_cstr(strings, sym[0])),) + sym[1:]))
        maps.append(m)
    for name in sorted(local_names & defined.keys(), key=lambda nm: defined[nm]):
        n, j = defined[name]
        sym = symtabs[n][0][j]
        global_at[name] = len(out_syms)
        out_syms.append(moved(n, (string(name), (STB_LOCAL << 4) | (sym[1] & 0xF), 0)
                              + sym[3:]))
    first_global_out = len(out_syms)
    for n, (syms, strings, first_global) in enumerate(symtabs):
        m = maps[n]
        for j in range(first_global, len(syms)):
            name = _cstr(strings, syms[j][0])
            at = global_at.get(name)
            if at is None:
                at = global_at[name] = first_global_out + len(globals_out)
                d = defined.get(name)
                if d is None:
                    globals_out.append((string(name),) + syms[j][1:])
                else:
                    globals_out.append((string(name),) + moved(d[0], symtabs[d[0]][0][d[1]])[1:])
            m[j] = (at, 0)
    out_syms += globals_out

    # Relocations, by the output section they patch.
    relas: dict[int, list[array]] = {}
    for n, (_, _, _, secs) in enumerate(read):
        m = maps[n]
        for s in secs:
            if s.type != SHT_RELA or s.info not in place[n]:
                continue
            k, offset = place[n][s.info]
            words = array("Q")  # r_offset, r_info, r_addend (as unsigned)
            words.frombytes(s.data)
            for e in range(0, len(words), 3):
                sym, delta = m[words[e + 1] >> 32]
                words[e] += offset
                words[e + 1] = (sym << 32) | (words[e + 1] & 0xFFFFFFFF)
                if delta:
                    words[e + 2] = (words[e + 2] + delta) & 0xFFFFFFFFFFFFFFFF
            relas.setdefault(k, []).append(words)
    return _write(ident, machine, eflags, out_secs, relas, out_syms, first_global_out,
                  strtab, string)


def _write(ident, machine, eflags, out_secs, relas, out_syms, first_global, strtab,
           string) -> bytearray:
    """The output object: header, section contents, relocations, symbols, strings, then
    the section headers; laid out first and written into one buffer (a host object of
    5,000 functions is some 60 MB)."""
    symtab_name, strtab_name = string(b".symtab"), string(b".strtab")
    for k in relas:
        string(b".rela" + out_secs[k - 1][0])  # every name in the table before it is laid out
    headers: list[tuple] = [(0,) * 10]
    end = _EHDR.size

    def lay_out(size: int, align: int) -> int:
        nonlocal end
        at = -(-end // align) * align
        end = at + size
        return at

    for name, type_, flags, align, entsize, _pieces, size in out_secs:
        at = lay_out(0 if type_ == SHT_NOBITS else size, align)
        headers.append((string(name), type_, flags, 0, at, size, 0, 0, align, entsize))
    symtab_index = len(headers) + len(relas)
    strtab_index = symtab_index + 1
    rela_at = {}
    for k in sorted(relas):  # after the sections they patch, so those keep their indices
        size = sum(len(w) for w in relas[k]) * 8
        rela_at[k] = lay_out(size, 8)
        headers.append((string(b".rela" + out_secs[k - 1][0]), SHT_RELA, SHF_INFO_LINK, 0,
                        rela_at[k], size, symtab_index, k, 8, 24))
    symtab_at = lay_out(len(out_syms) * _SYM.size, 8)
    headers.append((symtab_name, SHT_SYMTAB, 0, 0, symtab_at, len(out_syms) * _SYM.size,
                    strtab_index, first_global, 8, _SYM.size))
    headers.append((strtab_name, SHT_STRTAB, 0, 0, lay_out(len(strtab), 1), len(strtab), 0, 0,
                    1, 0))
    shoff = lay_out(len(headers) * _SHDR.size, 8)

    body = bytearray(end)
    _EHDR.pack_into(body, 0, ident, 1, machine, 1, 0, 0, shoff, eflags, _EHDR.size, 0, 0,
                    _SHDR.size, len(headers), strtab_index)
    for (_, type_, *_rest, pieces, _size), header in zip(out_secs, headers[1:]):
        if type_ != SHT_NOBITS:
            for offset, piece in pieces:
                body[header[4] + offset:header[4] + offset + len(piece)] = piece
    for k, at in rela_at.items():
        for words in relas[k]:
            data = memoryview(words).cast("B")
            body[at:at + len(data)] = data
            at += len(data)
    for i, sym in enumerate(out_syms):
        _SYM.pack_into(body, symtab_at + i * _SYM.size, *sym)
    body[headers[strtab_index][4]:headers[strtab_index][4] + len(strtab)] = strtab
    for i, h in enumerate(headers):
        _SHDR.pack_into(body, shoff + i * _SHDR.size, *h)
    return body
