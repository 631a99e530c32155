"""Cost terms and tile sizes of groups, from exact regions."""

import dataclasses
import math

import numpy as np
import pytest
from helpers import MACHINE, pinned_options
from oracle import assert_same

import polyimage
from polyimage import (
    Exp,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Log,
    Max,
    Op,
    Parameter,
    Reduce,
    Reduction,
    Variable,
)
from polyimage.algebra.evaluate import evaluate_scalar
from polyimage.apps import bilateral_grid, harris, histogram_equalize, local_laplacian, unsharp_mask
from polyimage.driver.request import resolve_estimates
from polyimage.dsl import exp_poly
from polyimage.graph.dag import build_graph
from polyimage.grouping.cost import CostModel, Weights, group_cost, strip_sizes
from polyimage.grouping.facts import SCALAR_LOOP
from polyimage.testing import random_pipeline

# only the work counts: recomputed halo points make a fused group cost more
OVERLAP_ONLY = Weights(live_data=0.0, cleanup=0.0, overlap=1.0, spread=0.0, row_start=0.0)


def stage_graph(app):
    """The stage graph of `app` and its parameter values at the paper's image size."""
    outputs, _ = app.build()
    graph = polyimage.compile(outputs, build=False).stage_graph
    return graph, resolve_estimates(graph, app.PAPER_SIZE)[0]


def test_fusing_saves_traffic_and_pays_for_overlap():
    graph, params = stage_graph(harris)
    names = tuple(s.name for s in graph.computed)
    alone = [group_cost(graph, (n,), params, MACHINE) for n in names]
    fused = group_cost(graph, names, params, MACHINE)
    assert fused.cost < sum(c.cost for c in alone)
    assert all(c.terms.redundant_fraction == 0 for c in alone)
    assert fused.terms.redundant_fraction > 0


def test_fusing_recomputes_work_per_point():
    """Per point of a tile, the fused group does more work than its stages run alone."""
    graph, params = stage_graph(harris)
    names = tuple(s.name for s in graph.computed)
    alone = [group_cost(graph, (n,), params, MACHINE, OVERLAP_ONLY) for n in names]
    fused = group_cost(graph, names, params, MACHINE, OVERLAP_ONLY)

    def ops_per_point(cost):
        return cost.terms.ops_per_tile / math.prod(cost.tile_sizes)

    assert ops_per_point(fused) > sum(ops_per_point(c) for c in alone)


def test_with_overlap_only_fusing_costs_more_than_the_stages_alone():
    graph, params = stage_graph(harris)
    names = tuple(s.name for s in graph.computed)
    assert group_cost(graph, names, params, MACHINE, OVERLAP_ONLY).cost > sum(
        group_cost(graph, (n,), params, MACHINE, OVERLAP_ONLY).cost for n in names
    )


def _one_tile_wide(graph, params):
    """The tile width that holds all of mask's columns (2 .. 4257) in one tile: its extent,
    since tiles start at the domain's first column."""
    columns = graph.stage("mask").func.intervals[-1]
    assert evaluate_scalar(columns.lb, params) == 2
    return evaluate_scalar(columns.ub, params) - 1


def test_tile_sizes_fill_a_cache_with_the_innermost_fixed_or_full_width():
    """Algorithm 2's tiles (the innermost size fixed) compete with full-width strips of one
    channel; the winner fills at most L2."""
    graph, params = stage_graph(unsharp_mask)
    cost = group_cost(graph, ("blurx", "mask"), params, MACHINE, innermost=128)
    c, x, y = cost.tile_sizes
    assert (y == 128 and 1 <= c <= 3) or (y == _one_tile_wide(graph, params) and c == 1), (
        cost.tile_sizes
    )
    assert x >= 1
    points = c * x * y * 2
    assert points * 4 <= MACHINE.l2_bytes
    weights = Weights(live_data=1.0, cleanup=0.0, overlap=0.0, spread=0.0, row_start=0.0)
    traffic = group_cost(graph, ("blurx", "mask"), params, MACHINE, weights, 128)
    assert traffic.cost == traffic.terms.tiles * traffic.terms.bytes_per_tile / 2


