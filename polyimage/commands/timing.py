"""Compiling and timing one pipeline on the command line, for an app or a user's pipeline."""

from __future__ import annotations

import contextlib
import gc
import random
import statistics
import time

import polyimage

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


def compile_timed(outputs, report, **compile_args):
    """(the compiled pipeline, the seconds its compile took), said in one line."""
    start = time.perf_counter()
    pipe = polyimage.compile(outputs, **compile_args)
    seconds = time.perf_counter() - start
    report(f"{pipe.name}: {pipe.origin} in {seconds:.2f} s")
    return pipe, seconds


def time_calls(pipe, arguments: dict, threads, runs: int, report):
    """(the last call's result, the median seconds) of `runs` timed calls after a warm-up,
    said in one line with the (first) output's shape."""
    result = pipe(threads=threads, **arguments)
    times = []
    for _ in range(max(runs, 1)):
        start = time.perf_counter()
        result = pipe(threads=threads, **arguments)
        times.append(time.perf_counter() - start)
    first = result[0] if isinstance(result, tuple) else result
    report(
        f"{pipe.name}: {'x'.join(map(str, first.shape))} in "
        f"{statistics.median(times) * 1e3:.2f} ms "
        f"(median of {len(times)} runs, min {min(times) * 1e3:.2f} ms)"
    )
    return result, statistics.median(times)
