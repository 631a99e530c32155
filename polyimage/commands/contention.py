"""`polyimage bench --load N` and `--callers K`: the variants timed while busy processes take
cores away, and the polyimage schedules called from several threads at once, since a call whose
loops are split evenly between threads waits at each barrier for the slowest one."""

from __future__ import annotations

import concurrent.futures
import contextlib
import math
import os
import statistics
import subprocess
import sys
import threading
import time

from polyimage.errors import ArgumentError, PolyimageError
from polyimage.grouping.machine import available_cores

# the fewest timed calls per variant that give a p90 some meaning, by bench size
MIN_CALLS = {"paper": 20, "small": 200}

# seconds a busy process lives at most: it outlives no bench that hangs longer than this
BUSY_LIFETIME = 1800.0

# the unloaded and the loaded timing alternate in this many blocks each, so that a slow
# stretch of a shared machine falls on both rather than on one
BLOCKS = 4

# one busy process: spin on a core or rest as the bench orders on its stdin, answering each
# order; end when its stdin closes or its parent is gone (the bench died), or its lifetime is
# up. Ctrl-C is left to the bench, which ends it, rather than printing a traceback from each
BUSY_LOOP = """\
import os, select, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
parent, end = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
spinning = False
print("resting", flush=True)
while os.getppid() == parent and time.monotonic() < end:
    if select.select([sys.stdin], [], [], 0 if spinning else 1)[0]:
        order = sys.stdin.readline()
        if not order:
            break
        spinning = order.strip() == "spin"
        print(order.strip(), flush=True)
    elif spinning:
        sum(range(20000))
"""


class LoadError(PolyimageError):
    """A busy process ended before the timing it was meant to disturb did."""


def check_contention(load, callers) -> None:
    """Refuse a negative `load` or a `callers` below one, naming the option."""
    if not (isinstance(load, int) and load >= 0):
        raise ArgumentError(f"--load must be an integer >= 0, got {load!r}")
    if callers is not None and not (isinstance(callers, int) and callers >= 1):
        raise ArgumentError(f"--callers must be an integer >= 1, got {callers!r}")


def calls_per_variant(runs: int, size: str) -> int:
    """Timed calls per variant and phase under --load or --callers: `runs`, but at least
    MIN_CALLS of the size (short calls at small sizes need more for a stable p90), rounded up
    to whole BLOCKS."""
    return BLOCKS * math.ceil(max(runs, MIN_CALLS.get(size, MIN_CALLS["paper"])) / BLOCKS)


def percentile(times, q: float) -> float:
    """The nearest-rank `q`th percentile of `times`: a time one of the calls took."""
    ordered = sorted(times)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def latency(times) -> dict:
    """Median, 90th percentile and worst of per-call seconds."""
    return {"median": statistics.median(times), "p90": percentile(times, 90), "max": max(times)}


def spread(times) -> dict:
    """A variant's timing from the seconds of its calls, as measure_interleaved gives it."""
    return {**latency(times), "min": min(times), "runs": list(times)}


class BusyLoad:
    """Processes that each spin on one core when told to (`spin`) and sleep otherwise (`rest`);
    see busy_processes."""

    def __init__(self, processes):
        self.processes = processes
        self.pids = [p.pid for p in processes]

    def spin(self) -> None:
        self._order("spin")

    def rest(self) -> None:
        self._order("rest")

    def _order(self, order: str) -> None:
        """Send `order` to every process and wait until each has taken it."""
        for process in self.processes:
            try:
                process.stdin.write(order + "\n")
                process.stdin.flush()
            except OSError:  # its end of the pipe is closed: it is gone
                raise LoadError(f"busy process {process.pid} ended before the timing did") from None
        for process in self.processes:
            if process.stdout.readline().strip() != order:
                raise LoadError(f"busy process {process.pid} ended before the timing did")


