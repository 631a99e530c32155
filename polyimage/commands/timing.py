"""Compiling and timing one pipeline on the command line, for an app or a user's pipeline."""

from __future__ import annotations

import statistics
import time

import polyimage


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
