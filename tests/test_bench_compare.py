"""The bench's fairness and bookkeeping: every app has its Halide version, the copy floor runs on
the pipelines' threads and copies what it should, page faults are counted, and a run prints
beside a saved one."""

import json

import numpy as np
import pytest

from polyimage.apps import APP_NAMES
from polyimage.apps.baselines.halide_runner import halide_version
from polyimage.commands.bench import (
    copy_floor,
    format_table,
    load_saved,
    measure,
    measure_interleaved,
)
from polyimage.errors import ArgumentError
from polyimage.grouping.machine import Machine


@pytest.mark.parametrize("name", APP_NAMES)
def test_every_app_has_a_halide_version(name):
    assert halide_version(name) is not None


@pytest.mark.parametrize("threads", [None, 1, 2, 3])
def test_copy_floor_copies_every_output_byte(threads):
    """On the default thread count (None: the CPUs this process may use) or a given one."""
    inputs = {"a": np.arange(1000, dtype=np.uint8)}
    outputs = [np.zeros(2500, np.uint8)]
    run = copy_floor(inputs, outputs, threads)
    run()
    assert run.source.nbytes == 1000 and run.target.nbytes == 2500
    np.testing.assert_array_equal(run.target, np.resize(run.source, 2500))


def test_measure_counts_page_faults_of_fresh_memory():
    """64 MiB is above glibc's largest mmap threshold (32 MiB), so every call maps fresh pages
    even after earlier tests freed large blocks (4 MiB then came from already faulted heap)."""
    size = 1 << 26
    fresh = measure(lambda: np.ones(size, np.uint8), 3)
    reused_buffer = np.empty(size, np.uint8)
    reused = measure(lambda: reused_buffer.fill(1), 3)
    assert fresh["faults"] > reused["faults"]


def test_variants_are_timed_in_shuffled_rounds():
    """Each round calls every variant once, in an order shuffled every round (the same in every
    run): a slow moment of the machine falls on all of them, and no variant always runs after
    the same one (whose leftovers in the caches would help or hurt it every time). An untimed
    round comes first."""
    order = []
    calls = {label: (lambda label=label: order.append(label)) for label in "abcd"}
    timings = measure_interleaved(calls, runs=8)
    assert order[:4] == ["a", "b", "c", "d"]  # warm-up
    rounds = [order[k : k + 4] for k in range(4, len(order), 4)]
    assert len(rounds) == 9  # an untimed round, to settle, then one per run
    assert all(sorted(r) == ["a", "b", "c", "d"] for r in rounds)
    before = {label: {r[r.index(label) - 1] for r in rounds if r[0] != label} for label in "abcd"}
    assert all(len(b) > 1 for b in before.values()), before
    again = []
    measure_interleaved({label: (lambda label=label: again.append(label)) for label in "abcd"}, 8)
    assert again == order
    assert set(timings) == set("abcd")
    assert all(
        len(t["runs"]) == 8 and t["min"] <= t["median"] <= t["max"] for t in timings.values()
    )


def _result(median):
    return {
        "size": {"R": 4, "C": 4},
        "timings": {"polyimage:auto": {"median": median, "min": median, "max": median}},
        "compile": {"cold": 1.0, "cached": 0.01},
    }


def test_compare_prints_the_saved_median_and_the_ratio(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"apps": {"harris": _result(0.010)}}))
    table = format_table(
        {"harris": _result(0.005), "unsharp_mask": _result(0.002)}, load_saved(path)
    )
    harris = next(line for line in table.splitlines() if "polyimage:auto" in line)
    assert "10.00" in harris and "0.50x" in harris
    unsharp = table.split("unsharp_mask")[1]
    assert " - " in unsharp  # no saved figure for this app


def test_compare_refuses_a_file_that_is_not_a_bench_run(tmp_path):
    path = tmp_path / "old.json"
    path.write_text("[1, 2]")
    with pytest.raises(ArgumentError, match="not a bench JSON file"):
        load_saved(path)


def test_machine_knows_the_last_level_cache():
    machine = Machine.detect()
    assert machine.llc_bytes >= machine.l2_bytes
    assert Machine.detect(llc_bytes=123).llc_bytes == 123
