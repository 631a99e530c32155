"""The lens blur app: compiled == interpreter == NumPy reference; the depth is found from the
stereo pair, the focal plane stays sharp and another depth is blurred."""

import numpy as np
import pytest
from oracle import run_both

import polyimage
from polyimage.apps import lens_blur
from polyimage.apps.inputs import bundled
from polyimage.io import load_image


@pytest.fixture(scope="module")
def pipe():
    outputs, _ = lens_blur.build()
    return polyimage.compile(outputs)  # as run_both compiles it: built once, then cached


@pytest.mark.parametrize("size", [lens_blur.SMALL_SIZE, {"R": 29, "C": 71}])
def test_matches_reference_on_the_photo(size):
    photo = load_image(bundled(lens_blur.PHOTOS[0]))
    arrays = lens_blur.prepare([photo], size)
    border = 2 * lens_blur.BORDER
    assert arrays["left"].shape == (3, size["R"] + border, size["C"] + border)
    assert arrays["right"].shape == (
        3,
        size["R"] + border,
        size["C"] + border + 2 * lens_blur.SLICES,
    )
    outputs, _ = lens_blur.build()
    expected = lens_blur.reference(**arrays, **lens_blur.DEFAULTS)
    result = run_both(outputs, reference=expected, **arrays, **lens_blur.DEFAULTS)
    assert result.shape == (3, size["R"], size["C"])
    assert result.min() >= 0 and result.max() <= 1, "a weighted mean of [0, 1] colours"
    b = lens_blur.BORDER
    photo_colours = arrays["left"][:, b:-b, b:-b] / np.float32(255)
    assert np.abs(result - photo_colours).max() > 1 / 255, "some pixels are blurred"


def _two_depth_scene(rows=41, cols=67, top=13, bottom=25, seed=3):
    """A random texture whose top half lies at slice `top` and bottom half at `bottom`."""
    left_view = np.random.default_rng(seed).integers(0, 256, (rows, cols, 3), dtype=np.uint8)
    slices = np.where(np.arange(rows) < rows // 2, top, bottom)[:, None]
    source = np.clip(np.arange(cols + 2 * lens_blur.SLICES)[None, :] - 2 * slices, 0, cols - 1)
    right_view = left_view[np.arange(rows)[:, None], source]
    return lens_blur.stereo_inputs(left_view, right_view), left_view


def test_focal_plane_stays_sharp_and_other_depths_blur(pipe):
    arrays, left_view = _two_depth_scene()
    rows = left_view.shape[0]
    depth = lens_blur.reference_depth(arrays["left"], arrays["right"])
    assert (depth[: rows // 2 - 3] == 13).mean() > 0.9, "the top half is found at slice 13"
    assert (depth[rows // 2 + 3 :] == 25).mean() > 0.9, "the bottom half at slice 25"

    out = pipe(**arrays, focus_depth=13, blur_radius_scale=0.5)
    np.testing.assert_array_equal(
        out, lens_blur.reference(**arrays, focus_depth=13, blur_radius_scale=0.5)
    )
    photo = left_view.transpose(2, 0, 1) / np.float32(255)
    sharp = np.s_[:, : rows // 2 - 3, :]
    assert (out[sharp] == photo[sharp]).mean() > 0.9, "in focus: each pixel keeps its colour"
    blurred = np.s_[:, rows // 2 + 3 :, :]
    detail_in, detail_out = (np.abs(np.diff(a[blurred], axis=2)).mean() for a in (photo, out))
    assert detail_out < 0.5 * detail_in, "out of focus: the texture is smoothed"

    # focused on the bottom instead, the roles swap
    out = pipe(**arrays, focus_depth=25, blur_radius_scale=0.5)
    assert (out[blurred] == photo[blurred]).mean() > 0.9
    assert (
        np.abs(np.diff(out[sharp], axis=2)).mean()
        < 0.5 * np.abs(np.diff(photo[sharp], axis=2)).mean()
    )
