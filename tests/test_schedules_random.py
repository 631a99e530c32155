"""Differential tests: random pipelines under random schedules == the interpreter.

`polyimage.testing.random_pipeline(seed)` builds a small pipeline (stencils, down- and
up-sampling, Cases, Selects, 3-D stages, lookups, Reductions, several outputs) with its
arguments; `random_schedule(graph, rng)` draws a valid grouping of its stages (after inlining)
with untiled, one- or two-level tiles of sizes in {1, 2, 3, 7, 8, 64, 1000}. Every schedule is
compiled and run with one and two threads, and every output must equal the interpreter's
(bit-exact for integers, rtol 1e-5 for float32; see oracle.py).

A failure names the seed, the schedule and the pipeline; rebuild it with
`random_pipeline(seed)` and `random_schedule(pipe.stage_graph, random.Random(schedule_seed))`.
`python -m pytest --soak` adds a long run over many more seeds and schedules.
"""

import random

import numpy as np
import pytest
from oracle import assert_same

import polyimage
from polyimage.graph import build_graph
from polyimage.schedule.plan import tile_rank
from polyimage.testing import (
    INNER_SHAPES,
    TILE_SIZES,
    random_pipeline,
    random_schedule,
)

pytestmark = pytest.mark.filterwarnings("ignore::polyimage.UncoveredReadWarning")

# 20 seeds draw every feature of the generator (test_generator_covers_the_dsl) by seed 13
SEEDS = range(20)
SCHEDULES_PER_SEED = 2
SOAK_SEEDS = range(1000, 1500)
SOAK_SCHEDULES_PER_SEED = 5


def _as_tuple(result):
    return result if isinstance(result, tuple) else (result,)


def _schedule_seed(seed: int, k: int) -> int:
    return seed * 1000 + k


def _context(rp, what) -> str:
    return (
        f"seed {rp.seed}, inline={rp.inline}, R x C = {rp.sizes[0]} x {rp.sizes[1]}, "
        f"schedule:\n{what}\npipeline:\n{rp.description}"
    )


def _run_and_compare(rp, pipe, expected, what):
    for threads in (1, 2):
        try:
            got = _as_tuple(pipe(threads=threads, **rp.arguments))
            assert len(got) == len(expected), f"{len(got)} outputs, expected {len(expected)}"
            for name, g, e in zip(pipe.stage_graph.outputs, got, expected):
                assert_same(g, e, f"output {name}, threads={threads}")
        except Exception as exc:
            raise AssertionError(f"{type(exc).__name__}: {exc}\n{_context(rp, what)}") from exc


def check_random_pipeline(seed: int, schedules: int):
    """Compile the pipeline of `seed` naively and with `schedules` random schedules; every
    result, with 1 and 2 threads, must match the interpreter."""
    rp = random_pipeline(seed)
    expected = _as_tuple(polyimage.interpret(rp.outputs, **rp.arguments))
    try:
        naive = polyimage.compile(rp.outputs, schedule="naive", inline=rp.inline)
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__}: {exc}\n{_context(rp, 'naive')}") from exc
    _run_and_compare(rp, naive, expected, "naive")
    graph = naive.stage_graph
    for k in range(schedules):
        schedule = random_schedule(graph, random.Random(_schedule_seed(seed, k)))
        what = f"{schedule} (random.Random({_schedule_seed(seed, k)}))"
        try:
            pipe = polyimage.compile(rp.outputs, schedule=schedule, inline=rp.inline)
        except Exception as exc:
            raise AssertionError(f"{type(exc).__name__}: {exc}\n{_context(rp, what)}") from exc
        assert [s.name for s in pipe.stage_graph.computed] == [s.name for s in graph.computed]
        _run_and_compare(rp, pipe, expected, what)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_pipelines_match_interpreter(seed):
    check_random_pipeline(seed, SCHEDULES_PER_SEED)


def pytest_generate_tests(metafunc):
    """Soak seeds are collected only with --soak, so a normal run lists no 500 skips."""
    if "soak_seed" in metafunc.fixturenames:
        seeds = SOAK_SEEDS if metafunc.config.getoption("--soak") else ()
        metafunc.parametrize("soak_seed", seeds)


