"""The cost model does not fuse stages into a group the generated code runs slower than the
stages apart: a live-out other members read is copied out of its scratchpad, and a tile
narrower than the rows of a live-in in memory starts a run of memory on each of them."""

import dataclasses

import pytest
from helpers import MACHINE, pinned_options

import polyimage
from polyimage import (
    Case,
    Float,
    Floor,
    Function,
    Image,
    Int,
    Interval,
    Max,
    Parameter,
    Select,
    Variable,
)
from polyimage.grouping import cost
from polyimage.grouping.cost import CostModel
from polyimage.grouping.facts import memory_streams

ESTIMATES = {"R": 1536, "C": 2560}


def smoothing():
    """`smooth`, a 3-tap blur down the rows, and `levels`, its values quantized."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R, C])
    domain = ([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)])
    smooth = Function(domain, Float, "smooth")
    blur = (img(x, y) * 2.0 + img(x - 1, y) * 2.0 + img(x + 1, y)) / 5.0
    smooth.defn = [Case((x >= 1) & (x <= R - 2), blur), img(x, y)]
    levels = Function(domain, Float, "levels")
    levels.defn = [Floor(smooth(x, y) * 4.0) * 0.25 + 2.0]
    return smooth, levels


def planes():
    """`peak`, the largest of three planes' steps down the rows, and `mean`, a pair of its
    rows averaged: a group reading a three-plane buffer of 47 MB."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    c, x, y = Variable(Int, "c"), Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [3, R, C])
    rows = [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]
    scaled = Function(([c, x, y], [Interval(Int, 0, 2), *rows]), Float, "scaled")
    scaled.defn = [Floor(img(c, x, y) * 64.0) * 0.25]
    peak = Function(([x, y], rows), Float, "peak")

    def step(k):
        return Select(x >= 1, scaled(k, x - 1, y) - scaled(k, x, y), scaled(k, x, y) * 0.5)

    peak.defn = [Max(Max(step(0), step(1)), step(2))]
    mean = Function(([x, y], [Interval(Int, 1, R - 2), Interval(Int, 0, C - 1)]), Float, "mean")
    mean.defn = [(peak(x, y) + peak(x + 1, y)) * 0.5]
    return mean


def groups_of(outputs, inline=True) -> list:
    """The stages of each group auto chooses for `outputs` at ESTIMATES on MACHINE."""
    pipe = polyimage.compile(
        outputs, estimates=ESTIMATES, options=pinned_options(), build=False, inline=inline
    )
    return [set(g.stages) for g in pipe.schedule.groups]


def model_of(outputs, inline=True) -> CostModel:
    pipe = polyimage.compile(
        outputs, estimates=ESTIMATES, schedule="naive", build=False, inline=inline
    )
    return CostModel(pipe.stage_graph, pipe.param_values, MACHINE)


def test_a_stage_also_an_output_is_not_fused_with_its_consumer():
    """Measured at these sizes: fused, `smooth` runs through its scratchpad and a copy to its
    buffer, 1.3x the two stages apart; as no output, fused it is 0.7x."""
    smooth, levels = smoothing()
    assert {"smooth", "levels"} not in groups_of([smooth, levels])
    assert {"smooth", "levels"} in groups_of([levels], inline=False)


def test_the_copy_out_of_a_scratch_live_out_is_priced(monkeypatch):
    smooth, levels = smoothing()
    model = model_of([smooth, levels])
    fused = model(("smooth", "levels")).cost
    apart = model(("smooth",)).cost + model(("levels",)).cost
    assert fused > apart
    monkeypatch.setattr(cost, "COPY_OUT_BYTES", 0.0)
    assert model_of([smooth, levels])(("smooth", "levels")).cost < apart


def test_tiles_narrower_than_the_rows_of_a_live_in_in_memory_pay_a_run_per_row(monkeypatch):
    """A group reading three planes of 1536 x 2560 floats takes tiles of whole rows; without
    the price of a run per row it takes tiles of 256 columns (measured 1.5x slower)."""
    mean = planes()
    model = model_of([mean])
    group = ("peak", "mean")
    plan = model.plan(group)
    narrow, strip = model.measure(plan, [(512, 256), (64, 2560)])
    # a run per plane and row: the tile's rows and one more on each side (mean, then peak)
    assert narrow["streams"] == 3 * (512 + 2) and strip["streams"] == 0
    assert model(group).tile_sizes[-1] >= ESTIMATES["C"]
    monkeypatch.setattr(cost, "STREAM_START_BYTES", 0.0)
    assert model_of([mean])(group).tile_sizes[-1] < ESTIMATES["C"]


def test_a_live_in_that_fits_l2_starts_no_runs():
    mean = planes()
    pipe = polyimage.compile([mean], estimates={"R": 64, "C": 512}, schedule="naive", build=False)
    model = CostModel(pipe.stage_graph, pipe.param_values, MACHINE)
    assert model.measure(model.plan(("peak", "mean")), [(16, 128)])[0]["streams"] == 0
    small = dataclasses.replace(MACHINE, l2_bytes=64 * 1024)
    model = CostModel(pipe.stage_graph, pipe.param_values, small)
    assert model.measure(model.plan(("peak", "mean")), [(16, 128)])[0]["streams"] == 3 * (16 + 2)


@pytest.mark.parametrize(
    "lows, highs, extents, runs",
    [
        ((0, 0, 0), (2, 512, 255), (3, 1536, 2560), 3 * 513),  # narrower than the rows
        ((0, 0, 0), (2, 63, 2559), (3, 1536, 2560), 0),  # whole rows
        ((0,), (9,), (20,), 1),  # part of a row
        ((0, 5), (3, 4), (8, 8), 0),  # empty
    ],
)
def test_memory_streams_counts_the_rows_of_a_box_narrower_than_its_buffer(
    lows, highs, extents, runs
):
    assert memory_streams(lows, highs, extents) == runs
