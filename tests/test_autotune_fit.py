"""The weight search of `polyimage tune` (autotune.fit) on synthetic measurements: times made
by the cost model itself under known weights, and scores with a known optimum."""

import math
import random

import numpy as np
import pytest

from polyimage import interpret
from polyimage.apps import load_app
from polyimage.autotune.candidates import anchor_sizes, auto_pick, base_candidates, schedule_cost
from polyimage.autotune.fit import FREE, geometric_mean, log_uniform_samples, search
from polyimage.autotune.subjects import RANDOM_SIDE, Subject, random_subject
from polyimage.config import Options
from polyimage.grouping.auto import auto_schedule
from polyimage.grouping.cost import CostModel, Weights
from polyimage.grouping.greedy import greedy_cost_schedule
from polyimage.grouping.machine import Machine

MACHINE = Machine(l1_bytes=32 * 1024, l2_bytes=1 << 20, cores=4)


@pytest.fixture(scope="module")
def subjects(tmp_path_factory):
    """Three apps at the paper's sizes, analysed only (the model needs no run)."""
    options = Options(cache_dir=tmp_path_factory.mktemp("cache"))
    found = []
    for name in ("harris", "unsharp_mask", "bilateral_grid"):
        app = load_app(name)
        outputs, _ = app.build()
        subject = Subject(name, name, outputs, dict(app.PAPER_SIZE), {})
        found.append(subject.analyze(options))
    return found


def model_times(subjects, truth: Weights):
    """score(weights): the geometric mean over `subjects` of the cost under `truth` of the
    schedule `auto` picks under `weights` (the model standing in for the machine)."""
    models = {s.key: CostModel(s.graph, s.params, MACHINE, truth) for s in subjects}

    def score(weights):
        return geometric_mean(
            schedule_cost(models[s.key], auto_pick(s, MACHINE, weights)) for s in subjects
        )

    return score


@pytest.mark.parametrize(
    "truth", [Weights(overlap=0.03, spread=5.0), Weights(overlap=10.0)], ids=["cheap", "dear"]
)
def test_fit_recovers_known_weights_from_model_measurements(subjects, truth):
    score = model_times(subjects, truth)
    samples = log_uniform_samples(random.Random(0), 8)
    fit = search(score, Weights(), samples, max_evaluations=30)
    assert fit.start_score == score(Weights()) > score(truth)  # the defaults choose worse
    assert fit.score <= score(truth) * (1 + 1e-12)  # as good as the true weights
    assert score(fit.weights) == fit.score
    # recomputation priced as the truth prices it: cheaper or dearer than the default
    assert (fit.weights.overlap < Weights().overlap) == (truth.overlap < Weights().overlap)


def test_search_finds_a_known_optimum_in_log_space():
    target = Weights(overlap=2.0, row_start=10.0, cleanup=0.2, spread=3.0)

    def score(weights):
        return sum(math.log(getattr(weights, n) / getattr(target, n)) ** 2 for n in FREE)

    fit = search(score, Weights(), max_evaluations=400)
    for name in FREE:
        assert getattr(fit.weights, name) == pytest.approx(getattr(target, name), rel=0.2)
    assert fit.weights.live_data == Weights().live_data  # the unit stays


@pytest.mark.parametrize("seed", range(5))
def test_search_never_returns_weights_worse_than_the_defaults(seed):
    """On a rugged score (pseudo-random per weight vector), with samples worse and better."""

    def score(weights):
        return random.Random(hash((seed, weights))).random()

    samples = log_uniform_samples(random.Random(seed), 6)
    fit = search(score, Weights(), samples, max_evaluations=40)
    assert fit.score <= fit.start_score == score(Weights())
    assert score(fit.weights) == fit.score


def test_unscorable_weights_are_never_chosen():
    """Weights whose picks could not be measured (None) lose to the defaults."""
    fit = search(lambda w: 1.0 if w == Weights() else None, Weights(), max_evaluations=20)
    assert fit.weights == Weights() and fit.score == 1.0


def test_candidates_are_distinct_valid_and_include_strips(subjects):
    harris = subjects[0]
    found = base_candidates(harris, MACHINE)
    texts = [str(s) for s in found.values()]
    assert len(set(texts)) == len(texts)
    assert {"auto", "naive"} <= set(found) and len(found) >= 5
    greedy = greedy_cost_schedule(harris.graph, harris.params, MACHINE)
    assert str(greedy) in texts  # under its own label or another one
    model = CostModel(harris.graph, harris.params, MACHINE)
    strips = [s for label, s in found.items() if "strips" in label]
    assert strips and all(
        g.tile_sizes[0][-1] == anchor_sizes(model, g.stages)[-1]
        for s in strips
        for g in s.groups
        if g.tile_sizes
    )
    for schedule in found.values():
        schedule.validate(harris.graph)
    auto = auto_schedule(harris.graph, harris.params, MACHINE)
    # the model's cost of auto's own schedule is what its search computed
    assert schedule_cost(model, found["auto"]) == pytest.approx(
        sum(c.cost for c in auto.costs), rel=1e-9
    )


def test_a_random_pipeline_runs_at_the_size_asked_for(tmp_path):
    options = Options(cache_dir=tmp_path)
    subject = random_subject(3, "small").analyze(options)
    assert subject.estimates == {"R": RANDOM_SIDE["small"], "C": RANDOM_SIDE["small"]}
    assert subject.params["R"] == RANDOM_SIDE["small"] and not subject.is_app
    pipe = subject.compile(auto_pick(subject, MACHINE, Weights()), options)
    results = pipe(**subject.arguments)
    results = results if isinstance(results, tuple) else (results,)
    expected = interpret(subject.outputs, **subject.arguments)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for got, want in zip(results, expected):
        assert got.shape == want.shape and got.size > 0
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
