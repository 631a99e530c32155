"""The driver: estimates resolved once (a missing one is a warning naming the parameter), pass
results dumped to a folder, passes logged, and how a Pipeline shows itself."""

import logging
import os
import stat
import warnings

import numpy as np
import pytest

import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable
from polyimage.config import Options
from polyimage.driver.request import DEFAULT_ESTIMATE, resolve_estimates


def _blur(weighted=False):
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    k = Parameter(Int, "k")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 2, C + 2])
    bx = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 0, C + 1)]), Float, "bx")
    bx.defn = [img(x - 1, y) + img(x, y) + img(x + 1, y) * (k if weighted else 1)]
    by = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 1, C)]), Float, "by")
    by.defn = [bx(x, y - 1) + bx(x, y) + bx(x, y + 1)]
    return by


def _estimate_warnings(**kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipe = polyimage.compile([_blur(weighted=True)], **kwargs)
    return pipe, [w for w in caught if issubclass(w.category, polyimage.EstimateWarning)]


def test_missing_estimates_warn_naming_the_parameters():
    pipe, caught = _estimate_warnings(estimates={"R": 300})
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "C" in message and str(DEFAULT_ESTIMATE) in message
    assert "R " not in message and "k" not in message  # given, or not a size
    assert pipe.param_values["C"] == DEFAULT_ESTIMATE and pipe.param_values["R"] == 300
    assert pipe.assumed == ("C",)
    assert "C=1024 (assumed" in pipe.report()


def test_no_warning_when_sizes_are_given_or_nothing_is_tiled():
    assert _estimate_warnings(estimates={"R": 300, "C": 200})[1] == []
    assert _estimate_warnings(schedule="naive")[1] == []


def test_resolve_estimates_fills_every_parameter():
    graph = polyimage.graph.build_graph([_blur(weighted=True)])
    values, assumed = resolve_estimates(graph, {"R": 5})
    assert values == {"C": DEFAULT_ESTIMATE, "R": 5, "k": 1}
    assert assumed == ("C",)


def test_dump_writes_every_pass(tmp_path):
    pipe = polyimage.compile([_blur()], estimates={"R": 64, "C": 64}, dump=tmp_path)
    folder = tmp_path / "by"
    names = sorted(p.name for p in folder.iterdir())
    assert names == [
        "01-graph.txt",
        "02-inlined.txt",
        "03-analysis.txt",
        "04-schedule.txt",
        "05-plans.txt",
        "06-kernel.c",
        "07-build.log",
        "passes.txt",
    ]
    assert "function bx: Float over x in [1, R]" in (folder / "01-graph.txt").read_text()
    assert "context:" in (folder / "03-analysis.txt").read_text()
    assert str(pipe.schedule) in (folder / "04-schedule.txt").read_text()
    plans = (folder / "05-plans.txt").read_text()
    assert "group 0:" in plans and ("region of" in plans or "untiled" in plans)
    assert (folder / "06-kernel.c").read_text() == pipe.c_source + "\n" or (
        folder / "06-kernel.c"
    ).read_text() == pipe.c_source
    assert "-O3" in (folder / "07-build.log").read_text()
    passes = (folder / "passes.txt").read_text()
    assert all(name in passes for name in ("analyze", "schedule", "generate_c", "build"))


def test_dump_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("POLYIMAGE_DUMP", str(tmp_path / "env"))
    polyimage.compile([_blur()], schedule="naive")
    assert (tmp_path / "env" / "by" / "06-kernel.c").is_file()


def test_no_dump_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv("POLYIMAGE_DUMP", raising=False)
    monkeypatch.chdir(tmp_path)
    polyimage.compile([_blur()], schedule="naive")
    assert list(tmp_path.iterdir()) == []


def test_passes_are_logged_at_debug(caplog, tmp_path):
    caplog.set_level(logging.DEBUG, logger="polyimage")
    fresh = Options(cache_dir=tmp_path)  # a compile record seen before would skip the passes
    polyimage.compile([_blur()], schedule="naive", options=fresh)
    logged = " ".join(r.getMessage() for r in caplog.records)
    for name in ("build_graph", "analyze", "schedule", "plan_groups", "generate_c", "build"):
        assert f"{name}: " in logged


def test_long_compiles_report_each_pass_as_it_ends(caplog, tmp_path, monkeypatch):
    monkeypatch.setattr("polyimage.driver.compiling.PROGRESS_AFTER_SECONDS", 0.0)
    monkeypatch.setattr("polyimage.driver.compiling.PROGRESS_MIN_PASS_SECONDS", 0.0)
    caplog.set_level(logging.INFO, logger="polyimage.progress")
    polyimage.compile([_blur()], schedule="naive", options=Options(cache_dir=tmp_path))
    lines = [r.getMessage() for r in caplog.records if r.name == "polyimage.progress"]
    for name in ("analyze", "schedule", "generate_c", "build"):
        assert any(line.startswith(f"by: {name} done in ") for line in lines), lines
    quick = tmp_path / "quick"
    caplog.clear()
    monkeypatch.setattr("polyimage.driver.compiling.PROGRESS_AFTER_SECONDS", 3600.0)
    polyimage.compile([_blur()], schedule="naive", options=Options(cache_dir=quick))
    assert not [r for r in caplog.records if r.name == "polyimage.progress"]


def test_the_grouping_search_and_the_c_units_report_progress(caplog, tmp_path, monkeypatch):
    monkeypatch.setattr("polyimage.grouping.auto.PROGRESS_SECONDS", 0.0)
    monkeypatch.setattr("polyimage.codegen.units.UNIT_BYTES", 400)
    caplog.set_level(logging.INFO, logger="polyimage.progress")
    pipe = polyimage.compile([_blur()], schedule="auto", options=Options(cache_dir=tmp_path))
    lines = [r.getMessage() for r in caplog.records if r.name == "polyimage.progress"]
    searched = [line for line in lines if line.startswith("grouping: ")]
    assert searched and all("groups costed" in line and "round" in line for line in searched)
    units = [line for line in lines if " C unit " in line]
    assert len(units) == len(pipe.cmodule.units) > 1
    assert any(" C unit main compiled in " in line for line in units)


@pytest.fixture
def pipe():
    return polyimage.compile([_blur()], estimates={"R": 64, "C": 64})


def test_repr_says_what_it_is(pipe):
    text = repr(pipe)
    assert text.startswith("<Pipeline by: 2 stages in ") and text.endswith(">")


def test_jupyter_shows_the_report_without_graphviz(pipe, monkeypatch):
    monkeypatch.setenv("PATH", "")
    html = pipe._repr_html_()
    assert html.startswith("<pre>") and "pipeline by:" in html and "&lt;-" in html


def test_jupyter_shows_the_graph_with_graphviz(pipe, monkeypatch, tmp_path):
    fake = tmp_path / "dot"
    fake.write_text("#!/bin/sh\ncat > /dev/null\necho '<svg>fake graph</svg>'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ.get("PATH", ""))
    assert pipe._repr_html_().strip() == "<svg>fake graph</svg>"


def test_calls_still_agree_with_the_interpreter(pipe):
    arr = np.random.default_rng(0).random((20, 30), dtype=np.float32)
    np.testing.assert_allclose(pipe(img=arr), polyimage.interpret([_blur()], img=arr), rtol=1e-6)


def test_repeated_calls_reuse_the_binding_but_never_a_stale_one():
    """Shapes and parameter values seen before skip re-deriving the domains; changing shapes,
    more of them than the memo holds, still give the interpreter's results."""
    from polyimage.graph.arguments import MEMO_SIZE

    pipe = polyimage.compile([_blur(weighted=True)], estimates={"R": 64, "C": 64})
    rng = np.random.default_rng(5)
    shapes = [(5 + k % 7, 6 + k % 11) for k in range(MEMO_SIZE + 9)] + [(5, 6), (9, 9)]
    for rows, cols in shapes:
        arr = rng.random((rows, cols), dtype=np.float32)
        for k in (1, 2):
            got = pipe(img=arr, k=k)
            want = polyimage.interpret([_blur(weighted=True)], img=arr, k=k)
            np.testing.assert_allclose(got, want, rtol=1e-6)
    assert 0 < len(pipe._bindings) <= MEMO_SIZE
    for _ in range(2):  # too small: refused on every call, never remembered
        with pytest.raises(polyimage.ArgumentError, match="domain of bx empty"):
            pipe(img=np.zeros((2, 2), np.float32), k=1)
