"""The documentation's code blocks run as tests (sybil, from the test extra), the blocks of a
page one after the other in one namespace, building into a cache of their own, from a folder
of their own: what a page reads must not depend on where the reader stands."""

import os

import pytest

try:
    from sybil import Sybil
    from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser
except ImportError:  # without sybil the pages are not collected
    Sybil = None


@pytest.fixture(scope="session")
def private_cache(tmp_path_factory):
    saved = os.environ.get("POLYIMAGE_CACHE_DIR")
    os.environ["POLYIMAGE_CACHE_DIR"] = str(tmp_path_factory.mktemp("docs-cache"))
    yield
    if saved is None:
        os.environ.pop("POLYIMAGE_CACHE_DIR", None)
    else:
        os.environ["POLYIMAGE_CACHE_DIR"] = saved


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory):
    """Every page runs from an empty temporary folder, not the checkout's root (and the
    working folder is back as it was after the page)."""
    saved = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("reader"))
    yield
    os.chdir(saved)


if Sybil is not None:
    pytest_collect_file = Sybil(
        parsers=[PythonCodeBlockParser(), SkipParser()],
        patterns=["*.md"],
        fixtures=["private_cache", "elsewhere"],
    ).pytest()
