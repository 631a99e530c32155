"""The median filter app: compiled == interpreter == NumPy reference (a sort); it removes an
isolated impulse and keeps a step edge."""

import numpy as np
import pytest
from oracle import run_both

import polyimage
from polyimage.apps import median_filter
from polyimage.apps.inputs import bundled
from polyimage.io import load_image


@pytest.mark.parametrize("size", [median_filter.SMALL_SIZE, {"R": 37, "C": 53}])
def test_matches_reference_on_the_photo(size):
    photo = load_image(bundled(median_filter.PHOTOS[0]))
    arrays = median_filter.prepare([photo], size)
    outputs, _ = median_filter.build()
    expected = median_filter.reference(**arrays)
    result = run_both(outputs, reference=expected, **arrays)
    assert result.shape == (3, size["R"], size["C"])
    np.testing.assert_array_equal(result, expected)  # min and max pick values: no rounding


def test_matches_reference_on_noise_with_ties(rng):
    img = rng.integers(0, 4, (3, 19, 24)).astype(np.float32)  # many equal neighbours
    outputs, _ = median_filter.build()
    result = polyimage.compile(outputs)(img=img)
    np.testing.assert_array_equal(result, median_filter.reference(img))


def test_removes_an_impulse_and_keeps_a_step_edge():
    img = np.zeros((3, 15, 22), np.float32)
    img[:, :, 11:] = 1.0  # a vertical step edge
    img[0, 5, 4] = 1.0  # an isolated bright pixel on the dark side
    img[1, 9, 16] = 0.0  # an isolated dark pixel on the bright side
    outputs, _ = median_filter.build()
    out = polyimage.compile(outputs)(img=img)
    inner = img[:, 1:-1, 1:-1]
    expected = np.broadcast_to(inner[2], inner.shape)  # the channel without impulses
    np.testing.assert_array_equal(out, expected)
    assert not np.array_equal(out, inner), "the impulses were there to remove"
