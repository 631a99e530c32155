"""Batches and large images on a Dask cluster: a LocalCluster of two worker processes on
loopback runs a batch (a bad photo reported by name, the others written) and one large image
(the pipeline shipped to the workers and compiled there); `polyimage run` streams a Zarr image
and refuses what it cannot do in one line."""

import dask.array as da
import numpy as np
import pytest
import tifffile
import zarr
from distributed import Client, LocalCluster

import polyimage
import polyimage.dask as pdask
from polyimage.apps import load_app
from polyimage.commands.batch import BatchError, run_batch
from polyimage.commands.cli import main
from polyimage.io import load_image, save_image


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    ) as local:
        yield local


@pytest.fixture(scope="module")
def harris():
    app = load_app("harris")
    outputs, _ = app.build()
    return app, polyimage.compile(outputs, estimates=app.PAPER_SIZE, name="harris")


def _photos(folder, count):
    rng = np.random.default_rng(4)
    paths = []
    for i in range(count):
        paths.append(folder / f"photo{i}.png")
        save_image(paths[-1], rng.integers(0, 256, (30 + i, 41, 3)).astype(np.uint8))
    return paths


def test_batch_on_a_local_cluster(cluster, harris, tmp_path):
    app, pipe = harris
    photos = _photos(tmp_path, 3)
    bad = tmp_path / "broken.jpg"
    bad.write_text("not a photo")
    lines = []
    with pytest.raises(BatchError, match="1 of 4 photos failed: .*broken.jpg"):
        run_batch(
            "harris",
            [*photos, bad],
            tmp_path / "out",
            scheduler=cluster.scheduler_address,
            report=lines.append,
        )
    assert len(lines) == 4 and lines[-1].startswith("[" + "#" * 30 + "] 4/4")
    assert any("broken.jpg: failed: cannot read image" in line for line in lines)
    for path in photos:
        expected = tmp_path / f"expected_{path.stem}.png"
        save_image(expected, app.to_photo(pipe(**app.prepare([load_image(path)]))))
        written = load_image(tmp_path / "out" / f"{path.stem}.png")
        np.testing.assert_array_equal(written, load_image(expected))


def test_large_image_on_a_local_cluster(cluster, harris):
    app, pipe = harris
    arr = np.random.default_rng(5).random((90, 77), dtype=np.float32)
    out = pdask.apply(pipe, img=da.from_array(arr, chunks=(20, 30)))
    with Client(cluster) as client:
        result = client.compute(out).result()
    np.testing.assert_array_equal(result, pipe(img=arr))


def test_run_streams_a_zarr_image(tmp_path, capsys):
    app = load_app("unsharp_mask")
    photo = np.random.default_rng(6).integers(0, 256, (150, 170, 3)).astype(np.uint8)
    source = zarr.open_array(
        str(tmp_path / "big.zarr"), mode="w", shape=photo.shape, dtype=photo.dtype, chunks=64
    )
    source[:] = photo
    status = main(
        ["run", "unsharp_mask", str(tmp_path / "big.zarr"), "-o", str(tmp_path / "out.zarr")]
        + ["--chunks", "64"]
    )
    assert status == 0, capsys.readouterr().err
    assert "in 9 blocks" in capsys.readouterr().out
    outputs, _ = app.build()
    pipe = polyimage.compile(outputs, estimates=app.PAPER_SIZE, name="unsharp_mask")
    expected = app.to_photo(pipe(**app.prepare([photo]), **app.DEFAULTS))
    written = zarr.open_array(str(tmp_path / "out.zarr"), mode="r")[:]
    np.testing.assert_array_equal(written, expected)


def test_run_streams_a_tiff_on_the_cluster(cluster, tmp_path, capsys):
    """TIFF in and out, the blocks computed by the workers (which open the files by path):
    the same as the whole-image call; run twice, since the output then exists."""
    app = load_app("unsharp_mask")
    photo = np.random.default_rng(8).integers(0, 256, (130, 150, 3)).astype(np.uint8)
    tifffile.imwrite(tmp_path / "big.tif", photo, tile=(64, 64))
    outputs, _ = app.build()
    pipe = polyimage.compile(outputs, estimates=app.PAPER_SIZE, name="unsharp_mask")
    expected = app.to_photo(pipe(**app.prepare([photo]), **app.DEFAULTS))
    for output in ("out.tif", "out.zarr", "out.zarr"):
        command = ["run", "unsharp_mask", str(tmp_path / "big.tif"), "-o", str(tmp_path / output)]
        status = main(command + ["--chunks", "64", "--scheduler", cluster.scheduler_address])
        assert status == 0, capsys.readouterr().err
    np.testing.assert_array_equal(tifffile.imread(tmp_path / "out.tif"), expected)
    written = zarr.open_array(str(tmp_path / "out.zarr"), mode="r")[:]
    np.testing.assert_array_equal(written, expected)


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("polyimage: error: "), err
    return err[0]


def test_run_refuses_in_one_line(tmp_path, capsys):
    photos = [str(p) for p in _photos(tmp_path, 2)]
    assert main(["run", "pyramid_blend", *photos, "-o", str(tmp_path / "out") + "/"]) == 2
    assert "pyramid_blend takes 2 photos per run; a batch needs" in _error(capsys)
    assert main(["run", "harris", *photos, "-o", str(tmp_path / "one.png")]) == 2
    assert "give an output folder" in _error(capsys)
    assert main(["run", "interpolate", photos[0], "-o", str(tmp_path / "o.zarr")]) == 2
    assert "interpolate has no large-image path" in _error(capsys)
