"""compile(..., background=True): a thread builds a quick naive compile, then the schedule
asked for; calls run on the first until the second is built; its errors reach wait() and
calls; bad arguments are refused at once."""

import dataclasses
import threading

import numpy as np
import pytest

import polyimage
import polyimage.driver.lower
import polyimage.driver.pipeline
from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable
from polyimage.config import Options


def _blur(name):
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 2, C + 2])
    bx = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 0, C + 1)]), Float, f"{name}_x")
    bx.defn = [img(x - 1, y) + img(x, y) * 2 + img(x + 1, y)]
    by = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 1, C)]), Float, name)
    by.defn = [bx(x, y - 1) - bx(x, y) + bx(x, y + 1) * 0.5]
    return by


@pytest.fixture
def options(tmp_path):
    return dataclasses.replace(Options.from_env(), cache_dir=str(tmp_path))


@pytest.fixture
def gated_auto(monkeypatch):
    """The auto schedule waits for the returned event, so the background compile stays busy."""
    gate = threading.Event()
    original = polyimage.driver.lower.auto_schedule

    def waiting(*args, **kwargs):
        assert gate.wait(60), "the test never opened the gate"
        return original(*args, **kwargs)

    monkeypatch.setattr(polyimage.driver.lower, "auto_schedule", waiting)
    yield gate
    gate.set()


def test_calls_run_on_the_fallback_until_the_compile_is_built(options, gated_auto, rng):
    out = _blur("bg_blur")
    pipe = polyimage.compile([out], estimates={"R": 64, "C": 64}, options=options, background=True)
    assert isinstance(pipe, polyimage.BackgroundPipeline)
    img = rng.random((37, 53), dtype=np.float32)
    expected = polyimage.interpret([out], img=img, R=35, C=51)
    assert pipe.serving == "fallback" and not pipe.ready()
    np.testing.assert_allclose(pipe(img), expected, rtol=1e-6)
    assert not pipe.ready()
    with pytest.raises(TimeoutError):
        pipe.wait(timeout=0)
    gated_auto.set()
    optimized = pipe.wait(timeout=120)
    assert isinstance(optimized, polyimage.Pipeline) and pipe.ready()
    assert pipe.serving == "optimized"
    # what was asked for (auto) as a foreground compile plans it, served after the naive
    # fallback; whether the two differ depends on the host's caches, so it is not asserted
    asked = polyimage.compile([out], estimates={"R": 64, "C": 64}, options=options)
    assert optimized.schedule == asked.schedule and optimized.options == options
    naive = polyimage.compile([out], schedule="naive", options=options)
    assert pipe._fallback.schedule == naive.schedule
    quick = pipe._fallback.options  # built quickly: -O1, no versions of innermost loops
    assert quick.cflags[-1] == "-O1" and quick.plain_points > 1 << 40
    np.testing.assert_allclose(pipe(img), expected, rtol=1e-6)
    assert pipe.c_source == optimized.c_source  # other attributes are the optimized one's


def test_the_compile_error_reaches_wait_and_calls(options, rng):
    pipe = polyimage.compile(
        [_blur("bg_bad")], schedule="group 0: nowhere [untiled]", options=options, background=True
    )
    with pytest.raises(polyimage.ScheduleError, match="nowhere"):
        pipe.wait(timeout=120)
    with pytest.raises(polyimage.ScheduleError, match="nowhere"):
        pipe(rng.random((8, 8), dtype=np.float32), R=6, C=6)


def test_bad_arguments_are_refused_before_any_thread_starts(options):
    before = set(threading.enumerate())  # earlier tests' threads may still be ending
    with pytest.raises(polyimage.PipelineError, match="nope"):
        polyimage.compile([_blur("bg_est")], estimates={"nope": 3}, background=True)
    assert set(threading.enumerate()) <= before
    pipe = polyimage.compile([_blur("bg_wait")], options=options, background=True)
    with pytest.raises(polyimage.ArgumentError, match="timeout"):
        pipe.wait(timeout=-1)
    assert isinstance(pipe.wait(timeout=120), polyimage.Pipeline)


def test_the_docs_example_runs():
    """The docs' example: a call on the quick compile and one on the optimized agree."""
    from helpers import ROOT

    readme = (ROOT / "docs" / "compiling.md").read_text()
    at = readme.index("background=True)\nimg")
    block = readme[readme.rindex("```python", 0, at) + len("```python") : readme.index("```", at)]
    exec(compile(block, "docs/compiling.md", "exec"), {})
