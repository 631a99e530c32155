"""Scans in tiled groups: tiles are strips holding whole every dimension a member scans (a size
cut along it is widened), the scan runs in order over its region from the start of its domain,
and its producers and consumers fuse with it. Compiled results equal the interpreter's bit for
bit (the order of the operations is unchanged) on 1 and 2 threads."""

import numpy as np
import pytest
from helpers import MACHINE, assert_exact_on_threads, numeric_regions, pinned_options

import polyimage
from polyimage import (
    Case,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Max,
    Min,
    Parameter,
    Schedule,
    Variable,
)
from polyimage.apps import load_app
from polyimage.graph.dag import build_graph
from polyimage.grouping.cost import SCAN_MIDDLE, SCAN_TASKS_PER_CORE, CostModel
from polyimage.grouping.tile_search import SCAN_ROW_BYTES
from polyimage.schedule.regions import NumericRegions
from polyimage.schedule.tiling import WHOLE_TILE, TiledGroup, tiling_plan

THREADS = (1, 2)
SHAPE = (37, 53)


def _variables():
    R, C, K = Parameter(Int, "R"), Parameter(Int, "C"), Parameter(Int, "K")
    x, y, c = Variable(Int, "x"), Variable(Int, "y"), Variable(Int, "c")
    return R, C, K, x, y, c


def _recursive_filter():
    """A first-order IIR (weight 0.5) down the columns, up them (on reversed rows), along the
    rows and back (on reversed columns) of a 3-channel image."""
    R, C, K, x, y, c = _variables()
    box = ([x, y, c], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1), Interval(Int, 0, K - 1)])
    img = Image(Float, "img", [R, C, K])
    down = Function(box, Float, "down")
    down.defn = [Case(x == 0, img(x, y, c)), 0.5 * img(x, y, c) + 0.5 * down(x - 1, y, c)]
    up = Function(box, Float, "up")
    up.defn = [
        Case(x == 0, down(R - 1, y, c)),
        0.5 * down(R - 1 - x, y, c) + 0.5 * up(x - 1, y, c),
    ]
    right = Function(box, Float, "right")
    right.defn = [
        Case(y == 0, up(R - 1 - x, y, c)),
        0.5 * up(R - 1 - x, y, c) + 0.5 * right(x, y - 1, c),
    ]
    left = Function(box, Float, "left")
    left.defn = [
        Case(y == 0, right(x, C - 1, c)),
        0.5 * right(x, C - 1 - y, c) + 0.5 * left(x, y - 1, c),
    ]
    out = Function(box, Float, "out")
    out.defn = [left(x, C - 1 - y, c)]
    return out, (R, C, K)


def _stencil_sum_scale():
    """A stencil across the rows, the cumulative sum of it along them, and a consumer that
    reads the sum one row up too (a halo across the strips)."""
    R, C, K, x, y, c = _variables()
    box = ([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)])
    img = Image(Float, "img", [R, C])
    blur = Function(box, Float, "blur")
    blur.defn = [img(Max(x - 1, 0), y) + 2 * img(x, y) + img(Min(x + 1, R - 1), y)]
    total = Function(box, Float, "total")
    total.defn = [Case(y == 0, blur(x, y)), total(x, y - 1) + blur(x, y)]
    out = Function(box, Float, "out")
    out.defn = [total(x, y) * 0.5 - total(Max(x - 1, 0), y)]
    return out, (R, C)


def _compiled(outputs, schedule, estimates, inline=False):
    if isinstance(schedule, str) and schedule not in ("auto", "naive"):
        schedule = Schedule.parse(schedule)
    return polyimage.compile(outputs, schedule=schedule, estimates=estimates, inline=inline)


def _tiled_plans(pipe) -> list:
    return [p for p in pipe.group_plans if isinstance(p, TiledGroup)]


def test_recursive_filter_fuses_each_direction_in_strips():
    out, (R, C, K) = _recursive_filter()
    hand = "group 0: down, up [1x8x3]\ngroup 1: right, left, out [5x1x3 then 2x1x3]"
    pipe = _compiled(out, hand, {R: 256, C: 256, K: 3})
    first, second = _tiled_plans(pipe)
    assert first.whole == (0,) and first.tile_sizes == ((WHOLE_TILE, 8, 3),)
    assert second.whole == (1,)
    assert second.tile_sizes == ((5, WHOLE_TILE, 3), (2, WHOLE_TILE, 3))
    assert first.scratch == ("down",), "up is computed straight into its buffer"
    image = np.random.default_rng(1).random((*SHAPE, 3), dtype=np.float32)
    assert_exact_on_threads(pipe, out, {"img": image}, THREADS)


