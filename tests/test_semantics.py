"""Semantics of the DSL: compiled C == NumPy interpreter == an independent NumPy reference.

Every test builds a small pipeline and checks it with `run_both(outputs, reference=...)`, which
compiles it, interprets it and compares both with a reference written here by hand. Sizes are
odd on purpose (13x17, 67x93, one row, one column). Pipelines whose C text is the same are
built once and loaded from the cache afterwards, so data is parametrized per type, not per value.
"""
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import polyimage
from polyimage import (Abs, Case, Cast, Char, Clamp, Cos, Double, Exp, Float, Floor, Function,
                       Image, Int, Interval, Log, Long, Max, Min, Op, Parameter, Pow, Reduce,
                       Reduction, Select, Short, Sin, Sqrt, UChar, UInt, ULong, UShort, Variable)
from polyimage.io import load_image

from oracle import assert_same, run_both

REPO = Path(__file__).resolve().parent.parent
IMAGES = REPO / "images"

INT_TYPES = [Char, UChar, Short, UShort, Int, UInt, Long, ULong]
FLOAT_TYPES = [Float, Double]
SHAPES = [(13, 17), (67, 93), (1, 17), (13, 1), (1, 1)]
SHAPE_IDS = ["x".join(map(str, s)) for s in SHAPES]

IGNORE = dict(all="ignore")


# -- helpers -------------------------------------------------------------------------------

