"""The depthwise-separable convolution app: compiled == interpreter == NumPy reference; with
identity filters it is ReLU of the input channels plus the bias, and the zero border pads."""

import numpy as np
import pytest
from oracle import run_both

import polyimage
from polyimage.apps import depthwise_conv
from polyimage.apps.depthwise_conv import CI, CO


@pytest.mark.parametrize("size", [depthwise_conv.SMALL_SIZE, {"N": 1, "R": 9, "C": 37}])
def test_matches_reference(size):
    arrays = depthwise_conv.prepare((), size)
    assert arrays["img"].shape == (size["N"], size["R"] + 2, size["C"] + 2, CI)
    outputs, _ = depthwise_conv.build()
    expected = depthwise_conv.reference(**arrays)
    result = run_both(outputs, reference=expected, **arrays)
    assert result.shape == (size["N"], size["R"], size["C"], CO)
    np.testing.assert_array_equal(result, expected)  # every sum in the same order
    assert 0.2 < (result > 0).mean() < 0.8, "ReLU cuts some values, not all"


def test_identity_filters_give_relu_of_the_input_plus_bias(rng):
    rows, cols = 7, 11
    activation = rng.standard_normal((2, rows, cols, CI)).astype(np.float32)
    depthwise_filter = np.zeros((3, 3, CI), np.float32)
    depthwise_filter[1, 1] = 1  # the centre tap only
    pointwise_filter = np.zeros((CI, CO), np.float32)
    pointwise_filter[2 * np.arange(CO), np.arange(CO)] = 1  # output d is input channel 2d
    bias = np.linspace(-0.5, 0.5, CO, dtype=np.float32)
    outputs, _ = depthwise_conv.build()
    out = polyimage.compile(outputs)(
        img=np.pad(activation, ((0, 0), (1, 1), (1, 1), (0, 0))),
        depthwise_filter=depthwise_filter,
        pointwise_filter=pointwise_filter,
        bias=bias,
    )
    np.testing.assert_array_equal(out, np.maximum(activation[..., ::2] + bias, 0))


def test_a_box_filter_sees_the_zero_border():
    rows, cols = 5, 6
    ones = np.ones((1, rows, cols, CI), np.float32)
    outputs, _ = depthwise_conv.build()
    out = polyimage.compile(outputs)(
        img=np.pad(ones, ((0, 0), (1, 1), (1, 1), (0, 0))),
        depthwise_filter=np.ones((3, 3, CI), np.float32),
        pointwise_filter=np.full((CI, CO), 1 / CI, np.float32),
        bias=np.zeros(CO, np.float32),
    )
    neighbours = np.full((rows, cols), 9.0, np.float32)  # of each pixel, inside the image
    neighbours[[0, -1], :] -= 3
    neighbours[:, [0, -1]] -= 3
    neighbours[[0, 0, -1, -1], [0, -1, 0, -1]] += 1
    np.testing.assert_allclose(out[0], np.broadcast_to(neighbours[..., None], out[0].shape))
