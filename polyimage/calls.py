"""How many threads a call takes when the caller does not say: one for a call of little work,
else the cores shared among the calls in flight in this process, so that K Python threads
calling pipelines at once (a server's requests, Dask tasks) run K calls of cores/K threads
each, not K * cores threads that take cores from one another and stall at every barrier; and
how idle OpenMP threads wait."""

from __future__ import annotations

import contextlib
import os
import threading

# OpenMP threads that find no work spin a short while, then sleep. libgomp's default spins for
# milliseconds: a spinning thread keeps its core from the thread the others wait for when
# another process takes a core (a 16-stage chain's 0.4 ms calls stalled to 25 ms). Sleeping at
# once (passive) pays a wake-up at every parallel region and barrier: a 2048^2 scan with a
# barrier per row took 35 ms passive, 11.4 ms spinning 1000 times (as fast as spinning without
# end, and 24 ms against passive's 56 with a core busy elsewhere). A spin is a PAUSE, some
# 35 ns on a recent x86-64: tens of microseconds, the gaps between one call's regions. Passive
# beside it: LLVM's runtime sleeps at once, and libgomp spins not at all where the process
# runs more threads than it has cores
WAIT_DEFAULTS = (("OMP_WAIT_POLICY", "passive"), ("GOMP_SPINCOUNT", "1000"))
# the variables that set how OpenMP threads wait; where the user sets one, polyimage sets none
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")
# a call of fewer operations than this (the cost model's count) runs on one thread unless the
# caller names its threads: some tens of microseconds of work, less than a second thread costs
# to wake and to meet at the barriers, and a call that cannot stall on a core another process
# holds (unsharp_mask at 67 x 93, 0.76 M operations: 0.03 ms on one thread, 0.04-0.12 on two;
# from about 3 M, local_laplacian's and nl_means' calls gain from a second thread)
SERIAL_OPS = 1 << 20


def passive_waiting_by_default() -> None:
    """Set WAIT_DEFAULTS (sleep after a short spin) unless the user set how OpenMP threads
    wait: called before a kernel loads the OpenMP runtime, which reads them once when it
    starts (a runtime some other library loaded earlier in the process keeps its own)."""
    if not any(name in os.environ for name in WAIT_VARIABLES):
        os.environ.update(WAIT_DEFAULTS)


def open_library(path, cdef: str) -> tuple:
    """(ffi, library) of the shared library at `path` declaring `cdef`, opened through cffi's
    ABI mode with the wait policy set first (passive_waiting_by_default); never unloaded: the
    OpenMP runtime it brings keeps threads that would outlive it."""
    from cffi import FFI

    ffi = FFI()
    ffi.cdef(cdef)
    passive_waiting_by_default()
    flags = ffi.RTLD_NOW | getattr(ffi, "RTLD_NODELETE", 0)
    return ffi, ffi.dlopen(str(path), flags)


def describe_waiting() -> str:
    """How idle OpenMP threads wait in this process, for the report: the variables set (by
    the user, or by passive_waiting_by_default when a kernel loaded), else what will be."""
    chosen = [f"{name}={os.environ[name]}" for name in WAIT_VARIABLES if name in os.environ]
    if chosen:
        return "OpenMP waiting: " + " ".join(chosen) + " (read once, when the runtime loads)"
    defaults = " ".join(f"{name}={value}" for name, value in WAIT_DEFAULTS)
    return f"OpenMP waiting: {defaults}, set when the first kernel loads the runtime"


def call_threads(operations: float) -> int:
    """The threads of a call whose caller did not name them: one for fewer than SERIAL_OPS
    `operations`, else 0 (its share of the cores, CALLS.share)."""
    return 1 if operations < SERIAL_OPS else 0


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