def grid():
    """Parameters R, C and variables x, y of a 2-D stage over [0, R-1] x [0, C-1]."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    return R, C, x, y


def box(R, C):
    return [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]


def shifted(a, dx, dy):
    """a[clip(i + dx), clip(j + dy)]: a shifted read clamped to the array (edge padding)."""
    i = np.clip(np.arange(a.shape[0]) + dx, 0, a.shape[0] - 1)
    j = np.clip(np.arange(a.shape[1]) + dy, 0, a.shape[1] - 1)
    return a[i][:, j]


def random_values(rng, shape, typ, lo=None, hi=None):
    dt = typ.dtype
    if dt.kind == "f":
        lo = -1.0 if lo is None else lo
        hi = 1.0 if hi is None else hi
        return rng.uniform(lo, hi, size=shape).astype(dt)
    info = np.iinfo(dt)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return rng.integers(lo, hi, size=shape, dtype=dt, endpoint=True)


def wrap(value: int, dtype) -> int:
    """Python integer reduced modulo 2**bits into the range of an integer dtype."""
    info = np.iinfo(dtype)
    span = 1 << info.bits
    value = (value - info.min) % span + info.min
    return value


def interesting_ints(dtype):
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    values = [0, 1, 2, 3, 7, 100, hi - 1, hi]
    if lo < 0:
        values += [lo, lo + 1, -1, -2, -3, -7, -100]
    return sorted({v for v in values if lo <= v <= hi})


# -- 1. chains of blurs ----------------------------------------------------------------------

@pytest.mark.parametrize("n", [7, 8, 67])
def test_blur_chain_1d(rng, n):
    N, x = Parameter(Int, "N"), Variable(Int, "x")
    img = Image(Double, "img", [N])
    b1 = Function(([x], [Interval(Int, 1, N - 2)]), Double, "b1")
    b1.defn = [(img(x - 1) + img(x) + img(x + 1)) / 3]
    b2 = Function(([x], [Interval(Int, 2, N - 3)]), Double, "b2")
    b2.defn = [(b1(x - 1) + 2 * b1(x) + b1(x + 1)) * 0.25]
    b3 = Function(([x], [Interval(Int, 3, N - 4)]), Double, "b3")
    b3.defn = [b2(x + 1) - b2(x - 1) + b1(x - 2) * 0.5]
    a = rng.uniform(-10, 10, n)
    r1 = (a[:-2] + a[1:-1] + a[2:]) / 3
    r2 = (r1[:-2] + 2 * r1[1:-1] + r1[2:]) * 0.25
    r3 = r2[2:] - r2[:-2] + r1[:-4] * 0.5
    got = run_both([b3], reference=r3, img=a)
    assert got.shape == (n - 6,)


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_blur_chain_2d_clamped_float(rng, shape):
    """Three Float blurs whose edge reads are clamped with affine Min/Max (any size works)."""
    R, C, x, y = grid()
    img = Image(Float, "img", [R, C])
    bx = Function(([x, y], box(R, C)), Float, "bx")
    bx.defn = [(img(x, Max(y - 1, 0)) + img(x, y) + img(x, Min(y + 1, C - 1))) / 3]
    by = Function(([x, y], box(R, C)), Float, "by")
    by.defn = [(bx(Max(x - 1, 0), y) + bx(x, y) + bx(Min(x + 1, R - 1), y)) / 3]
    xm, xp, ym, yp = Max(x - 1, 0), Min(x + 1, R - 1), Max(y - 1, 0), Min(y + 1, C - 1)
    b3 = Function(([x, y], box(R, C)), Float, "b3")
    b3.defn = [(by(xm, ym) + 2 * by(xm, y) + by(xm, yp)
                + 2 * by(x, ym) + 4 * by(x, y) + 2 * by(x, yp)
                + by(xp, ym) + 2 * by(xp, y) + by(xp, yp)) * 0.0625]
    a = random_values(rng, shape, Float)
    s = shifted
    rx = (s(a, 0, -1) + a + s(a, 0, 1)) / np.float32(3)
    ry = (s(rx, -1, 0) + rx + s(rx, 1, 0)) / np.float32(3)
    r3 = (s(ry, -1, -1) + 2 * s(ry, -1, 0) + s(ry, -1, 1)
          + 2 * s(ry, 0, -1) + 4 * ry + 2 * s(ry, 0, 1)
          + s(ry, 1, -1) + 2 * s(ry, 1, 0) + s(ry, 1, 1)) * np.float32(0.0625)
    assert r3.dtype == np.float32
    run_both(b3, reference=r3, img=a)


@pytest.mark.parametrize("shape", [(13, 17), (67, 93), (3, 3), (3, 4)])
def test_blur_chain_2d_integer_interior(rng, shape):
    """UShort -> UInt sums over shrinking interior domains -> rounded UShort mean (exact)."""
    R, C, x, y = grid()
    img = Image(UShort, "img", [R, C])
    bx = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 1, C - 2)]), UInt, "bx")
    bx.defn = [Cast(UInt, img(x, y - 1)) + img(x, y) + img(x, y + 1)]
    by = Function(([x, y], [Interval(Int, 1, R - 2), Interval(Int, 1, C - 2)]), UInt, "by")
    by.defn = [bx(x - 1, y) + bx(x, y) + bx(x + 1, y)]
    mean = Function(([x, y], [Interval(Int, 1, R - 2), Interval(Int, 1, C - 2)]), UShort,
                    "mean")
    mean.defn = [(by(x, y) + 4) / 9]
    a = random_values(rng, shape, UShort)
    w = a.astype(np.uint64)
    rx = w[:, :-2] + w[:, 1:-1] + w[:, 2:]
    ry = rx[:-2] + rx[1:-1] + rx[2:]
    ref = ((ry + 4) // 9).astype(np.uint16)
    run_both(mean, reference=ref, img=a)


# -- 2. Cases ------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_cases_first_wins_and_uncovered_points_are_zero(rng, shape):
    R, C, x, y = grid()
    img = Image(Int, "img", [R, C])
    f = Function(([x, y], box(R, C)), Int, "f")
    f.defn = [Case(x < 3, 100 + y),
              Case(x < 6, 200 + y),                      # overlaps the first one
              Case((y >= 2) & (y <= 5), img(x, y)),
              Case(img(x, y) > 50, -1),                  # data-dependent condition
              Case((x + y) % 3 == 0, img(x - 6, y))]     # in domain only because x >= 6 here
    g = Function(([x, y], box(R, C)), Float, "g")
    g.defn = [Case(x > y, 1.5), Case(x == y, img(x, y))]
    z = Function(([x, y], box(R, C)), Short, "z")
    z.defn = [Case(x < 0, img(x, y))]                  # never holds: all zero, never read
    a = random_values(rng, shape, Int, -100, 100)
    X, Y = np.indices(shape)
    prev6 = np.zeros_like(a)
    prev6[6:] = a[:-6]
    ref_f = np.select([X < 3, X < 6, (Y >= 2) & (Y <= 5), a > 50, (X + Y) % 3 == 0],
                      [100 + Y, 200 + Y, a, np.full(shape, -1), prev6], default=0)
    ref_g = np.where(X > Y, 1.5, np.where(X == Y, a, 0)).astype(np.float32)
    ref_z = np.zeros(shape, np.int16)
    got_f, got_g, got_z = run_both([f, g, z], reference=(ref_f.astype(np.int32), ref_g, ref_z),
                                   img=a)
    if shape[0] > 6 and shape[1] > 1:
        # some points are covered by no Case at all: they hold 0
        uncovered = ~((X < 6) | ((Y >= 2) & (Y <= 5)) | (a > 50) | ((X + Y) % 3 == 0))
        assert uncovered.any() and (got_f[uncovered] == 0).all()


# -- 3. Select -----------------------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_select(rng, shape):
    R, C, x, y = grid()
    img = Image(Float, "img", [R, C])
    ii = Image(Int, "ii", [R, C])
    guarded = Function(([x, y], box(R, C)), Float, "guarded")
    # the untaken branches read img(-1, y) and img(x, C): out of domain if evaluated
    guarded.defn = [Select(x > 0, img(x - 1, y), img(x, y))
                    + Select(y < C - 1, img(x, y + 1), 0.0)]
    nested = Function(([x, y], box(R, C)), Float, "nested")
    nested.defn = [Select(x == 0, -5.0,
                          Select(img(x - 1, y) > img(x, y), img(x - 1, y), img(x, y) * 2))]
    data = Function(([x, y], box(R, C)), Float, "data")
    data.defn = [Select(img(x, y) > 0.25, img(x, y) * 2, -img(x, y))]
    mixed = Function(([x, y], box(R, C)), Double, "mixed")
    mixed.defn = [Select(x >= y, ii(x, y), img(x, y))]
    assert mixed.defn[0].value.typ is Double
    a = random_values(rng, shape, Float)
    b = random_values(rng, shape, Int, -1000, 1000)
    X, Y = np.indices(shape)
    up = shifted(a, -1, 0)
    right = shifted(a, 0, 1)
    ref_guarded = np.where(X > 0, up, a) + np.where(Y < shape[1] - 1, right, np.float32(0))
    ref_nested = np.where(X == 0, np.float32(-5),
                          np.where(up > a, up, a * np.float32(2))).astype(np.float32)
    ref_data = np.where(a > np.float32(0.25), a * np.float32(2), -a)
    ref_mixed = np.where(X >= Y, b.astype(np.float64), a.astype(np.float64))
    run_both([guarded, nested, data, mixed],
             reference=(ref_guarded, ref_nested, ref_data, ref_mixed), img=a, ii=b)


def test_unguarded_out_of_domain_read_is_rejected():
    """The guard is what makes test_select compile: without it, BoundsError."""
    R, C, x, y = grid()
    img = Image(Float, "img", [R, C])
    f = Function(([x, y], box(R, C)), Float, "f")
    f.defn = [Select(x >= 0, img(x - 1, y), 0.0)]        # does not exclude x = 0
    with pytest.raises(polyimage.BoundsError):
        polyimage.compile(f)
    with pytest.raises(polyimage.BoundsError):
        polyimage.interpret(f, img=np.zeros((3, 4), np.float32))


# -- 4. Clamp, Min, Max --------------------------------------------------------------------

@pytest.mark.parametrize("typ", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("shape", [(13, 17), (1, 9), (9, 1)])
def test_clamp_min_max_float_with_nan(rng, typ, shape):
    R, C, x, y = grid()
    a_img, b_img = Image(typ, "a", [R, C]), Image(typ, "b", [R, C])
    outs = {}
    for name, expr in [("clamped", Clamp(a_img(x, y), -0.5, 0.5)),
                       ("lo", Min(a_img(x, y), b_img(x, y))),
                       ("hi", Max(a_img(x, y), b_img(x, y))),
                       ("lo_const", Min(a_img(x, y), 0.25)),
                       ("hi_const", Max(-0.25, b_img(x, y)))]:
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
    refs = (np.minimum(np.maximum(a, dt(-0.5)), dt(0.5)), np.minimum(a, b), np.maximum(a, b),
            np.minimum(a, dt(0.25)), np.maximum(dt(-0.25), b))
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
    refs = (np.clip(a, dt(lo), dt(hi)), np.minimum(a, b), np.maximum(a, b),
            np.minimum(a.astype(np.float64),
                       (b.astype(np.float32) * np.float32(0.5)).astype(np.float64)))
    run_both([clamped, small, big, mixed], reference=refs, a=a, b=b)


# -- 5. saturating float -> integer casts ----------------------------------------------------

CAST_VALUES = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.7, -0.7, 0.999, -0.999, 1.5, -1.5,
               126.9, 127.0, 127.5, 128.0, -127.9, -128.0, -128.7, -129.0, 254.5, 255.0, 255.9,
               256.0, -1.0, -1.0001, 32767.0, 32767.9, 32768.0, -32768.0, -32768.5, -32769.0,
               65535.0, 65535.5, 65536.0, 2.0 ** 24 + 2, 2.0 ** 31 - 128, 2.0 ** 31 - 0.5,
               2.0 ** 31, -2.0 ** 31, -2.0 ** 31 - 0.5, -2.0 ** 31 - 1, -2.0 ** 31 - 256,
               2.0 ** 32 - 1, 2.0 ** 32, 2.0 ** 32 + 512, 2.0 ** 53 + 2, 2.0 ** 63 - 1024,
               2.0 ** 63, -2.0 ** 63, -2.0 ** 63 - 2048, 2.0 ** 64 - 2048, 2.0 ** 64, 2.0 ** 65,
               1e30, -1e30, 3.4e38, -3.4e38, 1e300, -1e300, 5e-324, -5e-324, 1e-30, -1e-30]


def saturate(values, dtype):
    """Hand-written reference: truncate toward zero with exact Python integers, saturate,
    NaN -> 0."""
    info = np.iinfo(dtype)
    out = []
    for v in values:
        v = float(v)
        if math.isnan(v):
            out.append(0)
        elif math.isinf(v):
            out.append(int(info.max) if v > 0 else int(info.min))
        else:
            out.append(min(max(math.trunc(v), int(info.min)), int(info.max)))
    return np.array(out, dtype)


@pytest.mark.parametrize("dst", INT_TYPES, ids=str)
@pytest.mark.parametrize("src", FLOAT_TYPES, ids=str)
def test_saturating_cast_float_to_int(src, dst):
    N, x = Parameter(Int, "N"), Variable(Int, "x")
    img = Image(src, "img", [N])
    explicit = Function(([x], [Interval(Int, 0, N - 1)]), dst, "explicit")
    explicit.defn = [Cast(dst, img(x))]
    implicit = Function(([x], [Interval(Int, 0, N - 1)]), dst, "implicit")
    implicit.defn = [img(x) * 1]                         # the Function's type casts the value
    with np.errstate(**IGNORE):
        values = np.array(CAST_VALUES, src.dtype)
    ref = saturate(values, dst.dtype)
    # spot-check the hand-written reference on the boundaries of int8
    if dst is Char:
        probe = saturate(np.array([127.0, 128.0, -128.0, -129.0, -0.7, math.nan]), np.int8)
        assert probe.tolist() == [127, 127, -128, -128, 0, 0]
    run_both([explicit, implicit], reference=(ref, ref), img=values)


# -- 6. division and modulo ----------------------------------------------------------------

@pytest.mark.parametrize("typ", INT_TYPES, ids=str)
def test_integer_floor_division_and_modulo(typ):
    R, C, x, y = grid()
    a_img, b_img = Image(typ, "a", [R, C]), Image(typ, "b", [R, C])
    outs = []
    exprs = [("q", a_img(x, y) / b_img(x, y)), ("qq", a_img(x, y) // b_img(x, y)),
             ("r", a_img(x, y) % b_img(x, y)), ("q3", a_img(x, y) / 3),
             ("r3", a_img(x, y) % 3)]
    if typ.is_signed:
        exprs += [("qm3", a_img(x, y) // -3), ("rm3", a_img(x, y) % -3),
                  ("qm1", a_img(x, y) // -1), ("rm1", a_img(x, y) % -1)]
    for name, e in exprs:
        assert e.typ is typ
        if name.startswith("q"):
            assert e.op == "//"            # `/` between integers is floor division
        f = Function(([x, y], box(R, C)), typ, name)
        f.defn = [e]
        outs.append(f)
    vals = np.array(interesting_ints(typ.dtype), typ.dtype)
    a, b = np.meshgrid(vals, vals, indexing="ij")
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    dt = typ.dtype.type
    with np.errstate(**IGNORE):
        refs = [np.floor_divide(a, b), np.floor_divide(a, b), np.remainder(a, b),
                np.floor_divide(a, dt(3)), np.remainder(a, dt(3))]
        if typ.is_signed:
            refs += [np.floor_divide(a, dt(-3)), np.remainder(a, dt(-3)),
                     np.floor_divide(a, dt(-1)), np.remainder(a, dt(-1))]
    # independent spot checks of the reference: Python semantics, 0 on division by zero, wrap
    for ai, bi, qi, ri in zip(a.ravel().tolist(), b.ravel().tolist(), refs[0].ravel().tolist(),
                              refs[2].ravel().tolist()):
        if bi == 0:
            assert qi == 0 and ri == 0
        else:
            assert qi == wrap(ai // bi, typ.dtype) and ri == ai % bi
    if typ.is_signed:
        m = int(np.iinfo(typ.dtype).min)
        assert refs[0][vals.tolist().index(m), vals.tolist().index(-1)] == m  # MIN // -1 wraps
    run_both(outs, reference=tuple(refs), a=a, b=b)


# 0.3 // 0.01, 3.3 // 0.9, 2.3 // 0.7: (a - fmod(a, b)) / b rounds below the integer there
FLOAT_DIV_VALUES = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 5.5, -5.5, 0.3, -0.3, 7.25, -7.25, 1e30,
                    -1e30, 1e-30, 0.01, 0.9, 3.3, -2.3, 0.7, 100.0, math.inf, -math.inf,
                    math.nan]


@pytest.mark.parametrize("typ", FLOAT_TYPES, ids=str)
def test_float_floor_division_and_modulo(typ):
    R, C, x, y = grid()
    a_img, b_img = Image(typ, "a", [R, C]), Image(typ, "b", [R, C])
    exprs = [("fq", a_img(x, y) // b_img(x, y)), ("fr", a_img(x, y) % b_img(x, y)),
             ("ft", a_img(x, y) / b_img(x, y)), ("fq2", a_img(x, y) // 2),
             ("fr2", a_img(x, y) % -2.5)]
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
        refs = (np.floor_divide(a, b), np.remainder(a, b), np.true_divide(a, b),
                np.floor_divide(a, dt(2)), np.remainder(a, dt(-2.5)))
    # spot checks of the reference against Python's float semantics
    assert refs[0][vals.tolist().index(-1.0), vals.tolist().index(math.inf)] == -1.0
    assert refs[1][vals.tolist().index(-1.0), vals.tolist().index(math.inf)] == math.inf
    assert refs[1][vals.tolist().index(5.5), vals.tolist().index(-2.0)] == -0.5
    got = run_both(outs, reference=refs, a=a, b=b)
    # zero results carry numpy's sign as well
    for i, (g, r) in enumerate(zip(got, refs)):
        zero = (r == 0) & ~np.isnan(r)
        np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(r[zero]),
                                      err_msg=f"sign of zero results of {exprs[i][0]}")


# -- 7. integer wrap-around ----------------------------------------------------------------

@pytest.mark.parametrize("typ", INT_TYPES, ids=str)
def test_integer_wraparound(typ):
    N, x = Parameter(Int, "N"), Variable(Int, "x")
    a_img, b_img = Image(typ, "a", [N]), Image(typ, "b", [N])
    outs = []
    exprs = [("add", a_img(x) + b_img(x)), ("sub", a_img(x) - b_img(x)),
             ("mul", a_img(x) * b_img(x)), ("neg", -a_img(x)), ("absval", Abs(a_img(x))),
             ("sq_plus", a_img(x) * a_img(x) + 1)]
    for name, e in exprs:
        assert e.typ is typ
        f = Function(([x], [Interval(Int, 0, N - 1)]), typ, name)
        f.defn = [e]
        outs.append(f)
    # wrapped intermediates must stay wrapped when they are compared or widened, not only
    # when they are stored
    flags = Function(([x], [Interval(Int, 0, N - 1)]), Int, "flags")
    flags.defn = [Select(a_img(x) + b_img(x) < a_img(x), 1, 0)
                  + Select(a_img(x) * b_img(x) == Cast(typ, Cast(Double, a_img(x))
                                                       * Cast(Double, b_img(x))), 2, 0)
                  + Select(-a_img(x) > b_img(x), 4, 0)]
    wide = Function(([x], [Interval(Int, 0, N - 1)]), Double, "wide")
    wide.defn = [Cast(Double, a_img(x) - b_img(x)) + Cast(Double, -b_img(x))]
    outs += [flags, wide]
    vals = interesting_ints(typ.dtype)
    pairs = [(p, q) for p in vals for q in vals]
    a = np.array([p for p, _ in pairs], typ.dtype)
    b = np.array([q for _, q in pairs], typ.dtype)
    refs = tuple(np.array(col, typ.dtype) for col in zip(*[
        (wrap(p + q, typ.dtype), wrap(p - q, typ.dtype), wrap(p * q, typ.dtype),
         wrap(-p, typ.dtype), wrap(abs(p), typ.dtype), wrap(p * p + 1, typ.dtype))
        for p, q in pairs]))
    add, sub, mul, neg = (r.astype(object) for r in refs[:4])
    with np.errstate(**IGNORE):
        exact = saturate(a.astype(np.float64) * b.astype(np.float64), typ.dtype).astype(object)
    flag_ref = np.array([int(s < int(p)) + 2 * int(m == e) + 4 * int(n > int(q))
                         for p, q, s, m, n, e in zip(a, b, add, mul, neg, exact)], np.int32)
    wide_ref = sub.astype(np.float64) + np.array([wrap(-int(q), typ.dtype) for q in b],
                                                 np.float64)
    refs = refs + (flag_ref, wide_ref)
    with np.errstate(**IGNORE):   # numpy agrees with the Python-integer reference
        assert_same(a + b, refs[0])
        assert_same(a * b, refs[2])
        assert_same(np.abs(a), refs[4])
    if typ.is_signed:
        m = int(np.iinfo(typ.dtype).min)
        assert refs[3][a.tolist().index(m)] == m and refs[4][a.tolist().index(m)] == m
    run_both(outs, reference=refs, a=a, b=b)


def test_wraparound_named_cases():
    """Classic overflows, each with its expected value written out."""
    N, x = Parameter(Int, "N"), Variable(Int, "x")
    u8 = Image(UChar, "u8", [N])
    i8 = Image(Char, "i8", [N])
    i32 = Image(Int, "i32", [N])
    dom = [Interval(Int, 0, N - 1)]
    specs = [("u8sum", UChar, u8(x) + u8(x)), ("i8mul", Char, i8(x) * i8(x)),
             ("i32sum", Int, i32(x) + 2147483647), ("i32neg", Int, -i32(x)),
             ("i32abs", Int, Abs(i32(x))), ("i32mul", Int, i32(x) * 65536)]
    outs = []
    for name, typ, e in specs:
        f = Function(([x], dom), typ, name)
        f.defn = [e]
        outs.append(f)
    u8v = np.array([200, 255, 128, 0], np.uint8)
    i8v = np.array([100, -128, 12, 11], np.int8)
    i32v = np.array([1, -2147483648, 2147483647, 65537], np.int32)
    refs = (np.array([144, 254, 0, 0], np.uint8),
            np.array([16, 0, -112, 121], np.int8),
            np.array([-2147483648, -1, -2, -2147418112], np.int32),
            np.array([-1, -2147483648, -2147483647, -65537], np.int32),
            np.array([1, -2147483648, 2147483647, 65537], np.int32),
            np.array([65536, 0, -65536, 65536], np.int32))
    run_both(outs, reference=refs, u8=u8v, i8=i8v, i32=i32v)


# -- 8. type promotion ---------------------------------------------------------------------

def test_type_promotion():
    R, C, x, y = grid()
    f = Image(Float, "f", [R, C])
    i = Image(Int, "i", [R, C])
    u8 = Image(UChar, "u8", [R, C])
    s = Image(Short, "s", [R, C])
    ui = Image(UInt, "ui", [R, C])
    c8 = Image(Char, "c8", [R, C])
    l64 = Image(Long, "l64", [R, C])
    ul = Image(ULong, "ul", [R, C])
    exprs = [("f_half", f(x, y) * 0.5, Float), ("i_half", i(x, y) * 0.5, Double),
             ("u8_inc", u8(x, y) + 1, UChar), ("s_plus_i", s(x, y) + i(x, y), Int),
             ("ui_plus_i", ui(x, y) + i(x, y), Long), ("i_plus_f", i(x, y) + f(x, y), Double),
             ("i_div", i(x, y) / 2, Int), ("f_div", f(x, y) / 2, Float),
             ("c_plus_u8", c8(x, y) + u8(x, y), Short), ("l_plus_ul", l64(x, y) + ul(x, y), Double),
             ("s_half", s(x, y) * 0.5, Double), ("u8_times_f", u8(x, y) * f(x, y), Float)]
    outs = []
    for name, e, typ in exprs:
        assert e.typ is typ, f"{name}: {e.typ} != {typ}"
        out = Function(([x, y], box(R, C)), e.typ, name)
        out.defn = [e]
        outs.append(out)
    # the Function's own type casts the final value
    to_u8 = Function(([x, y], box(R, C)), UChar, "to_u8")
    to_u8.defn = [i(x, y)]                                 # Int -> UChar wraps
    to_short = Function(([x, y], box(R, C)), Short, "to_short")
    to_short.defn = [f(x, y) * 1000]                       # Float -> Short saturates
    to_int = Function(([x, y], box(R, C)), Int, "to_int")
    to_int.defn = [ui(x, y) + i(x, y)]                     # Long -> Int wraps
    to_float = Function(([x, y], box(R, C)), Float, "to_float")
    to_float.defn = [i(x, y) + 0]                          # Int -> Float rounds
    outs += [to_u8, to_short, to_int, to_float]

    shape = (3, 5)
    fv = np.array([0.1, -2.5, 1e6, np.nan, -1e9] * 3, np.float32).reshape(shape)
    iv = np.array([300, -1, 2 ** 24 + 1, -2 ** 31, 2 ** 31 - 1] * 3, np.int32).reshape(shape)
    u8v = np.array([255, 0, 1, 254, 128] * 3, np.uint8).reshape(shape)
    sv = np.array([-32768, 32767, 5, -5, 0] * 3, np.int16).reshape(shape)
    uiv = np.array([2 ** 32 - 1, 0, 7, 2 ** 31, 1] * 3, np.uint32).reshape(shape)
    c8v = np.array([-128, 127, -1, 0, 5] * 3, np.int8).reshape(shape)
    l64v = np.array([-2 ** 63, 2 ** 63 - 1, -1, 0, 3] * 3, np.int64).reshape(shape)
    ulv = np.array([2 ** 64 - 1, 0, 1, 2 ** 63, 7] * 3, np.uint64).reshape(shape)
    refs = [fv * 0.5, iv * 0.5, u8v + 1, sv + iv, uiv + iv, iv + fv, iv // 2, fv / 2,
            c8v + u8v, l64v + ulv, sv * 0.5, u8v * fv]
    for (name, _, typ), r in zip(exprs, refs):
        assert r.dtype == typ.dtype, f"numpy disagrees on {name}: {r.dtype}"
    assert (refs[2] == np.array([0, 1, 2, 255, 129] * 3).reshape(shape)).all()
    refs += [iv.astype(np.uint8), saturate((fv * np.float32(1000)).ravel(), np.int16)
             .reshape(shape), (uiv.astype(np.int64) + iv).astype(np.int32),
             iv.astype(np.float32)]
    assert refs[-4].ravel()[:2].tolist() == [44, 255]
    got = run_both(outs, reference=tuple(refs), f=fv, i=iv, u8=u8v, s=sv, ui=uiv, c8=c8v,
                   l64=l64v, ul=ulv)
    for g, o in zip(got, outs):
        assert g.dtype == o.typ.dtype


# -- 9. down- and up-sampling --------------------------------------------------------------

@pytest.mark.parametrize("shape", [(13, 17), (67, 93), (2, 3), (3, 2), (5, 4)])
def test_down_and_up_sampling(rng, shape):
    R, C, x, y = grid()
    img = Image(Int, "img", [R, C])
    down = Function(([x, y], [Interval(Int, 0, (R - 1) / 2), Interval(Int, 0, (C - 1) / 2)]),
                    Int, "down")
    down.defn = [img(2 * x, 2 * y)]
    odd = Function(([x, y], [Interval(Int, 0, R / 2 - 1), Interval(Int, 0, C / 2 - 1)]),
                   Int, "odd")
    odd.defn = [img(2 * x + 1, 2 * y + 1)]
    up = Function(([x, y], [Interval(Int, 0, 2 * R - 1), Interval(Int, 0, 2 * C - 1)]),
                  Int, "up")
    up.defn = [img(x / 2, y / 2)]
    up_odd = Function(([x, y], [Interval(Int, 0, 2 * R - 2), Interval(Int, 0, 2 * C - 2)]),
                      Int, "up_odd")
    up_odd.defn = [img((x + 1) // 2, y // 2) - img(x // 2, (y + 1) // 2)]
    # a pyramid: down-sample, then up-sample the result
    pyr = Function(([x, y], [Interval(Int, 0, 2 * ((R - 1) / 2) + 1),
                             Interval(Int, 0, 2 * ((C - 1) / 2) + 1)]), Int, "pyr")
    pyr.defn = [down(x / 2, y / 2) * 2 + down(x // 2, y // 2)]
    # negative coordinates: floor division must round toward minus infinity
    neg = Function(([x, y], [Interval(Int, -2 * R, -1), Interval(Int, -7, 6)]), Int, "neg")
    neg.defn = [img(x / 2 + R, y % 2)]
    a = random_values(rng, shape, Int, -1000, 1000)
    r, c = shape
    Xu, Yu = np.indices((2 * r - 1, 2 * c - 1))
    d = a[::2, ::2]
    refs = (d, a[1::2, 1::2][: r // 2, : c // 2], np.repeat(np.repeat(a, 2, 0), 2, 1),
            a[(Xu + 1) // 2, Yu // 2] - a[Xu // 2, (Yu + 1) // 2],
            3 * np.repeat(np.repeat(d, 2, 0), 2, 1),
            a[np.arange(-2 * r, 0)[:, None] // 2 + r, np.arange(-7, 7)[None, :] % 2])
    got = run_both([down, odd, up, up_odd, pyr, neg], reference=refs, img=a)
    assert got[0].shape == ((r + 1) // 2, (c + 1) // 2)
    assert got[2].shape == (2 * r, 2 * c)


@pytest.mark.parametrize("n", [1, 2, 3, 8, 67])
def test_sampling_1d(rng, n):
    N, x = Parameter(Int, "N"), Variable(Int, "x")
    img = Image(Float, "img", [N])
    half = Function(([x], [Interval(Int, 0, (N - 1) / 2)]), Float, "half")
    half.defn = [img(2 * x)]
    double = Function(([x], [Interval(Int, 0, 2 * N - 1)]), Float, "double")
    double.defn = [img(x / 2) * 0.5 + img(Min((x + 1) / 2, N - 1)) * 0.5]
    a = random_values(rng, (n,), Float)
    X = np.arange(2 * n)
    right = np.where(X == 2 * n - 1, X // 2, (X + 1) // 2)
    ref_double = a[X // 2] * np.float32(0.5) + a[right] * np.float32(0.5)
    run_both([half, double], reference=(a[::2], ref_double), img=a)


# -- 10. lookup tables indexed by data -----------------------------------------------------

@pytest.mark.parametrize("shape", [(13, 17), (1, 1), (67, 93)])
def test_lut_indexed_by_uint8_image(rng, shape):
    R, C, x, y = grid()
    L = Parameter(Int, "L")
    img = Image(UChar, "img", [R, C])
    lut = Image(Short, "lut", [L])
    direct = Function(([x, y], box(R, C)), Short, "direct")
    direct.defn = [lut(img(x, y))]                       # values >= L are clamped to L - 1
    offset = Function(([x, y], box(R, C)), Short, "offset")
    offset.defn = [lut(Cast(Int, img(x, y)) - 30) + 1]   # negative indices are clamped to 0
    a = random_values(rng, shape, UChar)
    a.reshape(-1)[:3] = [0, 255, 29][: a.size]
    table = rng.integers(-30000, 30000, 200).astype(np.int16)
    ref_direct = table[np.minimum(a.astype(np.int64), 199)]
    ref_offset = (table[np.clip(a.astype(np.int64) - 30, 0, 199)] + 1).astype(np.int16)
    run_both([direct, offset], reference=(ref_direct, ref_offset), img=a, lut=table)


@pytest.mark.parametrize("shape", [(13, 17), (1, 7)])
def test_lut_indexed_by_float_image(rng, shape):
    """A computed table over [-5, 10], indexed through a saturating Cast(Int, ...)."""
    R, C, x, y = grid()
    i = Variable(Int, "i")
    img = Image(Float, "img", [R, C])
    lut = Function(([i], [Interval(Int, -5, 10)]), Int, "lut")
    lut.defn = [i * i - 3 * i]
    out = Function(([x, y], box(R, C)), Int, "out")
    out.defn = [lut(Cast(Int, img(x, y) * 4))]
    a = random_values(rng, shape, Float, -4, 4)
    special = [np.nan, np.inf, -np.inf, -1.3, -1.2, 1e20, -1e20, 2.6, 0.0, -0.24]
    a.reshape(-1)[: len(special)] = special[: a.size]
    idx = saturate((a * np.float32(4)).ravel(), np.int32).reshape(shape).astype(np.int64)
    idx = np.clip(idx, -5, 10)
    run_both([out], reference=(idx * idx - 3 * idx).astype(np.int32), img=a)


# -- 11. reductions ------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(13, 17), (67, 93), (1, 1)])
def test_histogram_uint8(rng, shape):
    R, C, x, y = grid()
    b = Variable(Int, "b")
    img = Image(UChar, "img", [R, C])
    hist = Reduction(([b], [Interval(Int, 0, 255)]), ([x, y], box(R, C)), Int, "hist")
    hist.defn = [Reduce(hist(img(x, y)), 1, Op.Sum)]
    # a later stage reads the histogram at data-dependent bins
    share = Function(([x, y], box(R, C)), Double, "share")
    share.defn = [hist(img(x, y)) / Cast(Double, R * C)]
    a = random_values(rng, shape, UChar, 0, 60)
    a.reshape(-1)[-1] = 255
    ref = np.bincount(a.ravel(), minlength=256).astype(np.int32)
    got = run_both(hist, reference=ref, img=a)
    assert got.sum() == a.size
    run_both([share, hist], reference=(ref[a] / a.size, ref), img=a)


def test_histogram_clamped_bins_and_weighted(rng):
    R, C, x, y = grid()
    b = Variable(Int, "b")
    img = Image(Float, "img", [R, C])
    count = Reduction(([b], [Interval(Int, 0, 7)]), ([x, y], box(R, C)), Int, "count")
    count.defn = [Reduce(count(Cast(Int, img(x, y) * 8)), 1, Op.Sum)]
    weight = Reduction(([b], [Interval(Int, 0, 7)]), ([x, y], box(R, C)), Double, "weight")
    weight.defn = [Reduce(weight(Cast(Int, img(x, y) * 8)), img(x, y), Op.Sum)]
    centred = Reduction(([b], [Interval(Int, -4, 4)]), ([x, y], box(R, C)), UShort, "centred")
    centred.defn = [Reduce(centred(Cast(Int, Floor(img(x, y) * 4)) - 2), 1, Op.Sum)]
    a = random_values(rng, (13, 17), Float, -1.0, 2.0)
    a[0, :4] = [np.nan, np.inf, -np.inf, 0.999]
    bins = np.clip(saturate((a * np.float32(8)).ravel(), np.int32), 0, 7)
    ref_count = np.bincount(bins, minlength=8).astype(np.int32)
    ref_weight = np.zeros(8)
    np.add.at(ref_weight, bins, a.ravel().astype(np.float64))
    cbins = np.clip(saturate(np.floor(a * np.float32(4)).ravel(), np.int32) - 2, -4, 4) + 4
    ref_centred = np.bincount(cbins, minlength=9).astype(np.uint16)
    assert ref_count[0] > 0 and ref_count[7] > 0 and ref_centred[0] > 0 and ref_centred[8] > 0
    run_both([count, weight, centred], reference=(ref_count, ref_weight, ref_centred), img=a)


@pytest.mark.parametrize("shape", [(13, 17), (1, 9), (9, 1)])
def test_reductions_over_one_dimension(rng, shape):
    """Row sums, column Max/Min/Mul, a default that depends on the point, Cases."""
    R, C, x, y = grid()
    i, j = Variable(Int, "i"), Variable(Int, "j")
    img = Image(Int, "img", [R, C])
    fimg = Image(Float, "fimg", [R, C])
    rows = [Interval(Int, 0, R - 1)]
    cols = [Interval(Int, 0, C - 1)]
    rsum = Reduction(([x], rows), ([i, j], box(R, C)), Long, "rsum")
    rsum.defn = [Reduce(rsum(i), img(i, j), Op.Sum)]
    cmax = Reduction(([y], cols), ([i, j], box(R, C)), Float, "cmax")
    cmax.default = -math.inf
    cmax.defn = [Reduce(cmax(j), fimg(i, j), Op.Max)]
    cmin = Reduction(([y], cols), ([i, j], box(R, C)), Float, "cmin")
    cmin.defn = [Reduce(cmin(j), fimg(i, j), Op.Min)]       # default 0 takes part
    cmul = Reduction(([y], cols), ([i, j], box(R, C)), Int, "cmul")
    cmul.default = 1
    cmul.defn = [Reduce(cmul(j), img(i, j), Op.Mul)]       # wraps
    dflt = Reduction(([x], rows), ([i, j], box(R, C)), Int, "dflt")
    dflt.default = 10 * x + 1
    dflt.defn = [Reduce(dflt(i), 1, Op.Sum)]
    cased = Reduction(([x], rows), ([i, j], box(R, C)), Int, "cased")
    cased.defn = [Case(img(i, j) > 0, Reduce(cased(i), img(i, j), Op.Sum)),
                  Case(j % 2 == 0, Reduce(cased(i), 1000, Op.Sum))]
    # a plain Reduce after the Cases catches every remaining point; Int default from a float
    rest = Reduction(([x], rows), ([i, j], box(R, C)), Int, "rest")
    rest.default = -2.7
    rest.defn = [Case(j == 0, Reduce(rest(i), 100, Op.Sum)), Reduce(rest(i), img(i, j), Op.Sum)]
    # a stage consuming a Reduction that is not an output
    hsum = Reduction(([x], rows), ([i, j], box(R, C)), Long, "hsum")
    hsum.defn = [Reduce(hsum(i), img(i, j), Op.Sum)]
    centred = Function(([x, y], box(R, C)), Long, "centred")
    centred.defn = [img(x, y) * C - hsum(x)]
    a = random_values(rng, shape, Int, -50, 50)
    fa = random_values(rng, shape, Float, -1, 1)
    fa.reshape(-1)[::7] = np.nan
    X, Y = np.indices(shape)
    with np.errstate(**IGNORE):
        prod = np.ones(shape[1], np.int32)
        for row in a:
            prod = prod * row
    refs = (a.astype(np.int64).sum(axis=1),
            np.maximum(np.float32(-np.inf), fa.max(axis=0)),
            np.minimum(np.float32(0), fa.min(axis=0)),
            prod,
            (10 * np.arange(shape[0]) + 1 + shape[1]).astype(np.int32),
            np.where(a > 0, a, np.where(Y % 2 == 0, 1000, 0)).sum(axis=1).astype(np.int32),
            (-2 + np.where(Y == 0, 100, a).sum(axis=1)).astype(np.int32),
            a.astype(np.int64) * shape[1] - a.astype(np.int64).sum(axis=1)[:, None])
    run_both([rsum, cmax, cmin, cmul, dflt, cased, rest, centred], reference=refs, img=a,
             fimg=fa)


@pytest.mark.parametrize("shape", [(1, 5), (4, 5)])
def test_reduction_over_an_empty_domain_keeps_the_default(rng, shape):
    R, C, x, y = grid()
    i, j = Variable(Int, "i"), Variable(Int, "j")
    img = Image(Int, "img", [R, C])
    steps = Reduction(([y], [Interval(Int, 0, C - 1)]),
                      ([i, j], [Interval(Int, 1, R - 1), Interval(Int, 0, C - 1)]), Int, "steps")
    steps.default = 5
    steps.defn = [Reduce(steps(j), Abs(img(i, j) - img(i - 1, j)), Op.Sum)]
    a = random_values(rng, shape, Int, -100, 100)
    ref = (5 + np.abs(np.diff(a, axis=0)).sum(axis=0)).astype(np.int32)
    got = run_both(steps, reference=ref, img=a)
    if shape[0] == 1:
        assert (got == 5).all()


@pytest.mark.parametrize("shape", [(13, 17), (4, 4), (1, 1)])
def test_block_sum_reduction_with_affine_target(rng, shape):
    R, C, x, y = grid()
    i, j = Variable(Int, "i"), Variable(Int, "j")
    img = Image(UShort, "img", [R, C])
    blocks = Reduction(([x, y], [Interval(Int, 0, (R - 1) / 4), Interval(Int, 0, (C - 1) / 4)]),
                       ([i, j], box(R, C)), UInt, "blocks")
    blocks.default = 7
    blocks.defn = [Reduce(blocks(i / 4, j / 4), img(i, j), Op.Sum)]
    bmax = Reduction(([x, y], [Interval(Int, 0, (R - 1) / 4), Interval(Int, 0, (C - 1) / 4)]),
                     ([i, j], box(R, C)), UShort, "bmax")
    bmax.defn = [Reduce(bmax(i / 4, j / 4), img(i, j), Op.Max)]
    a = random_values(rng, shape, UShort)
    r, c = (shape[0] + 3) // 4, (shape[1] + 3) // 4
    ref = np.full((r, c), 7, np.uint32)
    ref_max = np.zeros((r, c), np.uint16)
    for p in range(shape[0]):
        for q in range(shape[1]):
            ref[p // 4, q // 4] += np.uint32(a[p, q])
            ref_max[p // 4, q // 4] = max(ref_max[p // 4, q // 4], a[p, q])
    run_both([blocks, bmax], reference=(ref, ref_max), img=a)


# -- 12. several outputs -------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(13, 17), (1, 1)])
def test_two_outputs_in_order_and_an_output_consumed_by_another(rng, shape):
    R, C, x, y = grid()
    img = Image(Int, "img", [R, C])
    hidden = Function(([x, y], box(R, C)), Int, "hidden")
    hidden.defn = [img(x, y) + 1]
    twice = Function(([x, y], box(R, C)), Int, "twice")
    twice.defn = [hidden(x, y) * 2]
    summed = Function(([x, y], box(R, C)), Long, "summed")
    summed.defn = [twice(x, y) + twice(Max(x - 1, 0), y) + hidden(x, y)]
    a = random_values(rng, shape, Int, -1000, 1000)
    ref_twice = (a + 1) * 2
    ref_sum = (ref_twice + shifted(ref_twice, -1, 0) + a + 1).astype(np.int64)
    got = run_both([twice, summed], reference=(ref_twice, ref_sum), img=a)
    assert isinstance(got, tuple) and len(got) == 2
    assert got[0].dtype == np.int32 and got[1].dtype == np.int64
    got = run_both([summed, twice], reference=(ref_sum, ref_twice), img=a)
    assert got[0].dtype == np.int64 and got[1].dtype == np.int32
    interp = polyimage.interpret([summed, twice], img=a)
    assert isinstance(interp, tuple) and len(interp) == 2


# -- 13. 3-D images ------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(13, 17), (1, 5), (4, 1)])
def test_chw_per_channel(rng, shape):
    R, C, x, y = grid()
    c = Variable(Int, "c")
    img = Image(Float, "img", [3, R, C])
    gain = Image(Float, "gain", [3])
    out = Function(([c, x, y], [Interval(Int, 0, 2)] + box(R, C)), Float, "out")
    out.defn = [Case(c == 0, img(c, x, y) * gain(c) + 1),
                img(c, x, y) * gain(c) - img(Max(c - 1, 0), x, Min(y + 1, C - 1))]
    gray = Function(([x, y], box(R, C)), Float, "gray")
    gray.defn = [img(0, x, y) * 0.25 + img(1, x, y) * 0.5 + img(2, x, y) * 0.25]
    a = random_values(rng, (3,) + shape, Float)
    g = np.array([0.5, 2.0, -1.0], np.float32)
    ref = a * g[:, None, None]
    right = np.stack([shifted(ch, 0, 1) for ch in a])
    ref[0] += np.float32(1)
    ref[1:] -= right[:-1]
    ref_gray = a[0] * np.float32(0.25) + a[1] * np.float32(0.5) + a[2] * np.float32(0.25)
    run_both([out, gray], reference=(ref, ref_gray), img=a, gain=g)


@pytest.mark.parametrize("shape", [(13, 17), (1, 5), (4, 1)])
def test_hwc_per_channel(rng, shape):
    R, C, x, y = grid()
    c = Variable(Int, "c")
    img = Image(UChar, "img", [R, C, 3])
    out = Function(([x, y, c], box(R, C) + [Interval(Int, 0, 2)]), UChar, "out")
    out.defn = [Case(c == 0, 255 - img(x, y, c)),
                Case(c == 1, img(x, y, c) / 2 + img(x, y, 0) / 2),
                img(x, y, c) + img(x, y, 1)]                    # wraps in uint8
    luma = Function(([x, y], box(R, C)), UChar, "luma")
    luma.defn = [(Cast(Int, img(x, y, 0)) * 77 + Cast(Int, img(x, y, 1)) * 150
                  + Cast(Int, img(x, y, 2)) * 29 + 128) / 256]
    a = random_values(rng, shape + (3,), UChar)
    ref = np.empty_like(a)
    ref[..., 0] = 255 - a[..., 0]
    ref[..., 1] = a[..., 1] // 2 + a[..., 0] // 2
    ref[..., 2] = a[..., 2] + a[..., 1]
    w = a.astype(np.int32)
    ref_luma = ((w[..., 0] * 77 + w[..., 1] * 150 + w[..., 2] * 29 + 128) // 256)
    run_both([out, luma], reference=(ref, ref_luma.astype(np.uint8)), img=a)


# -- 14. photographs -----------------------------------------------------------------------

def add_all(terms):
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


def _box3_sum(a, wide):
    w = a.astype(wide)
    total = np.zeros_like(w)
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            total += shifted(w, dx, dy) if w.ndim == 2 else \
                np.stack([shifted(w[..., k], dx, dy) for k in range(w.shape[2])], axis=-1)
    return total


def test_photo_uint8_coffee():
    rgb = load_image(IMAGES / "coffee.png")
    assert rgb.dtype == np.uint8 and rgb.ndim == 3 and rgb.shape[2] == 3
    R, C, x, y = grid()
    c = Variable(Int, "c")
    img = Image(UChar, "img", [R, C, 3])
    dom = box(R, C) + [Interval(Int, 0, 2)]
    total = Function(([x, y, c], dom), UShort, "total")
    xm, xp, ym, yp = Max(x - 1, 0), Min(x + 1, R - 1), Max(y - 1, 0), Min(y + 1, C - 1)
    total.defn = [add_all([Cast(UShort, img(i, j, c)) for i in (xm, x, xp) for j in (ym, y, yp)])]
    mean = Function(([x, y, c], dom), UChar, "mean")
    mean.defn = [(total(x, y, c) + 4) / 9]
    sharp = Function(([x, y, c], dom), UChar, "sharp")
    sharp.defn = [Clamp(Cast(Int, img(x, y, c)) * 2 - mean(x, y, c), 0, 255)]
    s = _box3_sum(rgb, np.uint16)
    ref_mean = ((s + 4) // 9).astype(np.uint8)
    ref_sharp = np.clip(rgb.astype(np.int32) * 2 - ref_mean, 0, 255).astype(np.uint8)
    run_both([mean, sharp], reference=(ref_mean, ref_sharp), img=rgb)


def test_photo_uint16_camera():
    gray = load_image(IMAGES / "camera16.png")
    assert gray.dtype == np.uint16 and gray.ndim == 2
    R, C, x, y = grid()
    img = Image(UShort, "img", [R, C])
    xm, xp, ym, yp = Max(x - 1, 0), Min(x + 1, R - 1), Max(y - 1, 0), Min(y + 1, C - 1)
    total = Function(([x, y], box(R, C)), UInt, "total")
    total.defn = [add_all([Cast(UInt, img(i, j)) for i in (xm, x, xp) for j in (ym, y, yp)])]
    mean = Function(([x, y], box(R, C)), UShort, "mean")
    mean.defn = [total(x, y) / 9]
    diff = Function(([x, y], box(R, C)), Short, "diff")
    diff.defn = [Cast(Int, img(x, y)) - mean(x, y)]           # wraps into int16
    s = _box3_sum(gray, np.uint32)
    ref_mean = (s // 9).astype(np.uint16)
    ref_diff = (gray.astype(np.int32) - ref_mean).astype(np.int16)
    got = run_both([mean, diff], reference=(ref_mean, ref_diff), img=gray)
    assert got[0].max() > 255      # really 16-bit data


# -- 15. math functions --------------------------------------------------------------------

@pytest.mark.parametrize("typ", FLOAT_TYPES, ids=str)
def test_math_functions_float(rng, typ):
    N, x = Parameter(Int, "N"), Variable(Int, "x")
    a_img, b_img = Image(typ, "a", [N]), Image(typ, "b", [N])
    dom = [Interval(Int, 0, N - 1)]
    specs = [("fsqrt", Sqrt, np.sqrt), ("fexp", Exp, np.exp), ("flog", Log, np.log),
             ("fsin", Sin, np.sin), ("fcos", Cos, np.cos), ("fabsval", Abs, np.abs),
             ("ffloor", Floor, np.floor)]
    outs, refs = [], []
    a = np.concatenate([random_values(rng, (40,), typ, -10, 10),
                        np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-3, 100.0, 1e30, -1e30,
                                  np.inf, -np.inf, np.nan], typ.dtype)])
    b = np.concatenate([random_values(rng, (40,), typ, -3, 3),
                        np.array([0.0, -1.0, 2.0, 0.5, 3.0, -2.0, np.nan, 0.5, 2.0, 3.0,
                                  -1.0, 0.5, 0.0], typ.dtype)])
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
    a = np.concatenate([rng.integers(-50, 50, 30, dtype=np.int32),
                        np.array([0, 1, -1, 2 ** 31 - 1, -2 ** 31, 700], np.int32)])
    b = np.concatenate([rng.integers(-3, 4, 30, dtype=np.int32),
                        np.array([0, -1, 3, 2, 1, -2], np.int32)])
    s = rng.integers(-32768, 32768, a.size).astype(np.int16)
    s[0] = -32768
    d = a.astype(np.float64)
    with np.errstate(**IGNORE):
        specs = [("isqrt", Sqrt(a_img(x)), Double, np.sqrt(d)),
                 ("iexp", Exp(a_img(x)), Double, np.exp(d)),
                 ("ilog", Log(a_img(x)), Double, np.log(d)),
                 ("isin", Sin(a_img(x)), Double, np.sin(d)),
                 ("icos", Cos(a_img(x)), Double, np.cos(d)),
                 ("ipow", Pow(a_img(x), b_img(x)), Double, np.power(d, b.astype(np.float64))),
                 ("iabs", Abs(a_img(x)), Int, np.abs(a)),
                 ("ifloor", Floor(a_img(x)), Int, a),
                 ("sabs", Abs(s_img(x)), Short, np.abs(s)),
                 ("sfloor", Floor(s_img(x)) - 1, Short, s - np.int16(1))]
    outs, refs = [], []
    for name, e, typ, ref in specs:
        assert e.typ is typ, f"{name}: {e.typ}"
        f = Function(([x], dom), typ, name)
        f.defn = [e]
        outs.append(f)
        refs.append(np.asarray(ref))
        assert refs[-1].dtype == typ.dtype
    run_both(outs, reference=tuple(refs), a=a, b=b, s=s)


# -- 16. logic on conditions ---------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_and_or_not_with_short_circuit(rng, shape):
    R, C, x, y = grid()
    img = Image(Float, "img", [R, C])
    both = Function(([x, y], box(R, C)), Int, "both")
    # the right side of & reads img(x - 1, y), out of domain exactly where x > 0 is false
    both.defn = [Select((x > 0) & (img(x - 1, y) > 0.0), 1, 0)]
    either = Function(([x, y], box(R, C)), Int, "either")
    either.defn = [Select((y == C - 1) | (img(x, y + 1) < img(x, y)), 2, -2)]
    negated = Function(([x, y], box(R, C)), Int, "negated")
    negated.defn = [Case(~(x >= 1) | (img(x - 1, y) > 0.5), 7),
                    Case(~((img(x, y) > 0.0) & (y > 0)), -7)]
    as_number = Function(([x, y], box(R, C)), Int, "as_number")
    as_number.defn = [Cast(Int, (img(x, y) > 0.0) & ~(x == y)) * 10]
    a = random_values(rng, shape, Float)
    X, Y = np.indices(shape)
    up, right = shifted(a, -1, 0), shifted(a, 0, 1)
    ref_both = np.where((X > 0) & (up > 0), 1, 0).astype(np.int32)
    ref_either = np.where((Y == shape[1] - 1) | (right < a), 2, -2).astype(np.int32)
    ref_neg = np.select([(X < 1) | (up > 0.5), ~((a > 0) & (Y > 0))], [7, -7], 0)
    ref_num = (((a > 0) & (X != Y)) * 10).astype(np.int32)
    run_both([both, either, negated, as_number],
             reference=(ref_both, ref_either, ref_neg.astype(np.int32), ref_num), img=a)


# -- 17. threads, out=, non-contiguous inputs ---------------------------------------------

def _blur_pipeline():
    R, C, x, y = grid()
    w = Parameter(Float, "w")
    img = Image(Float, "img", [R, C])
    bx = Function(([x, y], box(R, C)), Float, "bx")
    bx.defn = [img(x, Max(y - 1, 0)) * w + img(x, y) + img(x, Min(y + 1, C - 1)) * w]
    by = Function(([x, y], box(R, C)), Float, "by")
    by.defn = [bx(Max(x - 1, 0), y) * w + bx(x, y) + bx(Min(x + 1, R - 1), y) * w]
    b = Variable(Int, "b")
    hist = Reduction(([b], [Interval(Int, 0, 9)]), ([x, y], box(R, C)), Int, "hist")
    hist.defn = [Reduce(hist(Cast(Int, by(x, y) * 3)), 1, Op.Sum)]
    return by, hist


def _blur_reference(a, w):
    w = np.float32(w)
    bx = shifted(a, 0, -1) * w + a + shifted(a, 0, 1) * w
    by = shifted(bx, -1, 0) * w + bx + shifted(bx, 1, 0) * w
    bins = np.clip(saturate((by * np.float32(3)).ravel(), np.int32), 0, 9)
    return by, np.bincount(bins, minlength=10).astype(np.int32)


def test_threads_out_and_noncontiguous_inputs(rng):
    by, hist = _blur_pipeline()
    pipe = polyimage.compile([by, hist])
    big = random_values(rng, (140, 190), Float, 0, 1)
    a = np.ascontiguousarray(big[:67, :93])
    ref = _blur_reference(a, 0.3)
    one = pipe(img=a, w=0.3, threads=1)
    two = pipe(img=a, w=0.3, threads=2)
    for o, t, r in zip(one, two, ref):
        np.testing.assert_array_equal(o, t)       # bit-identical whatever the thread count
        assert_same(o, r)
    # out= fills preallocated arrays and returns them
    outs = (np.full((67, 93), -1, np.float32), np.full(10, -1, np.int32))
    got = pipe(img=a, w=0.3, out=outs, threads=2)
    assert got[0] is outs[0] and got[1] is outs[1]
    for o, r in zip(outs, ref):
        assert_same(o, r)
    # non-contiguous views: a transposed array, a strided slice
    transposed = np.ascontiguousarray(a.T).T
    assert not transposed.flags.c_contiguous
    sliced = big[::2, 1::2][:67, :93]
    assert not sliced.flags.c_contiguous
    for view in (transposed, sliced):
        expected = _blur_reference(np.ascontiguousarray(view), 0.3)
        got = run_both([by, hist], reference=expected, img=view, w=0.3)
        interp = polyimage.interpret([by, hist], img=view, w=0.3)
        for g, i in zip(got, interp):
            assert_same(g, i)
    assert not np.array_equal(_blur_reference(sliced, 0.3)[0], ref[0])


def test_out_for_single_output_overwrites_every_point(rng):
    """Uncovered points are written as 0 even into a preallocated array full of garbage."""
    R, C, x, y = grid()
    img = Image(UShort, "img", [R, C])
    f = Function(([x, y], box(R, C)), UShort, "f")
    f.defn = [Case(x < 2, img(x, y) + 1), Case(img(x, y) > 30000, 7)]
    pipe = polyimage.compile(f)
    a = random_values(rng, (13, 17), UShort)
    X = np.indices(a.shape)[0]
    ref = np.where(X < 2, a + np.uint16(1), np.where(a > 30000, 7, 0)).astype(np.uint16)
    out = np.full(a.shape, 12345, np.uint16)
    got = pipe(img=a, out=out, threads=2)
    assert got is out
    assert_same(out, ref)
    assert_same(polyimage.interpret(f, img=a), ref)


def test_threads_on_integer_pipeline(rng):
    R, C, x, y = grid()
    img = Image(Int, "img", [R, C])
    f = Function(([x, y], box(R, C)), Int, "f")
    f.defn = [img(x, y) * 3 - img(Max(x - 1, 0), y) / 2 + img(x, Min(y + 1, C - 1)) % 7]
    a = random_values(rng, (67, 93), Int, -10 ** 6, 10 ** 6)
    ref = a * 3 - shifted(a, -1, 0) // 2 + shifted(a, 0, 1) % 7
    r1 = run_both(f, reference=ref, threads=1, img=a)
    r2 = run_both(f, reference=ref, threads=2, img=a)
    np.testing.assert_array_equal(r1, r2)


# -- 18. determinism of the generated C ----------------------------------------------------

_SCRIPT = """
import sys
import polyimage
from polyimage import *
R, C = Parameter(Int, "R"), Parameter(Int, "C")
w = Parameter(Float, "w")
x, y, c, b = (Variable(Int, n) for n in "xycb")
img = Image(UChar, "img", [R, C, 3])
dom = [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]
gray = Function(([x, y], dom), Float, "gray")
gray.defn = [Cast(Float, img(x, y, 0)) * 0.25 + img(x, y, 1) * 0.5 + img(x, y, 2) * 0.25]
blur = Function(([x, y], dom), Float, "blur")
blur.defn = [Case(x % 2 == 0, gray(Max(x - 1, 0), y) * w + gray(x, y)),
             Select(y > 0, gray(x, y - 1), -gray(x, y)) / 3]
