"""Channels computed together (codegen.jam): in a tiled group, a stage whose first dimension
has a few constant points and whose definition reads some stage at indices that do not depend
on it gets a copy, for tiles that span that dimension, computing every point in one innermost
loop with one accumulator per point updated term by term. The sums are the same in the same
order, so results are the interpreter's bit for bit, whichever copy the tiles take."""

import numpy as np
import pytest
from helpers import SHIFTS, assert_exact_on_threads, grid, weighted_means

import polyimage
from polyimage import (
    Case,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Op,
    Reduce,
    Reduction,
    Schedule,
    Variable,
)
from polyimage.codegen.jam import jam_plan, sum_terms


def _arguments(rows, cols, seed):
    rng = np.random.default_rng(seed)
    values = rng.random((3, rows + 2, cols + 2), dtype=np.float32) * 4.0 - 2.0
    specials = np.array([np.inf, -0.0, np.nan, 1e-40, -np.inf], dtype=np.float32)
    picked = rng.choice(values.size, size=min(len(specials), values.size), replace=False)
    values.flat[picked] = specials[: len(picked)]
    return {"img": values}


@pytest.mark.parametrize(
    "text",
    [
        "group 0: weights, sums [4x4x16]\ngroup 1: out [untiled]",  # every channel: jammed
        "group 0: weights, sums [2x4x16]\ngroup 1: out [untiled]",  # split channels: plain
        "group 0: weights, sums [4x8x32 then 4x2x32]\ngroup 1: out [untiled]",
        "group 0: weights, sums, out [4x3x40]",
    ],
)
@pytest.mark.parametrize("size", [(1, 1), (6, 37)])
def test_both_copies_match_the_interpreter(text, size):
    outputs = weighted_means()
    pipe = polyimage.compile(outputs, schedule=Schedule.parse(text), inline=False)
    assert_exact_on_threads(pipe, outputs, _arguments(*size, sum(size)), threads=(1, 2))


def test_the_jammed_copy_updates_one_accumulator_per_channel_in_turn():
    schedule = Schedule.parse("group 0: weights, sums [4x4x16]\ngroup 1: out [untiled]")
    source = polyimage.compile(weighted_means(), schedule=schedule, inline=False).c_source
    assert "PIM_IN_ORDER void" in source
    lines = [line.strip() for line in source.splitlines() if "pim_acc" in line]
    first = [line.split(" = ")[0].split()[-1] for line in lines[:8]]
    assert first == [f"pim_acc{k}" for k in range(4)] * 2  # each term added to every channel
    assert sum(line.startswith("pim_acc3 = (pim_acc3 +") for line in lines) == len(SHIFTS) - 1


def test_what_is_not_computed_together():
    R, C, x, y = grid()
    c = Variable(Int, "c")
    img = Image(Float, "img", [3, R, C])
    rows, cols = Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)

    def stage(channels, value, typ=Float):
        f = Function(([c, x, y], [Interval(Int, 0, channels - 1), rows, cols]), typ, "f")
        f.defn = value if isinstance(value, list) else [value]
        return f

    shared = img(0, x, y)
    assert jam_plan(stage(3, img(c, x, y) + shared)) is not None
    assert jam_plan(stage(3, img(c, x, y) * 2.0)) is None  # no read the channels share
    assert jam_plan(stage(8, img(c % 3, x, y) + shared)) is not None  # search offsets
    assert jam_plan(stage(9, img(c % 3, x, y) + shared)) is None  # too many points
    assert jam_plan(stage(3, [Case(x > 2, shared), img(c, x, y)])) is None  # undecided Case
    assert jam_plan(stage(3, img(c, x, y) + shared, Int)) is None  # not a float sum
    assert jam_plan(stage(3, img(c, x, y // 2) + shared)) is None  # residues of y
    u = Variable(Int, "u")
    acc = Reduction(([c, x, y], [Interval(Int, 0, 2), rows, cols]), ([u], [rows]), Float, "acc")
    acc.defn = [Reduce(acc(0, u, 0), img(0, u, 0), Op.Sum)]
    assert jam_plan(acc) is None


def test_a_sum_splits_into_its_terms_in_order():
    R, C, x, y = grid()
    img = Image(Float, "img", [R, C])
    a, b, c = img(x, y), img(x + 1, y), img(x, y + 1)
    terms = sum_terms((a + b) + c)
    assert len(terms) == 3 and all(t is e for t, e in zip(terms, (a, b, c)))
    terms = sum_terms(a + (b + c))  # right-nested: b + c stays one term
    assert len(terms) == 2 and terms[0] is a
    assert len(sum_terms(a * b)) == 1


def test_search_offsets_computed_together_match_the_interpreter():
    """Seven offsets of a row (non-local means' distances): each compared with the one pixel
    they share, seven accumulators in one loop."""
    R, C, x, y = grid()
    dx = Variable(Int, "dx")
    img = Image(Float, "img", [R + 6, C])
    dist = Function(
        ([dx, x, y], [Interval(Int, -3, 3), Interval(Int, 3, R + 2), Interval(Int, 0, C - 1)]),
        Float,
        "dist",
    )
    diff = img(x, y) - img(x + dx, y)
    dist.defn = [diff * diff + img(x, y)]
    total = Function(([x, y], [Interval(Int, 3, R + 2), Interval(Int, 0, C - 1)]), Float, "total")
    total.defn = [sum((dist(k, x, y) for k in range(-2, 4)), dist(-3, x, y))]
    schedule = Schedule.parse("group 0: dist, total [4x16]")
    pipe = polyimage.compile([total], schedule=schedule, inline=False)
    assert "pim_acc6" in pipe.c_source and "pim_acc7" not in pipe.c_source
    rng = np.random.default_rng(7)
    for rows, cols in ((1, 1), (9, 37)):
        values = rng.random((rows + 6, cols), dtype=np.float32)
        values.flat[0] = np.nan
        assert_exact_on_threads(pipe, [total], {"img": values}, threads=(1, 2))


@pytest.mark.parametrize("short", [0, 1, 2])
def test_channels_whose_sums_differ_in_length_match_the_interpreter(short):
    """Channel `short` sums two terms, the others three, all sharing a read: a shorter chain
    stops taking terms while the others go on, and every accumulator is stored."""
    R, C, x, y = grid()
    c = Variable(Int, "c")
    img = Image(Float, "img", [3, R + 2, C + 2])
    rows, cols = Interval(Int, 1, R), Interval(Int, 1, C)
    shared = img(0, x, y)
    mine = img(c, x + 1, y - 1) * 0.5
    stage = Function(([c, x, y], [Interval(Int, 0, 2), rows, cols]), Float, "stage")
    stage.defn = [Case(c == short, shared + mine), shared + mine + img(c, x - 1, y + 1)]
    chains = [len(sum_terms(value)) for value in jam_plan(stage).values]
    assert chains == [2 if k == short else 3 for k in range(3)]
    out = Function(([c, x, y], [Interval(Int, 0, 2), rows, cols]), Float, "out")
    out.defn = [stage(c, x, y) * 2.0]
    schedule = Schedule.parse("group 0: stage, out [3x4x16]")
    pipe = polyimage.compile([out], schedule=schedule, inline=False)
    assert "PIM_IN_ORDER void" in pipe.c_source
    for size in ((1, 1), (5, 37)):
        assert_exact_on_threads(pipe, [out], _arguments(*size, short), threads=(1, 2))
