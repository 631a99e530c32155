"""`polyimage bench --dask`: the apps that take one large image, timed block by block against
reading the same Zarr alone and copying it, with the peak memory of a Zarr-to-Zarr run."""

import json
import sys

import pytest

pytest.importorskip("dask.distributed", reason="needs the dask extra: pip install polyimage[dask]")

from polyimage.commands.cli import main  # noqa: E402
from polyimage.commands.dask_bench import VARIANTS, dask_apps, run_dask_bench  # noqa: E402
from polyimage.errors import ArgumentError  # noqa: E402


def test_the_dask_bench_runs_only_apps_with_one_input_image():
    chosen = dask_apps()
    assert "unsharp_mask" in chosen and "local_laplacian" in chosen
    assert "pyramid_blend" not in chosen and "camera_pipe" not in chosen  # several inputs
    with pytest.raises(ArgumentError, match="pyramid_blend"):
        dask_apps(["pyramid_blend"])


def test_the_dask_bench_times_every_floor_and_the_peak_memory(tmp_path):
    lines = []
    path = tmp_path / "dask.json"
    results = run_dask_bench(
        ["unsharp_mask"], size=96, chunk=32, threads=2, runs=1, json_path=path, report=lines.append
    )
    timing = results["unsharp_mask"]
    assert all(timing[v]["median"] > 0 for v in VARIANTS)
    assert timing["block_bytes"] == 32 * 32 * 3 * 4  # an RGB float32 block
    if sys.platform.startswith("linux"):
        # the run holds at least one output block and the input windows of the workers
        assert timing["block_bytes"] <= timing["peak_bytes"] < 2**30
    table = lines[-2]
    assert "unsharp_mask" in table and "/ read" in table and "peak / block" in table
    assert "sizes 96, chunks of 32" in "\n".join(lines)
    assert timing["input"] == "3x100x100 float32"  # unsharp_mask's image is 3 x (R+4) x (C+4)
    saved = json.loads(path.read_text())
    assert saved["dask"] == {"size": 96, "chunk": 32, "workers": 2, "runs": 1}
    assert set(saved["apps"]["unsharp_mask"]) >= set(VARIANTS)
    assert saved["machine"]["cpu"]


@pytest.mark.parametrize(
    "argv, named",
    [
        (["--chunks", "64", "--dask-size", "32"], "--chunks"),
        (["--plot", "{tmp}/chart.svg"], "--plot"),
        (["--target", "avx2"], "--target"),
        (["--json", "{tmp}/no/such/dir/run.json"], "--json"),
        (["pyramid_blend"], "pyramid_blend"),
        (["histogram_equalize", "--dask-size", "64", "--chunks", "32"], "histogram_equalize"),
    ],
)
def test_a_dask_bench_it_cannot_run_is_one_line(argv, named, tmp_path, capsys):
    argv = ["bench", "--dask"] + [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and named in err[0], err


def test_without_the_dask_extra_the_command_says_what_to_install(monkeypatch, capsys):
    import polyimage

    monkeypatch.setitem(sys.modules, "zarr", None)  # import zarr fails as if not installed
    monkeypatch.delitem(sys.modules, "polyimage.dask", raising=False)
    monkeypatch.delattr(polyimage, "dask", raising=False)
    assert main(["bench", "--dask", "unsharp_mask"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install polyimage[dask]" in err[0], err
