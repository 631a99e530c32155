"""`polyimage bench --load N` and `--callers K`: the busy processes spin while the loaded timing
runs and are gone after it, however it ends; the table and the JSON carry the p90, the worst
call, the loaded timings and the callers' throughput and latencies; bad values are refused."""

import gc
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from polyimage.commands import bench, contention
from polyimage.commands.cli import main
from polyimage.errors import ArgumentError

APP = "unsharp_mask"
# seconds a test waits at most for what it waits on (a process to end, to settle, to answer):
# a deadline that only a failure reaches, however slow a busy machine is at the time
DEADLINE = 120.0


def running(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def busy_pids(lines) -> list:
    """The pids the bench said it started busy processes with."""
    said = [re.search(r"busy process\(es\), pid ([\d, ]+)", line) for line in lines]
    return [int(pid) for m in said if m for pid in m.group(1).split(",")]


@pytest.fixture
def quick(monkeypatch, tmp_path):
    """Few calls per variant, and no Halide compiles: the bench's bookkeeping, not its figures;
    in a cache of its own, so that the calibration the bench writes does not change what
    other tests in this process plan."""
    monkeypatch.setattr(contention, "MIN_CALLS", {"paper": 4, "small": 4})
    monkeypatch.setattr(bench, "halide_variants", lambda *args, **kwargs: {})
    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(tmp_path / "cache"))


def test_percentile_is_the_nearest_rank():
    times = [0.5 * k for k in range(40, 0, -1)]
    ordered = sorted(times)
    assert contention.percentile(times, 90) == ordered[35]
    assert contention.percentile(times, 100) == max(times)
    assert contention.percentile([3.0], 90) == 3.0
    stats = contention.latency(times)
    assert stats["median"] <= stats["p90"] <= stats["max"] == max(times)


def test_runs_govern_the_calls_above_a_floor_per_size():
    floor, blocks = contention.MIN_CALLS, contention.BLOCKS
    for size in ("small", "paper"):
        calls = contention.calls_per_variant(1, size)
        assert calls % blocks == 0 and floor[size] <= calls < floor[size] + blocks
    more = floor["small"] + 7
    calls = contention.calls_per_variant(more, "small")
    assert calls % blocks == 0 and more <= calls < more + blocks


def state(pid: int) -> str:
    """The one-letter state of process `pid` (R running, S sleeping, ...)."""
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def within_deadline(condition) -> bool:
    """Whether `condition()` comes true before DEADLINE seconds pass (polled)."""
    deadline = time.monotonic() + DEADLINE
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def settles_to(pid: int, wanted: str) -> bool:
    """Whether process `pid` reaches state `wanted` within the deadline."""
    return within_deadline(lambda: state(pid) == wanted)


def test_busy_processes_spin_when_told_and_are_gone_after_the_block():
    with contention.busy_processes(2, report=lambda text: None) as load:
        pids = load.pids
        assert len(set(pids)) == 2 and all(settles_to(pid, "S") for pid in pids)
        load.spin()
        assert all(settles_to(pid, "R") for pid in pids)
        load.rest()
        assert all(settles_to(pid, "S") for pid in pids)
    assert not any(running(pid) for pid in pids)


def test_busy_processes_are_ended_when_the_block_raises():
    with pytest.raises(RuntimeError, match="timing failed"):
        with contention.busy_processes(1, report=lambda text: None) as load:
            load.spin()
            raise RuntimeError("timing failed")
    assert not running(load.pids[0])


