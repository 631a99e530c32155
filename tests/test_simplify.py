"""Bound simplification keeps values and shrinks Min/Max trees."""

import random

import numpy as np
import pytest

from polyimage.algebra.evaluate import Evaluator
from polyimage.algebra.simplify import simplify
from polyimage.dsl import expr as E
from polyimage.dsl.printer import format_expr

A, B = E.Variable(E.Long, "a"), E.Variable(E.Long, "b")
N = E.Parameter(E.Long, "N")


def _random_expr(rng, depth):
    if depth == 0 or rng.random() < 0.25:
        return rng.choice([A, B, N, E.Const(rng.randint(-3, 3), E.Long)])
    op = rng.choice(["+", "-", "*1", "min", "max", "//"])
    a, b = _random_expr(rng, depth - 1), _random_expr(rng, depth - 1)
    if op == "*1":
        return a * 1 if rng.random() < 0.5 else a * rng.randint(-2, 2)
    if op == "//":
        return a // rng.choice([2, 3])
    return {"+": a + b, "-": a - b, "min": E.Min(a, b), "max": E.Max(a, b)}[op]


@pytest.mark.parametrize("seed", range(60))
def test_simplify_keeps_values(seed):
    rng = random.Random(seed)
    e = _random_expr(rng, 5)
    s = simplify(e)
    points = {A: np.arange(-20, 21, dtype=np.int64), B: np.arange(20, -21, -1, dtype=np.int64)}
    for n in (-7, 0, 13):
        evaluate = Evaluator({}, {}, {"N": n})
        expected = np.broadcast_to(evaluate(e, points, 41), (41,))
        actual = np.broadcast_to(evaluate(s, points, 41), (41,))
        np.testing.assert_array_equal(actual, expected, err_msg=f"{e} -> {s}")


def test_min_of_shifted_copies_keeps_one_term_per_base():
    e = E.Min(E.Min(A + 1, A - 2), E.Min(B, (A + 0) * 1))
    assert format_expr(simplify(e)) == format_expr(E.Min(A - 2, B))
    assert format_expr(simplify(E.Max(2 - (A + 3), N * 1 + 0))) == format_expr(E.Max(0 - A - 1, N))
