"""Broken variants of valid TIR text, for the tests and the input fuzzer
(``bench/fuzz_input.py``): mutations that always break the text (deleted brackets,
truncations after an opener, unknown ``T.`` names, stray tokens, bad indentation,
unknown dtypes) and blind ones that may or may not (byte flips, token deletions, swapped
lines)."""
from __future__ import annotations

import random
import re


def _code_positions(text: str, chars: str) -> list[int]:
    """Offsets of ``chars`` outside comments and string literals."""
    out, quote, comment = [], None, False
    for i, ch in enumerate(text):
        if ch == "\n":
            comment, quote = False, None
        elif comment:
            continue
        elif quote:
            if ch == quote and text[i - 1] != "\\":
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            comment = True
        elif ch in chars:
            out.append(i)
    return out


def _body_lines(lines: list[str]) -> list[int]:
    """Indices of code lines indented like the line before them (not a block's first)."""
    out = []
    for i in range(1, len(lines)):
        cur, prev = lines[i], lines[i - 1]
        if not cur.strip() or cur.lstrip().startswith("#") or not prev.strip():
            continue
        indent = len(cur) - len(cur.lstrip())
        if indent and indent == len(prev) - len(prev.lstrip()) and not prev.rstrip().endswith(":"):
            out.append(i)
    return out


def mutants(text: str, rng: random.Random, per_kind: int):
    brackets = _code_positions(text, "()[]{}")
    for pos in rng.sample(brackets, min(per_kind, len(brackets))):
        yield "deleted bracket", text[:pos] + text[pos + 1:]
    for pos in rng.sample(brackets, min(per_kind, len(brackets))):
        if text[pos] in "([{":
            yield "truncated", text[:pos + 1]
    cuts = _code_positions(text, ",=:")
    for pos in rng.sample(cuts, min(per_kind, len(cuts))):
        yield "truncated", text[:pos + 1]
    names = [m for m in re.finditer(r"\bT\.([A-Za-z_]\w*)", text)
             if not text[text.rfind("\n", 0, m.start()) + 1:m.start()].lstrip().startswith("#")]
    for m in rng.sample(names, min(per_kind, len(names))):
        yield "unknown name", text[:m.end()] + "_nosuch" + text[m.end():]
    spots = _code_positions(text, " ")
    for pos in rng.sample(spots, min(per_kind, len(spots))):
        yield "stray token", text[:pos] + " $ " + text[pos:]
    for pos in rng.sample(spots, min(per_kind // 2, len(spots))):
        yield "stray token", text[:pos] + " ) " + text[pos:]
    lines = text.split("\n")
    body = _body_lines(lines)
    for i in rng.sample(body, min(per_kind, len(body))):
        changed = list(lines)
        changed[i] = " " + changed[i] if rng.random() < 0.5 else changed[i][1:]
        yield "bad indentation", "\n".join(changed)
    for m in list(re.finditer(r'"(float32|int32|float16)"', text))[:per_kind]:
        yield "unknown dtype", text[:m.start() + 1] + "float33" + text[m.end() - 1:]


def blind_mutants(text: str, rng: random.Random, count: int):
    """Byte flips, token deletions and swapped lines: the result may still be valid."""
    lines = text.split("\n")
    tokens = [m for m in re.finditer(r"\S+", text)]
    for _ in range(count):
        kind = rng.choice(("byte flip", "token deletion", "swapped lines"))
        if kind == "byte flip" and text:
            data = bytearray(text.encode())
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
            yield kind, bytes(data)
        elif kind == "token deletion" and tokens:
            m = rng.choice(tokens)
            yield kind, (text[:m.start()] + text[m.end():]).encode()
        elif len(lines) > 1:
            i, j = rng.sample(range(len(lines)), 2)
            swapped = list(lines)
            swapped[i], swapped[j] = swapped[j], swapped[i]
            yield kind, "\n".join(swapped).encode()


# Values that break limits: out of int32/int64 range, beyond every float type, zero.
_HOSTILE_INTS = ("0", "-1", "2147483648", "-2147483649", "99999999999999999999", "65536")
_HOSTILE_FLOATS = ("1e39", "-1e39", "3.5e308", "70000.0", "1e-50")


def hostile_mutants(text: str, rng: random.Random, per_kind: int):
    """Valid-looking variants aimed at the limits a compiler must check (docs/cli.md, Limits): huge
    and out-of-range literals, zero divisors, constant indices outside their buffer,
    deep nesting, bad target options. The result may be valid; the compiler must then
    build it or refuse it with a located error — never crash, hang or miscompile."""
    ints = [m for m in re.finditer(r"(?<![\w.])\d+(?![\w.])", text)
            if m.start() in set(_code_positions(text, "0123456789"))]
    for m in rng.sample(ints, min(per_kind, len(ints))):
        yield "hostile integer", text[:m.start()] + rng.choice(_HOSTILE_INTS) + text[m.end():]
    floats = [m for m in re.finditer(r"(?<![\w.])\d+\.\d*(e[-+]?\d+)?", text)]
    for m in rng.sample(floats, min(per_kind, len(floats))):
        yield "hostile float", text[:m.start()] + rng.choice(_HOSTILE_FLOATS) + text[m.end():]
    for m in rng.sample(ints, min(per_kind, len(ints))):
        op = rng.choice((" // 0", " % 0", " // (1 - 1)"))
        yield "zero divisor", text[:m.end()] + op + text[m.end():]
    subscripts = [m for m in re.finditer(r"\b[A-Za-z_]\w*\[([^\[\]:]+)\]", text)
                  if m.start() in set(_code_positions(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"))]
    for m in rng.sample(subscripts, min(per_kind, len(subscripts))):
        parts = m.group(1).split(",")
        k = rng.randrange(len(parts))
        parts[k] = rng.choice((" 1000000", " -1", " 2147483647"))
        yield "constant index out of range", text[:m.start(1)] + ",".join(parts) + text[m.end(1):]
    stores = [m for m in re.finditer(r"(?m)^(\s+\w+\[[^\n]*\] = )([^\n]+)$", text)]
    for m in rng.sample(stores, min(per_kind, len(stores))):
        depth = rng.choice((200, 2000, 20000))
        deep = "(" * depth + m.group(2) + ")" * depth
        yield "deep nesting", text[:m.start(2)] + deep + text[m.end(2):]
    for m in list(re.finditer(r'"arch": "sm_\d+a?"', text))[:per_kind]:
        bad = rng.choice(('"arch": "sm_1"', '"arch": "sm_90", "mcpu": "notacpu"',
                          '"arch": "sm_90", "max_num_threads": -1'))
        yield "bad target option", text[:m.start()] + bad + text[m.end():]
