"""The hand-written Halide schedules of the bench ("halide:manual"): every app that has one gets
the variant, and its output matches polyimage's as closely as Halide's autoschedulers' do. The
tests that run Halide are skipped where it is not installed (the core CI installs no bench
extras); the others check what the bench does without it."""

import re
import sys

import numpy as np
import pytest

import polyimage
from polyimage.apps import APP_NAMES, load_app
from polyimage.apps.baselines.halide_runner import (
    halide_variants,
    halide_version,
    has_manual_schedule,
)
from polyimage.apps.inputs import bundled
from polyimage.commands.bench import format_table, halide_line
from polyimage.io import load_image

# every app but these has a hand-written schedule (Halide's apps/hist not followed yet; Halide
# has no median filter, direct bilateral filter or edge thinning app; issue 52's Reduction and
# scan apps are timed against the autoschedulers only, so far)
WITHOUT_MANUAL = (
    "histogram_equalize",
    "median_filter",
    "bilateral_filter",
    "canny_nms",
    "gemm",
    "conv_nchw",
    "conv_nhwc",
    "recursive_filter",
    "integral_box",
)
MANUAL_APPS = [name for name in APP_NAMES if name not in WITHOUT_MANUAL]
# the quick autoschedulers, whose agreement with polyimage is the yardstick
YARDSTICK = ("Mullapudi2016", "Li2018")
DIFFERENCE = re.compile(r"halide (\S+) max abs difference from polyimage (\S+)")


@pytest.mark.parametrize("name", APP_NAMES)
def test_which_apps_have_a_hand_written_schedule(name):
    assert has_manual_schedule(halide_version(name)) == (name in MANUAL_APPS)


def test_no_variants_without_halide(monkeypatch):
    monkeypatch.setitem(sys.modules, "halide", None)  # `import halide` raises ImportError
    assert halide_variants("harris", {}, {}, threads=1) == {}


def _timing(ms):
    return {"median": ms / 1e3, "min": ms / 1e3, "max": ms / 1e3}


def test_table_reports_auto_against_the_best_autoscheduler_and_the_manual_schedule():
    timings = {
        "polyimage:auto": _timing(12),
        "polyimage:naive": _timing(30),
        "halide:Mullapudi2016": _timing(8),
        "halide:Adams2019": _timing(6),
        "halide:Li2018": _timing(20),
        "halide:manual": _timing(4),  # not an autoscheduler: not the "best autoscheduler"
    }
    line = halide_line(timings)
    assert "2.00x best Halide autoscheduler (Adams2019)" in line
    assert "3.00x halide:manual" in line
    result = {"size": {"R": 4, "C": 4}, "timings": timings, "compile": {"cold": 1, "cached": 0}}
    table = format_table({"harris": result})
    assert line in table.splitlines()
    assert any(row.strip().startswith("halide:manual") for row in table.splitlines())
    assert halide_line({"polyimage:auto": _timing(1)}) is None  # no Halide timings


def test_table_line_without_the_manual_schedule():
    line = halide_line({"polyimage:auto": _timing(3), "halide:Li2018": _timing(2)})
    assert line.endswith("1.50x best Halide autoscheduler (Li2018)")


@pytest.mark.parametrize("target", ["native", "avx2"])  # the host's vectors (AVX-512?), AVX2's
@pytest.mark.parametrize("name", MANUAL_APPS)
def test_manual_schedule_matches_polyimage(name, target):
    pytest.importorskip("halide")
    app = load_app(name)
    photos = [load_image(bundled(p)) for p in app.PHOTOS]
    inputs = app.prepare(photos, app.SMALL_SIZE)
    params = dict(app.DEFAULTS)
    outputs, _ = app.build()
    pipe = polyimage.compile(outputs, name=name, schedule="naive", estimates=app.SMALL_SIZE)
    expected = pipe(threads=2, **inputs, **params)
    lines = []
    variants = halide_variants(
        name, inputs, params, 2, lines.append, expected, target, schedulers=YARDSTICK + ("manual",)
    )
    assert "halide:manual" in variants, "\n".join(lines)
    variants["halide:manual"]()  # runs again into its buffers
    differences = {m[1]: float(m[2]) for m in map(DIFFERENCE.search, lines) if m}
    manual = differences.pop("manual")
    assert differences, f"no autoscheduler to compare with: {lines}"
    # the schedules only change Halide's float rewrites: a few ulps around the autoschedulers'
    first = expected[0] if isinstance(expected, tuple) else expected
    ulps = 4 * np.spacing(np.float32(np.max(np.abs(first)))) if first.dtype.kind == "f" else 0
    assert manual <= max(2 * max(differences.values()), ulps), lines
