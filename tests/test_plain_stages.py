"""Small stages (fewer points at the estimates than Options.plain_points) get one plain loop
nest instead of versions of their innermost loop (residue blocks, interior split, Case
segments): less C to compile, the same results on any size, schedule and thread count."""

import dataclasses

import numpy as np
import pytest

import polyimage
from polyimage import (
    Case,
    Clamp,
    Condition,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Parameter,
    Variable,
)
from polyimage.config import Options
from polyimage.graph.dag import build_graph
from polyimage.schedule.memory import small_stages


def _pipeline():
    """up(x, y): a 2x up-sampling with clamped reads and a Case on a border (every kind of
    innermost-loop version); out: a 3-tap blur of it."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R, C])
    up = Function(([x, y], [Interval(Int, 0, 2 * R - 1), Interval(Int, 0, 2 * C - 1)]), Float, "up")
    up.defn = [
        Case(Condition(y, "==", 0), img(x // 2, 0) * 2),
        Case(
            Condition(y, ">", 0),
            img(x // 2, y // 2) * 0.75
            + img(x // 2, Clamp(y // 2 + (y % 2) * 2 - 1, 0, C - 1)) * 0.25,
        ),
    ]
    out = Function(
        ([x, y], [Interval(Int, 0, 2 * R - 1), Interval(Int, 1, 2 * C - 2)]), Float, "out"
    )
    out.defn = [up(x, y - 1) + up(x, y) * 2 + up(x, y + 1)]
    return out, R, C


def _options(tmp_path, plain_points):
    return dataclasses.replace(
        Options.from_env(), cache_dir=tmp_path / str(plain_points), plain_points=plain_points
    )


def test_small_stages_counts_points_at_the_estimates():
    out, R, C = _pipeline()
    graph = build_graph([out])
    assert small_stages(graph, {"R": 10, "C": 10}, 401) == {"up", "out"}  # 400 and 360 points
    assert small_stages(graph, {"R": 10, "C": 10}, 400) == {"out"}
    assert small_stages(graph, {"R": 10, "C": 10}, 1) == frozenset()


@pytest.mark.parametrize("schedule", ["naive", "auto", "group 0: up, out [4x16]"])
def test_plain_nests_match_the_interpreter(tmp_path, schedule):
    out, R, C = _pipeline()
    sources = {}
    for plain_points in (1, 1 << 16):
        pipe = polyimage.compile(
            [out],
            schedule=schedule,
            inline=False,
            estimates={R: 64, C: 64},
            options=_options(tmp_path, plain_points),
        )
        sources[plain_points] = pipe.c_source
        rng = np.random.default_rng(7)
        for rows, cols in ((1, 2), (5, 9), (13, 31)):
            img = rng.random((rows, cols), dtype=np.float32)
            want = polyimage.interpret([out], img=img)
            for threads in (1, 2):
                np.testing.assert_allclose(pipe(img=img, threads=threads), want, rtol=1e-6)
    assert "pim_qlo_" in sources[1] and "pim_qlo_" not in sources[1 << 16]
    assert len(sources[1 << 16]) < len(sources[1])


def test_the_limit_comes_from_the_environment():
    assert Options.from_env({}).plain_points == 1 << 16
    assert Options.from_env({"POLYIMAGE_PLAIN_POINTS": "1"}).plain_points == 1
    with pytest.raises(ValueError, match="POLYIMAGE_PLAIN_POINTS"):
        Options.from_env({"POLYIMAGE_PLAIN_POINTS": "-3"})