small = Function(([x, y], [Interval(Int, 0, (R - 1) / 2), Interval(Int, 0, C - 1)]), Short,
                 "small")
small.defn = [Min(Cast(Int, blur(2 * x, y)), 300) // -7 + Abs(Cast(Char, gray(2 * x, y)))]
hist = Reduction(([b], [Interval(Int, 0, 15)]), ([x, y], dom), UInt, "hist")
hist.defn = [Reduce(hist(Cast(Int, gray(x, y)) / 16), 1, Op.Sum)]
pipe = polyimage.compile([small, hist, blur])
sys.stdout.write(pipe.c_source)
"""


def test_c_source_is_deterministic_across_processes(tmp_path):
    procs = []
    for k, seed in enumerate(("1", "2")):
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONHASHSEED=seed,
                   POLYIMAGE_CACHE_DIR=str(tmp_path / f"cache{k}"))
        procs.append(subprocess.Popen([sys.executable, "-c", _SCRIPT], env=env, cwd=tmp_path,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    sources = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
        sources.append(out)
    assert b"pipeline_small" in sources[0] and b"hist" in sources[0]
    assert sources[0] == sources[1]
    # and the same as a build in this process
    namespace = {}
    exec(compile(_SCRIPT.replace("sys.stdout.write(pipe.c_source)", ""), "<pipeline>", "exec"),
         namespace)
    assert namespace["pipe"].c_source.encode() == sources[0]


# -- wide index values, stage names -----------------------------------------------------

@pytest.mark.parametrize("typ", [UInt, ULong], ids=str)
def test_lut_indexed_by_wide_unsigned_values(typ):
    """Indices too large for int64 are still too large: they clamp to the upper bound."""
    N, x, i = Parameter(Int, "N"), Variable(Int, "x"), Variable(Int, "i")
    img = Image(typ, "img", [N])
    lut = Function(([i], [Interval(Int, -3, 9)]), Int, "lut")
    lut.defn = [i * 10]
    out = Function(([x], [Interval(Int, 0, N - 1)]), Int, "out")
    out.defn = [lut(img(x))]
    top = int(np.iinfo(typ.dtype).max)
    values = [0, 5, 9, 10, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 63 - 1, 2 ** 63, top - 1, top]
    values = [v for v in values if v <= top]
    ref = np.array([min(v, 9) * 10 for v in values], np.int32)
    run_both(out, reference=ref, img=np.array(values, typ.dtype))


@pytest.mark.parametrize("name", ["fabs", "sqrt", "free", "int64_t", "INFINITY", "out_lb0"])
def test_stage_names_that_the_generated_c_also_uses(name):
    """Any identifier is a valid stage name; the C names must not collide with libm functions,
    stdint types, macros or the buffer bounds (<stage>_lb<d>) the generated code uses."""
    N, x = Parameter(Int, "N"), Variable(Int, "x")
    img = Image(Double, "img", [N])
    mid = Function(([x], [Interval(Int, 0, N - 1)]), Double, name)
    mid.defn = [Abs(img(x))]
    out = Function(([x], [Interval(Int, 0, N - 1)]), Double, "out")
    out.defn = [Select(mid(x) > 1, Sqrt(mid(x)) + Floor(mid(x)), mid(x) * math.inf)]
    a = np.array([-4.0, 0.5, 2.25])
    run_both(out, reference=np.array([6.0, math.inf, 3.5]), img=a)
