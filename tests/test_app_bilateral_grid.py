"""The bilateral grid app: compiled == interpreter == NumPy reference; it smooths flat regions
and keeps edges."""

import numpy as np
import pytest
from oracle import run_both

import polyimage
from polyimage.apps import bilateral_grid
from polyimage.apps.inputs import bundled
from polyimage.io import load_image


@pytest.fixture(scope="module")
def pipe():
    outputs, _ = bilateral_grid.build()
    return polyimage.compile(outputs)


@pytest.mark.parametrize("size", [bilateral_grid.SMALL_SIZE, {"R": 41, "C": 130}])
def test_matches_reference_on_the_photo(size):
    photo = load_image(bundled(bilateral_grid.PHOTOS[0]))
    arrays = bilateral_grid.prepare([photo], size)
    outputs, _ = bilateral_grid.build()
    params = dict(bilateral_grid.DEFAULTS)
    expected = bilateral_grid.reference(**arrays, **params)
    result = run_both(outputs, reference=expected, **arrays, **params)
    assert result.shape == (size["R"], size["C"])
    assert np.isfinite(result).all()
    assert result.min() >= -1e-6 and result.max() <= 1 + 1e-6, "a weighted mean of [0, 1]"
    assert np.abs(result - arrays["img"]).max() > 0.01, "the filter changes the photo"


def test_other_r_sigma_and_out_of_range_values_match_the_reference(pipe):
    """Values outside [0, 1] are clamped; r_sigma = 0.05 has bins beyond the grid's, whose
    data-dependent indices are clamped into it, in the reference as in the pipeline."""
    img = np.random.default_rng(7).uniform(-0.2, 1.2, (19, 45)).astype(np.float32)
    for r_sigma in (0.05, 0.3):
        expected = bilateral_grid.reference(img=img, r_sigma=r_sigma)
        np.testing.assert_allclose(pipe(img=img, r_sigma=r_sigma), expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(
            polyimage.interpret(bilateral_grid.build()[0], img=img, r_sigma=r_sigma),
            expected,
            rtol=1e-5,
            atol=1e-6,
        )


def _noisy_step(rows=64, cols=96, seed=11):
    """0.25 left of column cols / 2, 0.75 right of it, with Gaussian noise of sigma 0.03."""
    noise = np.random.default_rng(seed).normal(0, 0.03, (rows, cols))
    img = np.where(np.arange(cols) < cols // 2, 0.25, 0.75) + noise
    return img.astype(np.float32)


def test_smooths_flat_regions_and_keeps_the_edge(pipe):
    img = _noisy_step()
    out = pipe(img=img, r_sigma=0.1)
    edge = img.shape[1] // 2
    for region in (np.s_[8:56, 8 : edge - 8], np.s_[8:56, edge + 8 : 88]):
        assert out[region].var() < 0.2 * img[region].var(), "noise in a flat region is smoothed"
        assert abs(out[region].mean() - img[region].mean()) < 0.01, "the level is kept"
    jump = out[:, edge] - out[:, edge - 1]
    assert jump.min() > 0.4, "the edge stays a sharp step"
    # a range kernel wider than the step no longer preserves it: it blurs it like a Gaussian
    wide = pipe(img=img, r_sigma=2.0)
    assert (wide[:, edge] - wide[:, edge - 1]).max() < 0.5 * jump.min()


def test_smooths_the_photo_but_keeps_its_edges(pipe):
    img = bilateral_grid.prepare([load_image(bundled("camera.png"))])["img"]
    out = pipe(img=img, **bilateral_grid.DEFAULTS)
    grass = np.s_[400:500, 380:500]  # the textured lawn at the bottom right
    assert out[grass].var() < 0.5 * img[grass].var()
    # the coat against the sky: a step of more than 0.5 stays (nearly) as sharp
    step_in, step_out = (np.abs(np.diff(a[80:140, 120:200], axis=1)).max() for a in (img, out))
    assert step_in > 0.5 and step_out > 0.8 * step_in
