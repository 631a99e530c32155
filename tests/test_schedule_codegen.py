"""Schedules through compile(): errors, text forms, buffer lifetimes and memory, determinism."""

import hashlib
import subprocess
import sys

import numpy as np
import pytest
from helpers import ROOT
from oracle import assert_same

import polyimage
from polyimage import (
    Float,
    Function,
    GroupSchedule,
    Image,
    Int,
    Interval,
    Parameter,
    Schedule,
    ScheduleError,
    Variable,
)
from polyimage.apps import harris
from polyimage.schedule.memory import buffer_lifetimes, buffer_slots
from polyimage.schedule.tiling import TiledGroup, UntiledGroup

N = Parameter(Int, "N")
i = Variable(Int, "i")
signal = Image(Float, "signal", [N])


def blur_chain(length):
    """f1 .. f<length>, each a 3-point blur of the one before; the last is the output."""
    stages, previous = [], signal
    for k in range(1, length + 1):
        f = Function(([i], [Interval(Int, k, N - 1 - k)]), Float, f"f{k}")
        f.defn = [(previous(i - 1) + previous(i) + previous(i + 1)) * (1.0 / 3)]
        stages.append(f)
        previous = f
    return stages


def test_naming_an_inlined_stage_is_a_schedule_error():
    outputs, _ = harris.build()
    with pytest.raises(ScheduleError, match="Ixx was inlined into Sxx"):
        polyimage.compile(outputs, schedule="group 0: Ix, Ixx, Sxx, Iy, Syy, harris [8x8]")


def test_schedule_text_and_json_compile_to_the_same_code():
    stages = blur_chain(3)
    text = "group 0: f1, f2 [16]\ngroup 1: f3 [untiled]"
    a = polyimage.compile(stages[-1], schedule=text)
    b = polyimage.compile(stages[-1], schedule=Schedule.parse(text).to_json())
    assert a.schedule == b.schedule == Schedule.parse(str(a.schedule))
    assert a.c_source == b.c_source
    assert isinstance(a.group_plans[0], TiledGroup)
    assert isinstance(a.group_plans[1], UntiledGroup)
    x = np.random.default_rng(3).random(50, dtype=np.float32)
    assert_same(a(signal=x), polyimage.interpret(stages[-1], signal=x))


def test_full_buffers_live_from_their_group_to_their_last_reader():
    stages = blur_chain(5)
    pipe = polyimage.compile(stages[-1], estimates={"N": 1000}, schedule="naive")
    lifetimes = buffer_lifetimes(pipe.stage_graph, pipe.group_plans)
    assert lifetimes == {"f1": (0, 1), "f2": (1, 2), "f3": (2, 3), "f4": (3, 4)}
    memory = pipe.memory()
    assert memory.all_full == 4 * 1000 * 4 - 4 * (2 + 4 + 6 + 8)
    assert memory.peak_full == (998 + 996) * 4
    slots = buffer_slots(lifetimes)
    assert slots == {"f1": 0, "f2": 1, "f3": 0, "f4": 1}  # f3 reuses f1's memory, f4 f2's
    source = pipe.c_source
    assert "f3 = (float *)pim_reserve(&pim_w->full[0]" in source


def test_a_fused_group_needs_only_scratchpads():
    stages = blur_chain(4)
    pipe = polyimage.compile(
        stages[-1], estimates={"N": 100000}, schedule="group 0: f1, f2, f3, f4 [512]"
    )
    memory = pipe.memory()
    assert memory.all_full == memory.peak_full == 0
    # three scratchpads of at most 512 + 2*3 points each
    assert 0 < memory.scratch_per_thread[0] <= 3 * (512 + 6) * 4
    assert "scratchpads f1, f2, f3" in pipe.report()


def test_sizes_that_do_not_divide_and_tiles_larger_than_the_image():
    stages = blur_chain(4)
    x = np.random.default_rng(5).random(37, dtype=np.float32)
    expected = polyimage.interpret(stages[-1], signal=x)
    for tiles in ("1", "5", "36", "1000", "64 then 3", "7 then 100"):
        levels = tuple((int(t),) for t in tiles.split(" then "))
        pipe = polyimage.compile(
            stages[-1], schedule=Schedule((GroupSchedule(("f1", "f2", "f3", "f4"), levels),))
        )
        for threads in (1, 2):
            assert_same(pipe(signal=x, threads=threads), expected, f"tiles {tiles}")


def _fingerprint_in_subprocess():
    code = (
        "import hashlib, polyimage; from polyimage.apps import harris; o, _ = harris.build(); "
        "p = polyimage.compile(o, schedule=harris.SCHEDULES['tuned']); "
        "print(hashlib.sha256(p.c_source.encode()).hexdigest(), p.build_info.key)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def test_same_schedule_same_c_and_key_in_every_process():
    outputs, _ = harris.build()
    pipe = polyimage.compile(outputs, schedule=harris.SCHEDULES["tuned"])
    here = [hashlib.sha256(pipe.c_source.encode()).hexdigest(), pipe.build_info.key]
    assert _fingerprint_in_subprocess() == here
    assert _fingerprint_in_subprocess() == here


def test_siblings_reading_one_producer_share_a_loop_nest():
    outputs, _ = harris.build()
    pipe = polyimage.compile(outputs, schedule=harris.SCHEDULES["tuned"])
    nests = [n.stages for n in pipe.group_plans[0].nests]
    assert ("Ix", "Iy") in nests
    # harris reads both, and nothing shares its bounds
    assert ("harris",) in nests


def test_two_level_tiles_slide_along_the_first_smaller_dimension():
    outputs, _ = harris.build()
    pipe = polyimage.compile(outputs, schedule="group 0: Ix, Iy, harris [32x4256 then 8x4256]")
    assert pipe.group_plans[0].slide == (0, "x")
    pipe = polyimage.compile(outputs, schedule="group 0: Ix, Iy, harris [32x64 then 32x16]")
    assert pipe.group_plans[0].slide == (1, "y")
    pipe = polyimage.compile(outputs, schedule="group 0: Ix, Iy, harris [32x64 then 64x64]")
    assert pipe.group_plans[0].slide is None
