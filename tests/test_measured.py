"""schedule="measured": the first call times the candidates and runs the fastest, each candidate
computing what the interpreter does; the choice is kept in the cache folder, found by a compile
in another process without timing, and measured again (the file replaced) when it is damaged;
`polyimage tune-schedule` runs the same trial, and the bench times it beside auto. No test
assumes which candidate wins, nor the cores, caches or vector width of the machine."""

import json
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from helpers import child_env
from oracle import assert_calls_match

import polyimage
from polyimage import Float, Function, GroupSchedule, Image, Int, Interval, Parameter, Variable
from polyimage.commands import bench
from polyimage.commands.cli import main
from polyimage.driver.measured import (
    DOUBLED,
    HALVED,
    NAMED,
    MeasuredPipeline,
    scaled_group,
    tile_variants,
)
from polyimage.driver.record import compiler_digest
from polyimage.driver.trial import load_trial, store_path

TESTS = Path(__file__).resolve().parent
ESTIMATES = {"R": 45, "C": 61}  # odd sizes: no tile divides them
CANDIDATES = {*NAMED, HALVED, DOUBLED}


def build():
    """The outputs of three stages: a blur along x, one along y, and a sharpening that reads
    the image and the blur (blury is inlined into it)."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 2, C + 2])
    rows, cols = Interval(Int, 1, R), Interval(Int, 1, C)
    blurx = Function(([x, y], [rows, Interval(Int, 0, C + 1)]), Float, "blurx")
    blurx.defn = [(img(x - 1, y) + img(x, y) * 2 + img(x + 1, y)) * 0.25]
    blury = Function(([x, y], [rows, cols]), Float, "blury")
    blury.defn = [(blurx(x, y - 1) + blurx(x, y) * 2 + blurx(x, y + 1)) * 0.25]
    sharp = Function(([x, y], [rows, cols]), Float, "sharp")
    sharp.defn = [img(x, y) * 2 - blury(x, y)]
    return [sharp]


def image(rows: int, cols: int, seed: int = 0) -> np.ndarray:
    """A random input for R=rows, C=cols (with its one-pixel border)."""
    return np.random.default_rng(seed).random((rows + 2, cols + 2), dtype=np.float32)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A cache folder of this module's own, for its compiles and choices."""
    folder = tmp_path_factory.mktemp("measured-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POLYIMAGE_CACHE_DIR", str(folder))
        yield folder


@pytest.fixture(scope="module")
def measured(cache):
    """(the pipeline after its first call, that call's image and result)."""
    pipe = polyimage.compile(build(), estimates=ESTIMATES, schedule="measured")
    assert isinstance(pipe, MeasuredPipeline) and pipe.trial is None
    assert "not measured yet" in repr(pipe)
    img = image(ESTIMATES["R"], ESTIMATES["C"])
    return pipe, img, pipe(img=img)


def test_the_winner_is_a_candidate_and_every_candidate_computes_the_same(measured):
    pipe, img, result = measured
    trial = pipe.trial
    assert not trial.from_store and Path(trial.path).is_file()
    assert set(trial.schedules) <= CANDIDATES and set(NAMED) <= set(trial.schedules)
    assert trial.winner in trial.medians and "auto" in trial.medians
    assert set(trial.medians) | set(trial.same_as) == set(trial.schedules)
    assert all(3 <= trial.calls[label] <= 7 for label in trial.medians)
    assert str(pipe.schedule) == trial.schedules[trial.winner]
    expected = polyimage.interpret(build(), img=img)
    results = {}
    for label, candidate in pipe.candidates.items():
        assert str(candidate.schedule) == trial.schedules[label]
        assert_calls_match(candidate, expected, {"img": img}, label, exact=True)
        results[label] = candidate(img=img)
    assert set(trial.medians) <= set(results)
    for label, got in results.items():
        assert got.tobytes() == result.tobytes(), f"{label} differs from the winner"


def test_the_report_says_who_won_by_how_much_and_from_where(measured):
    pipe, _, _ = measured
    trial, report = pipe.trial, pipe.report()
    assert report.startswith("measured schedule: ") and "(timed now)" in report
    won = "auto won" if trial.winner == "auto" else f"{trial.winner} won, {trial.speedup:.2f}x"
    assert won in report.splitlines()[0]
    for label, median in trial.medians.items():
        assert f"{median * 1e3:.3f}" in report, label
    assert "<- chosen" in report and f"kept in {trial.path}" in report
    assert "pipeline sharp:" in report  # then the winner's own report
    assert trial.winner in repr(pipe)


