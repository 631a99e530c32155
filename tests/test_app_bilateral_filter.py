"""The direct bilateral filter app: compiled == interpreter == NumPy reference; it smooths
noise on a flat region and keeps a step edge."""

import numpy as np
import pytest
from oracle import run_both

import polyimage
from polyimage.apps import bilateral_filter
from polyimage.apps.inputs import bundled
from polyimage.config import Options
from polyimage.io import load_image


@pytest.mark.parametrize("size", [bilateral_filter.SMALL_SIZE, {"R": 5, "C": 9}])
def test_matches_reference_on_the_photo(size):
    photo = load_image(bundled(bilateral_filter.PHOTOS[0]))
    arrays = bilateral_filter.prepare([photo], size)
    outputs, _ = bilateral_filter.build()
    result = run_both(outputs, reference=bilateral_filter.reference(**arrays), **arrays)
    assert result.shape == (size["R"], size["C"])


def test_smooths_noise_and_keeps_a_step_edge(rng):
    img = np.where(np.arange(40) < 20, 0.2, 0.8).astype(np.float32)[None, :].repeat(30, 0)
    noisy = (img + rng.normal(0, 0.01, img.shape)).astype(np.float32)
    outputs, _ = bilateral_filter.build()
    out = polyimage.compile(outputs)(img=noisy)
    assert np.std(out[:, :15] - 0.2) < 0.5 * np.std(noisy[:, :15] - 0.2)
    assert np.all(out[:, :19] < 0.3) and np.all(out[:, 21:] > 0.7), "the edge stays sharp"


@pytest.mark.parametrize("schedule", ["greedy", "auto"])
def test_its_record_is_kept_under_every_planner(schedule, tmp_path):
    """99 clamped reads of the image: the tiles' regions stay shallow enough to be pickled into
    the cache (a chain of 99 Min overflowed the recursion limit under greedy)."""
    outputs, _ = bilateral_filter.build()
    options = Options(cache_dir=tmp_path)
    pipe = polyimage.compile(outputs, schedule=schedule, options=options, build=False)
    again = polyimage.compile(outputs, schedule=schedule, options=options, build=False)
    assert not pipe.cached and again.cached
    assert str(again.schedule) == str(pipe.schedule)
