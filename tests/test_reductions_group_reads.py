"""Tiled Reductions that read members of their own group (schedule.tiling): each tile computes
the Reduction's cells from the reduction points that own them, and its producers over the
footprint of those points, the unowned reduction variables (search offsets, an unrolled
channel) whole. Under given one- and two-level schedules and `auto`, on odd sizes and 1 and 2
threads, the result is the interpreter's bit for bit."""

import numpy as np
import pytest
from helpers import assert_exact_on_threads, grid, offset_weighted_sum, pinned_options

import polyimage
from polyimage import Cast, Float, Function, Image, Int, Interval, Op, Reduce, Reduction, Variable
from polyimage.graph import build_graph
from polyimage.schedule.tiling import TiledGroup, UntiledGroup, tiling_plan

PARAMS = {"R": 40, "C": 30}
FUSED = ("diff", "patch", "acc", "out")
# (groups, tile sizes of the group with acc): one level, tiles of one point, tiles larger
# than the image, two levels sliding along x and along y, a group without the first producer
SCHEDULES = [
    (FUSED, ((3, 5, 7),)),
    (FUSED, ((1, 1, 1),)),
    (FUSED, ((4, 64, 64),)),
    (FUSED, ((3, 8, 16), (3, 3, 16))),
    (FUSED, ((3, 9, 12), (3, 9, 5))),
    (("patch", "acc", "out"), ((2, 6, 11), (1, 2, 11))),
    (("diff", "patch", "acc"), ((4, 7, 9),)),
]


def _arguments(shape, seed):
    rng = np.random.default_rng(seed)
    return {"img": rng.random((3, shape[0] + 4, shape[1] + 4), dtype=np.float32)}


def _schedule(group, tiles):
    stages = [n for n in FUSED if n not in group]
    before = [(n,) for n in stages if n == "diff"]
    after = [(n,) for n in stages if n == "out"]
    return polyimage.Schedule(
        tuple(
            polyimage.GroupSchedule(g, tiles if g == group else ())
            for g in [*before, group, *after]
        )
    )


@pytest.mark.parametrize("number", range(len(SCHEDULES)))
def test_a_reduction_reading_its_group_matches_the_interpreter(number):
    group, tiles = SCHEDULES[number]
    outputs = offset_weighted_sum(offsets_first=number % 2 == 1)
    pipe = polyimage.compile(outputs, schedule=_schedule(group, tiles), name="group_reads")
    plan = next(p for p in pipe.group_plans if "acc" in p.members)
    assert isinstance(plan, TiledGroup), getattr(plan, "reason", "")
    assert set(plan.members) & {"diff", "patch"} and "patch" in plan.scratch
    assert pipe.reductions["acc"].kind == "tiled"
    for shape in [(13, 21), (9, 4)][: 1 + number % 2]:
        assert_exact_on_threads(pipe, outputs, _arguments(shape, number), threads=(1, 2))


def test_the_producers_of_a_tiled_reduction_cover_the_footprint_of_its_points():
    """A tile of rows 5..7 and columns 3..9 of `out`: acc computes those cells (every
    channel) from the points (u, v) that own them; patch is read at (i, j, u, v), so its
    region is those pixels at every offset; diff's adds patch's cross (x +- 1, y + 1); the
    image's adds the offsets."""
    graph = build_graph(offset_weighted_sum())
    plan = tiling_plan(graph, FUSED, PARAMS)
    assert isinstance(plan, TiledGroup) and plan.scratch == ("diff", "patch", "acc")
    tiles = np.array([[0, 5, 3, 2, 7, 9, 0, 0, 0]])  # lows, highs, firsts
    regions = plan.regions.evaluate(tiles, PARAMS)
    lows, highs = regions["acc"]
    assert list(lows[0]) == [0, 5, 3] and list(highs[0]) == [3, 7, 9]
    lows, highs = regions["patch"]
    assert list(lows[0]) == [-1, -1, 5, 3] and list(highs[0]) == [1, 1, 7, 9]
    lows, highs = regions["diff"]
    assert list(lows[0]) == [-1, -1, 4, 3] and list(highs[0]) == [1, 1, 8, 10]
    lows, highs = regions["img"]
    assert list(lows[0]) == [0, 3, 2] and list(highs[0]) == [2, 9, 11]


def test_a_reduction_reading_a_member_at_a_data_dependent_index_stays_untiled():
    R, C, x, y = grid()
    u, v = Variable(Int, "u"), Variable(Int, "v")
    img = Image(Float, "img", [R, C])
    rows, cols = Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)
    table = Function(([x, y], [rows, cols]), Float, "table")
    table.defn = [img(x, y) * 2.0]
    sums = Reduction(([x, y], [rows, cols]), ([u, v], [rows, cols]), Float, "sums")
    column = Cast(Int, img(u, v)) % C
    sums.defn = [Reduce(sums(u, v), table(u, column), Op.Sum)]
    out = Function(([x, y], [rows, cols]), Float, "out")
    out.defn = [sums(x, y) + 1.0]
    plan = tiling_plan(build_graph([out]), ("table", "sums", "out"), PARAMS)
    assert isinstance(plan, UntiledGroup)
    assert plan.reason == "sums reads table at a data-dependent index"


def test_auto_fuses_the_producers_into_the_tiles_of_the_reduction():
    outputs = offset_weighted_sum()
    options = pinned_options()
    pipe = polyimage.compile(outputs, estimates={"R": 1024, "C": 1024}, options=options)
    group = next(g for g in pipe.schedule.groups if "acc" in g.stages)
    assert "patch" in group.stages and group.tile_sizes, str(pipe.schedule)
    assert pipe.reductions["acc"].kind == "tiled"
    assert_exact_on_threads(pipe, outputs, _arguments((17, 23), 3), threads=(1, 2))
