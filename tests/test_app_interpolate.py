"""The multiscale interpolation app: compiled == interpreter == NumPy reference, and the holes of
the photo are filled smoothly while the opaque pixels stay as they are."""

import numpy as np
import pytest
from oracle import run_both

import polyimage
from polyimage.apps import interpolate
from polyimage.apps.inputs import bundled, fit, to_float
from polyimage.io import load_image


def photo():
    return load_image(bundled(interpolate.PHOTOS[0]))


def pipeline():
    outputs, _ = interpolate.build()
    return polyimage.compile(outputs)


@pytest.mark.parametrize(
    "rows, cols", [(interpolate.SMALL_SIZE["R"], interpolate.SMALL_SIZE["C"]), (45, 257), (1, 1)]
)
def test_matches_reference_on_odd_sizes(rows, cols):
    arrays = interpolate.prepare([photo()], {"R": rows, "C": cols})
    img = arrays["img"]
    assert img.shape == (4, rows, cols)
    outputs, _ = interpolate.build()
    expected = interpolate.reference(**arrays)
    result = run_both(outputs, reference=expected, **arrays)
    assert result.shape == (3, rows, cols) and result.dtype == np.float32
    opaque = img[3] == 1
    np.testing.assert_allclose(result[:, opaque], img[:3, opaque], atol=1e-6)
    assert np.isfinite(result).all()
    assert result.min() >= 0 and result.max() <= 1 + 1e-6
    if rows > 1:
        assert (~opaque).any(), "the synthesised alpha has holes"
        assert (result[:, ~opaque] > 0.05).any(), "the holes are filled with colour"


def test_fills_the_holes_of_the_photo_smoothly():
    original = np.ascontiguousarray(to_float(photo(), channels=3).transpose(2, 0, 1))
    img = interpolate.prepare([photo()])["img"]
    assert img.shape == (4, 300, 451)
    out = pipeline()(img=img)
    hole = img[3] == 0
    assert 0.1 < hole.mean() < 0.5
    np.testing.assert_array_equal(out[:, ~hole], original[:, ~hole])
    # the fill is much closer to the hidden photo than a flat fill with the mean colour
    fill_error = np.abs(out[:, hole] - original[:, hole]).mean()
    flat_error = np.abs(original[:, hole] - original.mean(axis=(1, 2))[:, None]).mean()
    assert fill_error < 0.75 * flat_error
    # and smoother than the photo there: small steps between neighbouring hole pixels
    both = hole[:, 1:] & hole[:, :-1]
    out_steps = np.abs(np.diff(out, axis=2))[:, both].mean()
    photo_steps = np.abs(np.diff(original, axis=2))[:, both].mean()
    assert out_steps < 0.5 * photo_steps


def test_a_flat_colour_is_filled_with_itself(rng):
    rows, cols = 53, 87
    colour = np.float32([0.2, 0.5, 0.9])
    alpha = (rng.random((rows, cols)) < 0.7).astype(np.float32)
    alpha[0, 0] = 1
    img = np.concatenate(
        [np.broadcast_to(colour[:, None, None] * alpha, (3, rows, cols)), alpha[None]]
    ).astype(np.float32)
    out = pipeline()(img=img)
    np.testing.assert_allclose(out, np.broadcast_to(colour[:, None, None], out.shape), rtol=1e-5)


def test_prepare_keeps_the_alpha_of_an_rgba_photo():
    rgb = photo()
    alpha = np.full(rgb.shape[:2] + (1,), 255, np.uint8)
    alpha[100:140, 200:260] = 0
    img = interpolate.prepare([np.concatenate([rgb, alpha], axis=2)], {"R": 150, "C": 301})["img"]
    assert img.shape == (4, 150, 301)
    np.testing.assert_array_equal(img[3], fit(alpha, 150, 301)[:, :, 0] / np.float32(255))
    np.testing.assert_array_equal(img[:3], fit(to_float(rgb, 3), 150, 301).transpose(2, 0, 1))
    out = pipeline()(img=img)
    assert np.abs(out[:, 100:140, 200:260] - img[:3, 100:140, 200:260]).max() > 0.05
