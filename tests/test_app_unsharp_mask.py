"""The unsharp mask app: compiled == interpreter == NumPy reference; the CLI runs it on a photo."""

import re

import numpy as np
import pytest
from oracle import run_both

import polyimage
from polyimage.apps import unsharp_mask
from polyimage.apps.inputs import bundled
from polyimage.commands.cli import main
from polyimage.io import load_image


@pytest.mark.parametrize("rows, cols", [(67, 93), (1, 1), (5, 130)])
def test_matches_reference_on_odd_sizes(rows, cols):
    photo = load_image(bundled("coffee.png"))
    arrays = unsharp_mask.prepare([photo], {"R": rows, "C": cols})
    outputs, _ = unsharp_mask.build()
    params = dict(unsharp_mask.DEFAULTS)
    expected = unsharp_mask.reference(**arrays, **params)
    result = run_both(outputs, reference=expected, **arrays, **params)
    assert result.shape == (3, rows, cols)
    changed = np.abs(result - arrays["img"][:, 2:-2, 2:-2]) > 0
    assert changed.any() or rows * cols == 1, "the mask should sharpen some pixels"


def test_threshold_keeps_flat_regions(rng):
    img = np.full((3, 14, 15), 0.5, np.float32)
    img[:, 7:, :] = 0.9
    outputs, _ = unsharp_mask.build()
    out = polyimage.compile(outputs)(img=img, weight=3.0, threshold=0.01)
    np.testing.assert_array_equal(out[:, :3, :], 0.5)
    assert out[:, 4, :].max() < 0.5, "undershoot before the edge"
    assert out[:, 5, :].min() > 0.9, "overshoot after the edge"


def test_cli_runs_on_the_bundled_photo(tmp_path, capsys):
    target = tmp_path / "sharp.png"
    assert main(["run", "unsharp_mask", "-o", str(target), "--runs", "1", "--check"]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"in \d+\.\d+ ms", printed)
    assert re.search(r"reference 0\b|reference \d\.\d+e-0[6-9]", printed)
    saved = load_image(target)
    assert saved.shape == load_image(bundled()).shape
    assert not np.array_equal(saved, load_image(bundled()))


def test_cli_takes_an_input_and_params(tmp_path, capsys):
    target = tmp_path / "sharp.jpg"
    args = [
        "run",
        "unsharp_mask",
        str(bundled("chelsea.png")),
        "-o",
        str(target),
        "--param",
        "weight=1.5",
        "--param",
        "threshold=0.02",
        "--runs",
        "1",
    ]
    assert main(args) == 0
    assert load_image(target).shape == (300, 451, 3)


@pytest.mark.parametrize(
    "param, message",
    [
        ("weight", "NAME=VALUE"),
        ("nope=1", "NAME=VALUE with NAME one of"),
        ("weight=abc", "not a valid Float"),
    ],
)
def test_cli_rejects_bad_params(param, message, capsys):
    assert main(["run", "unsharp_mask", "--param", param, "--runs", "1"]) == 2
    assert message in capsys.readouterr().err
