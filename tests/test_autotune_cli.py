"""`polyimage tune` end to end: it writes the weights file that `compile` then reads, `--resume`
measures nothing again, and mistakes are one-line errors that lose no measurement."""

import json
import platform
import sys

import pytest

import polyimage
from polyimage.apps import unsharp_mask
from polyimage.autotune.tuning_report import plot_unavailable
from polyimage.commands.cli import main
from polyimage.config import Options
from polyimage.grouping.machine import cpu_model

TUNE = ["tune", "harris", "unsharp_mask", "--size", "small", "--budget", "60s"]
FAST = ["--runs", "3", "--samples", "4"]


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("POLYIMAGE_WEIGHTS", raising=False)
    monkeypatch.delenv("POLYIMAGE_WEIGHTS_FILE", raising=False)
    return tmp_path


def _lines(path):
    return path.read_text().splitlines()


def test_tune_writes_the_weights_file_compile_reads_and_resume_measures_nothing(
    private_cache, capsys, monkeypatch
):
    out = private_cache / "weights.json"
    store = private_cache / "weights.measurements.jsonl"
    plot = private_cache / "costs.png"
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    assert main(TUNE + FAST + ["--out", str(out), "--plot", str(plot)]) == 0
    printed = capsys.readouterr().out
    assert "--plot" in printed and "matplotlib is not installed" in printed
    assert not plot.exists()
    data = json.loads(out.read_text())
    assert set(data["pipelines"]) == {"harris 67x93", "unsharp_mask 67x93"}
    assert data["size"] == "small" and data["threads"] >= 1 and data["polyimage"]
    assert {"l1_bytes", "l2_bytes", "cores", "vector_bytes", "op_bytes"} <= set(data["machine"])
    assert data["target"] == {"cpu": cpu_model(), "march": Options.from_env().march}
    measured = _lines(store)
    # naive and greedy differ on both pipelines whatever the machine; how many of the model's
    # candidates are distinct (and under which label) depends on the host's caches and cores
    assert len(data["measurements"]) == len(measured) >= 4
    for pipeline in data["pipelines"]:
        schedules = {m["schedule"] for m in map(json.loads, measured) if m["pipeline"] == pipeline}
        assert len(schedules) >= 2, (pipeline, schedules)
    assert data["score"]["tuned"] <= data["score"]["defaults"]  # never worse, as measured
    assert all(row["best"] <= row["tuned"] for row in data["pipelines"].values())
    assert "held out" in printed and "tuned weights:" in printed

    monkeypatch.setenv("POLYIMAGE_WEIGHTS_FILE", str(out))
    outputs, _ = unsharp_mask.build()
    pipe = polyimage.compile(outputs, estimates=unsharp_mask.SMALL_SIZE)
    assert pipe.weights == polyimage.grouping.Weights(**data["weights"])
    assert f"(weights file {out})" in pipe.report()

    assert main(TUNE + FAST + ["--out", str(out), "--resume"]) == 0
    printed = capsys.readouterr().out
    assert "0 schedules measured in this run" in printed
    assert _lines(store) == measured
    assert json.loads(out.read_text())["weights"] == data["weights"]


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="an x86-64 target")
def test_tune_for_another_target_records_it_and_measures_apart(private_cache, capsys):
    out = private_cache / "avx2.json"
    arguments = ["tune", "harris", "--size", "small", "--budget", "30s", "--runs", "3"]
    assert main(arguments + ["--samples", "0", "--target", "avx2", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["target"] == {"cpu": cpu_model(), "march": "x86-64-v3"}
    assert data["machine"]["vector_bytes"] == 32
    stored = [json.loads(line) for line in _lines(private_cache / "avx2.measurements.jsonl")]
    assert stored and all("32-byte vectors" in m["machine"] for m in stored)
    assert main(["tune", "harris", "--target", "sse9"]) == 2
    assert "--target" in capsys.readouterr().err


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["tune", "sharpen"], "unknown app 'sharpen'"),
        (["tune", "harris", "--budget", "2s"], "--budget 2s is too small for one measurement"),
        (["tune", "harris", "--budget", "soon"], "--budget must be a duration"),
        (["tune", "harris", "--threads", "0"], "--threads: must be an integer >= 1"),
        (["tune", "harris", "--plot", "costs.gif"], "--plot costs.gif: give a .png, .svg, .pdf"),
    ],
)
def test_bad_arguments_are_one_line_errors(private_cache, capsys, arguments, message):
    assert main(arguments + ["--out", str(private_cache / "w.json")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (private_cache / "w.measurements.jsonl").exists()


def test_an_unwritable_output_is_refused_before_measuring(private_cache, capsys):
    blocker = private_cache / "file"
    blocker.write_text("")
    assert main(TUNE + ["--out", str(blocker / "w.json")]) == 2
    err = capsys.readouterr().err
    assert "weights file" in err and "cannot create its folder" in err
    assert len(err.strip().splitlines()) == 1


def test_a_corrupt_store_is_an_error_and_stays_as_it_was(private_cache, capsys):
    store = private_cache / "w.measurements.jsonl"
    store.write_text('{"pipeline": "harris 67x93", "sched\n')
    assert main(TUNE + ["--out", str(private_cache / "w.json"), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "is corrupt at line 1" in err and len(err.strip().splitlines()) == 1
    assert store.read_text() == '{"pipeline": "harris 67x93", "sched\n'
    assert not (private_cache / "w.json").exists()


def test_the_plot_note_names_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    note = plot_unavailable("costs.png")
    assert note.startswith("note: --plot costs.png is skipped: matplotlib is not installed")
    assert "polyimage[tune]" in note and "\n" not in note


def test_after_an_interruption_resume_keeps_what_was_measured(private_cache, capsys, monkeypatch):
    """Ctrl-C after the first result of the first batch: a one-line error, that result in the
    store; --resume then goes on without measuring it again."""
    from polyimage.autotune import tuner

    timed = tuner.time_interleaved

    def interrupted(calls, runs, on_done=None, best_known=None):
        label = next(iter(calls))
        on_done(label, timed({label: calls[label]}, 1)[label])
        raise KeyboardInterrupt

    out = private_cache / "w.json"
    store = private_cache / "w.measurements.jsonl"
    arguments = ["tune", "unsharp_mask", "--size", "small", "--budget", "60s", "--out", str(out)]
    monkeypatch.setattr(tuner, "time_interleaved", interrupted)
    assert main(arguments + FAST) == 2
    err = capsys.readouterr().err
    assert "interrupted; 1 measurement of this run kept in" in err and "--resume" in err
    first = _lines(store)
    assert len(first) == 1 and not out.exists()
    monkeypatch.setattr(tuner, "time_interleaved", timed)
    assert main(arguments + FAST + ["--resume"]) == 0
    later = _lines(store)
    assert later[0] == first[0]
    schedules = [json.loads(line)["schedule"] for line in later]
    assert len(schedules) == len(set(schedules))  # nothing measured twice
