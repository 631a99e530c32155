"""The model's prices are checked against the build (issue 51): where gcc leaves a stage's
innermost loop scalar that the model priced as vector code, auto and greedy-cost choose again
with that stage priced scalar, build the new choice if it differs, keep it in the cache and say
so in the report."""

import numpy as np
import pytest
from oracle import assert_same

import polyimage
from polyimage import Exp, Float, Function, Image, Int, Interval, Parameter, Variable
from polyimage.config import Options
from polyimage.grouping.auto import auto_schedule
from polyimage.grouping.cost import CostModel, unpriced_scalar
from polyimage.grouping.facts import SCALAR_LOOP
from polyimage.tools.vectorization import LoopVerdict

ESTIMATES = {"R": 1024, "C": 1024}


def _weights_then_blur():
    """`weight`: three exps of a pixel, `blur`: a 3x3 sum of the weights, `edge`: their
    difference along a row (compiled with inline=False, so that `weight` stays a stage)."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [R, C])
    x, y = Variable(Int, "x"), Variable(Int, "y")
    inner = [Interval(Int, 1, R - 2), Interval(Int, 1, C - 2)]
    weight = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Float, "weight")
    weight.defn = [Exp(img(x, y)) + Exp(img(x, y) * 0.5) + Exp(img(x, y) * 0.25)]
    blur = Function(([x, y], inner), Float, "blur")
    blur.defn = [sum(weight(x + i, y + j) for i in (-1, 0, 1) for j in (-1, 0, 1)) * (1 / 9)]
    edge = Function(([x, y], inner), Float, "edge")
    edge.defn = [weight(x, y + 1) - weight(x, y - 1)]
    return [blur, edge]


def _report_scalar(monkeypatch, stages):
    """Make every build's report say that the loops of `stages` stayed scalar (gcc's verdicts
    depend on its version: the mechanism is tested on a verdict of our choosing)."""
    import polyimage.tools.vectorization as vectorization

    real = vectorization.logged_verdicts

    def verdicts(compiled, kernel):
        found = real(compiled, kernel)
        if found is None:
            pytest.skip("the C compiler is not gcc: no vectorization report to read")
        marked = [LoopVerdict(tuple(stages), 0, False, "not vectorized: (test)")]
        return tuple(found) + tuple(marked)

    monkeypatch.setattr(vectorization, "logged_verdicts", verdicts)


def test_a_stage_found_scalar_is_priced_scalar_and_the_choice_kept(monkeypatch, tmp_path):
    outputs = _weights_then_blur()
    options = Options(cache_dir=tmp_path)
    _report_scalar(monkeypatch, ["weight"])
    pipe = polyimage.compile(outputs, estimates=ESTIMATES, inline=False, options=options)
    request = pipe.compiled.request
    assert request.scalar_stages == ("weight",)
    params = request.param_values
    again = auto_schedule(
        pipe.stage_graph, params, request.machine, request.weights, scalar={"weight"}
    )
    assert str(pipe.schedule) == str(again.schedule), "the choice of the model told"
    assert "priced as scalar loops, as the first build found them: weight" in pipe.report()
    assert "plan_again" in pipe.pass_seconds
    img = np.random.default_rng(0).random((23, 31), dtype=np.float32)
    assert_same(pipe(img=img), polyimage.interpret(outputs, img=img))

    monkeypatch.undo()
    cached = polyimage.compile(outputs, estimates=ESTIMATES, inline=False, options=options)
    assert cached.cached and cached.compiled.request.scalar_stages == ("weight",)
    assert str(cached.schedule) == str(pipe.schedule)


def test_schedules_not_chosen_by_the_model_are_built_as_asked(monkeypatch, tmp_path):
    outputs = _weights_then_blur()
    _report_scalar(monkeypatch, ["weight"])
    for schedule in ("naive", "greedy"):
        pipe = polyimage.compile(
            outputs, schedule=schedule, inline=False, options=Options(cache_dir=tmp_path)
        )
        assert pipe.compiled.request.scalar_stages == ()
        assert "plan_again" not in pipe.pass_seconds


def test_a_stage_already_priced_scalar_plans_once(monkeypatch, tmp_path):
    """Small stages (scalar by design) and stages the model knows to be scalar (library
    calls) do not make the compile plan again."""
    outputs = _weights_then_blur()
    _report_scalar(monkeypatch, ["weight"])
    tiny = polyimage.compile(
        outputs, estimates={"R": 6, "C": 7}, inline=False, options=Options(cache_dir=tmp_path)
    )
    assert "weight" in tiny.compiled.plain_stages and tiny.compiled.request.scalar_stages == ()
    graph = tiny.stage_graph
    assert unpriced_scalar(graph, ["weight", "blur"], priced=("blur",)) == ("weight",)


def test_a_scalar_stage_costs_scalar_loop_times_its_vector_price():
    outputs = _weights_then_blur()
    pipe = polyimage.compile(outputs, estimates=ESTIMATES, inline=False, build=False)
    graph, params = pipe.stage_graph, pipe.compiled.request.param_values
    vector = CostModel(graph, params, None)
    scalar = CostModel(graph, params, None, scalar={"weight"})
    assert scalar.ops("weight") == SCALAR_LOOP * vector.ops("weight")
    assert scalar.ops("blur") == vector.ops("blur")
