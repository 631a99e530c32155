"""Shared fixtures: every test session builds into its own fresh cache directory."""

import os
import shutil

import pytest

NEEDS_CLANG = "needs clang with OpenMP (Debian packages clang and libomp-dev)"


def pytest_addoption(parser):
    parser.addoption("--soak", action="store_true", help="run long randomized tests")
    parser.addoption(
        "--sanitize-seconds",
        type=float,
        default=90.0,
        help="budget of the random pipelines run under the sanitizers (tests/test_sanitizers.py)",
    )


def pytest_terminal_summary(terminalreporter, config):
    """What the sanitizer run covered (tests/test_sanitizers.py), for the CI log."""
    counts = getattr(config, "sanitized_counts", None)
    if counts:
        items = ", ".join(f"{v} {k}" for k, v in counts.items())
        terminalreporter.write_line(f"under ASan and UBSan: {items}")


# the longest test files (minutes of a 2-core CI run between them), started first: the README's
# command hands whole files to its workers in collection order, and one of these collected
# last (they sort late: test_s...) left the other worker idle for a minute or more at the end
LONGEST_FIRST = (
    "test_schedules_apps.py",
    "test_sanitizers.py",
    "test_schedules_random.py",
    "test_auto_schedule.py",
    "test_names.py",
    "test_memory_regressions.py",
    "test_dask.py",
    "test_borders.py",
    "test_reductions_parallel.py",
    "test_residues.py",
)


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