def test_auto_fuses_scans_along_a_first_or_last_dimension_in_strips():
    """The recursive filter app (one channel): auto runs down and up as strips of whole
    columns and right, left and out as strips of whole rows (grouping.cost._scan_strips):
    rows of a strip span SCAN_ROW_BYTES at least, and each core gets strips to balance."""
    app = load_app("recursive_filter")
    outputs, _ = app.build()
    pipe = polyimage.compile(outputs, estimates=app.PAPER_SIZE, options=pinned_options())
    plans = {p.members: p for p in _tiled_plans(pipe)}
    columns, rows = plans[("down", "up")], plans[("right", "left", "out")]
    assert columns.whole == (0,) and rows.whole == (1,), pipe.schedule
    (strip,) = pipe.schedule.groups[0].tile_sizes
    assert strip[1] * 4 >= SCAN_ROW_BYTES, strip
    tiles = -(-app.PAPER_SIZE["C"] // strip[1])
    assert tiles >= SCAN_TASKS_PER_CORE * MACHINE.cores, strip
    image = np.random.default_rng(2).random((37, 300), dtype=np.float32)
    assert_exact_on_threads(pipe, outputs, {"img": image, **app.DEFAULTS}, THREADS)


def test_auto_leaves_a_scan_along_a_middle_dimension_alone():
    """With a channel innermost, the scans along the rows run along a middle dimension: auto
    leaves them alone (cost.SCAN_MIDDLE), and the results stay exact."""
    out, (R, C, K) = _recursive_filter()
    options = pinned_options()
    pipe = polyimage.compile(out, estimates={R: 2560, C: 1536, K: 3}, options=options)
    groups = [g.stages for g in pipe.schedule.groups]
    assert ("right",) in groups and ("left",) in groups, pipe.schedule
    model = CostModel(pipe.stage_graph, pipe.compiled.request.param_values, MACHINE)
    assert model(("right", "left")).terms.untiled == SCAN_MIDDLE
    image = np.random.default_rng(2).random((*SHAPE, 3), dtype=np.float32)
    assert_exact_on_threads(pipe, out, {"img": image}, THREADS)


def test_one_group_scanning_two_dimensions_runs_a_tile_per_channel():
    """Scans along the columns and along the rows in one group: no tile holds both whole
    dimensions but the whole image, so the tiles cut only the channels."""
    out, (R, C, K) = _recursive_filter()
    pipe = _compiled(out, "group 0: down, up, right, left, out [8x8x1]", {R: 64, C: 64, K: 3})
    (plan,) = _tiled_plans(pipe)
    assert plan.whole == (0, 1) and plan.tile_sizes == ((WHOLE_TILE, WHOLE_TILE, 1),)
    image = np.random.default_rng(3).random((9, 11, 3), dtype=np.float32)
    assert_exact_on_threads(pipe, out, {"img": image}, THREADS)


@pytest.mark.parametrize(
    "schedule",
    [
        "group 0: blur, total, out [8x16]",
        "group 0: blur, total, out [16x4 then 4x4]",
        "group 0: blur [untiled]\ngroup 1: total, out [3x1]",
        "auto",
    ],
)
def test_cumulative_sum_between_a_stencil_and_its_consumer(schedule):
    out, (R, C) = _stencil_sum_scale()
    pipe = _compiled(out, schedule, {R: 512, C: 512})
    plans = _tiled_plans(pipe)
    scanned = [p for p in plans if "total" in p.members]
    assert scanned or schedule == "auto", pipe.schedule
    for plan in scanned:
        assert plan.whole == (1,)
        assert all(sizes[1] == WHOLE_TILE for sizes in plan.tile_sizes)
    image = np.random.default_rng(4).random(SHAPE, dtype=np.float32)
    assert_exact_on_threads(pipe, out, {"img": image}, THREADS)


def test_cut_along_the_scan_is_widened_and_priced_as_a_strip():
    """A size along the scanned dimension is widened in the plan (the schedule keeps the
    text given); the cost model prices the size given as the strip the code runs."""
    out, (R, C) = _stencil_sum_scale()
    pipe = _compiled(out, "group 0: blur, total, out [8x16]", {R: 512, C: 512})
    assert pipe.schedule.groups[0].tile_sizes == ((8, 16),)
    assert pipe.group_plans[0].tile_sizes == ((8, WHOLE_TILE),)
    assert "tiles hold y whole (scanned)" in pipe.report()
    model = CostModel(pipe.stage_graph, pipe.compiled.request.param_values, MACHINE)
    stages = ("blur", "total", "out")
    assert model.at_tiles(stages, [(8, 16)]) == model.at_tiles(stages, [(8, 512)])
    fused = model(stages)
    assert fused.cost < float("inf") and fused.levels[0][1] == 512, "a strip of whole rows"


def test_a_scan_region_starts_at_its_domain_and_ignores_its_self_reads():
    """A scan whose dimension is no dimension of the tile space (its consumer reads it
    transposed) is cut by the tiles: each computes it from the start of its domain, the
    cost model's regions equal the code generator's, and the results are still exact."""
    R, C, K, x, y, c = _variables()
    box = ([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)])
    img = Image(Int, "img", [R, C])
    i, j = Variable(Int, "i"), Variable(Int, "j")
    total = Function(([i, j], [Interval(Int, 0, C - 1), Interval(Int, 0, R - 1)]), Int, "total")
    total.defn = [Case(j == 0, img(j, i)), total(i, j - 1) * 3 + img(j, i)]
    out = Function(box, Int, "out")
    out.defn = [total(y, x) - total(Max(y - 1, 0), x)]
    params = {"R": 37, "C": 53}
    graph = build_graph([out])
    plan = tiling_plan(graph, ("total", "out"), params)
    assert plan.whole == ()
    tiles = np.array([[8, 16, 15, 31, 0, 0], [24, 0, 31, 15, 0, 0]], np.int64)
    symbolic = plan.regions.evaluate(tiles, params)
    (lows, highs) = symbolic["total"]
    assert lows[:, 1].tolist() == [0, 0] and highs[:, 1].tolist() == [15, 31]
    assert lows[:, 0].tolist() == [15, 0] and highs[:, 0].tolist() == [31, 15]
    numeric = numeric_regions(NumericRegions(graph, params), plan, tiles, params)
    for name in symbolic:
        for got, want in zip(numeric[name], symbolic[name]):
            np.testing.assert_array_equal(got, want, err_msg=name)
    pipe = _compiled(out, "group 0: total, out [8x16]", {R: 37, C: 53})
    image = np.random.default_rng(5).integers(-99, 99, (37, 53)).astype(np.int32)
    assert_exact_on_threads(pipe, out, {"img": image}, THREADS)


