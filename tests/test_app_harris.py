"""The Harris corner app: compiled == interpreter == NumPy reference; corners respond."""

import numpy as np
import pytest
from oracle import run_both

import polyimage
from polyimage.apps import harris
from polyimage.apps.inputs import bundled
from polyimage.io import load_image


@pytest.fixture(scope="module")
def pipeline():
    outputs, _ = harris.build()
    return outputs, polyimage.compile(outputs)


@pytest.mark.parametrize("size", [harris.SMALL_SIZE, {"R": 29, "C": 131}])
def test_matches_reference_on_the_photo(size):
    photo = load_image(bundled(harris.PHOTOS[0]))
    arrays = harris.prepare([photo], size)
    assert arrays["img"].shape == (size["R"] + 4, size["C"] + 4)
    outputs, _ = harris.build()
    expected = harris.reference(**arrays, **harris.DEFAULTS)
    result = run_both(outputs, reference=expected, **arrays, **harris.DEFAULTS)
    assert result.shape == (size["R"], size["C"])
    assert result.max() > 1e-4 and result.min() < -1e-4, "the photo has corners and edges"
    view = harris.to_photo(result)
    assert view.shape == result.shape and view.min() >= 0 and view.max() <= 1


def test_corners_of_a_square_respond_most(pipeline):
    outputs, pipe = pipeline
    gray = np.zeros((40, 50), np.float32)
    gray[10:30, 15:40] = 1.0  # a bright rectangle: corners at (10, 15), (10, 39), (29, 15), ...
    img = np.pad(gray, harris.BORDER, mode="edge")
    out = pipe(img=img)
    np.testing.assert_allclose(out, harris.reference(img=img), rtol=1e-5, atol=1e-7)
    peaks = {
        np.unravel_index(np.argmax(np.where(mask, out, -np.inf)), out.shape)
        for mask in _quadrants(out.shape, 20, 27)
    }
    for r, c in peaks:
        assert min(abs(r - 10), abs(r - 29)) <= 1 and min(abs(c - 15), abs(c - 39)) <= 1, (
            f"peak at {(r, c)} is not at a corner"
        )
    assert out.max() > 0.05 and out[8:13, 20:35].max() <= 0, "a straight edge is no corner"
    assert out[19, 15] < 0, "an edge gives a negative response"
    np.testing.assert_array_equal(out[:5, :], 0)  # flat far from the rectangle
    np.testing.assert_array_equal(out[15:25, 22:33], 0)


def _quadrants(shape, r, c):
    rows, cols = np.indices(shape)
    for top in (True, False):
        for left in (True, False):
            yield ((rows < r) == top) & ((cols < c) == left)


def test_response_is_rotation_symmetric(pipeline):
    """Transposing the image swaps Ix and Iy, which leaves det and trace unchanged."""
    _, pipe = pipeline
    img = np.random.default_rng(3).random((23, 31)).astype(np.float32)
    np.testing.assert_allclose(pipe(img=img.T.copy()), pipe(img=img).T, rtol=1e-4, atol=1e-7)
