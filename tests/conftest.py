"""Shared fixtures: every test session builds into its own fresh cache directory."""
import os

import pytest


def pytest_addoption(parser):
    parser.addoption("--soak", action="store_true", help="run long randomized tests")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--soak"):
        return
    skip = pytest.mark.skip(reason="soak test: run with --soak")
    for item in items:
        if "soak" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory):
    """Point POLYIMAGE_CACHE_DIR at a temporary directory for the whole session."""
    old = os.environ.get("POLYIMAGE_CACHE_DIR")
    os.environ["POLYIMAGE_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        os.environ.pop("POLYIMAGE_CACHE_DIR", None)
    else:
        os.environ["POLYIMAGE_CACHE_DIR"] = old


@pytest.fixture
def rng():
    import numpy as np
    return np.random.default_rng(12345)
