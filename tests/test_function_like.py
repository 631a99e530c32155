"""Function.like: a stage over the domain of an Image or another stage, so that a filter's
output has its input's shape with no interval arithmetic."""

import numpy as np
import pytest
from oracle import run_both

from polyimage import Clamp, Float, Function, Image, Int, Interval, Parameter, Variable


def test_a_blur_over_the_image_s_own_domain_has_the_input_s_shape():
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [R, C])
    out = Function.like(img, Float, "out")
    x, y = out.variables
    assert [v.name for v in out.variables] == ["x0", "x1"]
    taps = [
        img(Clamp(x + i, 0, R - 1), Clamp(y + j, 0, C - 1)) for i in (-1, 0, 1) for j in (-1, 0, 1)
    ]
    out.defn = [sum(taps[1:], taps[0]) * (1.0 / 9)]
    values = np.random.default_rng(4).random((13, 21), dtype=np.float32)
    padded = np.pad(values, 1, mode="edge")
    expected = sum(
        padded[1 + i : 14 + i, 1 + j : 22 + j] for i in (-1, 0, 1) for j in (-1, 0, 1)
    ) * np.float32(1.0 / 9)
    result = run_both([out], img=values)
    assert result.shape == values.shape
    np.testing.assert_allclose(result, expected, rtol=1e-6)


def test_like_a_stage_takes_its_domain_and_variables():
    N = Parameter(Int, "N")
    i = Variable(Int, "i")
    a = Image(Float, "a", [N + 4])
    inner = Function(([i], [Interval(Int, 2, N + 1)]), Float, "inner")
    inner.defn = [a(i - 2) + a(i + 2)]
    twice = Function.like(inner, Float, "twice")
    assert twice.variables == inner.variables and twice.intervals == inner.intervals
    twice.defn = [inner(i) * 2.0]
    values = np.arange(9, dtype=np.float32)
    result = run_both([twice], a=values)
    np.testing.assert_array_equal(result, (values[:-4] + values[4:]) * 2)
    k = Variable(Int, "k")
    assert Function.like(inner, Float, "named", variables=[k]).variables == (k,)


def test_like_needs_a_stage_or_an_image():
    with pytest.raises(TypeError, match="Function.like needs an Image or a stage"):
        Function.like([3, 4], Float, "out")
