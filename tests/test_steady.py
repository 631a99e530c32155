"""Steady under load: parallel loops hand out work dynamically, idle OpenMP threads spin briefly
and then sleep (unless the user says otherwise), calls of little work run on one thread, and
calls running at once share the cores."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from helpers import child_env

import polyimage
from polyimage import Float, Function, Image, Int, Parameter, calls
from polyimage.apps import load_app
from polyimage.calls import CallsInFlight, available_cores, passive_waiting_by_default


def _parallel_pragmas(pipe) -> list:
    return [
        line.strip()
        for line in pipe.c_source.splitlines()
        if line.strip().startswith("#pragma omp") and " for" in line
    ]


@pytest.mark.parametrize("name", ["unsharp_mask", "histogram_equalize", "bilateral_grid"])
def test_every_parallel_loop_hands_out_its_work_dynamically(name):
    """Tiles, rows and reduction blocks go to the threads that come for them: a thread whose
    core another process takes holds the others up by one chunk, not by its whole share."""
    app = load_app(name)
    outputs, params = app.build()
    estimates = {params[k]: v for k, v in app.PAPER_SIZE.items()}
    for schedule in ("auto", "naive"):
        pipe = polyimage.compile(outputs, estimates=estimates, schedule=schedule, build=False)
        pragmas = _parallel_pragmas(pipe)
        assert pragmas, "no parallel loop"
        assert all("schedule(dynamic" in p for p in pragmas), pragmas


def _tile_pragma(pipe) -> str:
    return next(p for p in _parallel_pragmas(pipe) if p.startswith("#pragma omp for collapse"))


@pytest.mark.parametrize("rows", [1, 2, 5])
def test_small_tiles_go_to_a_thread_several_at_a_time(rows):
    """Tiles of little work (one row of an image) are handed out in chunks of consecutive
    tiles, as many as make TILE_CHUNK_POINTS points but no more than pim_chunk allows; tiles
    of much work go one at a time. Any thread count gives the same result."""
    from polyimage.codegen.prelude import TILE_CHUNK_POINTS

    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [R, C])
    out = Function.like(img, Float, "out")
    x, y = out.variables
    out.defn = [img(x, y) * 2.0 + 1.0]
    small = f"group 0: out [{rows}x512]"
    pipe = polyimage.compile([out], schedule=small)
    per_chunk = -(-TILE_CHUNK_POINTS // (rows * 512))
    assert "? pim_chunk(" in _tile_pragma(pipe) and f": {per_chunk}))" in _tile_pragma(pipe)
    large = polyimage.compile([out], schedule="group 0: out [256x512]", build=False)
    assert _tile_pragma(large).endswith("schedule(dynamic, 1)")
    data = np.random.default_rng(rows).random((203, 1100), dtype=np.float32)
    results = [pipe(img=data, threads=t) for t in (1, 2, 3, 5)]
    for result in results:
        np.testing.assert_array_equal(result, data * np.float32(2) + np.float32(1))


def test_results_do_not_depend_on_the_threads_that_took_the_chunks():
    app = load_app("histogram_equalize")
    outputs, params = app.build()
    arrays = app.prepare([np.random.default_rng(2).integers(0, 255, (41, 67, 3), np.uint8)])
    pipe = polyimage.compile(outputs, estimates={params[k]: v for k, v in app.PAPER_SIZE.items()})
    runs = [pipe(**arrays, **app.DEFAULTS, threads=t) for t in (1, 2, 3, 7, 2, 3)]
    for run in runs[1:]:
        np.testing.assert_array_equal(run, runs[0])


def test_calls_at_once_share_the_cores(monkeypatch):
    """Each call without threads= takes the cores over the calls running when it starts; a
    call that names its threads keeps them; the count falls back as calls end."""
    monkeypatch.setattr(calls, "available_cores", lambda: 8)
    gauge = CallsInFlight()
    with gauge.share(0) as first, gauge.share(0) as second, gauge.share(3) as named:
        with gauge.share(0) as fourth, gauge.share(0) as fifth:
            assert (first, second, named, fourth, fifth) == (8, 4, 3, 2, 1)
    with gauge.share(0) as alone:
        assert alone == 8


def test_threads_calling_one_pipeline_get_shares_and_the_right_results(monkeypatch):
    seen, lock = [], threading.Lock()
    real = CallsInFlight.share

    def spy(self, threads):
        manager = real(self, threads)

        class Recorded:
            def __enter__(self):
                value = manager.__enter__()
                with lock:
                    seen.append(value)
                return value

            def __exit__(self, *exc):
                return manager.__exit__(*exc)

        return Recorded()

    monkeypatch.setattr(CallsInFlight, "share", spy)
    app = load_app("unsharp_mask")
    outputs, params = app.build()
    arrays = app.prepare([np.random.default_rng(3).random((29, 37, 3), np.float32)])
    pipe = polyimage.compile(outputs)
    expected = pipe(**arrays, **app.DEFAULTS, threads=1)
    results = [None] * 4

    def call(k):
        results[k] = [pipe(**arrays, **app.DEFAULTS) for _ in range(5)]

    workers = [threading.Thread(target=call, args=(k,)) for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for runs in results:
        for run in runs:
            np.testing.assert_array_equal(run, expected)
    assert len(seen) == 21 and all(1 <= s <= available_cores() for s in seen)


def test_available_cores_follow_omp_num_threads(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3,2")
    assert available_cores() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "junk")
    assert available_cores() >= 1


def test_idle_threads_spin_briefly_then_sleep_unless_the_user_says_how_they_wait(monkeypatch):
    """Where no wait setting is, libgomp's threads spin a bounded count (not its default
    300000) before they sleep, and LLVM's sleep at once (passive); a user's setting of any one
    variable is kept and polyimage sets none."""
    for name in calls.WAIT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    passive_waiting_by_default()
    assert os.environ["OMP_WAIT_POLICY"] == "passive"
    assert 0 < int(os.environ["GOMP_SPINCOUNT"]) < 300000
    for name in calls.WAIT_VARIABLES:
        for other in calls.WAIT_VARIABLES:
            monkeypatch.delenv(other, raising=False)
        monkeypatch.setenv(name, "7")
        passive_waiting_by_default()
        assert [n for n in calls.WAIT_VARIABLES if n in os.environ] == [name]
        assert calls.describe_waiting().startswith(f"OpenMP waiting: {name}=7 ")


def test_the_report_says_how_idle_threads_wait(monkeypatch):
    """Before any kernel loads, the report names what polyimage will set; after, what is set."""
    for name in calls.WAIT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    before = calls.describe_waiting()
    assert "OMP_WAIT_POLICY=passive" in before and "when the first kernel loads" in before
    monkeypatch.setenv("OMP_WAIT_POLICY", "active")
    img = Image(Float, "img", [Parameter(Int, "R"), Parameter(Int, "C")])
    out = Function.like(img, Float, "out")
    out.defn = [img(*out.variables) * 2.0]
    text = polyimage.compile([out], build=False).report()
    assert "OpenMP waiting: OMP_WAIT_POLICY=active (read once" in text


def test_a_fresh_process_sets_the_wait_before_its_first_kernel_loads(tmp_path):
    script = (
        "import os, numpy as np, polyimage\n"
        "from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable\n"
        "assert 'OMP_WAIT_POLICY' not in os.environ\n"
        "N = Parameter(Int, 'N'); i = Variable(Int, 'i'); a = Image(Float, 'a', [N])\n"
        "f = Function(([i], [Interval(Int, 0, N - 1)]), Float, 'f'); f.defn = [a(i) * 2.0]\n"
        "out = polyimage.compile([f])(a=np.ones(5, np.float32), N=5)\n"
        "print(*(os.environ[n] for n in ('OMP_WAIT_POLICY', 'GOMP_SPINCOUNT')), out.sum())\n"
    )
    env = child_env(tmp_path)
    for name in calls.WAIT_VARIABLES:
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [*dict(calls.WAIT_DEFAULTS).values(), "10.0"]


def test_a_call_of_little_work_runs_on_one_thread(monkeypatch):
    """A call the cost model counts under SERIAL_OPS operations runs on one thread whatever
    the cores: a second thread costs more to wake and meet at the barriers than it saves, and
    stalls the call where another process holds its core. A larger call takes its share of
    the cores, and threads= is kept either way; the results are the same."""
    from polyimage.jit.build import Kernel

    seen = []
    real = Kernel.__call__

    def spy(self, workspace, nthreads, *rest, **named):
        seen.append(nthreads)
        return real(self, workspace, nthreads, *rest, **named)

    monkeypatch.setattr(Kernel, "__call__", spy)
    monkeypatch.setattr(calls, "available_cores", lambda: 8)
    app = load_app("unsharp_mask")
    outputs, _ = app.build()
    pipe = polyimage.compile(outputs)
    rng = np.random.default_rng(11)
    tiny, large = (
        app.prepare([rng.random(shape, np.float32)]) for shape in [(7, 9, 3), (300, 400, 3)]
    )
    alone = pipe(**tiny, **app.DEFAULTS)
    np.testing.assert_array_equal(pipe(**tiny, **app.DEFAULTS, threads=3), alone)
    want = pipe(**large, **app.DEFAULTS, threads=1)
    np.testing.assert_array_equal(pipe(**large, **app.DEFAULTS), want)
    assert seen == [1, 3, 1, 8]


@pytest.mark.parametrize("tiles, few_points", [("1x2x8", True), ("1x64x512", False)])
def test_tiles_of_a_few_points_in_all_stay_on_the_calling_thread(tiles, few_points):
    """A tiled group runs its tiles on the team only with PARALLEL_MIN_POINTS points in all
    (as a stage's loops do): waking the other threads for a few thousand points costs more
    than it saves, and sleeping threads (OMP_WAIT_POLICY=passive) take longest to wake."""
    from polyimage import Schedule
    from polyimage.schedule.reductions import PARALLEL_MIN_POINTS

    app = load_app("unsharp_mask")
    outputs, _ = app.build()
    schedule = Schedule.parse(f"group 0: blurx, mask [{tiles}]")
    pipe = polyimage.compile(outputs, schedule=schedule, build=False)
    team = [
        line
        for line in pipe.c_source.splitlines()
        if "#pragma omp parallel " in line and " for" not in line
    ]
    assert team, "no team for the tiles"
    assert (f">= {PARALLEL_MIN_POINTS}" in team[0]) == few_points, team[0]
    arrays = app.prepare([np.random.default_rng(5).random((7, 11, 3), np.float32)])
    built = polyimage.compile(outputs, schedule=schedule)
    want = polyimage.interpret(outputs, **arrays, **app.DEFAULTS)
    for threads in (1, 2):
        np.testing.assert_array_equal(built(**arrays, **app.DEFAULTS, threads=threads), want)
