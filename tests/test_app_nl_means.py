"""The non-local means app: compiled == interpreter == NumPy reference; flat areas stay flat
and lose their noise."""

import numpy as np
import pytest
from helpers import assert_exact_on_threads, pinned_options
from oracle import run_both

import polyimage
from polyimage.apps import nl_means
from polyimage.apps.inputs import bundled
from polyimage.io import load_image


@pytest.fixture(scope="module")
def pipe():
    outputs, _ = nl_means.build()
    return polyimage.compile(outputs)  # as run_both compiles it: built once, then cached


@pytest.mark.parametrize("size", [nl_means.SMALL_SIZE, {"R": 23, "C": 71}])
def test_matches_reference_on_the_photo(size):
    photo = load_image(bundled(nl_means.PHOTOS[0]))
    arrays = nl_means.prepare([photo], size)
    border = 2 * nl_means.BORDER
    assert arrays["img"].shape == (3, size["R"] + border, size["C"] + border)
    outputs, _ = nl_means.build()
    expected = nl_means.reference(**arrays, **nl_means.DEFAULTS)
    result = run_both(outputs, reference=expected, **arrays, **nl_means.DEFAULTS)
    assert result.shape == (3, size["R"], size["C"])
    inner = arrays["img"][:, nl_means.BORDER : -nl_means.BORDER, nl_means.BORDER : -nl_means.BORDER]
    assert np.abs(result - inner).max() > 0.01, "the filter changes the photo"
    view = nl_means.to_photo(result)
    assert view.shape == (size["R"], size["C"], 3)


def _padded(chw):
    b = nl_means.BORDER
    return np.pad(chw, ((0, 0), (b, b), (b, b)), mode="edge").astype(np.float32)


def test_a_constant_image_stays_constant(pipe):
    level = np.float32([0.2, 0.5, 0.9])[:, None, None]
    out = pipe(img=_padded(np.broadcast_to(level, (3, 19, 33))), sigma=0.12)
    np.testing.assert_allclose(out, np.broadcast_to(level, out.shape), rtol=2e-6)


def test_noise_on_a_flat_patch_is_reduced_and_an_edge_kept(pipe):
    rows, cols = 31, 41
    step = np.where(np.arange(cols) < cols // 2, 0.3, 0.8)  # a vertical edge at cols // 2
    noise = np.random.default_rng(5).normal(0, 0.03, (3, rows, cols))
    img = _padded(step + noise)
    out = pipe(img=img, sigma=0.12)
    np.testing.assert_allclose(out, nl_means.reference(img=img, sigma=0.12), rtol=1e-5, atol=1e-6)
    noisy = img[:, nl_means.BORDER : -nl_means.BORDER, nl_means.BORDER : -nl_means.BORDER]
    flat = np.s_[:, 4:-4, 3 : cols // 2 - 4]
    assert out[flat].var() < 0.3 * noisy[flat].var(), "noise in the flat area is averaged out"
    assert abs(out[flat].mean() - 0.3) < 0.01
    jump = out[:, :, cols // 2].mean() - out[:, :, cols // 2 - 1].mean()
    assert jump > 0.4, "patches across the edge differ: the edge is not averaged away"


def test_the_weighted_sums_as_a_reduction_fuse_with_their_weights():
    """nl_sum written as a Reduction over the search offsets (Halide's RDom, the bench's
    variant): the same sums in the same order, so the app's result bit for bit; auto computes
    the per-offset stages per tile of it (a tiled Reduction reading its group)."""
    build, derive = nl_means.VARIANTS["nl_sum a Reduction"]
    outputs, _ = build()
    pipe = polyimage.compile(outputs, estimates=nl_means.PAPER_SIZE, options=pinned_options())
    group = next(g for g in pipe.schedule.groups if "nl_sum" in g.stages)
    assert {"d", "blur_rows", "w"} <= set(group.stages) and group.tile_sizes
    assert pipe.reductions["nl_sum"].kind == "tiled"
    size = {"R": 19, "C": 27}
    arguments = derive(nl_means.prepare([load_image(bundled(nl_means.PHOTOS[0]))], size))
    expected = polyimage.interpret(nl_means.build()[0], **arguments)
    assert_exact_on_threads(pipe, outputs, arguments, threads=(1, 2))
    np.testing.assert_array_equal(pipe(**arguments), expected)
