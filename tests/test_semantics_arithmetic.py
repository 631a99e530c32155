"""Semantics of arithmetic: Clamp, Min and Max (NaN and infinities included), floor
division and modulo of integers and floats, and the math functions."""

import math

import numpy as np
import pytest
from helpers import (
    FLOAT_TYPES,
    IGNORE,
    INT_TYPES,
    box,
    grid,
    interesting_ints,
    random_values,
    wrap,
)
from oracle import run_both

import polyimage
from polyimage import (
    Abs,
    Cast,
    Char,
    Clamp,
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
    Short,
    Sin,
    Sqrt,
    UChar,
    UInt,
    ULong,
    Variable,
)

# -- Clamp, Min, Max -------------------------------------------------------------------------------


@pytest.mark.parametrize("typ", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("shape", [(13, 17), (1, 9), (9, 1)])
def test_clamp_min_max_float_with_nan(rng, typ, shape):
    R, C, x, y = grid()
    a_img, b_img = Image(typ, "a", [R, C]), Image(typ, "b", [R, C])
    outs = {}
    for name, expr in [
        ("clamped", Clamp(a_img(x, y), -0.5, 0.5)),
        ("lo", Min(a_img(x, y), b_img(x, y))),
        ("hi", Max(a_img(x, y), b_img(x, y))),
        ("lo_const", Min(a_img(x, y), 0.25)),
        ("hi_const", Max(-0.25, b_img(x, y))),
    ]:
        f = Function(([x, y], box(R, C)), typ, name)
        f.defn = [expr]
        outs[name] = f
    dt = typ.dtype.type
    a = random_values(rng, shape, typ)
    b = random_values(rng, shape, typ)
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    flat_a[::3] = np.nan
    flat_b[1::4] = np.nan
    flat_a[1::5] = np.inf
    flat_b[2::5] = -np.inf
    refs = (
        np.minimum(np.maximum(a, dt(-0.5)), dt(0.5)),
        np.minimum(a, b),
        np.maximum(a, b),
        np.minimum(a, dt(0.25)),
        np.maximum(dt(-0.25), b),
    )
    for r in refs:
        assert r.dtype == typ.dtype
    assert np.isnan(refs[0].reshape(-1)[0]) and np.isnan(refs[1].reshape(-1)[0])
    got = run_both(list(outs.values()), reference=refs, a=a, b=b)
    # NaN propagates from either operand, as numpy.minimum / numpy.maximum
    np.testing.assert_array_equal(np.isnan(got[1]), np.isnan(a) | np.isnan(b))
    np.testing.assert_array_equal(np.isnan(got[2]), np.isnan(a) | np.isnan(b))


@pytest.mark.parametrize("typ", [Char, UChar, Int, UInt, Long, ULong], ids=str)
def test_clamp_min_max_integer(rng, typ):
    R, C, x, y = grid()
    a_img, b_img = Image(typ, "a", [R, C]), Image(typ, "b", [R, C])
    info = np.iinfo(typ.dtype)
    lo, hi = (int(info.min) + 1, 5) if typ.is_signed else (3, int(info.max) - 1)
    clamped = Function(([x, y], box(R, C)), typ, "clamped")
    clamped.defn = [Clamp(a_img(x, y), lo, hi)]
    small = Function(([x, y], box(R, C)), typ, "small")
    small.defn = [Min(a_img(x, y), b_img(x, y))]
    big = Function(([x, y], box(R, C)), typ, "big")
    big.defn = [Max(a_img(x, y), b_img(x, y))]
    mixed = Function(([x, y], box(R, C)), Double, "mixed")
    mixed.defn = [Min(a_img(x, y), Cast(Float, b_img(x, y)) * 0.5)]
    shape = (11, 13)
    a = random_values(rng, shape, typ)
    b = random_values(rng, shape, typ)
    a.reshape(-1)[:4] = [info.min, info.max, lo, hi]
    b.reshape(-1)[:4] = [info.max, info.min, hi, lo]
    dt = typ.dtype.type
    refs = (
        np.clip(a, dt(lo), dt(hi)),
        np.minimum(a, b),
        np.maximum(a, b),
        np.minimum(
            a.astype(np.float64), (b.astype(np.float32) * np.float32(0.5)).astype(np.float64)
        ),
    )
    run_both([clamped, small, big, mixed], reference=refs, a=a, b=b)


# -- division and modulo ---------------------------------------------------------------------------


@pytest.mark.parametrize("typ", INT_TYPES, ids=str)
def test_integer_floor_division_and_modulo(typ):
    R, C, x, y = grid()
    a_img, b_img = Image(typ, "a", [R, C]), Image(typ, "b", [R, C])
    outs = []
    exprs = [
        ("q", a_img(x, y) / b_img(x, y)),
        ("qq", a_img(x, y) // b_img(x, y)),
        ("r", a_img(x, y) % b_img(x, y)),
        ("q3", a_img(x, y) / 3),
        ("r3", a_img(x, y) % 3),
    ]
    if typ.is_signed:
        exprs += [
            ("qm3", a_img(x, y) // -3),
            ("rm3", a_img(x, y) % -3),
            ("qm1", a_img(x, y) // -1),
            ("rm1", a_img(x, y) % -1),
        ]
    for name, e in exprs:
        assert e.typ is typ
        if name.startswith("q"):
            assert e.op == "//"  # `/` between integers is floor division
        f = Function(([x, y], box(R, C)), typ, name)
        f.defn = [e]
        outs.append(f)
    vals = np.array(interesting_ints(typ.dtype), typ.dtype)
    a, b = np.meshgrid(vals, vals, indexing="ij")
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    dt = typ.dtype.type
    with np.errstate(**IGNORE):
        refs = [
            np.floor_divide(a, b),
            np.floor_divide(a, b),
            np.remainder(a, b),
            np.floor_divide(a, dt(3)),
            np.remainder(a, dt(3)),
        ]
        if typ.is_signed:
            refs += [
                np.floor_divide(a, dt(-3)),
                np.remainder(a, dt(-3)),
                np.floor_divide(a, dt(-1)),
                np.remainder(a, dt(-1)),
            ]
    # independent spot checks of the reference: Python semantics, 0 on division by zero, wrap
    for ai, bi, qi, ri in zip(
        a.ravel().tolist(), b.ravel().tolist(), refs[0].ravel().tolist(), refs[2].ravel().tolist()
    ):
        if bi == 0:
            assert qi == 0 and ri == 0
        else:
            assert qi == wrap(ai // bi, typ.dtype) and ri == ai % bi
    if typ.is_signed:
        m = int(np.iinfo(typ.dtype).min)
        assert refs[0][vals.tolist().index(m), vals.tolist().index(-1)] == m  # MIN // -1 wraps
    run_both(outs, reference=tuple(refs), a=a, b=b)


# 0.3 // 0.01, 3.3 // 0.9, 2.3 // 0.7: (a - fmod(a, b)) / b rounds below the integer there
FLOAT_DIV_VALUES = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    2.0,
    -2.0,
    5.5,
    -5.5,
    0.3,
    -0.3,
    7.25,
    -7.25,
    1e30,
    -1e30,
    1e-30,
    0.01,
    0.9,
    3.3,
    -2.3,
    0.7,
    100.0,
    math.inf,
    -math.inf,
    math.nan,
]


@pytest.mark.parametrize("typ", FLOAT_TYPES, ids=str)
def test_float_floor_division_and_modulo(typ):
    R, C, x, y = grid()
    a_img, b_img = Image(typ, "a", [R, C]), Image(typ, "b", [R, C])
    exprs = [
        ("fq", a_img(x, y) // b_img(x, y)),
        ("fr", a_img(x, y) % b_img(x, y)),
        ("ft", a_img(x, y) / b_img(x, y)),
        ("fq2", a_img(x, y) // 2),
        ("fr2", a_img(x, y) % -2.5),
    ]
    outs = []
    for name, e in exprs:
        assert e.typ is typ
        f = Function(([x, y], box(R, C)), typ, name)
        f.defn = [e]
        outs.append(f)
    vals = np.array(FLOAT_DIV_VALUES, typ.dtype)
    a, b = np.meshgrid(vals, vals, indexing="ij")
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    dt = typ.dtype.type
    with np.errstate(**IGNORE):
        refs = (
            np.floor_divide(a, b),
            np.remainder(a, b),
            np.true_divide(a, b),
            np.floor_divide(a, dt(2)),
            np.remainder(a, dt(-2.5)),
        )
    # spot checks of the reference against Python's float semantics
    assert refs[0][vals.tolist().index(-1.0), vals.tolist().index(math.inf)] == -1.0
    assert refs[1][vals.tolist().index(-1.0), vals.tolist().index(math.inf)] == math.inf
    assert refs[1][vals.tolist().index(5.5), vals.tolist().index(-2.0)] == -0.5
    got = run_both(outs, reference=refs, a=a, b=b)
    # zero results carry numpy's sign as well
    for i, (g, r) in enumerate(zip(got, refs)):
        zero = (r == 0) & ~np.isnan(r)
        np.testing.assert_array_equal(
            np.signbit(g[zero]),
            np.signbit(r[zero]),
            err_msg=f"sign of zero results of {exprs[i][0]}",
        )


# -- math functions --------------------------------------------------------------------------------


@pytest.mark.parametrize("typ", FLOAT_TYPES, ids=str)
def test_math_functions_float(rng, typ):
    N, x = Parameter(Int, "N"), Variable(Int, "x")
    a_img, b_img = Image(typ, "a", [N]), Image(typ, "b", [N])
    dom = [Interval(Int, 0, N - 1)]
    specs = [
        ("fsqrt", Sqrt, np.sqrt),
        ("fexp", Exp, np.exp),
        ("flog", Log, np.log),
        ("fsin", Sin, np.sin),
        ("fcos", Cos, np.cos),
        ("fabsval", Abs, np.abs),
        ("ffloor", Floor, np.floor),
    ]
    outs, refs = [], []
    a = np.concatenate(
        [
            random_values(rng, (40,), typ, -10, 10),
            np.array(
                [
                    0.0,
                    -0.0,
                    1.0,
                    -1.0,
                    0.5,
                    -2.5,
                    1e-3,
                    100.0,
                    1e30,
                    -1e30,
                    np.inf,
                    -np.inf,
                    np.nan,
                ],
                typ.dtype,
            ),
        ]
    )
    b = np.concatenate(
        [
            random_values(rng, (40,), typ, -3, 3),
            np.array(
                [0.0, -1.0, 2.0, 0.5, 3.0, -2.0, np.nan, 0.5, 2.0, 3.0, -1.0, 0.5, 0.0], typ.dtype
            ),
        ]
    )
    with np.errstate(**IGNORE):
        for name, fn, ref_fn in specs:
            e = fn(a_img(x))
            assert e.typ is typ
            f = Function(([x], dom), typ, name)
            f.defn = [e]
            outs.append(f)
            refs.append(ref_fn(a))
        p = Function(([x], dom), typ, "fpow")
        p.defn = [Pow(a_img(x), b_img(x))]
        outs.append(p)
        refs.append(np.power(a, b))
        p2 = Function(([x], dom), typ, "fpow2")
        p2.defn = [Pow(a_img(x), 2) + Sqrt(Abs(a_img(x)))]
        outs.append(p2)
        refs.append(np.power(a, typ.dtype.type(2)) + np.sqrt(np.abs(a)))
    for r in refs:
        assert r.dtype == typ.dtype
    run_both(outs, reference=tuple(refs), a=a, b=b)


def test_math_functions_on_integers(rng):
    N, x = Parameter(Int, "N"), Variable(Int, "x")
    a_img, b_img = Image(Int, "a", [N]), Image(Int, "b", [N])
    s_img = Image(Short, "s", [N])
    dom = [Interval(Int, 0, N - 1)]
    a = np.concatenate(
        [
            rng.integers(-50, 50, 30, dtype=np.int32),
            np.array([0, 1, -1, 2**31 - 1, -(2**31), 700], np.int32),
        ]
    )
    b = np.concatenate(
        [rng.integers(-3, 4, 30, dtype=np.int32), np.array([0, -1, 3, 2, 1, -2], np.int32)]
    )
    s = rng.integers(-32768, 32768, a.size).astype(np.int16)
    s[0] = -32768
    d = a.astype(np.float64)
    with np.errstate(**IGNORE):
        specs = [
            ("isqrt", Sqrt(a_img(x)), Double, np.sqrt(d)),
            ("iexp", Exp(a_img(x)), Double, np.exp(d)),
            ("ilog", Log(a_img(x)), Double, np.log(d)),
            ("isin", Sin(a_img(x)), Double, np.sin(d)),
            ("icos", Cos(a_img(x)), Double, np.cos(d)),
            ("ipow", Pow(a_img(x), b_img(x)), Double, np.power(d, b.astype(np.float64))),
            ("iabs", Abs(a_img(x)), Int, np.abs(a)),
            ("ifloor", Floor(a_img(x)), Int, a),
            ("sabs", Abs(s_img(x)), Short, np.abs(s)),
            ("sfloor", Floor(s_img(x)) - 1, Short, s - np.int16(1)),
        ]
    outs, refs = [], []
    for name, e, typ, ref in specs:
        assert e.typ is typ, f"{name}: {e.typ}"
        f = Function(([x], dom), typ, name)
        f.defn = [e]
        outs.append(f)
        refs.append(np.asarray(ref))
        assert refs[-1].dtype == typ.dtype
    run_both(outs, reference=tuple(refs), a=a, b=b, s=s)


@pytest.mark.parametrize("typ", [Char, Short, Int, Long])
@pytest.mark.parametrize("divisor", [1, 2, 8, 64])
def test_division_and_modulo_by_powers_of_two_are_floor_and_python_modulo(typ, divisor):
    """Printed as shifts and masks (no branch): negative values and the type's extremes too."""
    N, i = Parameter(Int, "N"), Variable(Int, "i")
    a = Image(typ, "a", [N])
    f = Function(([i], [Interval(Int, 0, N - 1)]), typ, "f")
    f.defn = [a(i) // divisor * 3 + a(i) % divisor]
    info = np.iinfo(typ.dtype)
    values = np.array(
        [
            info.min,
            info.min + 1,
            -divisor - 1,
            -divisor,
            -1,
            0,
            1,
            divisor - 1,
            divisor,
            info.max - 1,
            info.max,
        ]
        + list(range(-70, 70, 3)),
        typ.dtype,
    )
    got = polyimage.compile([f], schedule="naive")(a=values)
    np.testing.assert_array_equal(got, polyimage.interpret([f], a=values))
    if divisor > 1:
        assert ">> " in polyimage.compile([f], schedule="naive").c_source


@pytest.mark.parametrize("typ", [t for t in INT_TYPES if t.bits <= 32], ids=str)
def test_integer_division_through_floating_point_is_exact(typ):
    """Types of 32 bits or less divide through float or double in the vectorized helper: every
    8-bit pair, and for wider types a million random pairs of numerators and divisors of every
    magnitude (|a| near the type's limits, |b| from 1 up), against NumPy, compiled and tiled."""
    R, C, x, y = grid()
    a_img, b_img = Image(typ, "a", [R, C]), Image(typ, "b", [R, C])
    quotient = Function(([x, y], box(R, C)), typ, "quotient")
    quotient.defn = [a_img(x, y) // b_img(x, y)]
    remainder = Function(([x, y], box(R, C)), typ, "remainder")
    remainder.defn = [a_img(x, y) % b_img(x, y)]
    info = np.iinfo(typ.dtype)
    if typ.bits == 8:
        vals = np.arange(info.min, info.max + 1).astype(typ.dtype)
        a, b = (np.ascontiguousarray(v) for v in np.meshgrid(vals, vals, indexing="ij"))
    else:
        rng = np.random.default_rng(typ.bits)
        shape = (1000, 1000)
        a = rng.integers(info.min, info.max, shape, dtype=typ.dtype, endpoint=True)
        bits = rng.integers(0, typ.bits, shape)
        b = (rng.integers(0, 2**62, shape) >> (62 - bits)).astype(np.int64)
        if typ.is_signed:
            b = np.where(rng.random(shape) < 0.5, -b, b)
        b = b.clip(info.min, info.max).astype(typ.dtype)
    with np.errstate(**IGNORE):
        expected = (np.floor_divide(a, b), np.remainder(a, b))
    for schedule in ("naive", "group 0: quotient [64x64]\ngroup 1: remainder [32x128]"):
        pipe = polyimage.compile([quotient, remainder], schedule=schedule, inline=False)
        got = pipe(a=a, b=b)
        for actual, wanted in zip(got, expected):
            np.testing.assert_array_equal(actual, wanted, err_msg=f"{typ} under {schedule}")
