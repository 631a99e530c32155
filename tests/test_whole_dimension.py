"""A tiled nest whose innermost dimension has a few constant points (channels last) gets a copy
for tiles that span that dimension whole, with its bounds as constants (codegen.jam
specialized_nest): both copies give the interpreter's result, whichever the tiles take."""

import pytest
from helpers import CHANNELS, channels_last, channels_last_arguments
from oracle import assert_calls_match

import polyimage
from polyimage import Float, Function, Int, Interval, Parameter, Schedule, Variable
from polyimage.codegen.jam import whole_innermost


@pytest.mark.parametrize(
    "text",
    [
        "group 0: blur, mixed, out [4x8x5]",  # tiles span the channels: the constant copy
        "group 0: blur, mixed, out [3x4x2]",  # tiles split them: the general copy
        "group 0: blur, mixed, out [8x16x8 then 2x4x5]",
        "group 0: blur [4x4x3]\ngroup 1: mixed, out [2x32x5]",
    ],
)
@pytest.mark.parametrize("size", [(1, 1), (7, 13)])
def test_both_copies_match_the_interpreter(text, size):
    out = channels_last()
    arguments = channels_last_arguments(*size)
    expected = polyimage.interpret([out], **arguments)
    pipe = polyimage.compile([out], schedule=Schedule.parse(text), inline=False)
    assert_calls_match(pipe, expected, arguments, text)


def test_the_copy_is_there_only_for_a_small_constant_innermost_dimension():
    out = channels_last()
    pipe = polyimage.compile([out], schedule=Schedule.parse("group 0: blur, mixed, out [4x8x5]"))
    assert f"== ({CHANNELS - 1})" in pipe.c_source
    assert whole_innermost(out) == (0, CHANNELS - 1)
    R = Parameter(Int, "R")
    x, c = Variable(Int, "x"), Variable(Int, "c")
    planar = Function(([c, x], [Interval(Int, 0, 2), Interval(Int, 0, R)]), Float, "planar")
    planar.defn = [x * 1.0]
    assert whole_innermost(planar) is None
