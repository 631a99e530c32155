"""How calls are timed side by side (the bench, the autotuner, schedule="measured"): in rounds
of one call each, shuffled afresh every round, a clearly slower candidate stopped early, with
Python's garbage collector paused."""

from __future__ import annotations

import contextlib
import gc
import random
import statistics
import time
from dataclasses import dataclass

ROUND_SEED = 2020  # the order of the calls in each round of an interleaved timing


def round_orders(seed: int = ROUND_SEED):
    """A function giving each round of an interleaved timing its order of the labels:
    shuffled afresh every round, from `seed`, so the same in every run. A rotation would
    keep each label's predecessor, whose leftovers in the caches then help or hurt it every
    time (depthwise_conv's auto, always after naive's 6 MB of intermediates: 1.28 ms, 1.09
    shuffled)."""
    rng = random.Random(seed)
    return lambda labels: rng.sample(list(labels), len(labels))


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector paused while calls are timed, as timeit does, after
    one collection: a collection of the bench's heap at a random call took milliseconds (the
    worst of 4000 calls of 0.04 ms was 4.2 ms with it on, 0.11 ms with it off)."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# after this many rounds, a candidate whose median is GIVE_UP times the best one's stops
MIN_RUNS = 3
GIVE_UP = 1.5


@dataclass(frozen=True)
class Timing:
    """The median seconds of the timed runs, how many there were, and whether they stopped
    early."""

    seconds: float
    runs: int
    stopped: bool = False


def time_interleaved(
    calls: dict,
    runs: int,
    on_done=None,
    best_known=None,
    on_round=None,
    budget_seconds=None,
    until_one: bool = False,
) -> dict:
    """{label: Timing} of the functions in `calls` ({label: fn}): a warm-up call of each, then
    rounds that call every candidate still running once, in an order shuffled each round
    (round_orders), so that machine noise hits all alike and none always runs after the same
    one; from MIN_RUNS rounds on, a candidate GIVE_UP times slower than the best stops.
    `on_done(label, timing)` is told each result as soon as it is final, `on_round(number)`
    each round's end; `best_known`: seconds of the best candidate timed before, which counts
    as the best so far. The rounds end after `runs`, or from MIN_RUNS on once the timed calls
    took `budget_seconds` or (`until_one`) one candidate is left."""
    samples: dict = {label: [] for label in calls}
    for fn in calls.values():
        fn()
    running = list(calls)
    results = {}

    def finish(label, stopped):
        results[label] = Timing(statistics.median(samples[label]), len(samples[label]), stopped)
        running.remove(label)
        if on_done is not None:
            on_done(label, results[label])

    next_order, spent = round_orders(), 0.0
    for round_number in range(max(runs, 1)):
        if not running:
            break
        for label in next_order(running):
            start = time.perf_counter()
            calls[label]()
            samples[label].append(time.perf_counter() - start)
            spent += samples[label][-1]
        if on_round is not None:
            on_round(round_number + 1)
        if round_number + 1 >= MIN_RUNS and round_number + 1 < runs:
            medians = {label: statistics.median(samples[label]) for label in running}
            best = min([*medians.values(), *([best_known] if best_known else [])])
            for label in [label for label in running if medians[label] > GIVE_UP * best]:
                finish(label, stopped=True)
            over_budget = budget_seconds is not None and spent > budget_seconds
            if over_budget or (until_one and len(running) == 1):
                break
    for label in list(running):
        finish(label, stopped=False)
    return results
