"""Fitting the weights: a derivative-free search over log-weights for the weights whose `auto`
schedules run fastest (the geometric mean over pipelines of their measured times).

`live_data` stays fixed: scaling every per-byte and per-operation weight together changes no
choice of the model, so it sets the unit. The search starts from the defaults and accepts only
strict improvements, so it never returns weights worse on the training set than those."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from polyimage.grouping.cost import Weights

FREE = ("overlap", "row_start", "cleanup", "spread")
SAMPLE_DECADES = 1.5
FIRST_STEP = math.log(4.0)
LAST_STEP = math.log(1.2)


@dataclass(frozen=True)
class Fit:
    """The weights found, their score, the score of the start, and how many weight vectors
    were scored."""

    weights: Weights
    score: float
    start_score: float
    evaluations: int


def geometric_mean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def scaled(weights: Weights, name: str, factor: float) -> Weights:
    return dataclasses.replace(weights, **{name: getattr(weights, name) * factor})


def log_uniform_samples(rng, count: int, around: Weights = Weights()) -> list:
    """`count` weight vectors with each free weight `around`'s times 10 to a power drawn
    uniformly from +-SAMPLE_DECADES (a zero weight stays zero)."""
    return [
        dataclasses.replace(
            around,
            **{
                name: getattr(around, name) * 10 ** rng.uniform(-SAMPLE_DECADES, SAMPLE_DECADES)
                for name in FREE
            },
        )
        for _ in range(count)
    ]


def search(score, start: Weights = Weights(), samples=(), max_evaluations=60, out_of_time=None):
    """The weights of lowest `score(weights)` (lower is better; None: could not be scored):
    the start, then each of `samples`, then a pattern search in log space from the best, which
    tries each free weight up and down by a step and halves the step when nothing improves."""
    evaluations = 0

    def scored(weights):
        nonlocal evaluations
        evaluations += 1
        value = score(weights)
        return math.inf if value is None else value

    def stop():
        return evaluations >= max_evaluations or (out_of_time is not None and out_of_time())

    start_score = scored(start)
    best, best_score = start, start_score
    for weights in samples:
        if stop():
            break
        value = scored(weights)
        if value < best_score:
            best, best_score = weights, value
    step = FIRST_STEP
    while step >= LAST_STEP and not stop():
        improved = False
        for name in FREE:
            for sign in (1, -1):
                if stop():
                    break
                trial = scaled(best, name, math.exp(sign * step))
                value = scored(trial)
                if value < best_score:
                    best, best_score, improved = trial, value, True
                    break
        if not improved:
            step /= 2
    return Fit(best, best_score, start_score, evaluations)