def test_a_compile_in_another_process_runs_the_kept_choice_without_timing(measured, cache):
    pipe, _, _ = measured
    script = (
        f"import sys, json; sys.path.insert(0, {str(TESTS)!r})\n"
        "import polyimage\n"
        "from polyimage.driver.record import compiler_digest\n"
        "from test_measured import ESTIMATES, build, image\n"
        "pipe = polyimage.compile(build(), estimates=ESTIMATES, schedule='measured')\n"
        "pipe(img=image(ESTIMATES['R'], ESTIMATES['C'], seed=1))\n"
        "print(json.dumps({'from_store': pipe.trial.from_store, 'winner': pipe.trial.winner,\n"
        "                  'compiled': sorted(pipe.candidates), 'report': pipe.report(),\n"
        "                  'compiler': compiler_digest()}))\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script], env=child_env(cache), capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    seen = json.loads(ran.stdout.splitlines()[-1])
    if seen["compiler"] != compiler_digest():
        pytest.skip("polyimage's source changed while the test ran (a new compile key)")
    kept = load_trial(Path(pipe.trial.path))
    assert seen["from_store"] and seen["winner"] == kept.winner
    assert seen["compiled"] == [kept.winner]  # no other candidate compiled, none timed
    assert "from the store, measured " in seen["report"].splitlines()[0]


@pytest.mark.parametrize(
    "damage",
    ["\x00\x17not json", '{"format": 1}', '{"format": 1, "winner": "auto", "schedules": []}'],
)
def test_a_damaged_choice_is_ignored_and_measured_again(measured, damage):
    path = Path(measured[0].trial.path)
    path.write_text(damage)
    pipe = polyimage.compile(build(), estimates=ESTIMATES, schedule="measured")
    img = image(ESTIMATES["R"], ESTIMATES["C"])
    with pytest.warns(polyimage.CacheWarning, match="cannot be read"):
        assert pipe(img=img).tobytes() == measured[2].tobytes()
    assert not pipe.trial.from_store and pipe.trial.path == str(path)
    healed = load_trial(path)
    assert healed is not None and healed.winner == pipe.trial.winner
    again = polyimage.compile(build(), estimates=ESTIMATES, schedule="measured")
    again(img=img)
    assert again.trial.from_store


def test_the_shapes_threads_and_compile_key_the_choice(measured):
    options = measured[0].options
    small, large = {"img": image(9, 11)}, {"img": image(9, 12)}
    sizes, larger = {"R": 9, "C": 11, "gain": 2.5}, {"R": 9, "C": 12, "gain": 2.5}
    paths = {
        store_path(options, "key", small, sizes, 0),
        store_path(options, "key", large, larger, 0),
        store_path(options, "key", small, sizes, 1),
        store_path(options, "other key", small, sizes, 0),
    }
    assert len(paths) == 4
    same = store_path(options, "key", {"img": image(9, 11, seed=3)}, {**sizes, "gain": 0.5}, 0)
    assert same == store_path(options, "key", small, sizes, 0)


def test_tile_variants_halve_and_double_the_outer_tiled_dimension(cache):
    given = polyimage.compile(
        build(), estimates=ESTIMATES, schedule="group 0: blurx, sharp [8x16]", build=False
    )
    variants = {label: str(s) for label, s in tile_variants(given.compiled).items()}
    assert variants == {
        HALVED: "group 0: blurx, sharp [4x16]",
        DOUBLED: "group 0: blurx, sharp [16x16]",
    }


def test_scaled_group_keeps_whole_and_single_point_dimensions():
    two_levels = GroupSchedule(("a",), ((3, 64, 512), (1, 8, 256)))
    assert scaled_group(two_levels, (3, 100, 1000), (), 0.5).tile_sizes == (
        (3, 32, 512),
        (1, 8, 256),
    )
    assert scaled_group(two_levels, (3, 100, 1000), (), 2.0).tile_sizes == (
        (3, 100, 512),
        (1, 8, 256),
    )
    assert scaled_group(two_levels, (3, 100, 1000), (1,), 0.5).tile_sizes[0] == (3, 64, 256)
    whole = GroupSchedule(("a",), ((1, 100),))
    assert scaled_group(whole, (3, 100), (), 0.5).tile_sizes == ((1, 50),)
    assert scaled_group(whole, (3, 100), (), 2.0) == whole
    untiled = GroupSchedule(("a", "b"))
    assert scaled_group(untiled, (), (), 2.0) == untiled


def test_measured_refuses_background_and_build_false():
    for refused in ({"background": True}, {"build": False}):
        with pytest.raises(polyimage.ArgumentError, match="measured"):
            polyimage.compile(build(), schedule="measured", **refused)


def test_tune_schedule_prints_the_candidates_and_keeps_the_winner(measured, tmp_path, capsys):
    mine = tmp_path / "mine.py"
    mine.write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\nfrom test_measured import build\n"
    )
    command = ["tune-schedule", f"{mine}:build", "--estimates", "R=45,C=61", "--threads", "1"]
    assert main(command) == 0
    first = capsys.readouterr()
    assert "img 47x63" in first.out and "(timed now)" in first.out and "<- chosen" in first.out
    winner = next(line.split()[0] for line in first.out.splitlines() if "<- chosen" in line)
    assert winner in CANDIDATES and f"measured schedule: {winner} won" in first.out
    assert main(command) == 0
    assert "from the store" in capsys.readouterr().out
    assert main(command + ["--force"]) == 0
    assert "(timed now)" in capsys.readouterr().out