@pytest.mark.parametrize("axis", [1, 2], ids=["rows", "innermost"])
def test_second_order_scan_of_a_3d_stage_in_strips(axis):
    """A 3-D scan reading two earlier points, between a pointwise producer and a consumer
    reading it at a neighbour across the strips, with the scan's sizes cut and widened."""
    R, C, K, x, y, c = _variables()
    variables = (c, x, y)
    box = (list(variables), [Interval(Int, 0, n - 1) for n in (K, R, C)])
    img = Image(Int, "img", [K, R, C])
    scaled = Function(box, Int, "scaled")
    scaled.defn = [img(c, x, y) * 3 - 1]

    def back(k):
        return [v - k if d == axis else v for d, v in enumerate(variables)]

    fib = Function(box, Int, "fib")
    fib.defn = [Case(variables[axis] < 2, scaled(c, x, y)), fib(*back(1)) - 2 * fib(*back(2))]
    across = [Max(v - 1, 0) if d != axis else v for d, v in enumerate(variables)]
    out = Function(box, Int, "out")
    out.defn = [fib(c, x, y) + fib(*across)]
    pipe = _compiled(out, "group 0: scaled, fib, out [2x5x7]", {K: 3, R: 64, C: 64})
    (plan,) = _tiled_plans(pipe)
    assert plan.whole == (axis,)
    assert plan.tile_sizes == (tuple(WHOLE_TILE if d == axis else (2, 5, 7)[d] for d in range(3)),)
    image = np.random.default_rng(6).integers(-1000, 1000, (3, *SHAPE)).astype(np.int32)
    assert_exact_on_threads(pipe, out, {"img": image}, THREADS)
