"""Every option of every subcommand given a bad value (negative, zero, huge, not a number, a
missing or unwritable file): one line on stderr naming the option, exit status 2, no
traceback, and nothing run or written."""

import pytest

from polyimage.commands.cli import main

BAD = [
    # (argv, what the one line must name)
    (["run", "unsharp_mask", "--chunks", "-4", "-o", "{tmp}/x.zarr"], "--chunks"),
    (["run", "unsharp_mask", "--chunks", "0"], "--chunks"),
    (["run", "unsharp_mask", "--chunks", "many"], "--chunks"),
    (["run", "unsharp_mask", "--threads", "0"], "--threads"),
    (["run", "unsharp_mask", "--threads", "-2"], "--threads"),
    (["run", "unsharp_mask", "--threads", "1e3"], "--threads"),
    (["run", "unsharp_mask", "--runs", "0"], "--runs"),
    (["run", "unsharp_mask", "--runs", "abc"], "--runs"),
    (["run", "unsharp_mask", "--param", "weight"], "--param"),
    (["run", "unsharp_mask", "--param", "nope=3"], "--param"),
    (["run", "unsharp_mask", "--param", "weight=heavy"], "weight"),
    (["run", "unsharp_mask", "--schedule", "nosuch"], "--schedule"),
    (["run", "unsharp_mask", "--schedule", "{tmp}/missing.txt"], "--schedule"),
    (["run", "unsharp_mask", "-o", "{tmp}/out.gif"], "out.gif"),
    (["run", "unsharp_mask", "-o", "{tmp}/no/such/dir/out.png"], "out.png"),
    (["run", "unsharp_mask", "{tmp}/missing.png"], "missing.png"),
    (["run", "no_such_app"], "no_such_app"),
    (["bench", "--threads", "0"], "--threads"),
    (["bench", "--runs", "-1"], "--runs"),
    (["bench", "--size", "huge"], "--size"),
    (["bench", "--target", "sse9"], "--target"),
    (["bench", "--machine", "l2=big"], "--machine"),
    (["bench", "--machine", "l9=1M"], "--machine"),
    (["bench", "--compare", "{tmp}/missing.json", "unsharp_mask"], "missing.json"),
    (["bench", "no_such_app"], "no_such_app"),
    (["bench", "--plot", "{tmp}/chart.gif"], "--plot"),
    (["bench", "--plot", "{tmp}/no/such/dir/chart.svg"], "--plot"),
    (["bench", "--from", "{tmp}/run.json"], "--plot"),
    (["bench", "--plot", "{tmp}/chart.svg", "--from", "{tmp}/missing.json"], "missing.json"),
    (["bench", "--json", "{tmp}/no/such/dir/run.json", "unsharp_mask"], "--json"),
    (["bench", "--dask", "--dask-size", "0"], "--dask-size"),
    (["bench", "--dask", "--chunks", "-8"], "--chunks"),
    (["bench", "--dask", "--chunks", "x"], "--chunks"),
    (["export", "no_such_app", "-o", "{tmp}/lib"], "no_such_app"),
    (["export", "{tmp}/missing.py:make", "-o", "{tmp}/lib"], "missing.py"),
    (["export", "unsharp_mask"], "--output"),
    (["export", "unsharp_mask", "-o", "{tmp}/lib", "--estimates", "R=-3"], "--estimates"),
    (["export", "unsharp_mask", "-o", "{tmp}/lib", "--estimates", "R"], "--estimates"),
    (["export", "unsharp_mask", "-o", "{tmp}/lib", "--estimates", "Q=30"], "Q"),
    (["export", "unsharp_mask", "-o", "{tmp}/lib", "--name", "free"], "free"),
    (["export", "unsharp_mask", "-o", "{tmp}/lib", "--name", "9lives"], "9lives"),
    (["export", "unsharp_mask", "-o", "{tmp}/lib", "--march", "no cpu!"], "march"),
    (["export", "unsharp_mask", "-o", "{tmp}/lib", "--schedule", "nosuch"], "--schedule"),
    (["export", "unsharp_mask", "-o", "/dev/null/lib"], "/dev/null"),
    (["report", "no_such_app"], "no_such_app"),
    (["report", "unsharp_mask", "--schedule", "nosuch"], "--schedule"),
    (["report"], "--all"),
    (["graph", "unsharp_mask", "-o", "{tmp}/no/such/dir/g.dot"], "g.dot"),
    (["graph", "unsharp_mask"], "--output"),
    (["graph", "unsharp_mask", "-o", "{tmp}/g.dot", "--schedule", "nosuch"], "--schedule"),
    (["graph", "unsharp_mask", "-o", "{tmp}/g.txt"], "g.txt"),
    (["graph", "unsharp_mask", "-o", "{tmp}/g.dot", "--as-written", "--schedule", "naive"], "--as"),
    (["graph", "unsharp_mask", "-o", "{tmp}/g.dot", "--as-written", "--estimates", "R=9"], "--est"),
    (["cache", "empty"], "action"),
    (["calibrate", "--target", "sse9"], "--target"),
    (["tune", "--budget", "xyz"], "--budget"),
    (["tune", "--budget", "-5m"], "--budget"),
    (["tune", "--threads", "0"], "--threads"),
    (["tune", "--runs", "0"], "--runs"),
    (["tune", "--samples", "-1"], "--samples"),
    (["tune", "--samples", "x"], "--samples"),
    (["tune", "--seed", "-1"], "--seed"),
    (["tune", "--random", "-3"], "--random"),
    (["tune", "--size", "huge"], "--size"),
    (["tune", "--target", "sse9"], "--target"),
    (["tune", "no_such_app", "--budget", "1m"], "no_such_app"),
]


