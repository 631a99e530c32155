"""The NHWC conv layer app: compiled == interpreter == NumPy reference under every schedule,
bit for bit (every cell sums dx, dy, ci in order); it computes conv_nchw's layer, transposed,
and a shifted tap shifts the image."""

import numpy as np
import pytest
from oracle import assert_calls_match, run_both

import polyimage
from polyimage.apps import app_schedules, conv_nchw, conv_nhwc
from polyimage.apps.conv_nhwc import CI, CO, TAPS


@pytest.mark.parametrize("size", [conv_nhwc.SMALL_SIZE, {"N": 1, "R": 3, "C": 1}])
def test_matches_reference(size):
    arrays = conv_nhwc.prepare((), size)
    assert arrays["img"].shape == (size["N"], size["R"] + 2, size["C"] + 2, CI)
    outputs, _ = conv_nhwc.build()
    expected = conv_nhwc.reference(**arrays)
    result = run_both(outputs, reference=expected, **arrays)
    assert result.shape == (size["N"], size["R"], size["C"], CO)
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("schedule", list(app_schedules(conv_nhwc)))
def test_every_schedule_equals_the_interpreter(schedule):
    arrays = conv_nhwc.prepare((), {"N": 2, "R": 5, "C": 9})
    outputs, _ = conv_nhwc.build()
    pipe = polyimage.compile(outputs, schedule=schedule, estimates=conv_nhwc.PAPER_SIZE)
    expected = polyimage.interpret(outputs, **arrays)
    assert_calls_match(pipe, expected, arrays, f"conv_nhwc under {schedule}", exact=True)


@pytest.fixture(scope="module")
def pipe():
    outputs, _ = conv_nhwc.build()
    return polyimage.compile(outputs, estimates=conv_nhwc.PAPER_SIZE)


def test_computes_the_nchw_layer_transposed(pipe):
    size = {"N": 2, "R": 9, "C": 14}
    nchw = conv_nchw.reference(**conv_nchw.prepare((), size))
    out = pipe(**conv_nhwc.prepare((), size))
    # the same 288 products summed in another order
    np.testing.assert_allclose(out, nchw.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-5)
    assert 0.2 < (out > 0).mean() < 0.8, "ReLU cuts some values, not all"


def test_a_shifted_tap_shifts_the_image(pipe, rng):
    """Weight 1 on tap (0, 2) of channel ci = co: each output is the input one row up and one
    column right, zero where that is the border."""
    activation = rng.random((1, 6, 8, CI), dtype=np.float32)
    weight = np.zeros((TAPS, TAPS, CI, CO), np.float32)
    weight[0, 2, np.arange(CO) % CI, np.arange(CO)] = 1
    padded = np.pad(activation, ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = pipe(img=padded, weight=weight, bias=np.zeros(CO, np.float32))
    np.testing.assert_array_equal(out, padded[:, 0:6, 2:10, :CO])
