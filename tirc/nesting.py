"""How deep tirc's input may nest. tirc never changes Python's recursion limit: within
these limits every input builds under Python's default limit (1000 frames), with room
left for the caller's own frames (tests/syntax/test_nesting.py checks it).

Limits checked where the text is read, each a located error:

- an expression is at most :data:`MAX_EXPR_DEPTH` levels deep (``tirc.frontend.exprs``).
  A level is one of the text (parentheses, a call, a subscript, an operator) or one
  operator of a chain: ``a + b + c`` is two levels deep, as it is in the IR, where each
  operator takes the ones before it as its left operand. TVM's own parser stops at a
  chain of about 240 operators;
- statement blocks nest at most :data:`MAX_BLOCK_DEPTH` levels (``for``/``if``/``with``
  bodies: ``tirc.frontend.builder``).

The statements of one block are deep in the IR without being nested in the text: each
``let``, assert or allocation wraps the statements after it, and MakePackedAPI adds about
ten for each parameter. The passes and code generators walk statements in a loop
(:mod:`tirc.ir.trampoline`), not by recursion, so these chains have no limit; only
expressions and nested blocks use Python's stack. Input that is deeper than Python's stack
allows anyway (a caller already deep in its own recursion) is the located error "input
nested too deeply", never a traceback.
"""
from __future__ import annotations

MAX_EXPR_DEPTH = 256
MAX_BLOCK_DEPTH = 100