@pytest.mark.parametrize("argv, named", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_bad_value_is_one_line_naming_it(argv, named, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("POLYIMAGE_WEIGHTS_FILE", str(tmp_path / "weights.json"))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert named in lines[0] and "error" in lines[0], lines[0]
    assert "Traceback" not in captured.err + captured.out
    assert not (tmp_path / "weights.json").exists()
    assert not (tmp_path / "x.zarr").exists()


TUNE_BAD = [
    ({"threads": 0}, "--threads"),
    ({"threads": "x"}, "--threads"),
    ({"runs": 0}, "--runs"),
    ({"samples": -1}, "--samples"),
    ({"seed": -1}, "--seed"),
    ({"random_count": -2}, "--random"),
    ({"budget": "xyz"}, "--budget"),
    ({"size": "huge"}, "--size"),
    ({"march": 5}, "march"),
]


@pytest.mark.parametrize("bad, named", TUNE_BAD, ids=[str(b) for b, _ in TUNE_BAD])
def test_tune_refuses_bad_arguments_before_any_work(bad, named, tmp_path, monkeypatch):
    from polyimage import PolyimageError
    from polyimage.autotune.tuner import tune

    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(tmp_path / "cache"))
    reported = []
    arguments = {"budget": "1m", "size": "small", "out": tmp_path / "w.json", **bad}
    with pytest.raises(PolyimageError, match=named):
        tune(["unsharp_mask"], report=reported.append, **arguments)
    assert reported == [] and not (tmp_path / "cache").exists()


def test_dask_entry_points_refuse_bad_arguments_before_any_work(tmp_path):
    import numpy as np

    import polyimage
    from polyimage.apps import unsharp_mask

    pdask = pytest.importorskip("polyimage.dask", reason="needs the dask extra")
    outs, _ = unsharp_mask.build()
    pipe = polyimage.compile(outs, estimates={"R": 64, "C": 64})
    img = np.zeros((3, 20, 20), np.float32)
    for bad, named in (
        ({"chunks": -4}, "chunks"),
        ({"chunks": 0}, "chunks"),
        ({"chunks": "big"}, "chunks"),
        ({"chunks": {"R": -1}}, "chunks"),
        ({"threads": 0}, "threads"),
        ({"threads": "x"}, "threads"),
    ):
        with pytest.raises(polyimage.ArgumentError, match=named):
            pdask.apply(pipe, img=img, weight=3.0, threshold=0.001, **bad)
    with pytest.raises(polyimage.ArgumentError, match="chunks"):
        pdask.open_image(tmp_path / "missing.zarr", chunks=-4)
    with pytest.raises(polyimage.ArgumentError, match="missing.zarr"):
        pdask.open_image(tmp_path / "missing.zarr")
    with pytest.raises(polyimage.ArgumentError, match="photo.png"):
        pdask.open_image(tmp_path / "photo.png")


def test_a_scheduler_that_is_no_address_is_named(tmp_path, capsys, monkeypatch):
    pytest.importorskip("distributed", reason="needs the dask extra")
    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(tmp_path / "cache"))
    argv = ["run", "unsharp_mask", "--scheduler", "no address", "-o", str(tmp_path / "o.zarr")]
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "--scheduler no address" in lines[0]
    assert not (tmp_path / "o.zarr").exists()
    import dask

    assert dask.config.get("scheduler", None) is None, "a failed --scheduler left dask's default"
