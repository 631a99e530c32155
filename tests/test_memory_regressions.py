"""The pipelines of tests/memory_cases.py (two heap overflows and a negative zero found by
random testing) match the interpreter, zeros' signs included, in the normal and the checked
build (where the sanitizer run must run, as in CI, it makes the normal build's calls and
comparisons itself); and the cause of the first, an inner tile's region reaching outside its
outer tile's (which sizes and places the scratchpads), is absent from random two-level
schedules."""

import random

import numpy as np
import pytest
from helpers import sanitizers_required
from memory_cases import CASES, two_level_group
from oracle import assert_calls_match

import polyimage
from polyimage.algebra.evaluate import Evaluator
from polyimage.config import Options
from polyimage.schedule.plan import tile_rank
from polyimage.schedule.tiling import TiledGroup, plan_group, tile_span
from polyimage.testing import (
    random_mixed_pipeline,
    random_pipeline,
    random_schedule,
    random_tile_sizes,
)

pytestmark = pytest.mark.filterwarnings("ignore::polyimage.UncoveredReadWarning")

RUNS = [(make, k) for make in CASES for k in range(len(make().schedules))]


def _check(case, schedule, check):
    options = Options(machine=case.machine) if case.machine else None
    pipe = polyimage.compile(case.outputs, schedule=schedule, check=check, options=options)
    expected = polyimage.interpret(case.outputs, **case.arguments)
    assert_calls_match(pipe, expected, case.arguments, f"{case.name}, {schedule}", calls=2)


@pytest.mark.parametrize("make, k", RUNS, ids=[f"{m.__name__}-{k}" for m, k in RUNS])
@pytest.mark.parametrize("check", [False, True], ids=["plain", "checked"])
def test_case_matches_the_interpreter(make, k, check):
    if not check and sanitizers_required():
        pytest.skip("tests/test_sanitizers.py runs this case so, under the sanitizers (CI)")
    case = make()
    _check(case, case.schedules[k], check)


def test_negative_zero_is_positive():
    """The interpreter's zeros are +0 and its quotients +inf; so are the compiled ones."""
    case = CASES[2]()
    as_float, through_int, quotient, implicit, _, cased = polyimage.compile(case.outputs)(
        **case.arguments
    )
    for zeros in (as_float, through_int, implicit):
        assert (zeros == 0).all() and not np.signbit(zeros).any()
    assert (quotient == np.inf).all()
    assert (cased[:, :2] == np.inf).all() and not np.signbit(cased[:, 2:]).any()


def _outer_spans(graph, plan, params) -> list:
    """The outer tile indices along each dimension, at `params`."""
    outer = plan.tile_sizes[0]
    evaluate = Evaluator({}, {}, params)
    spans = []
    for d in range(len(outer)):
        lo, hi = (int(evaluate(e, {}, 1)) for e in tile_span(graph, plan, d, outer[d]))
        spans.append(np.arange(lo, hi + 1))
    return spans


def _tile_rows(graph, plan, params):
    """(outer rows, inner rows, outer index of each inner row): the region functions'
    arguments (lows, highs, firsts) of every outer tile and of each of its inner tiles."""
    outer, inner = plan.tile_sizes
    spans = _outer_spans(graph, plan, params)
    first = [int(s[0]) * t for s, t in zip(spans, outer)]
    grid = np.stack(np.meshgrid(*spans, indexing="ij"), -1).reshape(-1, len(outer))
    lows = grid * np.array(outer)
    highs = lows + np.array(outer) - 1
    steps = [np.arange(0, o, min(i, o)) for o, i in zip(outer, inner)]
    offsets = np.stack(np.meshgrid(*steps, indexing="ij"), -1).reshape(-1, len(outer))
    inner_lows = (lows[:, None, :] + offsets[None, :, :]).reshape(-1, len(outer))
    owner = np.repeat(np.arange(len(lows)), len(offsets))
    step = np.array([min(i, o) for o, i in zip(outer, inner)])
    inner_highs = np.minimum(inner_lows + step - 1, highs[owner])
    firsts = np.array(first)

    def rows(a, b):
        return np.concatenate([a, b, np.broadcast_to(firsts, a.shape)], axis=1)

    return rows(lows, highs), rows(inner_lows, inner_highs), owner


