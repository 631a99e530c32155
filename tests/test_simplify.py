"""Bound simplification keeps values and shrinks Min/Max trees."""

import random

import numpy as np
import pytest

from polyimage.algebra.evaluate import Evaluator
from polyimage.algebra.simplify import extremum, simplify
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


def _depth(e):
    kids = [k for k in (getattr(e, "a", None), getattr(e, "b", None)) if isinstance(k, E.Expr)]
    return 1 + max((_depth(k) for k in kids), default=0)


@pytest.mark.parametrize("op", ["min", "max"])
def test_an_extremum_of_many_terms_is_a_balanced_tree_of_the_same_value(op):
    """99 clamped reads (a 7x7 window read twice, as a bilateral filter does): one term per
    distinct read, a tree of depth log2, equal to the chain it replaces at every point."""
    pick = E.Min if op == "min" else E.Max
    terms = [E.Max(E.Min(A + k, N - 1), E.Const(0, E.Long)) for k in range(-3, 4) for _ in (0, 1)]
    terms += [E.Min(B - k, N) for k in range(-40, 43)]
    chain = terms[0]
    for t in terms[1:]:
        chain = pick(chain, t)
    balanced = extremum(op, terms)
    assert _depth(balanced) <= 2 + int(np.ceil(np.log2(7 + 83))) + 2
    points = {A: np.arange(-20, 21, dtype=np.int64), B: np.arange(20, -21, -1, dtype=np.int64)}
    for n in (-7, 0, 13):
        evaluate = Evaluator({}, {}, {"N": n})
        np.testing.assert_array_equal(
            np.broadcast_to(evaluate(balanced, points, 41), (41,)),
            np.broadcast_to(evaluate(chain, points, 41), (41,)),
        )
    assert _depth(simplify(chain)) == _depth(balanced)
