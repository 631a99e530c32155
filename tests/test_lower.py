"""The Compiled record (driver/lower.py): `lower()` returns a frozen record of every pass; each
schedule path ends in a Schedule and one plan per group; the record the cache restores describes
the same compile as a fresh one; report, dump, profile and export are functions of a record."""

import dataclasses
import warnings

import numpy as np
import pytest
from helpers import pinned_options, uncovered_read

import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Schedule, Variable
from polyimage.driver.lower import Compiled, lower
from polyimage.driver.record import compile_key, load_compiled, save_compiled
from polyimage.driver.request import PassTimer, Request
from polyimage.grouping.auto import AutoResult
from polyimage.schedule.tiling import TiledGroup
from polyimage.tools.dump import compiled_texts
from polyimage.tools.report import pipeline_report

R, C = Parameter(Int, "R"), Parameter(Int, "C")
ESTIMATES = {"R": 256, "C": 256}


def _blur():
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 2, C + 2])
    bx = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 0, C + 1)]), Float, "bx")
    bx.defn = [img(x - 1, y) + img(x, y) + img(x + 1, y)]
    by = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 1, C)]), Float, "by")
    by.defn = [bx(x, y - 1) + bx(x, y) + bx(x, y + 1)]
    scaled = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 1, C)]), Float, "scaled")
    scaled.defn = [by(x, y) * 0.5]
    return [scaled]


def _lowered(schedule="auto", **kwargs):
    return lower(
        _blur(), estimates=ESTIMATES, schedule=schedule, options=pinned_options(), **kwargs
    )


def test_lower_returns_a_frozen_record_of_every_pass():
    timer = PassTimer()
    compiled = lower(_blur(), estimates=ESTIMATES, options=pinned_options(), timer=timer)
    assert isinstance(compiled, Compiled) and isinstance(compiled.request, Request)
    with pytest.raises(dataclasses.FrozenInstanceError):
        compiled.schedule = None
    with pytest.raises(dataclasses.FrozenInstanceError):
        compiled.request.name = "other"
    assert compiled.name == "scaled" and compiled.request.param_values == ESTIMATES
    assert [(p, c) for p, c, _ in compiled.inlined] == [("by", ("scaled",))]
    assert set(compiled.domains) == {s.name for s in compiled.stage_graph.stages}
    assert "R" in compiled.context and compiled.warnings == ()
    assert "pipeline_scaled" in compiled.cmodule.source
    for name in ("build_graph", "analyze", "inline", "schedule", "plan_groups", "generate_c"):
        assert name in timer.seconds
    assert "build" not in timer.seconds  # lowering builds nothing


SCHEDULES = ["naive", "auto", "greedy", "greedy-cost", "text", "given"]


def _schedule_argument(kind):
    if kind == "text":
        return "group 0: bx, scaled [32x64]"
    if kind == "given":
        given = '{"groups": [{"stages": ["bx", "scaled"], "tile_sizes": [[16, 128]]}]}'
        return Schedule.parse(given)
    return kind


@pytest.mark.parametrize("kind", SCHEDULES)
def test_every_schedule_path_ends_in_a_schedule_and_its_plans(kind):
    compiled = _lowered(_schedule_argument(kind))
    assert isinstance(compiled.schedule, Schedule)
    assert isinstance(compiled.group_plans, tuple)
    assert len(compiled.group_plans) == len(compiled.schedule.groups)
    for group, plan in zip(compiled.schedule.groups, compiled.group_plans):
        assert tuple(plan.members) == tuple(group.stages)
        assert isinstance(plan, TiledGroup) == bool(group.tile_sizes)
    staged = sorted(n for g in compiled.schedule.groups for n in g.stages)
    assert staged == sorted(s.name for s in compiled.stage_graph.computed)
    if kind == "auto":
        assert isinstance(compiled.auto, AutoResult)
        assert compiled.auto.schedule is compiled.schedule
        assert len(compiled.auto.costs) == len(compiled.group_plans)
    else:
        assert compiled.auto is None
    assert (compiled.request.weights is None) == (kind not in ("auto", "greedy-cost"))


def test_a_record_restored_from_the_cache_describes_the_same_compile(tmp_path):
    options = dataclasses.replace(pinned_options(), cache_dir=tmp_path, use_cache=True)
    fresh = lower(_blur(), estimates=ESTIMATES, options=options)
    key = compile_key(fresh.request)
    save_compiled(fresh, key)
    again = lower(_blur(), estimates=ESTIMATES, options=options)
    assert compile_key(again.request) == key  # the same pipeline, the same key
    restored = load_compiled(again.request, key)
    assert isinstance(restored, Compiled) and restored.request is again.request
    assert compiled_texts(restored) == compiled_texts(fresh)
    assert restored.cmodule == fresh.cmodule and restored.inlined == fresh.inlined
    assert restored.reductions.keys() == fresh.reductions.keys()
    assert restored.branch_free == fresh.branch_free
    assert restored.plain_stages == fresh.plain_stages


def test_a_compile_loaded_from_the_cache_holds_the_record_of_a_fresh_one(tmp_path, monkeypatch):
    monkeypatch.delenv("POLYIMAGE_NO_CACHE", raising=False)
    options = dataclasses.replace(pinned_options(), cache_dir=tmp_path, use_cache=True)
    first = polyimage.compile(_blur(), estimates=ESTIMATES, options=options, build=False)
    second = polyimage.compile(_blur(), estimates=ESTIMATES, options=options, build=False)
    assert not first.cached and second.cached
    assert compiled_texts(second.compiled) == compiled_texts(first.compiled)
    assert second.graph is second.compiled.request.graph  # the loading compile's own graph


def test_report_and_dump_are_functions_of_the_record(monkeypatch):
    compiled = _lowered()
    monkeypatch.setattr("polyimage.poly.analysis.analyze", None)  # the report analyzes nothing
    text = pipeline_report(compiled)
    assert f"context: {compiled.context}" in text
    assert "schedule:" in text and "not built (build=False)" in text
    assert "grouping:" in text and compiled.request.machine_origin in text
    texts = compiled_texts(compiled)
    assert list(texts) == sorted(texts) and len(texts) == 6  # the dump's files 01 to 06
    assert str(compiled.schedule) in texts["04-schedule.txt"]
    assert texts["06-kernel.c"] == compiled.cmodule.source


def test_a_pipeline_reads_its_attributes_off_the_record():
    pipe = polyimage.compile(_blur(), estimates=ESTIMATES, options=pinned_options())
    compiled = pipe.compiled
    assert pipe.schedule is compiled.schedule and pipe.group_plans is compiled.group_plans
    assert pipe.graph is compiled.request.graph and pipe.stage_graph is compiled.stage_graph
    assert pipe.inlined == list(compiled.inlined) and pipe.auto is compiled.auto
    assert pipe.c_source == compiled.cmodule.source and pipe.name == compiled.name
    assert pipe.report() == pipeline_report(compiled, pipe.kernel, pipe.pass_seconds)
    data = np.random.default_rng(0).random((34, 42), dtype=np.float32)
    expected = polyimage.interpret(_blur(), img=data, R=32, C=40)
    np.testing.assert_allclose(pipe(img=data, R=32, C=40), expected, rtol=1e-5)


def test_the_bounds_warnings_are_kept_in_the_record():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = lower(uncovered_read(), estimates={"R": 64}, inline=False, schedule="naive")
    assert len(compiled.warnings) == 1 and "reads f(x)" in compiled.warnings[0]
    assert any(str(w.message) == compiled.warnings[0] for w in caught)
