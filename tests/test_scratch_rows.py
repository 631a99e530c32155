"""Scratchpad rows are padded to an odd number of cache lines (codegen.tiled _padded, the C
helper pim_row): the offsets of a padded scratchpad step by its pitch, not by its extent, so
wide power-of-two tiles no longer put every plane of a stage on the same cache sets. Results
stay the interpreter's under tiles narrower and wider than four lines, sliding or not, on odd
sizes and 1 and 2 threads; a Reduction's scratchpad stays dense (it is merged as one array)."""

import numpy as np
import pytest
from helpers import assert_exact_on_threads, grid, offset_weighted_sum

import polyimage
from polyimage import Float, Function, Image, Int, Interval, Schedule, Variable

PLANES = 9


def plane_sum():
    """`planes` holds nine shifted copies of the image (a search window's offsets, first),
    `out` adds the nine planes at each pixel, each at its own column shift."""
    R, C, x, y = grid()
    k = Variable(Int, "k")
    img = Image(Float, "img", [R + 2, C + 2])
    rows, cols = Interval(Int, 1, R), Interval(Int, 0, C + 1)
    planes = Function(([k, x, y], [Interval(Int, 0, PLANES - 1), rows, cols]), Float, "planes")
    planes.defn = [img(x + k % 3 - 1, y) * (k + 1.0)]
    out = Function(([x, y], [rows, Interval(Int, 1, C)]), Float, "out")
    terms = [planes(p, x, y + p % 3 - 1) for p in range(PLANES)]
    out.defn = [sum(terms[1:], terms[0])]
    return [out]


@pytest.mark.parametrize(
    "text",
    [
        "group 0: planes, out [4x256]",  # rows of 258 floats: padded to 17 lines
        "group 0: planes, out [3x64]",  # 66: padded to 5 lines
        "group 0: planes, out [5x30]",  # under four lines: kept as they are
        "group 0: planes, out [16x256 then 2x256]",  # sliding along x
    ],
)
@pytest.mark.parametrize("size", [(1, 1), (7, 300), (19, 517)])
def test_padded_rows_match_the_interpreter(text, size):
    outputs = plane_sum()
    pipe = polyimage.compile(outputs, schedule=Schedule.parse(text), inline=False)
    assert "planes" in pipe.group_plans[0].scratch
    rng = np.random.default_rng(size[1])
    arguments = {"img": rng.random((size[0] + 2, size[1] + 2), dtype=np.float32)}
    assert_exact_on_threads(pipe, outputs, arguments, threads=(1, 2))


def test_offsets_step_by_the_pitch_and_a_reduction_stays_dense():
    pipe = polyimage.compile(
        plane_sum(), schedule=Schedule.parse("group 0: planes, out [4x256]"), inline=False
    )
    source = pipe.c_source
    assert "pim_pitch0_planes = pim_row(" in source
    assert "* pim_pitch0_planes + (pim_w_y" in source
    outputs = offset_weighted_sum()
    schedule = Schedule.parse("group 0: diff, patch, acc, out [3x8x128]")
    pipe = polyimage.compile(outputs, schedule=schedule, inline=False)
    assert {"patch", "acc"} <= set(pipe.group_plans[0].scratch)
    assert "pim_pitch0_patch" in pipe.c_source
    assert "pim_pitch0_acc" not in pipe.c_source
    rng = np.random.default_rng(3)
    arguments = {"img": rng.random((3, 9 + 4, 140 + 4), dtype=np.float32)}
    assert_exact_on_threads(pipe, outputs, arguments, threads=(1, 2))
