"""The checked build (POLYIMAGE_CHECK=1, compile(check=True)): every buffer, image and
scratchpad index is checked at run time; a failure raises CheckError naming the buffer, the
index, the group and the tile, and the call uses an index inside instead of corrupting
memory. Random pipelines and schedules run checked and match the interpreter."""

import random

import numpy as np
import pytest
from memory_cases import short_scratchpad
from oracle import assert_calls_match

import polyimage
from polyimage.config import Options
from polyimage.testing import (
    random_mixed_pipeline,
    random_pipeline,
    random_schedule,
)

pytestmark = pytest.mark.filterwarnings("ignore::polyimage.UncoveredReadWarning")


def test_an_index_outside_a_scratchpad_raises_check_error_naming_it():
    pipe, arguments = short_scratchpad(check=True)
    with pytest.raises(polyimage.CheckError) as caught:
        pipe(threads=1, **arguments)
    message = str(caught.value)
    assert "bx scratchpad: index 1 is " in message
    assert "(group 0, outer tile " in message
    # the first tile along x that reads the missing column (tiles start at by's first point,
    # column 1): 0..3 x 1..8
    assert message.endswith("(group 0, outer tile 0..3 x 1..8)"), message


def test_after_a_failure_the_next_call_reports_afresh():
    pipe, arguments = short_scratchpad(check=True)
    for _ in range(2):
        with pytest.raises(polyimage.CheckError, match="bx scratchpad"):
            pipe(threads=2, **arguments)


def test_the_checked_build_is_another_build():
    case = random_pipeline(3)
    plain = polyimage.compile(case.outputs, inline=case.inline)
    checked = polyimage.compile(case.outputs, inline=case.inline, check=True)
    assert "chk(" not in plain.c_source and "chk(" in checked.c_source
    assert plain.build_info.key != checked.build_info.key


def test_polyimage_check_turns_it_on():
    assert Options.from_env({"POLYIMAGE_CHECK": "1"}).check
    assert not Options.from_env({}).check
    with pytest.raises(ValueError, match="POLYIMAGE_CHECK"):
        Options.from_env({"POLYIMAGE_CHECK": "yes"})


def _matches(rp, schedule):
    expected = polyimage.interpret(rp.outputs, **rp.arguments)
    pipe = polyimage.compile(rp.outputs, schedule=schedule, inline=rp.inline, check=True)
    assert_calls_match(pipe, expected, rp.arguments, f"seed {rp.seed}:\n{schedule}")


@pytest.mark.parametrize("seed", range(8))
def test_random_pipelines_run_checked(seed):
    rp = random_pipeline(seed)
    graph = polyimage.compile(
        rp.outputs, schedule="naive", inline=rp.inline, build=False
    ).stage_graph
    for k in range(2):
        _matches(rp, random_schedule(graph, random.Random(seed * 1000 + k)))


@pytest.mark.parametrize("seed", range(4))
def test_random_mixed_groups_run_checked(seed):
    rp = random_mixed_pipeline(seed)
    graph = polyimage.compile(
        rp.outputs, schedule="naive", inline=rp.inline, build=False
    ).stage_graph
    stages = " ".join(s.name for s in graph.computed)
    rng = np.random.default_rng(seed)
    rank = max(s.func.ndim for s in graph.computed)
    outer = rng.choice([1, 2, 3, 8, 64], rank)
    inner = [int(rng.integers(1, o + 1)) for o in outer]
    tiles = "x".join(map(str, outer)) + " then " + "x".join(map(str, inner))
    _matches(rp, polyimage.Schedule.parse(f"group 0: {stages.replace(' ', ', ')} [{tiles}]"))