def test_full_width_strips_compete_and_win_on_unsharp_mask():
    """By hand, strips of a few full rows ran unsharp mask 1.2-2x faster than 256-wide tiles;
    the model now offers and picks one."""
    graph, params = stage_graph(unsharp_mask)
    strip = group_cost(graph, ("blurx", "mask"), params, MACHINE)
    c, rows, cols = strip.tile_sizes
    assert (c, cols) == (1, _one_tile_wide(graph, params)) and 1 <= rows < 2848
    plan = CostModel(graph, params, MACHINE).plan(("blurx", "mask"))
    one, every = strip_sizes(graph, plan, [3, 2848, 4256], MACHINE.l2_bytes)
    c, rows, cols = one
    assert (c, cols) == (1, 4256) and rows * cols * 2 * 4 <= MACHINE.l2_bytes
    c, rows, cols = every
    assert (c, cols) == (3, 4256) and rows * cols * 3 * 2 * 4 <= MACHINE.l2_bytes
    assert strip_sizes(graph, plan, [5, 2848, 4256], MACHINE.l2_bytes)[1:] == []
    # rows by the bytes a tile touches per point: members lighter than the tile fit more rows
    light = strip_sizes(graph, plan, [3, 2848, 4256], MACHINE.l2_bytes, bytes_per_point=2.0)
    assert light[1][1] > one[1] and light[-1][1] > every[1]


def test_a_stage_calling_libm_costs_a_vector_of_operations_per_point():
    """log, sin, cos and pow stay scalar calls (no vectorization): such a stage's operations
    count SCALAR_LOOP times; our exp (dsl.exp_poly) vectorizes and counts its operations."""
    R, x = Parameter(Int, "R"), Variable(Int, "x")
    img = Image(Float, "img", [R])
    plain = Function(([x], [Interval(Int, 0, R - 1)]), Float, "plain")
    plain.defn = [img(x) * 2.0 + 1.0]
    called = Function(([x], [Interval(Int, 0, R - 1)]), Float, "called")
    called.defn = [Log(img(x) * 2.0) + 1.0]
    own = Function(([x], [Interval(Int, 0, R - 1)]), Float, "own")
    own.defn = [Exp(img(x) * 2.0) + 1.0]
    graph = build_graph([plain, called, own])
    params = resolve_estimates(graph, {"R": 1000})[0]
    model = CostModel(graph, params, MACHINE)
    assert model.ops("called") == SCALAR_LOOP * (model.ops("plain") + 1)
    assert model.ops("own") == model.ops("plain") + exp_poly.operations("float")


def test_groups_that_cannot_be_tiled_cost_infinity():
    """The histogram has no variable that owns its bins, and the equalized image reads the
    lookup table at the pixels' values: neither pair can be tiled."""
    graph, params = stage_graph(histogram_equalize)
    for pair in (("luma", "hist"), ("lut", "equalized")):
        assert group_cost(graph, pair, params, MACHINE).cost == math.inf
    single = group_cost(graph, ("hist",), params, MACHINE)
    assert single.cost < math.inf and single.tile_sizes == ()


def test_a_stage_alone_runs_untiled_when_no_tiling_is_cheaper():
    """bilateral_grid's slicing stage reads a small grid: whole rows beat its tiles (measured
    36 -> 31 ms on 2 threads), and a single stage never costs more than running untiled."""
    graph, params = stage_graph(bilateral_grid)
    model = CostModel(graph, params, MACHINE)
    for stage in graph.computed:
        cost = model((stage.name,))
        assert cost.cost <= model.untiled(stage.name)
    sliced = model(("filtered",))
    assert sliced.levels == () and sliced.terms.untiled == "no tiling is cheaper"
    pipe = polyimage.compile(
        bilateral_grid.build()[0],
        estimates=bilateral_grid.PAPER_SIZE,
        options=pinned_options(),
        build=False,
    )
    assert "filtered [untiled]" in str(pipe.schedule)


