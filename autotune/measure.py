"""Timing candidates against each other: a warm-up call of each, then rounds that call every
candidate still running once, in an order shuffled each round (polyimage.commands.timing.
round_orders), so that machine noise hits all alike and none always runs after the same one;
a candidate clearly slower than the best is stopped early."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from polyimage.commands.timing import round_orders

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


def time_interleaved(calls: dict, runs: int, on_done=None, best_known=None) -> dict:
    """{label: Timing} of the functions in `calls` ({label: fn}); `on_done(label, timing)` is
    told each result as soon as it is final; `best_known`: seconds of the best candidate timed
    before, which counts as the best so far."""
    samples = {label: [] for label in calls}
    for fn in calls.values():
        fn()
    running = list(calls)
    results = {}

    def finish(label, stopped):
        results[label] = Timing(statistics.median(samples[label]), len(samples[label]), stopped)
        running.remove(label)
        if on_done is not None:
            on_done(label, results[label])

    next_order = round_orders()
    for round_number in range(max(runs, 1)):
        if not running:
            break
        for label in next_order(running):
            start = time.perf_counter()
            calls[label]()
            samples[label].append(time.perf_counter() - start)
        if round_number + 1 >= MIN_RUNS and round_number + 1 < runs:
            medians = {label: statistics.median(samples[label]) for label in running}
            best = min([*medians.values(), *([best_known] if best_known else [])])
            for label in [label for label in running if medians[label] > GIVE_UP * best]:
                finish(label, stopped=True)
    for label in list(running):
        finish(label, stopped=False)
    return results
