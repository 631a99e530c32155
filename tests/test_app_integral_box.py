"""The summed-area-table box filter app: compiled == interpreter == NumPy reference under every
schedule, bit for bit (integer sums); a constant image is that constant, one bright pixel
spreads over exactly its 15x15 window, and the sums stay exact where the table wraps past
2^31."""

import numpy as np
import pytest
from oracle import assert_calls_match, run_both

import polyimage
from polyimage.apps import app_schedules, integral_box
from polyimage.apps.inputs import bundled
from polyimage.apps.integral_box import AREA, RADIUS
from polyimage.io import load_image


def photo_arrays(size):
    photo = load_image(bundled(integral_box.PHOTOS[0]))
    return integral_box.prepare([photo], size)


@pytest.mark.parametrize("size", [integral_box.SMALL_SIZE, {"R": 1, "C": 5}, {"R": 3, "C": 2}])
def test_matches_reference_on_the_photo(size):
    arrays = photo_arrays(size)
    outputs, _ = integral_box.build()
    expected = integral_box.reference(**arrays)
    result = run_both(outputs, reference=expected, **arrays)
    assert result.shape == (size["R"], size["C"]) and result.dtype == np.uint8


@pytest.mark.parametrize("schedule", list(app_schedules(integral_box)))
def test_every_schedule_equals_the_interpreter(schedule):
    arrays = photo_arrays({"R": 37, "C": 45})
    outputs, _ = integral_box.build()
    pipe = polyimage.compile(outputs, schedule=schedule, estimates=integral_box.PAPER_SIZE)
    expected = polyimage.interpret(outputs, **arrays)
    assert_calls_match(pipe, expected, arrays, f"integral_box under {schedule}")


@pytest.fixture(scope="module")
def pipe():
    outputs, _ = integral_box.build()
    return polyimage.compile(outputs, estimates=integral_box.PAPER_SIZE)


@pytest.mark.parametrize("value", [0, 77, 255])
def test_a_constant_image_is_that_constant(pipe, value):
    out = pipe(img=np.full((20, 33), value, np.uint8))
    np.testing.assert_array_equal(out, value)


def test_one_bright_pixel_fills_exactly_its_window(pipe):
    img = np.zeros((31, 40), np.uint8)
    img[15, 22] = 225  # = AREA: a mean of exactly 1 in every window that holds it
    assert AREA == 225
    out = pipe(img=img)
    expected = np.zeros_like(img)
    expected[15 - RADIUS : 16 + RADIUS, 22 - RADIUS : 23 + RADIUS] = 1
    np.testing.assert_array_equal(out, expected)


def test_sums_stay_exact_where_the_table_wraps(pipe):
    """A white 3000 x 3000 image: the table's far corner, 255 * 3014^2, is past 2^31."""
    img = np.full((3000, 3000), 255, np.uint8)
    img[1500, 1500] = 30
    out = pipe(img=img)
    assert 255 * (3000 + 2 * RADIUS) ** 2 > 2**31
    assert out[0, 0] == 255 and out[-1, -1] == 255 and out[1500, 1500] == 254
