"""Shared fixtures: every test session builds into its own fresh cache directory."""

import os
import shutil

import pytest

NEEDS_CLANG = "needs clang with OpenMP (Debian packages clang and libomp-dev)"


def pytest_addoption(parser):
    parser.addoption("--soak", action="store_true", help="run long randomized tests")
    parser.addoption(
        "--sanitize-seeds",
        type=int,
        default=4,
        help="seeds of random pipelines run under the sanitizers (tests/test_sanitizers.py)",
    )
    parser.addoption(
        "--sanitize-seconds",
        type=float,
        default=0.0,
        help="time for more seeds under the sanitizers after those (tests/test_sanitizers.py)",
    )


def pytest_terminal_summary(terminalreporter, config):
    """What the sanitizer run covered (tests/test_sanitizers.py), for the CI log."""
    counts = getattr(config, "sanitized_counts", None)
    if counts:
        items = ", ".join(f"{v} {k}" for k, v in counts.items())
        terminalreporter.write_line(f"under ASan and UBSan: {items}")


# the longest test files, longest first (about, on a 2-core CI run), started first: the README's
# command hands whole files to its workers in collection order (pytest_configure), and one of
# these collected last left the other worker idle for a minute or more at the end; the files
# not named here take 15 s or less each
LONGEST_FIRST = (
    "test_schedules_apps.py",
    "test_sanitizers.py",
    "test_halide_manual.py",  # skipped without Halide (CI); minutes with it
    "test_memory_regressions.py",
    "test_dask.py",
    "test_borders.py",
    "test_reductions_tiled.py",
    "test_vectorize_all.py",
    "test_auto_schedule.py",
    "test_schedules_random.py",
    "test_reductions_parallel.py",
    "test_semantics_arithmetic.py",
    "test_pixel_types.py",
    "test_names.py",
    "test_cache.py",
    "test_semantics_types.py",
    "test_random_features.py",
    "test_integer_zero_sign.py",
    "test_origin_invariance.py",
    "test_grouping_cost.py",
    "test_units.py",
    "test_scans.py",
    "test_export.py",
    "test_autotune_cli.py",
    "test_exp_poly.py",
)


def pytest_configure(config):
    """Keep the order of LONGEST_FIRST under `--dist loadfile`: pytest-xdist (3.6 and later)
    otherwise hands out files by their number of tests, most first, and the two tests of
    test_sanitizers.py (more than a minute) started among the last files, run alone by one
    worker at the end while the other had nothing left to do."""
    if getattr(config.option, "loadscopereorder", None):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: files stay whole
    if config.getoption("--soak"):
        return
    skip = pytest.mark.skip(reason="soak test: run with --soak")
    for item in items:
        if "soak" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory):
    """Point POLYIMAGE_CACHE_DIR at a temporary directory for the whole session, keep the
    user's cost weights (environment, weights file) out of the tests, and generate every
    version of the innermost loops however small the test's estimates (POLYIMAGE_PLAIN_POINTS=1:
    tests/test_plain_stages.py covers the plain nests of small stages)."""
    saved = {
        k: os.environ.get(k)
        for k in (
            "POLYIMAGE_CACHE_DIR",
            "POLYIMAGE_WEIGHTS",
            "POLYIMAGE_WEIGHTS_FILE",
            "POLYIMAGE_PLAIN_POINTS",
        )
    }
    os.environ["POLYIMAGE_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    os.environ["POLYIMAGE_WEIGHTS_FILE"] = str(tmp_path_factory.mktemp("config") / "none.json")
    os.environ.pop("POLYIMAGE_WEIGHTS", None)
    os.environ["POLYIMAGE_PLAIN_POINTS"] = "1"
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def rng():
    import numpy as np

    return np.random.default_rng(12345)


@pytest.fixture
def clang(monkeypatch, tmp_path):
    """CC=clang, building into a cache of its own (skipped without clang and its OpenMP)."""
    from polyimage.jit.toolchain import compiler_facts

    if shutil.which("clang") is None or not compiler_facts("clang", ("-fopenmp",)).openmp:
        pytest.skip(NEEDS_CLANG)
    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", "clang")
    return "clang"
