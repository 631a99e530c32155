"""Compiled integer expressions (algebra.compiled) give the tree-walking Evaluator's values:
random expressions with wrapping, floor division and remainder of negatives and by zero,
Min/Max, casts, Select and short-circuit `&&`/`||`, and the fallback to the Evaluator."""

import random

import numpy as np
import pytest

from polyimage.algebra.compiled import compile_expressions, wrapped
from polyimage.algebra.evaluate import Evaluator, column
from polyimage.dsl import expr as E
from polyimage.dsl.types import Char, Int, Short

VARIABLES = tuple(E.Variable(E.Long, name) for name in ("x", "y", "z"))
PARAMS = {"N": 1000, "M": -7, "BIG": 2**31 - 5}
PARAMETERS = (E.Parameter(Int, "N"), E.Parameter(Int, "M"), E.Parameter(Int, "BIG"))
INTEGER_TYPES = (E.Long, Int, Short, Char)
CONSTANTS = (0, 1, -1, 2, -3, 7, 2**31 - 1, -(2**31), 2**62, -(2**63))
# the largest the compiled code takes itself, and beyond (left to the Evaluator)
COORDINATES = (0, 1, -1, 5, -6, 100, 2**31, -(2**40), 2**40, 2**40 + 1, 2**62)


def random_integer(rng, depth):
    """A random integer expression of the variables and parameters."""
    if depth <= 0 or rng.random() < 0.2:
        kind = rng.randrange(3)
        if kind == 0:
            return rng.choice(VARIABLES)
        if kind == 1:
            return rng.choice(PARAMETERS)
        typ = rng.choice(INTEGER_TYPES)
        value = rng.choice(CONSTANTS)
        return E.Const(int(wrapped(value, typ.bits)), typ)
    kind = rng.randrange(6)
    if kind <= 2:
        op = rng.choice(("+", "-", "*", "//", "%", "min", "max"))
        a, b = random_integer(rng, depth - 1), random_integer(rng, depth - 1)
        if rng.random() < 0.5:
            return E.BinOp.make(op, a, b)
        return E.BinOp(op, a, b, rng.choice(INTEGER_TYPES))
    if kind == 3:
        return E.Cast(rng.choice(INTEGER_TYPES), random_integer(rng, depth - 1))
    if kind == 4:
        return E.Select(
            random_condition(rng, depth - 1),
            random_integer(rng, depth - 1),
            random_integer(rng, depth - 1),
        )
    if rng.random() < 0.5:
        return E.Cast(rng.choice(INTEGER_TYPES), random_condition(rng, depth - 1))
    return E.Neg(random_integer(rng, depth - 1))


def random_condition(rng, depth):
    """A random condition: comparisons combined by `&&`, `||` and negation."""
    kind = rng.randrange(5) if depth > 0 else 0
    if kind <= 1:
        op = rng.choice(("<", "<=", ">", ">=", "==", "!="))
        return E.Condition(random_integer(rng, depth - 1), op, random_integer(rng, depth - 1))
    if kind == 2:
        return ~random_condition(rng, depth - 1)
    if kind == 3:
        return E.Condition(E.Cast(Int, E.Cast(E.Bool, random_integer(rng, depth - 1))), "==", 1)
    op = rng.choice(("&&", "||"))
    return E.Logic(op, random_condition(rng, depth - 1), random_condition(rng, depth - 1))


def tree_values(e, points):
    """The Evaluator's value of `e` at each of `points` (rows of variable values)."""
    count = len(points)
    columns = {v: np.array(points[:, k], np.int64) for k, v in enumerate(VARIABLES)}
    return column(Evaluator({}, {}, PARAMS)(e, columns, count), count).tolist()


def check_same(exprs, rng):
    function = compile_expressions(exprs, VARIABLES, PARAMS)
    points = np.array(
        [
            [rng.choice((0, 1, -1, 5, -6, 100, -(2**40), 2**62)) for _ in VARIABLES]
            for _ in range(24)
        ]
    )
    expected = [tree_values(e, points) for e in exprs]
    for k, point in enumerate(points.tolist()):
        got = function(*point)
        for e, values, value in zip(exprs, expected, got):
            assert value == values[k] and type(value) is type(values[k]), (str(e), point)


@pytest.mark.parametrize("seed", range(40))
def test_random_expressions_match_the_evaluator(seed):
    rng = random.Random(seed)
    exprs = [random_integer(rng, 5) for _ in range(6)] + [random_condition(rng, 4)]
    check_same(exprs, rng)


def test_short_circuit_and_select_skip_the_other_side():
    x, y = VARIABLES[:2]
    guarded = E.Select(y != 0, x // y, E.Const(-1, E.Long))
    either = E.Logic("||", y == 0, (x // y) > 2)
    both = E.Logic("&&", y != 0, (x % y) < 0)
    check_same([guarded, either, both, x // y, x % y, -x // 4, (-x) % 4], random.Random(1))


def test_shared_subexpressions_are_computed_where_every_path_has_them():
    x, y = VARIABLES[:2]
    empty, scaled = (x > y) | (y < 0), x * 3 - y
    first = [E.Select(empty, E.Const(5, E.Long), scaled), scaled + 1, E.Select(empty, scaled, x)]
    then = [scaled // 2, E.Select(empty, -scaled, scaled % 4), E.Logic("&&", empty, scaled > 0)]
    check_same(first + then, random.Random(3))
    check_same(then + first, random.Random(4))


def test_unsupported_nodes_fall_back_to_the_evaluator():
    x = VARIABLES[0]
    halved = E.Cast(E.Long, E.Cast(E.Double, x) * 0.5)
    absolute = E.Call.make("abs", x)
    check_same([halved, absolute, x + 1], random.Random(2))


def test_nested_expressions_give_values_nested_alike():
    x, y = VARIABLES[:2]
    halved = E.Cast(E.Long, E.Cast(E.Double, x) * 0.5)  # left to the Evaluator
    function = compile_expressions(((x + 1, y * 2), (halved,), ()), VARIABLES, PARAMS)
    assert function(7, -3, 0) == ((8, -6), (3,), ())
    assert function(2**41, 1, 0) == ((2**41 + 1, 2), (2**40,), ())
    assert compile_expressions(x - y, VARIABLES, PARAMS)(5, 9, 0) == -4


def test_wrapped_wraps_like_fixed_width_integers():
    assert wrapped(2**31, 32) == -(2**31)
    assert wrapped(-(2**63) - 1, 64) == 2**63 - 1
    assert wrapped(255, 8) == -1
    assert wrapped(5, 16) == 5
