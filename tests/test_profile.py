"""pipe.profile(): a separate build with timers, per group and per stage, that leaves the normal
build without timing code; and `polyimage run APP --profile`."""

import numpy as np
import pytest

import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable
from polyimage.commands.cli import main


def _chain():
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 4, C + 4])
    prev = img
    for k, name in enumerate("abcd"):
        f = Function(
            ([x, y], [Interval(Int, k + 1, R + 2 - k), Interval(Int, k + 1, C + 2 - k)]),
            Float,
            name,
        )
        f.defn = [(prev(x - 1, y) + prev(x + 1, y) + prev(x, y - 1) + prev(x, y + 1)) * 0.25]
        prev = f
    return prev


SCHEDULE = "group 0: a, b [16x64]\ngroup 1: c [untiled]\ngroup 2: d [8x32]"


@pytest.fixture(scope="module")
def pipe():
    return polyimage.compile([_chain()], schedule=SCHEDULE, inline=False)


def test_profile_times_every_group_and_stage(pipe):
    arr = np.random.default_rng(0).random((300, 400), dtype=np.float32)
    profile = pipe.profile(img=arr, runs=2, threads=2)
    groups = [r for r in profile.rows if not r.inner]
    assert [r.group for r in groups] == [0, 1, 2]
    assert [r.stages for r in groups] == [("a", "b"), ("c",), ("d",)]
    inner = [r.stages for r in profile.rows if r.inner]
    assert inner == [("a",), ("b",)]  # the fused group's nests; single nests add nothing
    assert all(r.seconds > 0 for r in profile.rows)
    assert sum(r.seconds for r in groups) <= profile.seconds
    assert groups[1].traffic_bytes == (300 - 4) * (400 - 4) * 4 + (300 - 6) * (400 - 6) * 4
    text = str(profile)
    assert "a, b" in text and "ms per call" in text and "(outside the groups" in text


def test_the_normal_build_has_no_timers(pipe):
    assert "omp_get_wtime" not in pipe.c_source
    arr = np.random.default_rng(1).random((40, 50), dtype=np.float32)
    before = pipe(img=arr)
    assert "default number of threads" in str(pipe.profile(arr, runs=1))  # by position
    np.testing.assert_array_equal(pipe(img=arr), before)
    assert pipe.build_info.key != pipe._profiled.info.key


def test_run_profile_on_the_command_line(capsys):
    assert main(["run", "unsharp_mask", "--profile", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    assert "profile of unsharp_mask" in out and "blurx" in out
    assert "compiled in" in out or "loaded from the cache in" in out
