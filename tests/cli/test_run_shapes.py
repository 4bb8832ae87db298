"""``tirc run`` evaluates the manifest's symbolic shapes with its own small parser (no
Python ``ast``): integers, dimension names, ``+ - * // / %``, unary minus, parentheses
and ``T.min``/``T.max``, with the precedence TVMScript gives them."""
from __future__ import annotations

import pytest

from tirc.run import RunError, _eval_dim

DIMS = {"n": 1000, "m": 7}


@pytest.mark.parametrize("text, value", [
    ("n", 1000), ("(n + 255) // 256", 4), ("T.max(n, 1)", 1000), ("n * m - 3", 6997),
    ("-n + 2 * m", -986), ("n % 7", 6), ("T.min(n, m, 3)", 3), ("1 + 2 * 3", 7),
    ("(1 + 2) * 3", 9), ("10 - 3 - 2", 5), ("100 // 10 // 5", 2), ("n / 3", 333), ("42", 42),
])
def test_shapes_evaluate_as_tvmscript_reads_them(text, value):
    assert _eval_dim(text, DIMS, "A") == value


@pytest.mark.parametrize("text", ["n +", "foo.bar", "n $ 2", "((((n", "n // 0", "", "n n",
                                  "__import__('os')", "(" * 200 + "1" + ")" * 200])
def test_anything_else_is_a_clear_error(text):
    with pytest.raises(RunError, match="cannot evaluate the shape"):
        _eval_dim(text, DIMS, "A")


def test_a_missing_dimension_names_the_option_to_give():
    with pytest.raises(RunError, match=r"needs the dimension 'k': give --dim k=VALUE") as e:
        _eval_dim("k * 2", DIMS, "A")
    assert e.value.status == 2
