"""Cost weights: compile argument, then POLYIMAGE_WEIGHTS, then the weights file, then defaults."""

import json
import warnings

import pytest
from helpers import pinned_options

import polyimage
from polyimage.apps import unsharp_mask
from polyimage.config import Options
from polyimage.grouping import Weights
from polyimage.grouping.machine import cpu_model
from polyimage.grouping.weights import (
    TARGET_KEY,
    foreign_weights,
    read_weights_file,
    resolve_weights,
    weights_from,
    write_weights_file,
)


def test_precedence(tmp_path):
    path = tmp_path / "weights.json"
    path.write_text(json.dumps({"overlap": 0.7}))
    env = {"POLYIMAGE_WEIGHTS_FILE": str(path), "POLYIMAGE_CACHE_DIR": str(tmp_path)}
    assert resolve_weights(None, Options.from_env(env)) == (
        Weights(overlap=0.7),
        f"weights file {path}",
    )
    env["POLYIMAGE_WEIGHTS"] = "live_data=2, spread=0"
    weights, origin = resolve_weights(None, Options.from_env(env))
    assert weights == Weights(live_data=2.0, spread=0.0) and origin == "POLYIMAGE_WEIGHTS"
    assert resolve_weights({"cleanup": 3}, Options.from_env(env)) == (
        Weights(cleanup=3.0),
        "compile argument",
    )
    del env["POLYIMAGE_WEIGHTS"]
    path.unlink()
    assert resolve_weights(None, Options.from_env(env)) == (Weights(), "defaults")


@pytest.mark.parametrize(
    "values, message",
    [
        ({"overlapp": 1}, "unknown weight 'overlapp'"),
        ({"overlap": -1}, "must be a number >= 0"),
        ({"overlap": "big"}, "must be a number >= 0"),
    ],
)
def test_bad_weights_are_errors(values, message):
    with pytest.raises(ValueError, match=message):
        weights_from(values, "test")


def test_bad_environment_text_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="POLYIMAGE_WEIGHTS: expected NAME=NUMBER"):
        Options.from_env({"POLYIMAGE_WEIGHTS": "overlap"})


def test_weights_steer_auto_and_the_report_says_where_they_came_from():
    outputs, _ = unsharp_mask.build()
    pinned = pinned_options()  # what auto fuses depends on the machine planned for
    fused = polyimage.compile(
        outputs, schedule="auto", estimates=unsharp_mask.PAPER_SIZE, options=pinned
    )
    assert len(fused.schedule.groups) == 1
    assert "(defaults)" in fused.report()
    # when recomputing is ruinous and moving data free, nothing is fused
    apart = polyimage.compile(
        outputs,
        schedule="auto",
        estimates=unsharp_mask.PAPER_SIZE,
        weights={"overlap": 1e6, "live_data": 0.0},
        options=pinned,
    )
    assert len(apart.schedule.groups) == 2
    assert "(compile argument)" in apart.report()


def test_only_cost_driven_schedules_read_the_weights_file(tmp_path, monkeypatch):
    path = tmp_path / "weights.json"
    path.write_text("{not json")
    monkeypatch.setenv("POLYIMAGE_WEIGHTS_FILE", str(path))
    outputs, _ = unsharp_mask.build()
    assert polyimage.compile(outputs, schedule="naive").weights is None
    with pytest.raises(ValueError, match=f"weights file {path}: not JSON"):
        polyimage.compile(outputs)


def test_the_tuners_weights_file_is_read_beside_its_metadata(tmp_path):
    path = tmp_path / "weights.json"
    write_weights_file(path, Weights(overlap=0.7, row_start=10.0), {"threads": 2, "size": "small"})
    data = json.loads(path.read_text())
    assert data["threads"] == 2 and data["weights"]["overlap"] == 0.7
    env = {"POLYIMAGE_WEIGHTS_FILE": str(path), "POLYIMAGE_CACHE_DIR": str(tmp_path)}
    assert resolve_weights(None, Options.from_env(env)) == (
        Weights(overlap=0.7, row_start=10.0),
        f"weights file {path}",
    )
    assert read_weights_file(path) == Weights(overlap=0.7, row_start=10.0)
    assert [p.name for p in tmp_path.iterdir()] == ["weights.json"]  # no partial file left
    path.write_text(json.dumps({"weights": {"overlap": -1}, "threads": 2}))
    with pytest.raises(ValueError, match=f"weights file {path}: weight overlap must be"):
        read_weights_file(path)


def test_weights_tuned_on_another_cpu_or_target_warn(tmp_path, monkeypatch):
    path = tmp_path / "weights.json"
    monkeypatch.setenv("POLYIMAGE_WEIGHTS_FILE", str(path))
    outputs, _ = unsharp_mask.build()
    here = {"cpu": cpu_model(), "march": Options.from_env().march}
    other = next(m for m in ("x86-64-v3", "x86-64-v2") if m != here["march"])
    for target, foreign in [
        (here, False),
        ({**here, "march": other}, True),
        ({**here, "cpu": "Some Other CPU 9000"}, True),
        (None, False),  # a file that records no target: nothing to compare
    ]:
        metadata = {TARGET_KEY: target} if target else {}
        write_weights_file(path, Weights(overlap=0.4), metadata)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pipe = polyimage.compile(outputs, estimates=unsharp_mask.SMALL_SIZE)
        said = [str(w.message) for w in caught if w.category is polyimage.WeightsWarning]
        assert pipe.weights == Weights(overlap=0.4)
        assert bool(said) == foreign, (target, said)
        if foreign:
            assert str(path) in said[0] and "polyimage tune" in said[0]
            assert (target["cpu"] in said[0]) and f"-march={target['march']}" in said[0]
    assert foreign_weights(tmp_path / "missing.json", cpu_model(), "native") == ""
