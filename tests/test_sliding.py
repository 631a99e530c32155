"""Sliding two-level tiles: inner tiles walk an outer tile along its slide dimension, computing
only the rows the previous ones did not, into scratchpads folded to a power of two of rows.
Results must equal the interpreter's whatever the regions do (forward, backward, down-sampled),
and the scratchpads must hold about an inner tile, not the outer one."""

import resource

import numpy as np
import pytest

import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable

R, C = Parameter(Int, "R"), Parameter(Int, "C")
x, y = Variable(Int, "x"), Variable(Int, "y")


def _chain(flip=False, down=False):
    """img -> a (3x3 stencil) -> b (reads a forward, or mirrored along rows with `flip`, or
    at 2x with `down`) -> out (3-row stencil of b)."""
    img = Image(Float, "img", [R + 8, C + 8])
    a = Function(([x, y], [Interval(Int, 1, R + 6), Interval(Int, 1, C + 6)]), Float, "a")
    a.defn = [
        img(x - 1, y) + img(x, y - 1) * 2 + img(x + 1, y + 1) * 0.5 - img(x, y) * img(x + 1, y)
    ]
    b = Function(([x, y], [Interval(Int, 2, R + 5), Interval(Int, 2, C + 5)]), Float, "b")
    if flip:
        b.defn = [a(R + 7 - x, y) * 1.5 + a(R + 6 - x, y + 1)]
    elif down:
        b.defn = [a(x / 2 + 1, y) + a(x / 2 + 2, y - 1)]
    else:
        b.defn = [a(x - 1, y) - a(x + 1, y + 1) * 0.75]
    out = Function(([x, y], [Interval(Int, 3, R + 4), Interval(Int, 3, C + 4)]), Float, "out")
    out.defn = [b(x - 1, y) + b(x, y) * 3 + b(x + 1, y - 1)]
    return out


@pytest.mark.parametrize("form", ["forward", "flip", "down"])
@pytest.mark.parametrize("tiles", ["[16x64 then 2x64]", "[1000x5 then 3x5]", "[7x9 then 1x9]"])
def test_sliding_tiles_match_the_interpreter(form, tiles):
    out = _chain(flip=form == "flip", down=form == "down")
    pipe = polyimage.compile(
        out, schedule=f"group 0: a, b, out {tiles}", inline=False, estimates={"R": 60, "C": 40}
    )
    assert pipe.group_plans[0].slide == (0, "x")
    rng = np.random.default_rng(7)
    for rows, cols, threads in [(61, 37, 1), (33, 70, 2), (5, 3, 2), (130, 11, 3)]:
        img = rng.random((rows + 8, cols + 8), dtype=np.float32)
        want = polyimage.interpret([out], img=img)
        np.testing.assert_array_equal(pipe(img=img, threads=threads), want)


def test_sliding_tiles_pass_the_checked_build():
    out = _chain(flip=True)
    pipe = polyimage.compile(
        out,
        schedule="group 0: a, b, out [24x32 then 2x32]",
        inline=False,
        check=True,
        estimates={"R": 60, "C": 40},
    )
    img = np.random.default_rng(8).random((75, 51), dtype=np.float32)
    np.testing.assert_array_equal(pipe(img=img, threads=2), polyimage.interpret([out], img=img))


def test_scratchpads_fold_to_an_inner_tile():
    """One outer tile spans every row: unfolded, a and b would need a scratchpad of the whole
    image each (2 x 16 MiB); folded they hold a few rows, so the first call at that size
    touches only the pages of a few rows."""
    out = _chain()
    pipe = polyimage.compile(
        out,
        schedule="group 0: a, b, out [100000x2048 then 2x2048]",
        inline=False,
        estimates={"R": 2040, "C": 2040},
    )
    assert "fold" in pipe.c_source
    pipe(img=np.ones((20, 20), np.float32), threads=1)  # loads the module: its pages too
    img = np.random.default_rng(9).random((2048, 2048), dtype=np.float32)
    result = np.full((2042, 2042), np.nan, np.float32)  # its pages touched beforehand
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    pipe(img=img, out=result, threads=1)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    assert faults < 2 * 2048 * 2048 * 4 // 4096 // 20, f"{faults} pages faulted"
    np.testing.assert_array_equal(result, polyimage.interpret([out], img=img))
