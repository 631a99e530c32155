"""The documentation site as a reader sees it: built with `mkdocs build --strict` (the docs
extra; .ci/run runs this file after installing it), its API page shows every public call with
its signature and its parameters as a list, and sends nobody to the package's internals."""

import html
import re
import subprocess
import sys

import pytest
from helpers import ROOT

pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]'")


@pytest.fixture(scope="module")
def api_text(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    page = (site / "api" / "index.html").read_text()
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_compile_shows_its_signature_and_each_parameter(api_text):
    assert "compile ( outputs , estimates = None , constraints = ()" in api_text
    listed = api_text[api_text.index("Compile the pipeline computing") :][:4000]
    for name in ("estimates", "schedule", "options", "weights", "march", "build"):
        # one entry of the parameter list each, with its type and default where annotated
        assert re.search(rf" {name} (\([^–]*\) )?–", listed), name


def test_the_public_objects_are_on_the_api_page(api_text):
    for name in ("Pipeline", "BackgroundPipeline", "interpret", "Schedule", "load"):
        assert f" {name} " in api_text, name
    for name in ("Parameter", "Variable", "Condition", "Select", "Clamp", "Interval"):
        assert f" {name} " in api_text, name
    for call in ("load_image (", "save_image (", "bundled_photo ("):
        assert call in api_text, call
    interval = api_text[api_text.index("The inclusive range") :][:1500]
    assert "lb –" in interval and "ub –" in interval  # not only PolyMage's lowerBound


def test_no_docstring_on_the_api_page_names_an_internal_file(api_text):
    internal = re.findall(
        r"\b\w+\.py\b|\b(?:codegen|jit|poly|graph\.dag|schedule\.\w+)\.\w+", api_text
    )
    assert internal == []
