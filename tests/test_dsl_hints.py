"""Python builtins and NumPy functions on DSL expressions: the ones with a DSL counterpart build
it, the others fail with a message naming what to use instead."""

import math

import numpy as np
import pytest
from helpers import signature
from oracle import run_both

import polyimage
from polyimage import (
    Abs,
    Clamp,
    Condition,
    Cos,
    Double,
    Exp,
    Float,
    Floor,
    Function,
    Image,
    Int,
    Interval,
    Log,
    Long,
    Max,
    Min,
    Parameter,
    Pow,
    Sin,
    Sqrt,
    Variable,
)
from polyimage.dsl import expr as E
from polyimage.dsl.types import CONDITION_AS_NUMBER, Bool, common_type

N = Parameter(Int, "N")
x = Variable(Int, "x")
img = Image(Float, "img", [N])
e = img(x)


# -- Python builtins -------------------------------------------------------------------------


def test_abs_builds_abs():
    assert signature(abs(e)) == signature(Abs(e))
    assert signature(abs(x - 3)) == signature(Abs(x - 3))


def test_round_points_to_floor_and_cast():
    with pytest.raises(
        TypeError,
        match=r"round\(\) does not apply to the DSL expression "
        r"`img\(x\)`: use Floor\(e \+ 0.5\).*Cast\(Int, e\)",
    ):
        round(e)
    with pytest.raises(TypeError, match=r"Floor\(e \+ 0.5\)"):
        round(e, 2)


@pytest.mark.parametrize("builtin", [min, max])
def test_min_max_builtins_name_min_max_clamp(builtin):
    with pytest.raises(TypeError) as info:
        builtin(e, 1.0)
    message = str(info.value)
    for word in (
        "has no truth value",
        "Condition",
        "Select",
        "Min, Max or Clamp",
        "Python's `min` and `max`",
    ):
        assert word in message


def test_if_on_an_expression_still_names_condition_select():
    with pytest.raises(TypeError, match=r"use Condition, Select or Case instead of Python's `if`"):
        if e > 0:
            pass


@pytest.mark.parametrize(
    "convert, cast",
    [
        (int, r"Cast\(Int, e\)"),
        (float, r"Cast\(Float, e\)"),
        (math.sqrt, r"Sqrt, Exp"),
        (lambda v: [1, 2][v], r"list index.*Cast\(Int, e\)"),
        (range, r"range\(\) bound"),
    ],
)
def test_python_conversions_point_to_cast(convert, cast):
    with pytest.raises(TypeError, match=r"has no Python value.*" + cast):
        convert(x + 1)


CONDITION = x > 0


@pytest.mark.parametrize(
    "as_number",
    [
        lambda: CONDITION + CONDITION,
        lambda: CONDITION == CONDITION,
        lambda: 2 * CONDITION,
        lambda: -CONDITION,
        lambda: Max(CONDITION, 1),
        lambda: Sqrt(CONDITION),
        lambda: polyimage.Select(x > 1, CONDITION, 0),
        lambda: polyimage.saturating_cast(Int, CONDITION),
        lambda: common_type(Bool, Int),
        lambda: common_type(Bool, None, 0, 1),
    ],
)
def test_every_condition_used_as_a_number_points_to_select(as_number):
    """One way to turn a Condition into a number, said the same way by every refusal."""
    with pytest.raises(TypeError) as info:
        as_number()
    assert str(info.value).endswith(CONDITION_AS_NUMBER), str(info.value)
    assert "Select(cond, 1, 0)" in CONDITION_AS_NUMBER
    assert '"Conditions as numbers"' in CONDITION_AS_NUMBER


def test_power_operator_points_to_pow():
    with pytest.raises(
        TypeError,
        match=r"`\*\*` is not a DSL operator \(in `img\(x\) \*\* 2`\): "
        r"use Pow\(a, b\)",
    ):
        e**2
    with pytest.raises(TypeError, match=r"in `2 \*\* img\(x\)`.*Pow"):
        2**e


# -- NumPy ufuncs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ufunc, dsl",
    [
        (np.sqrt, Sqrt),
        (np.exp, Exp),
        (np.log, Log),
        (np.sin, Sin),
        (np.cos, Cos),
        (np.floor, Floor),
        (np.abs, Abs),
        (np.absolute, Abs),
        (np.negative, lambda a: -a),
    ],
)
def test_unary_ufuncs_build_dsl_functions(ufunc, dsl):
    assert signature(ufunc(e)) == signature(dsl(e))
    assert signature(ufunc(x)) == signature(dsl(x))


