"""Buffers kept between calls: repeated calls with changing shapes and thread counts, calls of
one Pipeline from several Python threads at once, release(), and no fresh pages back to back."""

import resource
import threading

import numpy as np
import pytest

import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable

SCHEDULES = ("naive", "auto", "group 0: a, b [8x16]\ngroup 1: c [untiled]")


def _chain():
    """Three stencils over rows and columns: buffers between groups and scratchpads."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 6, C + 6])
    prev, stages = img, []
    for k, name in enumerate("abc"):
        f = Function(
            ([x, y], [Interval(Int, k + 1, R + 4 - k), Interval(Int, k + 1, C + 4 - k)]),
            Float,
            name,
        )
        f.defn = [(prev(x - 1, y) + prev(x, y + 1) * 2 + prev(x + 1, y - 1)) * 0.25]
        prev = f
        stages.append(f)
    return stages[-1]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_changing_shapes_and_threads_reuse_memory_correctly(schedule):
    out = _chain()
    pipe = polyimage.compile([out], schedule=schedule, inline=False, estimates={"R": 64, "C": 64})
    rng = np.random.default_rng(1)
    for rows, cols, threads in [(40, 50, 1), (90, 30, 2), (12, 13, 3), (90, 30, 1), (7, 8, 2)]:
        arr = rng.random((rows, cols), dtype=np.float32)
        want = polyimage.interpret([out], img=arr)
        np.testing.assert_allclose(pipe(img=arr, threads=threads), want, rtol=1e-6)
    assert len(pipe._workspaces) == 1  # one workspace served every call


def test_calls_from_several_threads_at_once():
    out = _chain()
    pipe = polyimage.compile([out], estimates={"R": 64, "C": 64})
    rng = np.random.default_rng(2)
    arrays = [rng.random((30 + 7 * k, 40 - 3 * k), dtype=np.float32) for k in range(6)]
    wants = [polyimage.interpret([out], img=a) for a in arrays]
    errors, barrier = [], threading.Barrier(6)

    def work(k):
        try:
            barrier.wait()
            for _ in range(5):
                np.testing.assert_allclose(pipe(img=arrays[k], threads=2), wants[k], rtol=1e-6)
        except BaseException as exc:  # reported below
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert errors == []
    assert 1 <= len(pipe._workspaces) <= 6


def test_release_frees_and_the_next_call_allocates_again():
    out = _chain()
    pipe = polyimage.compile([out], schedule="naive", inline=False)
    arr = np.random.default_rng(3).random((20, 21), dtype=np.float32)
    first = pipe(img=arr)
    pipe.release()
    assert pipe._workspaces == []
    np.testing.assert_array_equal(pipe(img=arr), first)
    pipe.release()
    pipe.release()  # twice is harmless


def _faults(call) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    call()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def test_back_to_back_calls_map_no_fresh_pages():
    """Naive keeps two 38 MiB intermediates (beyond what the C library's allocator keeps by
    itself); a call that reuses them faults far fewer pages than they hold (it once faulted
    them all, every call)."""
    out = _chain()
    pipe = polyimage.compile([out], schedule="naive", inline=False)
    arr = np.random.default_rng(4).random((3106, 3106), dtype=np.float32)
    result = pipe(img=arr, threads=1)
    pipe(img=arr, out=result, threads=1)
    pages = 2 * 3104 * 3104 * 4 // 4096
    assert _faults(lambda: pipe(img=arr, out=result, threads=1)) < pages // 10
