"""The measurement store and the interleaved timing of `polyimage tune`."""

import time
from types import SimpleNamespace

import pytest

from polyimage import timing as measure
from polyimage.autotune.store import Measurement, MeasurementStore, TuneError, read_measurements
from polyimage.timing import GIVE_UP, MIN_RUNS, round_orders, time_interleaved


def _measurement(schedule="group 0: f [untiled]", seconds=0.5, threads=2):
    return Measurement("blur 64x64", schedule, "cpu X", threads, "naive", seconds, 5)


def test_each_measurement_is_on_disk_as_soon_as_it_is_made(tmp_path):
    path = tmp_path / "m.jsonl"
    store = MeasurementStore(path, resume=False)
    store.add(_measurement())
    assert read_measurements(path) == [_measurement()]  # before the store is closed
    store.add(_measurement("group 0: f [8x8]", None))
    store.close()
    assert [m.seconds for m in read_measurements(path)] == [0.5, None]


def test_resume_reuses_earlier_measurements_and_a_fresh_run_ignores_them(tmp_path):
    path = tmp_path / "m.jsonl"
    store = MeasurementStore(path, resume=False)
    store.add(_measurement())
    store.close()
    resumed = MeasurementStore(path, resume=True)
    assert resumed.resumed == 1
    assert resumed.get("blur 64x64", "group 0: f [untiled]", "cpu X", 2) == _measurement()
    assert resumed.get("blur 64x64", "group 0: f [untiled]", "cpu X", 1) is None  # threads
    resumed.close()
    fresh = MeasurementStore(path, resume=False)
    assert fresh.get("blur 64x64", "group 0: f [untiled]", "cpu X", 2) is None
    fresh.add(_measurement(seconds=0.25))
    fresh.close()
    # nothing is lost: the earlier line stays, the later one wins on resume
    assert len(read_measurements(path)) == 2
    again = MeasurementStore(path, resume=True)
    assert again.get("blur 64x64", "group 0: f [untiled]", "cpu X", 2).seconds == 0.25
    again.close()


@pytest.mark.parametrize("line", ['{"pipeline": "x"', '{"pipeline": "x"}', "[1, 2]"])
def test_a_corrupt_store_is_an_error_naming_the_line_and_left_alone(tmp_path, line):
    path = tmp_path / "m.jsonl"
    store = MeasurementStore(path, resume=False)
    store.add(_measurement())
    store.close()
    with open(path, "a") as fh:
        fh.write(line + "\n")
    before = path.read_bytes()
    with pytest.raises(TuneError, match=r"m.jsonl is corrupt at line 2"):
        MeasurementStore(path, resume=True)
    assert path.read_bytes() == before


def test_timing_interleaves_shuffles_and_stops_a_clearly_slower_candidate(monkeypatch):
    """The candidates advance a clock of their own (a busy machine stretches real sleeps
    unevenly, and a 5 ms sleep may take as long as a 50 ms one)."""
    order, now = [], [0.0]
    monkeypatch.setattr(measure, "time", SimpleNamespace(perf_counter=lambda: now[0]))

    def call(label, seconds):
        def fn():
            order.append(label)
            now[0] += seconds

        return fn

    runs = 8
    done = []
    timings = time_interleaved(
        {"a": call("a", 0.005), "b": call("b", 0.005), "slow": call("slow", 0.05)},
        runs,
        on_done=lambda label, t: done.append(label),
    )
    assert order[:3] == ["a", "b", "slow"]  # warm-up
    rounds = [order[k : k + 3] for k in range(3, 3 + 3 * MIN_RUNS, 3)]
    assert all(sorted(r) == ["a", "b", "slow"] for r in rounds)  # each once a round
    after_slow = order[3 + 3 * MIN_RUNS :]
    assert sorted(after_slow) == sorted(["a", "b"] * (runs - MIN_RUNS))
    next_order = round_orders()  # the bench's shuffled rounds, not a rotation
    assert rounds == [next_order(["a", "b", "slow"]) for _ in range(MIN_RUNS)]
    slow = timings["slow"]
    assert slow.stopped and slow.runs == MIN_RUNS and slow.seconds >= 0.05
    assert slow.seconds > GIVE_UP * timings["a"].seconds
    assert timings["a"].runs == timings["b"].runs == runs and not timings["a"].stopped
    assert done[0] == "slow" and sorted(done) == ["a", "b", "slow"]


def test_a_candidate_slower_than_the_best_known_stops_too():
    timings = time_interleaved({"slow": lambda: time.sleep(0.01)}, 6, best_known=1e-6)
    assert timings["slow"].stopped and timings["slow"].runs == MIN_RUNS
