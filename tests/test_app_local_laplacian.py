"""The local Laplacian filter app: compiled == interpreter == NumPy reference, and the output
is detail enhancement."""

import numpy as np
import pytest
from oracle import run_both

import polyimage
from polyimage.apps import local_laplacian as app
from polyimage.apps.inputs import bundled
from polyimage.graph import build_graph
from polyimage.io import load_image


@pytest.fixture(scope="module")
def photo():
    return load_image(bundled(app.PHOTOS[0]))


@pytest.fixture(scope="module")
def pipe():
    outputs, _ = app.build()
    return polyimage.compile(outputs)


def _luminance(chw):
    return sum(w * chw[i].astype(np.float64) for i, w in enumerate(app.GRAY_WEIGHTS))


def _laplacian(g):
    """4-neighbour Laplacian of a 2-D image (interior points)."""
    return 4 * g[1:-1, 1:-1] - g[:-2, 1:-1] - g[2:, 1:-1] - g[1:-1, :-2] - g[1:-1, 2:]


def _detail_energy(chw):
    """Mean squared Laplacian of the luminance: the high-frequency energy."""
    return float(np.mean(_laplacian(_luminance(chw)) ** 2))


@pytest.mark.parametrize(
    "rows, cols, params",
    [
        (app.SMALL_SIZE["R"], app.SMALL_SIZE["C"], app.DEFAULTS),
        (45, 131, {"alpha": 2.5, "beta": 0.6}),
        (129, 77, {"alpha": -0.8, "beta": 1.3}),
        (1, 1, app.DEFAULTS),
        (2, 3, app.DEFAULTS),
        (5, 130, app.DEFAULTS),
    ],
)
def test_matches_reference(photo, rows, cols, params):
    arrays = app.prepare([photo], {"R": rows, "C": cols})
    outputs, _ = app.build()
    expected = app.reference(**arrays, **params)
    result = run_both(outputs, reference=expected, **arrays, **params)
    assert result.shape == (3, rows, cols) and result.dtype == np.float32
    assert result.min() >= 0 and result.max() <= 1
    if rows * cols > 16 and params["alpha"] != 0:
        assert np.abs(result - arrays["img"]).max() > 0.01, "the filter should change the photo"


def test_matches_reference_over_the_full_intensity_range(rng):
    """A noisy ramp from black to white (0 and 1 included): every intensity level is selected
    and the clamps of the data-dependent indices (the LUT index, li <= K-2) are hit."""
    rows, cols = 37, 151
    ramp = np.linspace(-0.1, 1.1, cols, dtype=np.float32)
    img = ramp + rng.normal(0, 0.08, (3, rows, cols)).astype(np.float32)
    img = np.clip(img, 0, 1).astype(np.float32)
    outputs, _ = app.build()
    params = {"alpha": 1.5, "beta": 0.8}
    result = run_both(outputs, reference=app.reference(img=img, **params), img=img, **params)
    assert result.shape == img.shape
    gray = _luminance(img)
    assert gray.min() == 0 and gray.max() > 0.999, "the input should cover the whole range"


def test_stage_count():
    outputs, _ = app.build()
    assert len(build_graph(outputs).computed) == 82


def test_without_remapping_the_pyramids_reconstruct_the_gray_image(photo, pipe):
    """alpha = 0, beta = 1: every processed image is the gray image itself, so collapsing the
    output Laplacian pyramid gives the input gray back and only the colour formula remains."""
    img = app.prepare([photo])["img"]
    out = pipe(img=img, alpha=0.0, beta=1.0)
    gray = _luminance(img)
    eps = app.EPS
    expected = np.clip(gray * (img + eps) / (gray + eps), 0, 1)
    np.testing.assert_allclose(out, expected, atol=2e-5)


def test_output_enhances_detail(photo, pipe):
    img = app.prepare([photo])["img"]
    before = _detail_energy(img)
    energy = {}
    for alpha in (-1.0, 1.0, 2.0):
        out = pipe(img=img, alpha=alpha, beta=1.0)
        assert out.min() >= 0 and out.max() <= 1
        assert abs(out.mean() - img.mean()) < 0.02, "the overall brightness should stay"
        energy[alpha] = _detail_energy(out)
    assert energy[1.0] > 1.5 * before, "alpha > 0 should increase local contrast"
    assert energy[2.0] > 1.5 * energy[1.0], "more alpha, more detail"
    assert energy[-1.0] < 0.7 * before, "alpha < 0 should smooth detail away"


def test_detail_follows_the_photo(photo, pipe):
    """The added detail sits where the photo has texture, not in flat regions."""
    img = app.prepare([photo])["img"]
    out = pipe(img=img, **app.DEFAULTS)
    before, after = _laplacian(_luminance(img)), _laplacian(_luminance(out))
    busy = np.abs(before) > np.quantile(np.abs(before), 0.9)
    calm = np.abs(before) < np.quantile(np.abs(before), 0.1)
    added = np.abs(after) - np.abs(before)
    assert added[busy].mean() > 10 * max(added[calm].mean(), 1e-6)
    assert np.corrcoef(before.ravel(), after.ravel())[0, 1] > 0.9


def test_flat_image_stays_flat(pipe):
    """No detail, nothing to enhance: a constant image stays constant (the level interpolation
    of the lookup table may shift its value slightly) and keeps its hue."""
    img = np.empty((3, 33, 47), np.float32)
    img[:] = np.float32([0.6, 0.4, 0.2])[:, None, None]
    out = pipe(img=img, alpha=3.0, beta=1.0)
    spread = out.max(axis=(1, 2)) - out.min(axis=(1, 2))
    assert spread.max() < 1e-5
    np.testing.assert_allclose(out[:, 0, 0], img[:, 0, 0], atol=0.05)
    assert out[0, 0, 0] > out[1, 0, 0] > out[2, 0, 0]
