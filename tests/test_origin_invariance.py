"""Schedules do not depend on where domains start: tiles follow the anchor's first point, the
cost model prices work rather than index arithmetic, and the same pipeline numbered from
elsewhere gets the same groups, tile sizes and modelled cost (issue: a chain of stencils
written over [-m, R - 1 + m] was left untiled where the same chain over [0, R - 1 + 2m] was
tiled)."""

import random

import numpy as np
import pytest
from helpers import assert_exact_on_threads, pinned_options

import polyimage
from polyimage import Clamp, Float, Function, Image, Int, Interval, Parameter, Variable
from polyimage.driver.lower import lower
from polyimage.graph.dag import build_graph
from polyimage.grouping.cost import CostModel
from polyimage.testing import random_pipeline, random_schedule
from polyimage.testing.shifted import shifted_pipeline

RESAMPLING = {"downsample", "upsample", "blocks"}


def stencil_chain(from_zero: bool, stages=8, radius=2):
    """Box stencils, each over the region the next reads: stage s over [-m, R - 1 + m] (the
    index is the image coordinate) or the same values over [0, R - 1 + 2m]."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R, C])
    taps = [(i, j) for i in range(-radius, radius + 1) for j in range(-radius, radius + 1)]
    prev = None
    for s in range(1, stages + 1):
        m = radius * (stages - s)
        lo = 0 if from_zero else -m
        f = Function(
            (
                [x, y],
                [Interval(Int, lo, lo + R - 1 + 2 * m), Interval(Int, lo, lo + C - 1 + 2 * m)],
            ),
            Float,
            f"s{s}",
        )
        if prev is None:
            shift = m + lo
            reads = [
                img(Clamp(x - shift + i, 0, R - 1), Clamp(y - shift + j, 0, C - 1)) for i, j in taps
            ]
        else:
            d = radius if from_zero else 0
            reads = [prev(x + d + i, y + d + j) for i, j in taps]
        f.defn = [sum(reads[1:], reads[0]) * (1.0 / len(taps))]
        prev = f
    return [prev], {"R": R, "C": C}


def planned(outputs, size=(1536, 2560)):
    """(schedule text, each group's modelled cost, each stage's modelled operations per
    point) of auto on a pinned machine."""
    params = {p.name: p for p in build_graph(outputs).parameters}
    estimates = {params[n]: v for n, v in zip(("R", "C"), size) if n in params}
    estimates.update({p: 400 for p in params.values() if p not in estimates})
    compiled = lower(outputs, estimates=estimates, options=pinned_options())
    model = CostModel(compiled.stage_graph, {p.name: v for p, v in estimates.items()}, None)
    ops = [model.ops(s.name) for s in compiled.stage_graph.computed]
    return str(compiled.schedule), tuple(float(g.cost) for g in compiled.auto.costs), ops


def test_both_spellings_of_a_stencil_chain_get_one_schedule_and_cost():
    from_zero, from_minus = planned(stencil_chain(True)[0]), planned(stencil_chain(False)[0])
    assert from_zero[2] == from_minus[2]
    assert from_zero[0] == from_minus[0]
    assert from_zero[1] == pytest.approx(from_minus[1], rel=1e-12)
    assert "untiled" not in from_minus[0], "the chain is worth tiling at this size"


def test_both_spellings_compute_the_same_values_under_auto():
    img = np.random.default_rng(3).random((23, 31), dtype=np.float32)
    results = []
    for from_zero in (True, False):
        outputs, params = stencil_chain(from_zero)
        pipe = polyimage.compile(outputs, estimates={params["R"]: 1536, params["C"]: 2560})
        assert "untiled" not in str(pipe.schedule)
        assert_exact_on_threads(pipe, outputs, {"img": img, "R": 23, "C": 31}, threads=(1, 2))
        results.append(pipe(img=img, R=23, C=31))
    np.testing.assert_array_equal(results[0], results[1])


def _single_grid_seeds(count):
    seeds = (s for s in range(1000) if not RESAMPLING & random_pipeline(s).features)
    return [next(seeds) for _ in range(count)]


@pytest.mark.parametrize("offset", [-5, 3, 64])
def test_random_pipelines_moved_by_a_constant_plan_alike(offset):
    """On one grid (no resampling: a coarse stage's grid moves by a fraction of the offset,
    which is another pipeline), a shift keeps every group and tile size; the modelled cost is
    the same where the shift leaves every stage's work alone (a value computed from a loop
    variable gains the addition that undoes the shift)."""
    compared = 0
    seeds = _single_grid_seeds(16)
    for seed in seeds:
        outputs = random_pipeline(seed).outputs
        base, moved = shifted_pipeline(outputs, 0), shifted_pipeline(outputs, offset)
        (base_text, base_cost, base_ops), (moved_text, moved_cost, moved_ops) = (
            planned(base),
            planned(moved),
        )
        assert moved_text == base_text, f"seed {seed}"
        if moved_ops == base_ops:
            assert moved_cost == pytest.approx(base_cost, rel=1e-12), f"seed {seed}"
            compared += 1
    assert compared >= len(seeds) // 2


def test_moved_random_pipelines_compute_the_interpreters_values():
    """Tiles starting at a negative or odd origin, under auto and random schedules."""
    rng = random.Random(7)
    for seed in _single_grid_seeds(3):
        generated = random_pipeline(seed)
        expected = polyimage.interpret(generated.outputs, **generated.arguments)
        expected = expected if isinstance(expected, (list, tuple)) else [expected]
        moved = shifted_pipeline(generated.outputs, -5)
        graph = polyimage.compile(moved, schedule="naive", build=False).stage_graph
        for schedule in ("auto", random_schedule(graph, rng)):
            pipe = polyimage.compile(moved, schedule=schedule)
            result = pipe(**generated.arguments)
            result = result if isinstance(result, (list, tuple)) else [result]
            for got, want in zip(result, expected):
                np.testing.assert_array_equal(got, want, err_msg=f"seed {seed} {schedule}")