@contextlib.contextmanager
def busy_processes(count: int, report=print, lifetime: float = BUSY_LIFETIME):
    """Start `count` busy processes, resting, and yield their BusyLoad; they are ended on the
    way out whatever happens, and end themselves when this process dies or after `lifetime`
    seconds (LoadError if that was before the block ended)."""
    started = []
    try:
        for _ in range(count):
            started.append(
                subprocess.Popen(
                    [sys.executable, "-I", "-S", "-c", BUSY_LOOP, str(os.getpid()), str(lifetime)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )
        for process in started:
            assert process.stdout is not None  # started with stdout=PIPE
            process.stdout.readline()
        load = BusyLoad(started)
        report(f"  started {count} busy process(es), pid {', '.join(map(str, load.pids))}")
        yield load
        ended = [p.pid for p in started if p.poll() is not None]
        if ended:
            raise LoadError(f"busy process(es) {ended} ended before the timing under load did")
    finally:
        _end(started)


def _end(processes) -> None:
    """Terminate `processes`, kill those that linger, and reap them all."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for pipe in (process.stdin, process.stdout):
            with contextlib.suppress(OSError):
                pipe.close()


def measure_under_load(measure, calls: dict, runs: int, load: BusyLoad, report=None) -> tuple:
    """(unloaded, loaded) timings of `calls` ({label: fn}), at least `runs` calls each, by
    `measure(calls, runs, report)` (bench.measure_interleaved) in BLOCKS blocks of each,
    alternating with `load` resting and spinning."""
    per_block = math.ceil(runs / BLOCKS)
    blocks: dict[str, list] = {"unloaded": [], "loaded": []}
    for block in range(BLOCKS):
        for phase, switch in (("unloaded", load.rest), ("loaded", load.spin)):
            switch()
            if report is not None:
                report(f"block {block + 1} of {BLOCKS}, {phase}")
            blocks[phase].append(measure(calls, per_block, report))
    load.rest()
    return tuple(_pooled(parts) for parts in blocks.values())


def _pooled(parts) -> dict:
    """One timing per label from the timings of several blocks: all their calls together."""
    return {
        label: {
            **spread([t for part in parts for t in part[label]["runs"]]),
            "faults": statistics.mean(part[label].get("faults", 0) for part in parts),
        }
        for label in parts[0]
    }


def time_callers(make_call, callers: int, calls: int) -> tuple:
    """`callers` threads each making `calls` calls at once, each through its own callable from
    `make_call()` (made beforehand: its own outputs): (calls per second over them all, the
    seconds of every call)."""
    own_calls = [make_call() for _ in range(callers)]
    gate = threading.Barrier(callers + 1, timeout=60)

    def caller(call):
        gate.wait()
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return times

    with concurrent.futures.ThreadPoolExecutor(callers) as pool:
        running = [pool.submit(caller, call) for call in own_calls]
        gate.wait()
        start = time.perf_counter()
        times = [t for future in running for t in future.result()]
        seconds = time.perf_counter() - start
    return {"calls": len(times), "seconds": seconds, "per_second": len(times) / seconds}, times


def measure_callers(make_call, callers: int, calls: int) -> dict:
    """One caller alone making `callers` x `calls` calls, then `callers` callers making `calls`
    each at once: the throughput of each, its ratio, and the latencies under the callers."""
    alone, alone_times = time_callers(make_call, 1, callers * calls)
    together, times = time_callers(make_call, callers, calls)
    return {
        "alone": {**alone, **latency(alone_times)},
        "together": {**together, **latency(times), "runs": times},
        "throughput_ratio": together["per_second"] / alone["per_second"],
    }


def threads_note(threads) -> str:
    """Which thread count a call with `threads` runs on, as far as this process can tell
    (without `threads`, a call of little work runs on one: calls.call_threads)."""
    if threads:
        return f"threads={threads} (--threads)"
    configured = os.environ.get("OMP_NUM_THREADS")
    if configured:
        return f"threads=None: OMP_NUM_THREADS={configured}, one for a call of little work"
    return (
        f"threads=None: OpenMP's default, {available_cores()} (one per core), one for a call "
        "of little work"
    )


def load_header() -> tuple:
    """(the unloaded p90 heading, the loaded headings) format_table adds under --load."""
    return f"{'p90 ms':>9}", f"{'load med':>10}{'load p90':>10}{'load max':>10}{'/ unloaded':>12}"


def load_cells(quiet: dict, loaded: dict) -> tuple:
    """(the unloaded p90 cell, the loaded cells) of one variant's row, in ms."""
    return (
        f"{quiet['p90'] * 1e3:>9.2f}",
        f"{loaded['median'] * 1e3:>10.2f}{loaded['p90'] * 1e3:>10.2f}{loaded['max'] * 1e3:>10.2f}"
        f"{loaded['median'] / quiet['median']:>11.2f}x",
    )


def load_summary(timings: dict, loaded: dict, busy: int, autoschedulers) -> str | None:
    """polyimage:auto under load against the issue's targets: its p90 and worst over its median,
    its loaded over unloaded median, and the same ratio of the Halide autoscheduler that
    keeps it lowest."""
    auto = loaded.get("polyimage:auto")
    if auto is None:
        return None
    text = (
        f"  polyimage:auto under {busy} busy: p90 {auto['p90'] / auto['median']:.2f}x its "
        f"median, worst {auto['max'] / auto['median']:.2f}x, loaded / unloaded median "
        f"{auto['median'] / timings['polyimage:auto']['median']:.2f}x"
    )
    ratios = {
        s: loaded[f"halide:{s}"]["median"] / timings[f"halide:{s}"]["median"]
        for s in autoschedulers
        if f"halide:{s}" in loaded
    }
    if ratios:
        best = min(ratios, key=ratios.__getitem__)
        text += f" (Halide's best: {best} {ratios[best]:.2f}x)"
    return text


def format_callers(record: dict) -> list:
    """The lines of one app's --callers block: per polyimage schedule, calls per second of one
    caller alone and of the callers at once, the ratio, and the callers' latencies."""
    count, variants = record["callers"], record["variants"]
    width = max([28] + [len(v) + 2 for v in variants])
    lines = [
        f"  {count} callers at once, {record['calls']} calls each, {record['threads']}:",
        f"  {'variant':<{width}}{'alone /s':>10}{'callers /s':>12}{'ratio':>8}"
        f"{'median ms':>11}{'p90 ms':>9}{'worst ms':>10}{'worst/med':>11}",
    ]
    for variant, r in variants.items():
        t = r["together"]
        lines.append(
            f"  {variant:<{width}}{r['alone']['per_second']:>10.0f}{t['per_second']:>12.0f}"
            f"{r['throughput_ratio']:>7.2f}x{t['median'] * 1e3:>11.2f}{t['p90'] * 1e3:>9.2f}"
            f"{t['max'] * 1e3:>10.2f}{t['max'] / t['median']:>10.2f}x"
        )
    return lines
