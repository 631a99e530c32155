"""Layout, mode and dtype hints of call errors (graph/arguments.py): a photo loaded the wrong
way gets a hint at the load_image argument that fixes it."""

import numpy as np
import pytest

import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable

R, C = Parameter(Int, "R"), Parameter(Int, "C")
c, x, y = Variable(Int, "c"), Variable(Int, "x"), Variable(Int, "y")


def doubled(extents, variables):
    """A stage that doubles an Image of `extents`, over the same domain."""
    img = Image(Float, "img", extents)
    out = Function((variables, [Interval(Int, 0, e - 1) for e in extents]), Float, "out")
    out.defn = [img(*variables) * 2]
    return [out]


@pytest.mark.parametrize(
    "extents, variables, shape, hint",
    [
        (
            [3, R, C],
            [c, x, y],
            (5, 7, 3),
            "looks like HWC (channels last): load it with load_image(path, layout='CHW')",
        ),
        (
            [R, C, 3],
            [x, y, c],
            (3, 5, 7),
            "looks like CHW (channels first): load it with load_image(path, layout='HWC')",
        ),
        ([R, C], [x, y], (5, 7, 3), "mode='L'"),
        ([3, R, C], [c, x, y], (5, 7), "mode='RGB'"),
    ],
)
def test_wrong_layout_gets_a_hint(extents, variables, shape, hint):
    outputs = doubled(extents, variables)
    arr = np.zeros(shape, np.float32)
    for run in (polyimage.interpret, polyimage.compile(outputs)):
        with pytest.raises(ValueError, match="image img") as info:
            run(outputs, img=arr) if run is polyimage.interpret else run(img=arr)
        assert hint in str(info.value)


def test_right_layout_gets_no_hint():
    outputs = doubled([3, R + 2, C], [c, x, y])
    with pytest.raises(ValueError) as info:  # rows too few, channels right
        polyimage.interpret(outputs, img=np.zeros((3, 5, 7), np.float32), R=4)
    assert "looks like" not in str(info.value)


def test_uint8_photo_for_a_float_image_gets_a_dtype_hint():
    outputs = doubled([R, C], [x, y])
    with pytest.raises(TypeError, match=r"dtype=np\.float32\) reads a photo as float32"):
        polyimage.interpret(outputs, img=np.zeros((5, 7), np.uint8))
