"""The camera pipeline app: compiled == interpreter == NumPy reference; the output is the photo."""

import numpy as np
import pytest
from oracle import run_both

import polyimage
from polyimage.apps import camera_pipe
from polyimage.apps.inputs import bundled
from polyimage.io import load_image

OTHER_PARAMS = {
    "color_temp": 5200.0,
    "gamma": 2.4,
    "contrast": 30.0,
    "black_level": 32,
    "white_level": 950,
}


@pytest.fixture(scope="module")
def photo():
    return load_image(bundled(camera_pipe.PHOTOS[0]))


@pytest.fixture(scope="module")
def pipe():
    outputs, _ = camera_pipe.build()
    return polyimage.compile(outputs)


@pytest.mark.parametrize("size", [camera_pipe.SMALL_SIZE, {"R": 34, "C": 131}])
def test_matches_reference_on_the_photo(photo, size):
    arrays = camera_pipe.prepare([photo], size)
    assert arrays["img"].shape == (size["R"] + 16, size["C"] + 16)
    assert arrays["img"].dtype == np.uint16 and arrays["img"].max() <= 1023
    outputs, _ = camera_pipe.build()
    params = dict(camera_pipe.DEFAULTS)
    expected = camera_pipe.reference(**arrays, **params)
    result = run_both(outputs, reference=expected, **arrays, **params)
    assert result.shape == (3, size["R"], size["C"]) and result.dtype == np.uint8
    assert len(np.unique(result)) > 50, "a photo, not a flat image"


def test_matches_reference_on_random_raw_data(rng):
    """Full-range uint16 data: the int16 wrap-around of the uint16 -> int16 cast, of the
    demosaic arithmetic and of the corrected colours must agree too; other parameter values."""
    img = rng.integers(0, 65536, size=(11 + 16, 23 + 16), dtype=np.uint16)
    img[::3, ::2] = rng.integers(0, 1024, size=img[::3, ::2].shape, dtype=np.uint16)
    arrays = {
        "img": img,
        "matrix_3200": camera_pipe.MATRIX_3200,
        "matrix_7000": camera_pipe.MATRIX_7000,
    }
    outputs, _ = camera_pipe.build()
    expected = camera_pipe.reference(**arrays, **OTHER_PARAMS)
    result = run_both(outputs, reference=expected, **arrays, **OTHER_PARAMS)
    assert result.shape == (3, 11, 23)
    assert (result == 0).any() and (result == 255).any() and ((result > 0) & (result < 255)).any()


def test_output_looks_like_the_photo(photo, pipe):
    arrays = camera_pipe.prepare([photo])
    out = pipe(**arrays, **camera_pipe.DEFAULTS)
    assert out.shape == (3,) + photo.shape[:2]
    source = photo.transpose(2, 0, 1).astype(np.float64)
    means, source_means = out.reshape(3, -1).mean(1), source.reshape(3, -1).mean(1)
    np.testing.assert_allclose(means, source_means, atol=20)
    assert list(np.argsort(means)) == list(np.argsort(source_means)), "colour balance"
    for k in range(3):
        assert np.corrcoef(out[k].ravel(), source[k].ravel())[0, 1] > 0.9
    assert camera_pipe.to_photo(out).shape == photo.shape


def test_colour_temperature_interpolates_the_matrices(photo, pipe):
    arrays = camera_pipe.prepare([photo])
    means = [
        pipe(**arrays, **dict(camera_pipe.DEFAULTS, color_temp=t)).reshape(3, -1).mean(1)
        for t in (3200.0, camera_pipe.DEFAULTS["color_temp"], 7000.0)
    ]
    red, blue = [m[0] for m in means], [m[2] for m in means]
    assert red[0] > red[1] + 2 > red[2] + 4, "the 3200 K matrix gives more red"
    assert blue[0] + 4 < blue[1] + 2 < blue[2], "the 7000 K matrix gives more blue"


@pytest.mark.parametrize("value", [1023, 0])
def test_hot_and_dead_pixels_are_suppressed(pipe, value):
    grey = np.full((24 + 16, 30 + 16, 3), 0.5, np.float32)
    raw = camera_pipe.mosaic(grey)
    clean = pipe(
        img=raw,
        matrix_3200=camera_pipe.MATRIX_3200,
        matrix_7000=camera_pipe.MATRIX_7000,
        **camera_pipe.DEFAULTS,
    )
    spoiled = raw.copy()
    spoiled[8 + 11, 8 + 14] = value
    out = pipe(
        img=spoiled,
        matrix_3200=camera_pipe.MATRIX_3200,
        matrix_7000=camera_pipe.MATRIX_7000,
        **camera_pipe.DEFAULTS,
    )
    np.testing.assert_array_equal(out, clean)
    assert np.ptp(clean, axis=(1, 2)).max() <= 1, "a grey field comes out flat"
    assert abs(int(clean[0].mean()) - int(clean[2].mean())) <= 8, "and grey"


@pytest.mark.parametrize("params", [camera_pipe.DEFAULTS, OTHER_PARAMS])
def test_tone_curve_is_monotone_with_robust_rounding(params):
    lut, scaled = camera_pipe.tone_curve(
        params["gamma"], params["contrast"], params["black_level"], params["white_level"]
    )
    assert lut[params["black_level"]] == 0 and lut[params["white_level"]] == 255
    assert (np.diff(lut.astype(int)) >= 0).all()
    inside = scaled[(scaled > 0) & (scaled < 255)]
    margin = np.minimum(inside - np.floor(inside), np.ceil(inside) - inside)
    assert margin.min() > 1e-4, "a last-bit pow difference could flip a table entry"
