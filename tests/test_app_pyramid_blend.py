"""The pyramid blending app: compiled == interpreter == NumPy reference, and the blend looks
like a blend (each photo kept away from the seam, the seam smoothed)."""

import numpy as np
import pytest
from oracle import run_both

import polyimage
from polyimage.apps import pyramid_blend
from polyimage.apps.inputs import bundled
from polyimage.io import load_image

# beyond this many columns from the mask's ramp, no pyramid level mixes the photos
REACH = 24


def photos():
    return [load_image(bundled(name)) for name in pyramid_blend.PHOTOS]


def far_columns(cols):
    """Columns far enough left (right) of the seam to hold the first (second) photo."""
    ramp = max(cols / 32, 1.0) / 2
    middle = (cols - 1) / 2
    left = np.arange(cols) < middle - ramp - REACH
    right = np.arange(cols) > middle + ramp + REACH
    return left, right


@pytest.mark.parametrize(
    "rows, cols",
    [(pyramid_blend.SMALL_SIZE["R"], pyramid_blend.SMALL_SIZE["C"]), (37, 151), (1, 1)],
)
def test_matches_reference_on_odd_sizes(rows, cols):
    arrays = pyramid_blend.prepare(photos(), {"R": rows, "C": cols})
    outputs, _ = pyramid_blend.build()
    expected = pyramid_blend.reference(**arrays)
    result = run_both(outputs, reference=expected, **arrays)
    assert result.shape == (3, rows, cols)
    assert result.dtype == np.float32
    left, right = far_columns(cols)
    np.testing.assert_allclose(result[:, :, left], arrays["img1"][:, :, left], atol=1e-5)
    np.testing.assert_allclose(result[:, :, right], arrays["img2"][:, :, right], atol=1e-5)
    if cols > 1:
        seam = cols // 2
        assert np.abs(result[:, :, seam] - arrays["img1"][:, :, seam]).max() > 0.01
        assert np.abs(result[:, :, seam] - arrays["img2"][:, :, seam]).max() > 0.01


def test_blends_the_photos_along_a_smooth_seam():
    arrays = pyramid_blend.prepare(photos())
    assert arrays["img1"].shape == (3, 512, 512) and arrays["mask"].shape == (512, 512)
    outputs, _ = pyramid_blend.build()
    out = polyimage.compile(outputs)(**arrays)
    assert out.shape == (3, 512, 512)
    left, right = far_columns(512)
    assert left.sum() > 200 and right.sum() > 200
    np.testing.assert_allclose(out[:, :, left], arrays["img1"][:, :, left], atol=1e-5)
    np.testing.assert_allclose(out[:, :, right], arrays["img2"][:, :, right], atol=1e-5)
    # the seam is smoother than cutting the photos where the mask crosses 1/2
    hard = np.where(arrays["mask"] >= 0.5, arrays["img1"], arrays["img2"])

    def steps(image):
        return np.abs(np.diff(image[:, :, 240:272], axis=2)).mean(axis=(0, 1))

    assert steps(out).max() < 0.5 * steps(hard).max()
    assert -0.2 < out.min() and out.max() < 1.2, "blending overshoots only a little"


def test_one_photo_on_both_sides_comes_back(rng):
    """The Laplacian pyramid collapses to its image: blending a photo with itself under any
    mask returns the photo."""
    arrays = pyramid_blend.prepare(photos(), {"R": 45, "C": 77})
    mask = rng.random((45, 77), dtype=np.float32)
    outputs, _ = pyramid_blend.build()
    out = polyimage.compile(outputs)(img1=arrays["img1"], img2=arrays["img1"], mask=mask)
    np.testing.assert_allclose(out, arrays["img1"], atol=1e-5)
    other = polyimage.compile(outputs)(img1=arrays["img1"], img2=arrays["img2"], mask=mask)
    assert np.abs(other - arrays["img1"]).max() > 0.1, "a different second photo shows"