def test_tiles_slide_where_every_strip_overflows_l2():
    """nl_means computes its per-offset stages at 49 offsets per pixel: a strip of one row of
    them overflows L2, so auto slides narrower tiles along the rows instead, and fuses the
    offsets' difference with the weighted sums that read it (the spread of member sizes
    ignores the offsets and the channels, which every tile computes whole)."""
    from polyimage.apps import nl_means

    outputs, _ = nl_means.build()
    pipe = polyimage.compile(
        outputs, estimates=nl_means.PAPER_SIZE, options=pinned_options(), build=False
    )
    group = next(g for g in pipe.schedule.groups if "d" in g.stages)
    assert set(group.stages) == {"d", "blur_rows", "w", "nl_sum"}, str(pipe.schedule)
    outer, inner = group.tile_sizes
    assert inner[1] < outer[1] and outer[2] < nl_means.PAPER_SIZE["C"]


def test_inner_tiles_slide_only_where_every_member_has_rows_to_reuse():
    """A sliding tiling is offered only along a dimension every member has, with a row of it
    at least in an inner tile: not along local_laplacian's levels (its gray image has none)
    nor in inner tiles of 16 rows over pyramid levels 16 times coarser and more."""
    graph, params = stage_graph(local_laplacian)
    model = CostModel(graph, params, MACHINE)
    levels = model.plan(("gray", "gpyr0", "lpyr0"))
    assert model.scale_along(levels, "gray", 0) is None
    assert not model.slides_every_member(levels, (8, 30, 1536), (1, 30, 1536))
    assert model.slides_every_member(levels, (8, 60, 1536), (8, 30, 1536))
    pyramid = ("gpyr_downx1", "gpyr1", "gpyr_downx2", "gpyr2", "gpyr_upx1", "lpyr1")
    plan = model.plan(pyramid)
    anchor_rows = [model.scale_along(plan, name, 1) for name in pyramid]
    assert min(anchor_rows) == pytest.approx(0.5, rel=0.01)  # level 2 over level 1's rows
    assert model.slides_every_member(plan, (1, 64, 768), (1, 2, 768))
    assert not model.slides_every_member(plan, (1, 64, 768), (1, 1, 768))
    # what auto picks respects the rule
    outputs = local_laplacian.build()[0]
    schedule = polyimage.compile(
        outputs, estimates=local_laplacian.PAPER_SIZE, build=False
    ).schedule
    for group in schedule.groups:
        if len(group.tile_sizes) == 2:
            assert model.slides_every_member(model.plan(group.stages), *group.tile_sizes)


def test_narrower_rows_are_offered_where_a_row_of_the_strips_overflows_l2():
    """With half the L2, an inner tile of nl_means' per-offset stages 256 columns wide no
    longer fits it: the model also sizes tiles with rows of 128 and 64 columns, so `d` stays
    fused with the stages that read it (it was left untiled: 800 MB to memory and back)."""
    from polyimage.apps import nl_means

    outputs, _ = nl_means.build()
    options = pinned_options(l2_bytes=512 * 1024)
    pipe = polyimage.compile(outputs, estimates=nl_means.PAPER_SIZE, options=options, build=False)
    group = next(g for g in pipe.schedule.groups if "d" in g.stages)
    assert set(group.stages) == {"d", "blur_rows", "w", "nl_sum"}, str(pipe.schedule)
    assert group.tile_sizes[-1][-1] < 256


