"""A scatter (a Reduction updating cells at indices computed from data: a histogram, a
bilateral grid) whose offsets and values take a few operations a point is staged
(codegen.reduction_loops.staged_scatter): a vector loop computes 64 points' offsets and
values into small buffers, a plain loop applies them in order. Every cell still sees its
updates in the serial order, so results equal the interpreter's bit for bit, at sizes that
leave partial strips, on 1 and 2 threads, untiled, privatized and tiled."""

import numpy as np
import pytest
from oracle import assert_same

import polyimage
from polyimage import (
    Case,
    Cast,
    Clamp,
    Condition,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Op,
    Parameter,
    Reduce,
    Reduction,
    Schedule,
    Sqrt,
    UChar,
    UShort,
    Variable,
)
from polyimage.codegen.reduction_loops import STAGED_STRIP, staged_scatter
from polyimage.config import Options
from polyimage.tools.vectorization import describe, vectorization

ESTIMATES = {"R": 256, "C": 512}
# rows of one point, of fewer points than a strip, and of more than two strips with a tail
SIZES = [(1, 1), (5, STAGED_STRIP - 3), (9, 2 * STAGED_STRIP + 7)]


def _vars():
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    u, v, b, ch = (Variable(Int, n) for n in ("u", "v", "b", "ch"))
    return R, C, u, v, b, ch


def _histogram(form: str):
    """(reduction, image): a scatter over an R x C image, of the kind `form`."""
    R, C, u, v, b, ch = _vars()
    rows, cols = Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)
    bins = ([b], [Interval(Int, 0, 63)])
    pixels = ([u, v], [rows, cols])
    if form.startswith("uint"):
        img = Image(UShort if form == "uint16 mix" else UChar, "img", [R, C])
        h = Reduction(bins, pixels, Int, "h")
        at = img(u, v)
        if form == "uint16 mix":
            h.defn = [Reduce(h((at / 256 + at % 256) / 8), 1, Op.Sum)]
        else:  # a plain count: too little work to stage
            h.defn = [Reduce(h(at / 4), 1, Op.Sum)]
        return h, img
    img = Image(Float, "img", [R, C])
    at = img(u, v)
    if form == "float bin":
        h = Reduction(bins, pixels, Int, "h")
        h.defn = [Reduce(h(Cast(Int, at * 63.0)), 1, Op.Sum)]
    elif form == "weighted":
        h = Reduction(bins, pixels, Float, "h")
        value = Cast(Int, Sqrt(Clamp(at, 0.0, 1.0)) * 63.0 + 0.5)
        h.defn = [Reduce(h(value), at * at - 0.25, Op.Sum)]
    elif form == "channels":  # value and weight channels, as a bilateral grid's
        grid = ([ch, b], [Interval(Int, 0, 1), Interval(Int, 0, 63)])
        h = Reduction(grid, ([ch, u, v], [Interval(Int, 0, 1), rows, cols]), Float, "h")
        h.defn = [Reduce(h(ch, Cast(Int, at * 63.0 + 0.5)), Cast(Float, ch) * at + 1.0, Op.Sum)]
    elif form == "cells":  # cells of 4 x 4 pixels by value bins: tiles own their cells
        x, y = Variable(Int, "x"), Variable(Int, "y")
        cells = [Interval(Int, 0, 15), Interval(Int, 0, (R - 1) / 4), Interval(Int, 0, (C - 1) / 4)]
        h = Reduction(([b, x, y], cells), pixels, Float, "h")
        h.defn = [Reduce(h(Cast(Int, at * 15.0 + 0.5), u / 4, v / 4), at * 2.0 - 1.0, Op.Sum)]
    else:
        raise ValueError(form)
    return h, img


STAGED = ["float bin", "weighted", "channels", "cells", "uint16 mix"]


def _image(img, shape, rng):
    if img.typ is Float:  # values outside [0, 1], exact zeros and halves: clamps and ties
        values = rng.uniform(-0.25, 1.25, shape).astype(np.float32)
        values.flat[:: max(1, values.size // 7)] = 0.5
        values.flat[1 :: max(1, values.size // 5)] = 0.0
        return values
    return rng.integers(0, np.iinfo(img.typ.dtype).max, shape, dtype=img.typ.dtype)


@pytest.mark.parametrize("form", STAGED)
def test_a_scatter_with_work_is_staged(form):
    h, _ = _histogram(form)
    assert staged_scatter(h), form


def test_a_plain_count_and_a_conditional_update_are_not_staged():
    h, _ = _histogram("uint8 count")
    assert not staged_scatter(h), "a shift and a clamp are less than the staging costs"
    R, C, u, v, b, _ = _vars()
    img = Image(Float, "img", [R, C])
    rows, cols = Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)
    h = Reduction(([b], [Interval(Int, 0, 63)]), ([u, v], [rows, cols]), Int, "h")
    h.defn = [
        Case(Condition(img(u, v), ">", 0.5), Reduce(h(Cast(Int, img(u, v) * 63.0)), 1, Op.Sum))
    ]
    assert not staged_scatter(h), "a condition: offsets and values only where it holds"


def _check(outputs, img, schedule, tmp_path, what):
    pipe = polyimage.compile(
        outputs, estimates=ESTIMATES, schedule=schedule, options=Options(cache_dir=tmp_path)
    )
    assert "a scatter, staged" in pipe.report()
    rng = np.random.default_rng(3)
    for shape in SIZES:
        arrays = {"img": _image(img, shape, rng)}
        want = polyimage.interpret(outputs, **arrays)
        for threads in (1, 2):
            got = pipe(**arrays, threads=threads)
            assert_same(got, want, f"{what} {shape}, {threads} threads", exact=True)
    return pipe


@pytest.mark.parametrize("form", STAGED)
@pytest.mark.parametrize("schedule", ["naive", "auto"])
def test_staged_scatters_equal_the_interpreter_bit_for_bit(form, schedule, tmp_path):
    h, img = _histogram(form)
    _check([h], img, schedule, tmp_path, f"{form} {schedule}")


@pytest.mark.parametrize("tiles", ["4x2x3", "16x5x64"])
def test_a_staged_scatter_computed_per_tile_of_its_consumer(tiles, tmp_path):
    """Tiles of the cells (a consumer's) run the points that own them, by residues of the
    cell size (independent_inner), each residue staged."""
    h, img = _histogram("cells")
    b, x, y = h.variables
    blurred = Function((h.variables, h.intervals), Float, "blurred")
    blurred.defn = [h(b, x, y) * 0.5 - 1.0]
    schedule = Schedule.parse(f"group 0: h, blurred [{tiles}]")
    pipe = _check([blurred], img, schedule, tmp_path, f"cells in tiles {tiles}")
    assert "computed per tile of group 0" in pipe.report()


@pytest.mark.parametrize("march", [None, "x86-64-v3"], ids=["native", "avx2"])
@pytest.mark.parametrize("form", STAGED)
def test_a_staged_scatter_computes_in_vectors(form, march, tmp_path):
    """gcc's report (tools.vectorization) finds every loop of a staged scatter vectorized:
    the applying loop, scalar by nature, is left out of it, and no stage is left scalar."""
    h, _ = _histogram(form)
    options = Options(cache_dir=tmp_path)
    pipe = polyimage.compile([h], estimates=ESTIMATES, march=march, options=options)
    verdicts = [v for v in vectorization(pipe) if "h" in v.stages]
    assert len(verdicts) >= 2 and all(v.vectorized for v in verdicts), describe(verdicts)
    assert pipe.scalar_stages == ()
