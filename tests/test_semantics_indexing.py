"""Semantics of indices: down- and up-sampling (floor division, negative coordinates) and
lookup tables indexed by data, clamped to the table."""

import numpy as np
import pytest
from helpers import box, grid, random_values, saturate
from oracle import run_both

from polyimage import (
    Cast,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Min,
    Parameter,
    Short,
    UChar,
    UInt,
    ULong,
    Variable,
)

# -- down- and up-sampling -------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(13, 17), (67, 93), (2, 3), (3, 2), (5, 4)])
def test_down_and_up_sampling(rng, shape):
    R, C, x, y = grid()
    img = Image(Int, "img", [R, C])
    down = Function(
        ([x, y], [Interval(Int, 0, (R - 1) / 2), Interval(Int, 0, (C - 1) / 2)]), Int, "down"
    )
    down.defn = [img(2 * x, 2 * y)]
    odd = Function(([x, y], [Interval(Int, 0, R / 2 - 1), Interval(Int, 0, C / 2 - 1)]), Int, "odd")
    odd.defn = [img(2 * x + 1, 2 * y + 1)]
    up = Function(([x, y], [Interval(Int, 0, 2 * R - 1), Interval(Int, 0, 2 * C - 1)]), Int, "up")
    up.defn = [img(x / 2, y / 2)]
    up_odd = Function(
        ([x, y], [Interval(Int, 0, 2 * R - 2), Interval(Int, 0, 2 * C - 2)]), Int, "up_odd"
    )
    up_odd.defn = [img((x + 1) // 2, y // 2) - img(x // 2, (y + 1) // 2)]
    # a pyramid: down-sample, then up-sample the result
    pyr = Function(
        (
            [x, y],
            [Interval(Int, 0, 2 * ((R - 1) / 2) + 1), Interval(Int, 0, 2 * ((C - 1) / 2) + 1)],
        ),
        Int,
        "pyr",
    )
    pyr.defn = [down(x / 2, y / 2) * 2 + down(x // 2, y // 2)]
    # negative coordinates: floor division must round toward minus infinity
    neg = Function(([x, y], [Interval(Int, -2 * R, -1), Interval(Int, -7, 6)]), Int, "neg")
    neg.defn = [img(x / 2 + R, y % 2)]
    a = random_values(rng, shape, Int, -1000, 1000)
    r, c = shape
    Xu, Yu = np.indices((2 * r - 1, 2 * c - 1))
    d = a[::2, ::2]
    refs = (
        d,
        a[1::2, 1::2][: r // 2, : c // 2],
        np.repeat(np.repeat(a, 2, 0), 2, 1),
        a[(Xu + 1) // 2, Yu // 2] - a[Xu // 2, (Yu + 1) // 2],
        3 * np.repeat(np.repeat(d, 2, 0), 2, 1),
        a[np.arange(-2 * r, 0)[:, None] // 2 + r, np.arange(-7, 7)[None, :] % 2],
    )
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


# -- lookup tables indexed by data -----------------------------------------------------------------


@pytest.mark.parametrize("shape", [(13, 17), (1, 1), (67, 93)])
def test_lut_indexed_by_uint8_image(rng, shape):
    R, C, x, y = grid()
    L = Parameter(Int, "L")
    img = Image(UChar, "img", [R, C])
    lut = Image(Short, "lut", [L])
    direct = Function(([x, y], box(R, C)), Short, "direct")
    direct.defn = [lut(img(x, y))]  # values >= L are clamped to L - 1
    offset = Function(([x, y], box(R, C)), Short, "offset")
    offset.defn = [lut(Cast(Int, img(x, y)) - 30) + 1]  # negative indices are clamped to 0
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
    values = [0, 5, 9, 10, 2**31 - 1, 2**31, 2**32 - 1, 2**63 - 1, 2**63, top - 1, top]
    values = [v for v in values if v <= top]
    ref = np.array([min(v, 9) * 10 for v in values], np.int32)
    run_both(out, reference=ref, img=np.array(values, typ.dtype))