def test_a_reduction_into_cells_the_data_chooses_pays_a_gather_per_update():
    """A histogram's update is a read-modify-write at an address known only at run time: the
    model prices it as a gather (Machine.gather_ops); a Reduction into cells its own indices
    choose does not pay it."""
    from polyimage import Clamp, Op, Reduce, Reduction

    n, i, b = Parameter(Int, "n"), Variable(Int, "i"), Variable(Int, "b")
    values = Image(Int, "values", [n])
    over = ([i], [Interval(Int, 0, n - 1)])
    hist = Reduction(([b], [Interval(Int, 0, 255)]), over, Int, "hist")
    hist.defn = [Reduce(hist(Clamp(values(i), 0, 255)), 1, Op.Sum)]
    blocks = Reduction(([b], [Interval(Int, 0, 255)]), over, Int, "blocks")
    blocks.defn = [Reduce(blocks(i / 4), values(i), Op.Sum)]
    graph = build_graph([hist, blocks])
    ops = {
        g: CostModel(graph, {"n": 1024}, dataclasses.replace(MACHINE, gather_ops=g))
        for g in (4.0, 20.0)
    }
    updates = ops[4.0].updates_per_point("hist")
    assert ops[20.0].ops("hist") - ops[4.0].ops("hist") == pytest.approx(16.0 * updates)
    assert ops[20.0].ops("blocks") == ops[4.0].ops("blocks")


@pytest.mark.parametrize("l2_kib", [256, 1024, 2048])
def test_the_bilateral_grid_is_not_recomputed_for_a_blur_across_its_cells(l2_kib):
    """A tile of the grid Reduction in a group with blurx would also fill the cells blurx
    reads beyond it, rescanning their pixels with a scatter each: the grid stays out of
    blurx's group at every L2 size (all four were fused under a 2 MiB L2)."""
    outputs, _ = bilateral_grid.build()
    options = pinned_options(l2_bytes=l2_kib * 1024)
    pipe = polyimage.compile(
        outputs, estimates=bilateral_grid.PAPER_SIZE, options=options, build=False
    )
    group = next(g for g in pipe.schedule.groups if "grid" in g.stages)
    assert "blurx" not in group.stages, str(pipe.schedule)


def row_sum_of_a_computed_stage():
    """A one-dimensional Reduction over the rows of a two-dimensional stage: every tile of
    the group reads whole rows of it, so even the whole-domain strip may overflow L2."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y, i, j = (Variable(Int, n) for n in "xyij")
    img = Image(Float, "img", [R, C])
    box = [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]
    blur = Function(([x, y], box), Float, "blur")
    blur.defn = [img(x, y) * 2.0]
    rows = Reduction(([x], [Interval(Int, 0, R - 1)]), ([i, j], box), Float, "rows")
    rows.defn = [Reduce(rows(i), blur(i, Max(j - 1, 0)), Op.Sum)]
    return [rows]


@pytest.mark.parametrize("size", [1, 3, 1024, 1 << 14, 1 << 20])
def test_a_one_dimensional_group_gets_a_schedule_at_any_estimate(size):
    """Where every strip of a one-dimensional group overflows L2 there are no narrower rows
    to try; the model prices the tiles it has rather than measuring an empty list."""
    outputs = row_sum_of_a_computed_stage()
    estimates = {"R": size, "C": size}
    pipe = polyimage.compile(outputs, estimates=estimates, schedule="auto", build=False)
    pipe.schedule.validate(pipe.stage_graph)


def test_the_row_sum_under_auto_matches_the_interpreter():
    outputs = row_sum_of_a_computed_stage()
    pipe = polyimage.compile(outputs, estimates={"R": 4096, "C": 4096}, schedule="auto")
    img = np.random.default_rng(1).random((37, 29), dtype=np.float32)
    assert_same(pipe(img=img), polyimage.interpret(outputs, img=img), "row sum under auto")


@pytest.mark.parametrize("seed", range(8))
def test_random_pipelines_get_a_schedule_at_extreme_estimates(seed):
    """Any estimates give a schedule: random pipelines planned for one-pixel images and for
    images far larger than any cache."""
    outputs = random_pipeline(seed).outputs
    for size in (1, 2, 1 << 16):
        pipe = polyimage.compile(
            outputs, estimates={"R": size, "C": size}, schedule="auto", build=False
        )
        pipe.schedule.validate(pipe.stage_graph)