def test_report_graph_and_export_take_the_measured_winner(measured, tmp_path, capsys):
    """`--schedule measured` on the command line: the choice kept for the estimates' sizes,
    else timed there and then; an export for another CPU is refused (the timing runs here)."""
    mine = tmp_path / "mine.py"
    mine.write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\nfrom test_measured import build\n"
    )
    target = [f"{mine}:build", "--estimates", "R=45,C=61", "--schedule", "measured"]
    assert main(["report", *target]) == 0
    first = capsys.readouterr().out
    assert "measured schedule:" in first and "<- chosen" in first
    assert "schedule:\n  group 0" in first
    assert main(["report", *target]) == 0
    assert "from the store" in capsys.readouterr().out
    assert main(["graph", *target, "-o", str(tmp_path / "g.dot")]) == 0
    assert "group 0" in (tmp_path / "g.dot").read_text()
    assert main(["export", *target, "-o", str(tmp_path / "lib"), "--target", "avx2"]) == 2
    assert "--target native" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, named",
    [
        (["unsharp_mask", "--threads", "0"], "--threads"),
        (["unsharp_mask", "--estimates", "R=-3"], "--estimates"),
        (["unsharp_mask", "--param", "nope=3"], "--param"),
        (["no_such_app"], "no_such_app"),
    ],
)
def test_tune_schedule_refuses_a_bad_value_in_one_line(argv, named, capsys):
    assert main(["tune-schedule", *argv]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and named in said[0]


def test_the_bench_times_measured_beside_auto(measured, monkeypatch):
    """The bench on an app made of this module's pipeline, at the sizes the fixture measured:
    its candidates are compiled and its choice kept already."""
    app = types.SimpleNamespace(
        PHOTOS=(),
        SMALL_SIZE=ESTIMATES,
        DEFAULTS={},
        build=lambda: (build(), {}),
        prepare=lambda photos, dims: {"img": image(dims["R"], dims["C"])},
        reference=lambda img: polyimage.interpret(build(), img=img),
    )
    monkeypatch.setattr(bench, "load_app", lambda name: app)
    monkeypatch.setattr(bench, "app_schedules", lambda app: {"auto": "auto"})
    monkeypatch.setattr(bench, "compile_times", lambda *a, **k: {"cold": 0, "cached": 0})
    monkeypatch.setattr(bench, "halide_variants", lambda *a, **k: {})
    heard = []
    result = bench.bench_app("sharp", "small", None, 1, report=heard.append)
    assert {"polyimage:auto", "polyimage:measured"} <= set(result["timings"])
    kept = load_trial(Path(measured[0].trial.path))
    said = f"sharp: measured schedule: {kept.winner} won"
    assert any(said in line and "(from the store" in line for line in heard), heard
