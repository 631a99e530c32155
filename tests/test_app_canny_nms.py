"""The Canny non-maximum suppression app: compiled == interpreter == NumPy reference, bit for
bit (a UChar output of comparisons); a blurred step becomes a one-pixel line."""

import numpy as np
import pytest
from oracle import run_both

import polyimage
from polyimage.apps import canny_nms
from polyimage.apps.inputs import bundled
from polyimage.io import load_image


@pytest.mark.parametrize("size", [canny_nms.SMALL_SIZE, {"R": 4, "C": 7}])
def test_matches_reference_on_the_photo(size):
    photo = load_image(bundled(canny_nms.PHOTOS[0]))
    arrays = canny_nms.prepare([photo], size)
    outputs, _ = canny_nms.build()
    expected = canny_nms.reference(**arrays, **canny_nms.DEFAULTS)
    result = run_both(outputs, reference=expected, **arrays, **canny_nms.DEFAULTS)
    np.testing.assert_array_equal(result, expected)


def test_matches_reference_on_noise(rng):
    img = rng.random((23, 31), dtype=np.float32)
    outputs, _ = canny_nms.build()
    pipe = polyimage.compile(outputs, schedule="auto", estimates={"R": 23, "C": 31})
    result = pipe(img=img, low=0.5, high=1.5)
    np.testing.assert_array_equal(result, canny_nms.reference(img, low=0.5, high=1.5))


def test_a_blurred_step_becomes_one_line():
    ramp = (1 / (1 + np.exp(-(np.arange(30) - 15.0)))).astype(np.float32)  # steepest at 15
    img = np.repeat(ramp[None, :], 20, axis=0)
    outputs, _ = canny_nms.build()
    edges = polyimage.compile(outputs)(img=img, **canny_nms.DEFAULTS)
    strong_columns = sorted(set(np.nonzero(edges == 255)[1]))
    assert strong_columns == [15], strong_columns