@pytest.mark.parametrize(
    "ufunc, dsl",
    [
        (np.power, Pow),
        (np.minimum, Min),
        (np.maximum, Max),
        (np.add, lambda a, b: a + b),
        (np.subtract, lambda a, b: a - b),
        (np.multiply, lambda a, b: a * b),
        (np.divide, lambda a, b: a / b),
        (np.floor_divide, lambda a, b: a // b),
        (np.remainder, lambda a, b: a % b),
        (np.less, lambda a, b: Condition(a, "<", b)),
        (np.greater_equal, lambda a, b: Condition(a, ">=", b)),
    ],
)
def test_binary_ufuncs_build_dsl_functions(ufunc, dsl):
    assert signature(ufunc(e, 2.0)) == signature(dsl(e, 2.0))
    assert signature(ufunc(3, x)) == signature(dsl(3, x))


def test_clip_is_clamp():
    assert signature(np.clip(e, 0.0, 1.0)) == signature(Clamp(e, 0.0, 1.0))
    assert signature(np.clip(e, None, 1.0)) == signature(Min(e, 1.0))
    assert signature(np.clip(e, min=0.0)) == signature(Max(e, 0.0))
    with pytest.raises(TypeError, match=r"numpy.clip on a DSL expression takes \(e, lo, hi\)"):
        np.clip(e, 0.0, 1.0, out=np.zeros(1))
    with pytest.raises(TypeError, match=r"numpy.clip needs a lower or an upper bound"):
        np.clip(e, None, None)


def test_numpy_scalars_on_either_side_give_the_same_expression():
    left, right = np.float32(0.5) * e, e * np.float32(0.5)
    assert left.typ is right.typ is Float
    assert signature(left) == signature(E.Const(0.5, Float) * e)
    assert signature(right) == signature(e * E.Const(0.5, Float))
    assert signature(np.float32(2) - e) == signature(E.Const(2.0, Float) - e)
    assert signature(np.float32(1) < e) == signature(Condition(E.Const(1.0, Float), "<", e))


def test_numpy_scalars_are_strong_python_numbers_weak():
    """NEP 50: a NumPy scalar keeps its type, a Python number takes the other operand's."""
    assert (e * 0.5).typ is Float
    assert (e * np.float64(0.5)).typ is (np.float64(0.5) * e).typ is Double
    assert (x + 1).typ is Int
    assert (x + np.int64(1)).typ is (np.int64(1) + x).typ is Long
    assert (x + np.int32(1)).typ is Int
    assert (np.int64(7) + np.int64(1)) == 8  # NumPy arithmetic itself is untouched
    assert (e * np.float16(1)).typ is Float  # a Half constant, computed in Float
    with pytest.raises(TypeError, match=r"float128\) polyimage has no type for"):
        e * np.longdouble(1)


def test_numpy_integers_as_sizes_stay_plain_integers():
    rows = Interval(Int, 0, np.int64(9))
    assert rows.ub.typ is Int
    assert Image(Float, "sized", [np.int64(4)]).extents[0].typ is Int


@pytest.mark.parametrize(
    "call, name, hint",
    [
        (lambda: np.tan(e), r"numpy.tan", r"Sin\(e\) / Cos\(e\)"),
        (lambda: np.rint(e), r"numpy.rint", r"Floor\(e \+ 0.5\)"),
        (lambda: np.round(e), r"numpy.round", r"Floor\(e \+ 0.5\)"),
        (lambda: np.ceil(e), r"numpy.ceil", r"-Floor\(-e\)"),
        (lambda: np.fmin(e, 1.0), r"numpy.fmin", r"Min"),
        (lambda: np.where(e > 0, e, 0.0), r"numpy.where", r"Select\(cond, a, b\)"),
        (lambda: np.arctan2(e, e), r"numpy.arctan2", r""),
        (lambda: np.add.reduce(e), r"numpy.add.reduce", r""),
        (lambda: np.sum(e), r"numpy.sum", r""),
    ],
)
def test_other_numpy_functions_are_refused_with_the_dsl_list(call, name, hint):
    with pytest.raises(
        TypeError,
        match=name + r" does not apply to the DSL expression `.*`"
        r"[:;] .*" + hint + r".*the DSL has .*Min, Max, Clamp, "
        r"Abs, Sqrt, Exp, Log, Pow, Sin, Cos, Floor, Cast and "
        r"Select",
    ):
        call()


def test_numpy_keywords_and_arrays_are_refused():
    with pytest.raises(
        TypeError,
        match=r"numpy.sqrt on DSL expressions takes no keyword "
        r"arguments, got dtype",
    ):
        np.sqrt(e, dtype=np.float64)
    with pytest.raises(
        TypeError,
        match=r"numpy.multiply: a NumPy array of shape \(2,\) cannot "
        r"be combined with a DSL expression",
    ):
        np.array([1.0, 2.0]) * e
    with pytest.raises(TypeError, match=r"cannot be combined with a DSL expression"):
        np.maximum(e, np.zeros(3))
    assert signature(np.asarray(np.float32(2)) * e) == signature(E.Const(2.0, Float) * e)
    with pytest.raises(TypeError, match=r"use Cast\(Float, e\)"):
        np.float32(e)


def test_object_arrays_of_expressions_hold_usable_expressions():
    """np.array([e1, e2]) is a container: its elements stay expressions and combine."""
    terms = np.array([img(x), img(x) * 2.0])
    assert terms.dtype == object and all(isinstance(t, E.Expr) for t in terms)
    assert signature(terms.sum()) == signature(img(x) + img(x) * 2.0)


def test_numpy_built_pipeline_runs_like_the_dsl_one(rng):
    """A stage written with NumPy's functions and scalars compiles to the DSL one's values."""
    mid = Function(([x], [Interval(Int, 0, N - 1)]), Float, "mid")
    mid.defn = [
        np.clip(
            np.sqrt(np.abs(img(x))) * np.float32(2) - np.exp(np.minimum(img(x), 0.5)),
            -1.0,
            np.float32(1),
        )
    ]
    ref = Function(([x], [Interval(Int, 0, N - 1)]), Float, "ref")
    two = E.Const(2.0, Float)
    ref.defn = [Clamp(Sqrt(Abs(img(x))) * two - Exp(Min(img(x), 0.5)), -1.0, 1.0)]
    assert signature(mid.defn[0].value) == signature(ref.defn[0].value)
    a = rng.standard_normal(37).astype(np.float32)
    got = run_both([mid], img=a)
    np.testing.assert_array_equal(got, polyimage.interpret([ref], img=a))
    assert got.min() >= -1 and got.max() <= 1