@pytest.mark.soak
def test_random_pipelines_match_interpreter_soak(soak_seed):
    seed = soak_seed
    check_random_pipeline(seed, SOAK_SCHEDULES_PER_SEED)


# -- the generators themselves -------------------------------------------------------------


def test_generator_is_deterministic():
    """Same seed -> the same pipeline, data, schedule and C source."""
    for seed in (3, 8, 17):
        first, second = random_pipeline(seed), random_pipeline(seed)
        assert first.description == second.description
        assert first.inline == second.inline and first.sizes == second.sizes
        assert first.arguments.keys() == second.arguments.keys()
        for name, value in first.arguments.items():
            np.testing.assert_array_equal(value, second.arguments[name], err_msg=name)
        graph = polyimage.compile(first.outputs, inline=first.inline, build=False).stage_graph
        schedules = [random_schedule(graph, random.Random(seed)) for _ in range(2)]
        assert schedules[0] == schedules[1]
        sources = [
            polyimage.compile(
                rp.outputs, schedule=schedules[0], inline=rp.inline, build=False
            ).c_source
            for rp in (first, second)
        ]
        assert sources[0] == sources[1]


def test_generator_covers_the_dsl():
    """The default seeds exercise every kind of stage and both types (no compilation)."""
    features = set()
    inline = set()
    stages = []
    for seed in SEEDS:
        rp = random_pipeline(seed)
        features |= rp.features
        inline.add(rp.inline)
        stages.append(len(build_graph(rp.outputs).computed))
    wanted = {
        "pointwise",
        "binary",
        "stencil",
        "downsample",
        "upsample",
        "cases",
        "select",
        "expand",
        "collapse",
        "shuffle",
        "lookup",
        "reduction",
        "convert",
        "Float",
        "Int",
        "1 outputs",
        "2 outputs",
        "3 outputs",
        "3-D",
        "Reduction",
        "output read by a stage",
        "several consumers",
    }
    assert wanted <= features, f"missing: {sorted(wanted - features)}"
    assert inline == {True, False}
    assert min(stages) >= 2 and max(stages) >= 7


def test_random_schedules_are_valid_and_varied():
    """Schedules for many pipelines (as written, no compilation) validate, and the draws
    include one group, one group per stage, untiled groups, two levels with inner sizes
    smaller, equal and larger than the outer ones, and every tile size."""
    seen = set()
    sizes = set()
    for seed in range(200):
        rp = random_pipeline(seed)
        graph = build_graph(rp.outputs)
        n = len(graph.computed)
        for k in range(3):
            schedule = random_schedule(graph, random.Random(_schedule_seed(seed, k)))
            schedule.validate(graph)
            assert sorted(s for g in schedule.groups for s in g.stages) == sorted(
                s.name for s in graph.computed
            )
            if n > 1:
                seen.add(
                    "one group"
                    if len(schedule.groups) == 1
                    else "singletons"
                    if len(schedule.groups) == n
                    else "segments"
                )
            for group in schedule.groups:
                rank = tile_rank(graph, group.stages)
                assert all(len(level) == rank for level in group.tile_sizes)
                seen.add(f"{len(group.tile_sizes)} levels")
                for level in group.tile_sizes:
                    sizes.update(level)
                if len(group.tile_sizes) == 2:
                    outer, inner = group.tile_sizes
                    for o, i in zip(outer, inner):
                        seen.add(
                            "equal"
                            if i == o
                            else "dividing"
                            if i < o and o % i == 0
                            else "non-dividing"
                            if i < o
                            else "larger"
                        )
                    seen.add(
                        "inner == outer"
                        if inner == outer
                        else "inner > outer"
                        if any(i > o for i, o in zip(inner, outer))
                        else "inner < outer"
                    )
    assert {
        "one group",
        "singletons",
        "segments",
        "0 levels",
        "1 levels",
        "2 levels",
        "inner < outer",
        "inner == outer",
        "inner > outer",
        *INNER_SHAPES,
    } <= seen
    assert set(TILE_SIZES) <= sizes
