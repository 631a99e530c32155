"""How many threads a call takes when the caller does not say: the cores shared among the calls
in flight in this process, so that K Python threads calling pipelines at once (a server's
requests, Dask tasks) run K calls of cores/K threads each, not K * cores threads that take
cores from one another and stall at every barrier."""

from __future__ import annotations

import contextlib
import os
import threading

# OpenMP threads that find no work sleep at once instead of spinning (libgomp's default spins
# for milliseconds): a spinning thread keeps its core from the thread the others wait for when
# another process takes a core, which stalled a 16-stage chain's 0.4 ms calls to 25 ms
WAIT_POLICY = ("OMP_WAIT_POLICY", "passive")
# the variables that set how OpenMP threads wait; where the user sets one, polyimage sets none
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")


def passive_waiting_by_default() -> None:
    """Set OMP_WAIT_POLICY=passive unless the user set how OpenMP threads wait: called before
    a kernel loads the OpenMP runtime, which reads it once when it starts (a runtime some
    other library loaded earlier in the process keeps its own setting)."""
    if not any(name in os.environ for name in WAIT_VARIABLES):
        os.environ[WAIT_POLICY[0]] = WAIT_POLICY[1]


def affinity_cores() -> int:
    """The cores this process may run on (its CPU affinity), else the CPU count."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def available_cores() -> int:
    """The threads one call alone takes: OMP_NUM_THREADS's first value where it is set, else
    the cores this process may run on."""
    first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if first.isdigit() and int(first) > 0:
        return int(first)
    return affinity_cores()


class CallsInFlight:
    """A count of the calls running in this process, shared by every pipeline: each call
    without `threads=` takes the available cores over the calls then running (at least one)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._running = 0

    @contextlib.contextmanager
    def share(self, threads: int):
        """Count one call while it runs; yields its thread count: `threads` where the caller
        gave one (> 0), else its share of the cores."""
        with self._lock:
            self._running += 1
            running = self._running
        try:
            yield threads if threads > 0 else max(1, available_cores() // running)
        finally:
            with self._lock:
                self._running -= 1


CALLS = CallsInFlight()
