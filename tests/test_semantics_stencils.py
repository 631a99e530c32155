"""Semantics of stencils: chains of 1-D and 2-D blurs (clamped edges, shrinking integer
domains), 3-D images in CHW and HWC layouts, and the bundled photographs."""

import numpy as np
import pytest
from helpers import IMAGES, SHAPE_IDS, SHAPES, box, grid, random_values, shifted
from oracle import run_both

from polyimage import (
    Case,
    Cast,
    Clamp,
    Double,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Max,
    Min,
    Parameter,
    Short,
    UChar,
    UInt,
    UShort,
    Variable,
)
from polyimage.io import load_image

# -- chains of blurs -------------------------------------------------------------------------------


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
    b3.defn = [
        (
            by(xm, ym)
            + 2 * by(xm, y)
            + by(xm, yp)
            + 2 * by(x, ym)
            + 4 * by(x, y)
            + 2 * by(x, yp)
            + by(xp, ym)
            + 2 * by(xp, y)
            + by(xp, yp)
        )
        * 0.0625
    ]
    a = random_values(rng, shape, Float)
    s = shifted
    rx = (s(a, 0, -1) + a + s(a, 0, 1)) / np.float32(3)
    ry = (s(rx, -1, 0) + rx + s(rx, 1, 0)) / np.float32(3)
    r3 = (
        s(ry, -1, -1)
        + 2 * s(ry, -1, 0)
        + s(ry, -1, 1)
        + 2 * s(ry, 0, -1)
        + 4 * ry
        + 2 * s(ry, 0, 1)
        + s(ry, 1, -1)
        + 2 * s(ry, 1, 0)
        + s(ry, 1, 1)
    ) * np.float32(0.0625)
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
    mean = Function(([x, y], [Interval(Int, 1, R - 2), Interval(Int, 1, C - 2)]), UShort, "mean")
    mean.defn = [(by(x, y) + 4) / 9]
    a = random_values(rng, shape, UShort)
    w = a.astype(np.uint64)
    rx = w[:, :-2] + w[:, 1:-1] + w[:, 2:]
    ry = rx[:-2] + rx[1:-1] + rx[2:]
    ref = ((ry + 4) // 9).astype(np.uint16)
    run_both(mean, reference=ref, img=a)


# -- 3-D images ------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(13, 17), (1, 5), (4, 1)])
def test_chw_per_channel(rng, shape):
    R, C, x, y = grid()
    c = Variable(Int, "c")
    img = Image(Float, "img", [3, R, C])
    gain = Image(Float, "gain", [3])
    out = Function(([c, x, y], [Interval(Int, 0, 2)] + box(R, C)), Float, "out")
    out.defn = [
        Case(c == 0, img(c, x, y) * gain(c) + 1),
        img(c, x, y) * gain(c) - img(Max(c - 1, 0), x, Min(y + 1, C - 1)),
    ]
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
    out.defn = [
        Case(c == 0, 255 - img(x, y, c)),
        Case(c == 1, img(x, y, c) / 2 + img(x, y, 0) / 2),
        img(x, y, c) + img(x, y, 1),
    ]  # wraps in uint8
    luma = Function(([x, y], box(R, C)), UChar, "luma")
    luma.defn = [
        (
            Cast(Int, img(x, y, 0)) * 77
            + Cast(Int, img(x, y, 1)) * 150
            + Cast(Int, img(x, y, 2)) * 29
            + 128
        )
        / 256
    ]
    a = random_values(rng, shape + (3,), UChar)
    ref = np.empty_like(a)
    ref[..., 0] = 255 - a[..., 0]
    ref[..., 1] = a[..., 1] // 2 + a[..., 0] // 2
    ref[..., 2] = a[..., 2] + a[..., 1]
    w = a.astype(np.int32)
    ref_luma = (w[..., 0] * 77 + w[..., 1] * 150 + w[..., 2] * 29 + 128) // 256
    run_both([out, luma], reference=(ref, ref_luma.astype(np.uint8)), img=a)


# -- photographs -----------------------------------------------------------------------------------


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
            total += (
                shifted(w, dx, dy)
                if w.ndim == 2
                else np.stack([shifted(w[..., k], dx, dy) for k in range(w.shape[2])], axis=-1)
            )
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
    diff.defn = [Cast(Int, img(x, y)) - mean(x, y)]  # wraps into int16
    s = _box3_sum(gray, np.uint32)
    ref_mean = (s // 9).astype(np.uint16)
    ref_diff = (gray.astype(np.int32) - ref_mean).astype(np.int16)
    got = run_both([mean, diff], reference=(ref_mean, ref_diff), img=gray)
    assert got[0].max() > 255  # really 16-bit data
