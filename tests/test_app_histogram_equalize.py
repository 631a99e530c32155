"""The histogram equalization app: compiled == interpreter == NumPy reference, on the photo,
on random and degenerate images (one luma value, two values, all clipping), and the histogram
is a parallel Reduction, the cdf a scan."""

import numpy as np
import pytest
from oracle import run_both

import polyimage
from polyimage.apps import histogram_equalize as app
from polyimage.apps.inputs import bundled
from polyimage.io import load_image


@pytest.fixture(scope="module")
def outputs():
    return app.build()[0]


@pytest.mark.parametrize("size", [app.SMALL_SIZE, {"R": 1, "C": 1}, {"R": 130, "C": 131}])
def test_matches_reference_on_the_photo(outputs, size):
    arrays = app.prepare([load_image(bundled(app.PHOTOS[0]))], size)
    assert arrays["img"].shape == (3, size["R"], size["C"]) and arrays["img"].dtype == np.uint8
    result = run_both(outputs, reference=app.reference(**arrays), **arrays)
    assert result.shape == (3, size["R"], size["C"]) and result.dtype == np.uint8


@pytest.mark.parametrize(
    "make",
    [
        lambda rng: rng.integers(0, 256, (3, 37, 41), dtype=np.uint8),
        lambda rng: np.full((3, 9, 7), 77, np.uint8),  # one luma value: kept
        lambda rng: np.where(rng.random((3, 8, 8)) < 0.5, 0, 255).astype(np.uint8),
        lambda rng: rng.integers(100, 104, (3, 20, 25), dtype=np.uint8),  # narrow: clips
    ],
)
def test_matches_reference_on_random_and_degenerate_images(outputs, rng, make):
    img = make(rng)
    run_both(outputs, reference=app.reference(img=img), img=img)


def test_equalizes_the_luma_and_keeps_a_grey_photo_grey(outputs):
    grey = np.linspace(60, 120, 64 * 64).reshape(64, 64).astype(np.uint8)
    arrays = app.prepare([grey[:, :, None]])
    result = polyimage.compile(outputs)(**arrays)
    assert (result[0] == result[1]).all() and (result[1] == result[2]).all()
    assert result.min() == 0 and result.max() == 255  # spread over the whole range
    counts = np.bincount(result[0].ravel(), minlength=256)
    assert counts.max() <= 2 * counts[counts > 0].mean()  # evenly, as far as the input allows


def test_parallel_histogram_and_the_cdf_scan(outputs):
    pipe = polyimage.compile(outputs, estimates=app.PAPER_SIZE)
    assert pipe.reductions["hist"].kind == "privatized"
    report = pipe.report()
    assert "hist: privatized" in report
    arrays = app.prepare([load_image(bundled(app.PHOTOS[0]))], {"R": 300, "C": 257})
    want = app.reference(**arrays)
    for threads in (1, 2, 3):
        np.testing.assert_array_equal(pipe(threads=threads, **arrays), want)


@pytest.mark.parametrize("shape", [(1, 1), (37, 41), (130, 131)])
def test_the_grey_pipeline_equalizes_a_luma_as_the_colour_one_does(rng, shape):
    """build_grey on a luma array gives the colour pipeline's equalized luma: its lookup
    table applied to the luma, as OpenCV's equalizeHist would."""
    grey_outputs, _ = app.build_grey()
    img = rng.integers(0, 256, (3, *shape), dtype=np.uint8)
    luma = app.luma_of(img)
    want = app.reference_grey(luma)
    np.testing.assert_array_equal(want, app.equalizing_lut_of(luma)[luma])
    run_both(grey_outputs, reference=want, img=luma)


def test_the_bench_times_the_grey_pipeline_beside_opencv():
    build, derive = app.VARIANTS["luma only"]
    img = np.zeros((3, 4, 5), np.uint8)
    img[0] = 200
    inputs = derive({"img": img})
    np.testing.assert_array_equal(inputs["img"], app.luma_of(img))
    assert build()[0][0].name == "equalized"
