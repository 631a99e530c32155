"""The recursive filter app: compiled == interpreter == NumPy reference under every schedule,
bit for bit (each scan in order, no multiply-add contraction); a constant stays constant, a
step stays a monotone ramp, and an impulse spreads symmetrically (both directions run)."""

import numpy as np
import pytest
from oracle import assert_calls_match, run_both

import polyimage
from polyimage.apps import app_schedules, recursive_filter
from polyimage.apps.inputs import bundled
from polyimage.io import load_image

DEFAULTS = recursive_filter.DEFAULTS


def photo_arrays(size):
    photo = load_image(bundled(recursive_filter.PHOTOS[0]))
    return recursive_filter.prepare([photo], size)


@pytest.mark.parametrize("size", [recursive_filter.SMALL_SIZE, {"R": 1, "C": 7}, {"R": 6, "C": 1}])
def test_matches_reference_on_the_photo(size):
    arrays = photo_arrays(size)
    outputs, _ = recursive_filter.build()
    expected = recursive_filter.reference(**arrays, **DEFAULTS)
    result = run_both(outputs, reference=expected, **arrays, **DEFAULTS)
    assert result.shape == (size["R"], size["C"])
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("schedule", list(app_schedules(recursive_filter)))
def test_every_schedule_equals_the_interpreter(schedule):
    arrays = {**photo_arrays({"R": 37, "C": 45}), "alpha": 0.3}
    outputs, _ = recursive_filter.build()
    pipe = polyimage.compile(outputs, schedule=schedule, estimates=recursive_filter.PAPER_SIZE)
    expected = polyimage.interpret(outputs, **arrays)
    assert_calls_match(pipe, expected, arrays, f"recursive_filter under {schedule}", exact=True)


@pytest.fixture(scope="module")
def pipe():
    outputs, _ = recursive_filter.build()
    return polyimage.compile(outputs, estimates=recursive_filter.PAPER_SIZE)


def test_a_constant_stays_constant(pipe):
    out = pipe(img=np.full((9, 14), 0.375, np.float32), **DEFAULTS)
    np.testing.assert_allclose(out, 0.375, rtol=1e-6)


def test_a_step_becomes_a_monotone_ramp(pipe):
    img = np.zeros((8, 60), np.float32)
    img[:, 30:] = 1
    out = pipe(img=img, **DEFAULTS)
    assert np.all(np.diff(out, axis=1) >= -1e-6), "rising along every row"
    assert np.all(out[:, 0] < 0.05) and np.all(out[:, -1] > 0.95)
    assert 0.3 < out[0, 29] < 0.5 < out[0, 30] < 0.7, "the forward and backward passes balance"
    np.testing.assert_allclose(out, np.broadcast_to(out[:1], out.shape), atol=1e-6)


def test_an_impulse_spreads_symmetrically(pipe):
    img = np.zeros((41, 41), np.float32)
    img[20, 20] = 1
    out = pipe(img=img, alpha=0.5)
    assert out[20, 20] == out.max() and out[20, 20] < 0.5
    np.testing.assert_allclose(out, out[::-1, ::-1], atol=1e-7)
    np.testing.assert_allclose(out, out.T, atol=1e-7)