def test_unloaded_and_loaded_blocks_alternate():
    """Each block is timed with the load as it should be, and every call lands in its phase."""
    seen = []

    def measure(calls, runs, report=None):
        seen.append(state(load.pids[0]))
        return {label: contention.spread([float(len(seen))] * runs) for label in calls}

    with contention.busy_processes(1, report=lambda text: None) as load:
        unloaded, loaded = contention.measure_under_load(measure, {"a": None}, 7, load)
    blocks = contention.BLOCKS
    assert len(seen) == 2 * blocks and set(seen[1::2]) == {"R"}
    per_phase = blocks * -(-7 // blocks)
    assert len(unloaded["a"]["runs"]) == len(loaded["a"]["runs"]) == per_phase
    assert set(unloaded["a"]["runs"]) == set(range(1, 2 * blocks, 2))
    assert set(loaded["a"]["runs"]) == set(range(2, 2 * blocks + 1, 2))


def test_a_busy_process_that_ends_early_is_an_error():
    with pytest.raises(contention.LoadError, match="ended before"):
        with contention.busy_processes(1, report=lambda text: None, lifetime=0.3) as load:
            assert within_deadline(lambda: load.processes[0].poll() is not None)


def test_an_order_to_a_busy_process_that_is_gone_is_a_load_error():
    """Told to spin after its lifetime ran out (a slow start can outlast a short one), a busy
    process that is gone is a LoadError, not a broken pipe."""
    with pytest.raises(contention.LoadError, match="ended before"):
        with contention.busy_processes(1, report=lambda text: None, lifetime=0) as load:
            assert within_deadline(lambda: load.processes[0].poll() is not None)
            load.spin()


def test_busy_processes_end_themselves_when_the_bench_dies():
    """A bench killed outright runs no finally: its busy processes notice they were orphaned."""
    script = textwrap.dedent(
        """
        import os
        from polyimage.commands.contention import busy_processes
        with busy_processes(1, report=lambda text: None) as load:
            load.spin()
            print(load.pids[0], flush=True)
            os._exit(0)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=DEADLINE
    )
    pid = int(done.stdout.split()[0])
    assert within_deadline(lambda: not running(pid))


def test_ctrl_c_ends_the_bench_and_its_busy_processes():
    """Ctrl-C signals the terminal's whole process group: the bench stops, and its busy
    processes, which leave the signal to it, are ended by it. The bench takes Ctrl-C as a
    terminal's Python does even where this test runs in the background (whose children start
    with SIGINT ignored), and it waits on its stdin, not for a time."""
    script = textwrap.dedent(
        """
        import signal, sys
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from polyimage.commands.contention import busy_processes
        with busy_processes(2, report=lambda text: None) as load:
            load.spin()
            print(*load.pids, flush=True)
            sys.stdin.read()
        """
    )
    bench_process = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    pids = []
    try:
        pids = [int(pid) for pid in bench_process.stdout.readline().split()]
        os.killpg(bench_process.pid, signal.SIGINT)
        bench_process.wait(timeout=DEADLINE)  # its stdin stays open: only Ctrl-C ends it
        err = bench_process.stderr.read()
    finally:
        for pid in [bench_process.pid, *pids]:
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        bench_process.wait()
        for pipe in (bench_process.stdin, bench_process.stdout, bench_process.stderr):
            pipe.close()
    assert bench_process.returncode != 0 and err.count("KeyboardInterrupt") == 1, err
    assert len(pids) == 2 and not any(running(pid) for pid in pids)


def test_load_and_callers_print_their_columns_and_write_them(quick, tmp_path, capsys):
    path = tmp_path / "run.json"
    argv = ["bench", APP, "--size", "small", "--runs", "1", "--load", "1", "--callers", "2"]
    assert main([*argv, "--json", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    pids = busy_pids(lines)
    assert len(pids) == 1 and not running(pids[0])
    header = next(line for line in lines if "median ms" in line and "vs best" in line)
    assert all(column in header for column in ("p90 ms", "load med", "load p90", "load max"))
    assert any(line.startswith("  polyimage:auto under 1 busy: p90") for line in lines)
    assert any("2 callers at once" in line and "threads=None" in line for line in lines)
    record = json.loads(path.read_text())
    assert record["load"] == 1 and record["callers"] == 2
    app = record["apps"][APP]
    calls = record["calls"]
    assert app["loaded"]["busy"] == 1
    assert set(app["loaded"]["timings"]) == set(app["timings"])
    for timing in [*app["timings"].values(), *app["loaded"]["timings"].values()]:
        assert len(timing["runs"]) == calls
        assert timing["min"] <= timing["median"] <= timing["p90"] <= timing["max"]
    variants = app["callers"]["variants"]
    assert "polyimage:auto" in variants and not any(v.startswith("halide") for v in variants)
    for measured in variants.values():
        together, alone = measured["together"], measured["alone"]
        assert together["calls"] == alone["calls"] == 2 * calls == len(together["runs"])
        ratio = together["per_second"] / alone["per_second"]
        assert measured["throughput_ratio"] == pytest.approx(ratio)
        assert together["median"] <= together["p90"] <= together["max"]


def test_the_busy_processes_end_when_the_loaded_timing_raises(quick, monkeypatch):
    timed = bench.measure_interleaved

    def fail_under_load(calls, runs, report=None):
        if busy_pids(said):
            raise RuntimeError("a call failed under load")
        return timed(calls, runs, report)

    said = []
    monkeypatch.setattr(bench, "measure_interleaved", fail_under_load)
    with pytest.raises(RuntimeError, match="under load"):
        bench.run_bench([APP], size="small", runs=1, report=said.append, load=1)
    pids = busy_pids(said)
    assert len(pids) == 1 and not running(pids[0])


@pytest.mark.parametrize(
    "argv, named",
    [
        (["bench", APP, "--load", "-1"], "--load"),
        (["bench", APP, "--load", "two"], "--load"),
        (["bench", APP, "--callers", "0"], "--callers"),
        (["bench", APP, "--callers", "-3"], "--callers"),
        (["bench", "--dask", "--load", "1"], "--load"),
        (["bench", "--dask", "--callers", "2"], "--callers"),
    ],
)
def test_a_bad_value_is_one_line_naming_it(argv, named, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and named in lines[0] and "error" in lines[0], captured.err
    assert "Traceback" not in captured.err + captured.out and not busy_pids(captured.out)


@pytest.mark.parametrize("bad", [{"load": -1}, {"callers": 0}, {"load": 1.5}])
def test_run_bench_refuses_bad_values_before_any_work(bad):
    said = []
    with pytest.raises(ArgumentError, match=f"--{next(iter(bad))}"):
        bench.run_bench([APP], size="small", report=said.append, **bad)
    assert said == []


def test_the_load_line_sets_auto_beside_the_steadiest_autoscheduler():
    def timing(median, p90=None, worst=None):
        return {"median": median, "p90": p90 or median, "max": worst or median}

    quiet = {v: timing(1.0) for v in ("polyimage:auto", "halide:Adams2019", "halide:Li2018")}
    loaded = {
        "polyimage:auto": timing(2.0, 3.0, 8.0),
        "halide:Adams2019": timing(1.5),
        "halide:Li2018": timing(1.25),
    }
    line = contention.load_summary(quiet, loaded, 1, ("Adams2019", "Li2018", "Mullapudi2016"))
    assert "p90 1.50x" in line and "worst 4.00x" in line and "median 2.00x" in line
    assert "Li2018 1.25x" in line and "Adams2019" not in line
    assert contention.load_summary(quiet, {}, 1, ("Li2018",)) is None


def test_the_garbage_collector_rests_while_calls_are_timed():
    """A collection of the bench's heap at a random call would be that call's worst time."""
    from polyimage.commands.bench import measure_interleaved

    seen = []
    timings = measure_interleaved({"a": lambda: seen.append(gc.isenabled())}, 4)
    assert timings["a"]["runs"] and seen[0] and not any(seen[2:])  # warm-up, untimed, timed
    assert gc.isenabled()
