"""Reductions computed per tile of a tiled group (schedule.reductions.tile_owned): each tile
computes the cells its consumers read, from the reduction points that own them, with the
dimensions no variable owns (a data-dependent bin, an unrolled channel) whole. Every cell
still takes its updates in the serial order, so even float sums equal the interpreter bit for
bit, under one and two tiling levels (sliding along owned and unowned dimensions), on 1, 2 and
3 threads, with Cases, channels and far or NaN keys."""

import random

import numpy as np
import pytest
from helpers import MACHINE, assert_exact_on_threads, pinned_options
from oracle import assert_same

import polyimage
from polyimage import (
    Case,
    Cast,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Op,
    Parameter,
    Reduce,
    Reduction,
    Select,
    UChar,
    Variable,
)
from polyimage.graph import build_graph
from polyimage.grouping.cost import CostModel, tile_count
from polyimage.schedule.plan import GroupSchedule, Schedule, ScheduleError, tile_rank
from polyimage.schedule.tiling import TiledGroup, UntiledGroup, tiling_plan, untileable_reason
from polyimage.testing import TILE_SIZES, random_pipeline, random_tile_sizes

BINS = 6


def _pipeline(size, offset, channels, cases):
    """A binned Reduction `red`(c, k, i, j): bin k from the image's value (data dependent),
    cell i = (u + offset) // size, j = v + 1, channel c of `channels` (value, then count);
    `blur` reads it with a halo along i and j."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    u, v, ch, c, k, i, j = (Variable(Int, n) for n in ("u", "v", "ch", "c", "k", "i", "j"))
    img = Image(Float, "img", [R, C])
    keys = Image(UChar, "keys", [R, C])
    first, last = offset // size, (R - 1 + offset) // size
    cells = [Interval(Int, 0, channels - 1), Interval(Int, 0, BINS - 1)]
    cells += [Interval(Int, first, last), Interval(Int, 1, C)]
    red = Reduction(
        ([c, k, i, j], cells),
        (
            [ch, u, v],
            [Interval(Int, 0, channels - 1), Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)],
        ),
        Float,
        "red",
    )
    target = red(ch, Cast(Int, img(u, v) * 2.0), (u + offset) // size, v + 1)
    value = Select(ch == 0, img(u, v), 1.0)
    if cases:
        red.defn = [
            Case(keys(u, v) > 100, Reduce(target, value, Op.Sum)),
            Case(keys(u, v) % 3 == 0, Reduce(target, value * 2.0, Op.Sum)),
        ]
    else:
        red.defn = [Reduce(target, value, Op.Sum)]
    red.default = Cast(Float, k) * 0.5
    domain = [Interval(Int, 0, channels - 1), Interval(Int, 0, BINS - 1)]
    domain += [Interval(Int, first + 1, last - 1), Interval(Int, 1, C - 1)]
    blur = Function(([c, k, i, j], domain), Float, "blur")
    blur.defn = [red(c, k, i - 1, j) + red(c, k, i, j) * 2.0 + red(c, k, i + 1, j + 1)]
    return blur


def _inputs(shape, seed):
    rng = np.random.default_rng(seed)
    img = (rng.standard_normal(shape) * 2.0 + 1.0).astype(np.float32)
    flat = img.reshape(-1)
    flat[rng.integers(0, flat.size, 4)] = [np.nan, np.inf, -3e38, 1e30]
    keys = rng.integers(0, 256, shape, dtype=np.uint8)
    return {"img": img, "keys": keys}


# (size, offset, channels, cases), each under three of the schedules, every schedule twice
VARIANTS = [(1, 0, 1, False), (2, 1, 2, True), (3, -2, 1, True), (8, 4, 2, False)]
SCHEDULES = [
    ((2, 3, 5, 7),),
    ((1, 1, 1, 1),),
    ((2, 6, 4, 64),),
    ((2, 6, 8, 16), (2, 6, 2, 16)),  # inner tiles slide along i, which u owns
    ((2, 6, 8, 16), (2, 2, 8, 16)),  # along k, the data-dependent bin (whole in every tile)
    ((2, 6, 8, 16), (2, 6, 8, 5)),  # along j, which v owns
]


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("variant", range(len(VARIANTS)))
def test_a_reduction_tiled_with_its_consumer_matches_the_interpreter(variant):
    size, offset, channels, cases = VARIANTS[variant]
    blur = _pipeline(size, offset, channels, cases)
    schedules = [SCHEDULES[(variant + s) % len(SCHEDULES)] for s in (0, 2, 4)]
    for number, tiles in enumerate(schedules):
        shape = [(29, 23), (13, 70), (40, 9)][number]
        args = _inputs(shape, 10 * variant + number)
        if not cases:
            del args["keys"]
        want = polyimage.interpret([blur], **args)
        sched = polyimage.Schedule((polyimage.GroupSchedule(("red", "blur"), tiles),))
        pipe = polyimage.compile([blur], schedule=sched, name="tiled_reduction")
        assert isinstance(pipe.group_plans[0], TiledGroup)
        assert pipe.reductions["red"].kind == "tiled"
        for threads in (1, 2, 3):
            got = pipe(threads=threads, **args)
            np.testing.assert_array_equal(got, want, err_msg=f"{tiles}, {threads} threads")


def _plan(blur, stages):
    graph = build_graph([blur])
    return graph, tiling_plan(graph, stages, {"R": 40, "C": 30})


def test_when_a_reduction_cannot_join_a_tiled_group():
    blur = _pipeline(2, 1, 2, False)
    graph, plan = _plan(blur, ("red", "blur"))
    assert isinstance(plan, TiledGroup)
    alone = tiling_plan(graph, ("red",), {"R": 40, "C": 30})
    assert isinstance(alone, TiledGroup) and alone.scratch == ("red",)  # its owned part copied

    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    u, v, k, x = (Variable(Int, n) for n in "uvkx")
    img = Image(UChar, "img", [R, C])
    double = Function(([u, v], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Int, "double")
    double.defn = [Cast(Int, img(u, v)) * 2]
    hist = Reduction(
        ([k], [Interval(Int, 0, 511)]),
        ([u, v], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]),
        Int,
        "hist",
    )
    hist.defn = [Reduce(hist(double(u, v)), 1, Op.Sum)]
    hist.default = 0
    smooth = Function(([x], [Interval(Int, 1, 510)]), Int, "smooth")
    smooth.defn = [hist(x - 1) + hist(x + 1)]
    graph = build_graph([smooth])
    params = {"R": 40, "C": 30}
    for stages in (("double", "hist", "smooth"), ("hist", "smooth"), ("hist",)):
        plan = tiling_plan(graph, stages, params)
        assert isinstance(plan, UntiledGroup)
        assert plan.reason == "hist is a Reduction none of whose variables owns cells of it"


def test_a_tiled_reduction_covers_its_unowned_dimensions_whole():
    """The bin k and the channel c span the domain in every tile's region; the owned cell
    dimensions i and j follow the tile (with the consumer's halo)."""
    graph, plan = _plan(_pipeline(2, 1, 2, False), ("red", "blur"))
    tiles = np.array([[0, 2, 6, 5, 1, 3, 9, 9, 0, 0, 0, 0]])  # lows, highs, firsts
    lows, highs = plan.regions.evaluate(tiles, {"R": 40, "C": 30})["red"]
    assert list(lows[0]) == [0, 0, 5, 5]
    assert list(highs[0]) == [1, BINS - 1, 10, 10]


def test_the_cost_model_counts_tiles_from_the_domain_start():
    assert tile_count([(2, 13)], (12,)) == 2  # [0, 11] and [12, 23]
    assert tile_count([(0, 11)], (12,)) == 1
    assert tile_count([(2, 13), (0, 99)], (6, 10)) == 3 * 10


def test_the_cost_model_prices_a_reduction_by_its_updates():
    graph, _ = _plan(_pipeline(8, 4, 2, False), ("red", "blur"))
    model = CostModel(graph, {"R": 64, "C": 30}, MACHINE)
    # 2 x 64 x 30 reduction points update 2 x 6 x 9 x 30 cells
    assert model.updates_per_point("red") == pytest.approx((2 * 64 * 30) / (2 * 6 * 9 * 30))
    assert model.updates_per_point("blur") == 1
    many = CostModel(graph, {"R": 64, "C": 3000}, MACHINE)
    assert many.ops("red") == pytest.approx(model.ops("red"))
    assert model.ops("red") / model.updates_per_point("red") == round(
        model.ops("red") / model.updates_per_point("red")
    )


def test_the_bilateral_grid_joins_its_z_blur_under_auto():
    """Under a 256 KiB L2 (a 1 MiB one leaves the grid alone: the scatter into its cells
    costs what the z blur's fused traffic saves) auto tiles the grid with its z blur."""
    from polyimage.apps import load_app

    app = load_app("bilateral_grid")
    outs, _ = app.build()
    options = pinned_options(l2_bytes=256 * 1024)
    pipe = polyimage.compile(outs, estimates=app.PAPER_SIZE, options=options)
    group = next(i for i, g in enumerate(pipe.schedule.groups) if "grid" in g.stages)
    assert pipe.schedule.groups[group].stages == ("grid", "blurz")
    assert f"grid: tiled: computed per tile of group {group}" in pipe.report()
    img = np.random.default_rng(5).random((53, 75), dtype=np.float32)
    assert_exact_on_threads(pipe, outs, {"img": img, **app.DEFAULTS})


def _joined_schedule(graph, rng, producers=False):
    """A schedule of `graph` with one Reduction that can be computed per tile grouped with
    its consumers (and with `producers`, the computed stages it reads; random tile sizes, at
    least one level), every other stage alone; None when no Reduction can."""
    order = [s.name for s in graph.computed]
    for stage in graph.computed:
        inputs = tuple(p for p in stage.producers if p in order) if producers else ()
        members = (*inputs, stage.name, *stage.consumers)
        if (
            not isinstance(stage.func, Reduction)
            or untileable_reason(graph, members)
            or (producers and not inputs)
        ):
            continue
        at = max(order.index(n) for n in members)
        groups = [(n,) for n in order[:at] if n not in members] + [members]
        groups += [(n,) for n in order[at + 1 :]]
        rank = tile_rank(graph, members)
        one_level = (tuple(rng.choice(TILE_SIZES) for _ in range(rank)),)
        sizes = random_tile_sizes(rank, rng) or one_level
        schedule = Schedule(tuple(GroupSchedule(g, sizes if g == members else ()) for g in groups))
        try:
            return schedule.validate(graph)
        except ScheduleError:
            continue
    return None


@pytest.mark.filterwarnings("ignore::polyimage.UncoveredReadWarning")
@pytest.mark.parametrize("producers", [False, True])
def test_random_pipelines_with_a_tiled_reduction_match_the_interpreter(producers):
    """Random pipelines (polyimage.testing) whose Reduction joins its consumers' tiled group
    (and, with `producers`, the stages it reads: tests/test_reductions_group_reads.py), at
    random tile sizes, on 1 and 2 threads."""
    checked = 0
    for seed in range(400):
        if checked == 8:
            break
        rp = random_pipeline(seed)
        if not any(isinstance(s.func, Reduction) for s in build_graph(rp.outputs).computed):
            continue
        graph = polyimage.compile(
            rp.outputs, schedule="naive", inline=rp.inline, build=False
        ).stage_graph
        schedule = _joined_schedule(graph, random.Random(seed), producers)
        if schedule is None:
            continue
        pipe = polyimage.compile(rp.outputs, schedule=schedule, inline=rp.inline)
        assert any(
            isinstance(p, TiledGroup)
            and any(
                m in pipe.reductions
                and (not producers or set(graph.stage(m).producers) & set(p.members))
                for m in p.members
            )
            for p in pipe.group_plans
        )
        expected = polyimage.interpret(rp.outputs, **rp.arguments)
        expected = expected if isinstance(expected, tuple) else (expected,)
        for threads in (1, 2):
            got = pipe(threads=threads, **rp.arguments)
            got = got if isinstance(got, tuple) else (got,)
            for g, e in zip(got, expected):
                assert_same(g, e, f"seed {seed}, {threads} threads, schedule:\n{schedule}")
        checked += 1
    assert checked == 8