def tile_count(graph, plan, params) -> int:
    """How many outer and inner tiles `outside_regions` evaluates."""
    outer, inner = plan.tile_sizes
    spans = _outer_spans(graph, plan, params)
    return int(np.prod([len(s) * -(-o // min(i, o)) for s, o, i in zip(spans, outer, inner)]))


def outside_regions(graph, plan, params):
    """(member, outer tile row, inner tile row) for every non-empty inner-tile region of a
    scratch member that is not inside its outer tile's region."""
    outer_rows, inner_rows, owner = _tile_rows(graph, plan, params)
    outer_bounds = plan.regions.evaluate(outer_rows, params)
    inner_bounds = plan.regions.evaluate(inner_rows, params)
    found = []
    for name in plan.scratch:
        (olo, ohi), (ilo, ihi) = outer_bounds[name], inner_bounds[name]
        nonempty = (ilo <= ihi).all(axis=1)
        bad = nonempty & ((ilo < olo[owner]).any(axis=1) | (ihi > ohi[owner]).any(axis=1))
        found += [(name, outer_rows[owner[i]], inner_rows[i]) for i in np.flatnonzero(bad)]
    return found


def test_inner_regions_of_the_two_level_case_lie_inside_the_outer_ones():
    case = two_level_group()
    pipe = polyimage.compile(case.outputs, schedule=case.schedules[0])
    params = {"R": 64, "C": 97, "K": 3}
    for schedule in case.schedules:
        group = schedule.groups[0]
        plan = plan_group(pipe.stage_graph, group.stages, group.tile_sizes, params)
        assert outside_regions(pipe.stage_graph, plan, params) == []


def _params(rp) -> dict:
    return {k: v for k, v in rp.arguments.items() if not isinstance(v, np.ndarray)}


MOST_TILES = 20000


def _two_level_plan(graph, stages, params, rng):
    """A plan of `stages` with random two-level tiles of at most MOST_TILES tiles in all."""
    while True:
        tiles = random_tile_sizes(tile_rank(graph, stages), rng)
        if len(tiles) == 2:
            plan = plan_group(graph, stages, tiles, params)
            if tile_count(graph, plan, params) <= MOST_TILES:
                return plan


def test_inner_regions_of_random_mixed_groups_lie_inside_the_outer_ones():
    """One group of a 3-D stage, one channel of it at half resolution and a 3-D consumer
    (random_mixed_pipeline), with random two-level tiles: the shape of the overflow."""
    groups = 0
    for seed in range(30):
        rp = random_mixed_pipeline(seed)
        graph = polyimage.compile(
            rp.outputs, schedule="naive", inline=rp.inline, build=False
        ).stage_graph
        stages = [s.name for s in graph.computed]
        rng = random.Random(seed)
        for _ in range(6):
            plan = _two_level_plan(graph, stages, _params(rp), rng)
            groups += 1
            found = outside_regions(graph, plan, _params(rp))
            assert not found, f"seed {seed}, tiles {plan.tile_sizes}: {found[:3]}"
    assert groups == 180


def test_inner_regions_of_random_two_level_schedules_lie_inside_the_outer_ones():
    """Every two-level group of random schedules over random pipelines."""
    groups = 0
    for seed in range(25):
        rp = random_pipeline(seed)
        graph = polyimage.compile(
            rp.outputs, schedule="naive", inline=rp.inline, build=False
        ).stage_graph
        for k in range(3):
            schedule = random_schedule(graph, random.Random(seed * 1000 + k))
            for group in schedule.groups:
                if len(group.tile_sizes) != 2:
                    continue
                plan = plan_group(graph, group.stages, group.tile_sizes, _params(rp))
                if (
                    isinstance(plan, TiledGroup)
                    and tile_count(graph, plan, _params(rp)) <= MOST_TILES
                ):
                    groups += 1
                    found = outside_regions(graph, plan, _params(rp))
                    assert not found, f"seed {seed}, {group}: {found[:3]}"
    assert groups >= 10
