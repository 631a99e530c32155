"""Semantics of Reductions: histograms, reductions over one dimension (every operator,
defaults, Cases), over an empty domain, and into blocks."""

import math

import numpy as np
import pytest
from helpers import (
    IGNORE,
    box,
    grid,
    random_values,
    saturate,
)
from oracle import run_both

from polyimage import (
    Abs,
    Case,
    Cast,
    Double,
    Float,
    Floor,
    Function,
    Image,
    Int,
    Interval,
    Long,
    Op,
    Reduce,
    Reduction,
    UChar,
    UInt,
    UShort,
    Variable,
)

# -- reductions ------------------------------------------------------------------------------------


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
    cmin.defn = [Reduce(cmin(j), fimg(i, j), Op.Min)]  # default 0 takes part
    cmul = Reduction(([y], cols), ([i, j], box(R, C)), Int, "cmul")
    cmul.default = 1
    cmul.defn = [Reduce(cmul(j), img(i, j), Op.Mul)]  # wraps
    dflt = Reduction(([x], rows), ([i, j], box(R, C)), Int, "dflt")
    dflt.default = 10 * x + 1
    dflt.defn = [Reduce(dflt(i), 1, Op.Sum)]
    cased = Reduction(([x], rows), ([i, j], box(R, C)), Int, "cased")
    cased.defn = [
        Case(img(i, j) > 0, Reduce(cased(i), img(i, j), Op.Sum)),
        Case(j % 2 == 0, Reduce(cased(i), 1000, Op.Sum)),
    ]
    # every Case that holds applies (PolyMage's semantics): a plain Reduce applies at every
    # point, after the Cases before it; Int default from a float
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
    refs = (
        a.astype(np.int64).sum(axis=1),
        np.maximum(np.float32(-np.inf), fa.max(axis=0)),
        np.minimum(np.float32(0), fa.min(axis=0)),
        prod,
        (10 * np.arange(shape[0]) + 1 + shape[1]).astype(np.int32),
        (np.where(a > 0, a, 0) + np.where(Y % 2 == 0, 1000, 0)).sum(axis=1).astype(np.int32),
        (-2 + 100 + a.sum(axis=1)).astype(np.int32),
        a.astype(np.int64) * shape[1] - a.astype(np.int64).sum(axis=1)[:, None],
    )
    run_both([rsum, cmax, cmin, cmul, dflt, cased, rest, centred], reference=refs, img=a, fimg=fa)


@pytest.mark.parametrize("shape", [(1, 5), (4, 5)])
def test_reduction_over_an_empty_domain_keeps_the_default(rng, shape):
    R, C, x, y = grid()
    i, j = Variable(Int, "i"), Variable(Int, "j")
    img = Image(Int, "img", [R, C])
    steps = Reduction(
        ([y], [Interval(Int, 0, C - 1)]),
        ([i, j], [Interval(Int, 1, R - 1), Interval(Int, 0, C - 1)]),
        Int,
        "steps",
    )
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
    blocks = Reduction(
        ([x, y], [Interval(Int, 0, (R - 1) / 4), Interval(Int, 0, (C - 1) / 4)]),
        ([i, j], box(R, C)),
        UInt,
        "blocks",
    )
    blocks.default = 7
    blocks.defn = [Reduce(blocks(i / 4, j / 4), img(i, j), Op.Sum)]
    bmax = Reduction(
        ([x, y], [Interval(Int, 0, (R - 1) / 4), Interval(Int, 0, (C - 1) / 4)]),
        ([i, j], box(R, C)),
        UShort,
        "bmax",
    )
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
