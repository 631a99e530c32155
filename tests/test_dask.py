"""polyimage.dask.apply: block by block on Dask arrays, equal to the whole-image call (bit for
bit here: the same compiled code computes every point from the same points), with the halo
from the pipeline's access maps, windows moved by whole pyramid cells, unsplittable pipelines
refused before anything runs, Zarr in and out, and a clear message without Dask."""

import importlib
import re
import subprocess
import sys
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import zarr

import polyimage
import polyimage.dask as pdask
from polyimage import (
    Clamp,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Parameter,
    Reduce,
    Reduction,
    Variable,
)
from polyimage.apps import load_app
from polyimage.apps.inputs import bundled
from polyimage.io import load_image
from polyimage.scale.halo import SplitError

SPLIT_APPS = ("unsharp_mask", "harris", "bilateral_grid", "camera_pipe")


# the inputs' size for chunks of 3 (blocks of a few pixels: hundreds of them at SMALL_SIZE)
TINY_SIZE = {"R": 23, "C": 31}


@pytest.fixture(scope="module")
def apps():
    """apps(name, size=None): (pipeline, inputs at `size` (default SMALL_SIZE), parameters,
    whole-image output), each app compiled once."""
    compiled, found = {}, {}

    def get(name, size=None):
        if name not in compiled:
            app = load_app(name)
            outputs, _ = app.build()
            pipe = polyimage.compile(outputs, estimates=app.PAPER_SIZE, name=name)
            compiled[name] = app, pipe, [load_image(bundled(p)) for p in app.PHOTOS]
        app, pipe, photos = compiled[name]
        size = size or app.SMALL_SIZE
        key = (name, tuple(sorted(size.items())))
        if key not in found:
            arrays = app.prepare(photos, size)
            found[key] = (pipe, arrays, dict(app.DEFAULTS), pipe(**arrays, **app.DEFAULTS))
        return found[key]

    return get


def _chunked(arrays, size):
    """Dask arrays chunked `size` along every dimension longer than 4 (channels whole)."""
    return {
        k: da.from_array(v, chunks=tuple(s if s <= 4 else size for s in v.shape))
        for k, v in arrays.items()
    }


@pytest.mark.parametrize(
    "name, size",
    [(name, size) for name in SPLIT_APPS for size in (3, 13, 40)]
    + [("pyramid_blend", 13), ("pyramid_blend", 40)],
)
def test_apps_on_dask_equal_the_whole_image(apps, name, size):
    """Chunks smaller than the halo (3, on inputs of TINY_SIZE; 13 for pyramid_blend, whose
    halo is 28), ragged last chunks (3 divides neither 23 nor 31; 13 and 40 neither 67 nor
    93)."""
    pipe, arrays, params, whole = apps(name, TINY_SIZE if size == 3 else None)
    out = pdask.apply(pipe, **_chunked(arrays, size), **params)
    assert isinstance(out, da.Array) and out.shape == whole.shape and out.dtype == whole.dtype
    result = out.compute(scheduler="threads")
    np.testing.assert_array_equal(result, whole)
    if name in ("unsharp_mask", "harris") and size == 13:
        assert max(out.numblocks) > 1


@pytest.mark.parametrize("name, size", [("local_laplacian", 300), ("interpolate", 1100)])
def test_deep_pyramids_on_dask_equal_the_whole_image(name, size):
    """The deepest pyramids (alignment 128 and 512) on images of several blocks per axis,
    ragged at the end."""
    app = load_app(name)
    outputs, _ = app.build()
    pipe = polyimage.compile(outputs, estimates=app.PAPER_SIZE, name=name)
    photos = [load_image(bundled(p)) for p in app.PHOTOS]
    arrays = app.prepare(photos, {"R": size, "C": size + 17})
    whole = pipe(**arrays, **app.DEFAULTS)
    split = pdask.plan(pipe, **arrays, **app.DEFAULTS)
    alignment = {a.param: a.alignment for a in split.axes}
    out = pdask.apply(pipe, **_chunked(arrays, min(alignment.values())), **app.DEFAULTS)
    assert out.shape == whole.shape and min(out.numblocks[1:]) >= 2
    np.testing.assert_array_equal(out.compute(scheduler="threads"), whole)


