"""The NCHW conv layer app: compiled == interpreter == NumPy reference under every schedule,
bit for bit (every cell sums ci, dx, dy in order); the identity kernel gives ReLU of the input
plus the bias, and the zero border pads."""

import numpy as np
import pytest
from oracle import assert_calls_match, run_both

import polyimage
from polyimage.apps import app_schedules, conv_nchw
from polyimage.apps.conv_nchw import CI, CO, TAPS


@pytest.mark.parametrize("size", [conv_nchw.SMALL_SIZE, {"N": 1, "R": 1, "C": 5}])
def test_matches_reference(size):
    arrays = conv_nchw.prepare((), size)
    assert arrays["img"].shape == (size["N"], CI, size["R"] + 2, size["C"] + 2)
    outputs, _ = conv_nchw.build()
    expected = conv_nchw.reference(**arrays)
    result = run_both(outputs, reference=expected, **arrays)
    assert result.shape == (size["N"], CO, size["R"], size["C"])
    np.testing.assert_array_equal(result, expected)
    assert 0.2 < (result > 0).mean() < 0.8, "ReLU cuts some values, not all"


@pytest.mark.parametrize("schedule", list(app_schedules(conv_nchw)))
def test_every_schedule_equals_the_interpreter(schedule):
    arrays = conv_nchw.prepare((), {"N": 2, "R": 5, "C": 9})
    outputs, _ = conv_nchw.build()
    pipe = polyimage.compile(outputs, schedule=schedule, estimates=conv_nchw.PAPER_SIZE)
    expected = polyimage.interpret(outputs, **arrays)
    assert_calls_match(pipe, expected, arrays, f"conv_nchw under {schedule}", exact=True)


@pytest.fixture(scope="module")
def pipe():
    outputs, _ = conv_nchw.build()
    return polyimage.compile(outputs, estimates=conv_nchw.PAPER_SIZE)


def test_the_identity_kernel_gives_relu_of_the_input_plus_bias(pipe, rng):
    activation = rng.standard_normal((2, CI, 7, 11)).astype(np.float32)
    weight = np.zeros((CO, CI, TAPS, TAPS), np.float32)
    weight[np.arange(CO), np.arange(CO) % CI, 1, 1] = 1  # the centre tap of channel co
    bias = np.linspace(-0.5, 0.5, CO, dtype=np.float32)
    padded = np.pad(activation, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = pipe(img=padded, weight=weight, bias=bias)
    np.testing.assert_array_equal(out, np.maximum(activation + bias[:, None, None], 0))


def test_a_box_kernel_sees_the_zero_border(pipe):
    rows, cols = 4, 6
    ones = np.pad(np.ones((1, CI, rows, cols), np.float32), ((0, 0), (0, 0), (1, 1), (1, 1)))
    weight = np.full((CO, CI, TAPS, TAPS), 1 / CI, np.float32)
    out = pipe(img=ones, weight=weight, bias=np.zeros(CO, np.float32))
    inside = np.full((rows, cols), 9.0)  # neighbours of each pixel inside the image
    inside[[0, -1], :] -= 3
    inside[:, [0, -1]] -= 3
    inside[[0, 0, -1, -1], [0, -1, 0, -1]] += 1
    np.testing.assert_allclose(out[0], np.broadcast_to(inside, out[0].shape), rtol=1e-5)