def test_given_chunks_are_rounded_to_the_alignment(apps):
    """pyramid_blend's coarsest level is 1/8: blocks of 13 become 16, windows move by 8."""
    pipe, arrays, params, whole = apps("pyramid_blend")
    split = pdask.plan(pipe, **arrays)
    assert {a.param: a.alignment for a in split.axes} == {"R": 8, "C": 8}
    out = pdask.apply(pipe, chunks=13, **_chunked(arrays, 11), **params)
    rows, cols = out.chunks[1], out.chunks[2]
    assert set(rows[:-1]) == {16} and set(cols[:-1]) == {16}
    np.testing.assert_array_equal(out.compute(), whole)


def test_halo_comes_from_the_access_maps():
    """An asymmetric stencil (rows -1..+3, columns 0..+2) and a clamped one: the plan's reach
    into the input is exactly what the reads say."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 4, C + 2])
    f = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 0, C - 1)]), Float, "f")
    f.defn = [img(x - 1, y) + img(x + 3, y + 2)]
    g = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 0, C - 1)]), Float, "g")
    g.defn = [f(Clamp(x - 2, 1, R), y) * 2]
    pipe = polyimage.compile([g], estimates={R: 256, C: 256}, name="asymmetric")
    arr = np.random.default_rng(0).random((54, 47), dtype=np.float32)
    split = pdask.plan(pipe, img=arr)
    reach = {a.param: a.reaches["img"] for a in split.axes}
    assert (reach["R"].low, reach["R"].high) == (-3, 3)
    assert (reach["C"].low, reach["C"].high) == (0, 2)
    assert {a.param: a.alignment for a in split.axes} == {"R": 1, "C": 1}
    out = pdask.apply(pipe, img=da.from_array(arr, chunks=(5, 6)))
    np.testing.assert_array_equal(out.compute(), pipe(img=arr))


def test_clamped_borders_are_exact():
    """Output with the input's shape, borders by Clamp: exact at the true borders, wrong
    nowhere (each window clamps where the whole image does)."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R, C])
    blur = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Float, "blur")
    blur.defn = [
        sum(
            img(Clamp(x + dx, 0, R - 1), Clamp(y + dy, 0, C - 1))
            for dx in (-2, 0, 1)
            for dy in (-1, 0, 3)
        )
    ]
    pipe = polyimage.compile([blur], estimates={R: 512, C: 512}, name="clamped")
    arr = np.random.default_rng(1).random((37, 41), dtype=np.float32)
    for chunks in [(4, 5), (10, 41), (37, 7)]:
        out = pdask.apply(pipe, img=da.from_array(arr, chunks=chunks))
        np.testing.assert_array_equal(out.compute(), pipe(img=arr))


def _pipeline(kind):
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y, i = Variable(Int, "x"), Variable(Int, "y"), Variable(Int, "i")
    img = Image(Float, "img", [R, C])
    full = [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]
    out = Function(([x, y], full), Float, "out")
    if kind == "reduction":
        total = Reduction(([i], [Interval(Int, 0, 0)]), ([x, y], full), Float, "total")
        total.defn = [Reduce(total(0), img(x, y), polyimage.Op.Sum)]
        out.defn = [img(x, y) - total(0)]
    elif kind == "data-dependent":
        out.defn = [img(Clamp(polyimage.Cast(Int, img(x, y) * R), 0, R - 1), y)]
    elif kind == "position":
        out.defn = [polyimage.Case(y >= C - 3, img(x, y) * 2), img(x, y)]
    else:
        half = Function(
            ([x, y], [Interval(Int, 0, (R - 1) // 2), Interval(Int, 0, (C - 1) // 2)]),
            Float,
            "half",
        )
        half.defn = [img(2 * x, 2 * y)]
        out = half
    return polyimage.compile([out], estimates={R: 256, C: 256}, name=f"refused_{kind[:4]}")


@pytest.mark.parametrize(
    "kind, words",
    [
        ("reduction", "total is a Reduction over the whole image"),
        ("data-dependent", "data-dependent index"),
        ("half-size", "different grids"),
        ("position", "out tests its position along C"),
    ],
)
def test_unsplittable_pipelines_raise_before_computing(kind, words):
    pipe = _pipeline(kind)
    arr = da.from_array(np.random.default_rng(2).random((20, 24), dtype=np.float32), chunks=8)
    with pytest.raises(SplitError, match=words):
        pdask.apply(pipe, img=arr)


def test_histogram_equalize_raises(apps):
    app = load_app("histogram_equalize")
    outputs, _ = app.build()
    pipe = polyimage.compile(outputs, name="histogram_equalize", schedule="naive")
    arrays = app.prepare([load_image(bundled(app.PHOTOS[0]))], app.SMALL_SIZE)
    with pytest.raises(SplitError, match="cannot be split into chunks"):
        pdask.apply(pipe, **_chunked(arrays, 16))


def test_zarr_larger_than_a_block_is_streamed(apps, tmp_path):
    """A Zarr input on disk, many times a block, as a Dask array or read directly: each task
    reads only its block's window (the block grown by the halo), and the Zarr output equals
    the whole-image call."""
    pipe, _, params, _ = apps("unsharp_mask")
    rng = np.random.default_rng(3)
    arr = rng.random((3, 204, 260), dtype=np.float32)
    source = zarr.open_array(
        str(tmp_path / "in.zarr"), mode="w", shape=arr.shape, dtype=arr.dtype, chunks=(1, 32, 32)
    )
    source[:] = arr
    img = pdask.open_image(tmp_path / "in.zarr")
    assert img.chunks[0] == (1, 1, 1) and img.chunks[1][0] == 32  # channels assembled too
    out = pdask.apply(pipe, chunks=48, img=img, **params)
    direct = pdask.apply(pipe, chunks=48, img=source, **params)
    for result in (out, direct):
        windows = [
            shape
            for task in dict(result.__dask_graph__()).values()
            if isinstance(task, tuple) and len(task) > 2 and hasattr(task[2], "window_shapes")
            for shape in task[2].window_shapes()
        ]
        assert len(windows) == result.numblocks[1] * result.numblocks[2] > 16
        assert max(max(s[1], s[2]) for s in windows) <= 48 + 4
    pdask.save_image(tmp_path / "out.zarr", out)
    written = zarr.open_array(str(tmp_path / "out.zarr"), mode="r")[:]
    np.testing.assert_array_equal(written, pipe(img=arr, **params))
    np.testing.assert_array_equal(direct.compute(), written)


def test_missing_dask_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.delitem(sys.modules, "polyimage.dask")
    with pytest.raises(ImportError, match=r"pip install polyimage\[dask\]"):
        importlib.import_module("polyimage.dask")


def test_import_polyimage_does_not_import_dask():
    code = "import sys, polyimage; polyimage.compile; assert 'dask' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_windows_meet_the_pipelines_constraints():
    """Blocks of 8 rows, but every window is at least the 20 rows the constraints ask for."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 2, C + 2])
    f = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 1, C)]), Float, "f")
    f.defn = [img(x - 1, y) + img(x + 1, y + 1)]
    pipe = polyimage.compile(
        [f], estimates={R: 256, C: 256}, constraints=[R >= 20, C >= 20], name="constrained"
    )
    arr = np.random.default_rng(7).random((62, 52), dtype=np.float32)
    out = pdask.apply(pipe, img=da.from_array(arr, chunks=8))
    assert out.numblocks == (8, 7)
    np.testing.assert_array_equal(out.compute(), pipe(img=arr))


def test_docs_example_runs(apps, tmp_path, monkeypatch):
    """The docs' Dask example, with `pipe` the unsharp mask and scan.zarr a small image."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "dask.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    block = next(b for b in blocks if "polyimage.dask.apply" in b)
    pipe, _, params, _ = apps("unsharp_mask")
    arr = np.random.default_rng(9).random((3, 70, 90), dtype=np.float32)
    scan = zarr.open_array(str(tmp_path / "scan.zarr"), mode="w", shape=arr.shape, dtype=arr.dtype)
    scan[:] = arr
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "docs/dask.md", "exec"), {"pipe": pipe})
    written = zarr.open_array(str(tmp_path / "sharpened.zarr"), mode="r")[:]
    np.testing.assert_array_equal(written, pipe(img=arr, **params))


def test_several_outputs_give_a_tuple():
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 2, C + 2])
    inner = [Interval(Int, 1, R), Interval(Int, 1, C)]
    blur = Function(([x, y], inner), Float, "blur")
    blur.defn = [(img(x - 1, y) + img(x, y) + img(x + 1, y + 1)) / 3]
    detail = Function(([x, y], inner), Float, "detail")
    detail.defn = [img(x, y) - blur(x, y)]
    pipe = polyimage.compile([blur, detail], estimates={R: 256, C: 256}, name="two_outputs")
    arr = np.random.default_rng(10).random((33, 45), dtype=np.float32)
    out = pdask.apply(pipe, img=da.from_array(arr, chunks=(7, 9)))
    assert isinstance(out, tuple) and len(out) == 2 and out[0].numblocks == (5, 5)
    for got, expected in zip(out, pipe(img=arr)):
        np.testing.assert_array_equal(got.compute(), expected)
