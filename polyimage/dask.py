"""Compiled pipelines on Dask: images larger than memory, computed chunk by chunk.

`apply(pipe, img=dask_array, **params)` returns the output as a Dask array. Each block of the
output is computed by the compiled pipeline on a window of the inputs: the block grown by the
halo that the pipeline's own access maps give (polyimage.scale), moved by whole cells of its
coarsest level, and cut at the true borders of the image, so that the result equals the
whole-image call. `open_image` and `save_image` stream Zarr and TIFF files chunk by chunk.
Needs the `dask` extra: pip install polyimage[dask].
"""

from __future__ import annotations

import itertools
import operator
import os

import numpy as np

try:
    import dask
    import dask.array as da
    import tifffile
    import zarr
    from dask.highlevelgraph import HighLevelGraph
except ImportError as exc:  # the core works without them; this module does not
    from .errors import MissingExtraError

    raise MissingExtraError(
        f"polyimage.dask needs Dask, Zarr and tifffile ({exc.name} is missing): "
        f"pip install polyimage[dask]"
    ) from exc

from .config import is_count
from .errors import ArgumentError, ArgumentTypeError
from .graph.arguments import check_param, check_threads, derive_values
from .scale.halo import SplitError, split_plan
from .scale.windows import block_slices, block_window, stage_range, window_slices

__all__ = ["SplitError", "apply", "open_image", "plan", "save_image"]

ZARR_SUFFIXES = (".zarr",)
TIFF_SUFFIXES = (".tif", ".tiff")


def plan(pipe, **arguments):
    """How `apply` would split a call: its axes, the reach into every stage and the
    alignment, to see what a block reads before computing anything.

    Args:
        pipe: a compiled pipeline.
        **arguments: the images (Dask, Zarr or NumPy arrays) and Parameters by name, as
            for `apply`.

    Returns:
        The plan, whose `axes` give each split axis's reach and alignment.

    Raises:
        SplitError: the pipeline cannot be computed block by block (a scan along a split
            axis, say), and why.
    """
    images, values = _bind(pipe, arguments)
    return split_plan(pipe.stage_graph, pipe.constraints, values)


def apply(pipe, *, chunks=None, threads=None, **arguments):
    """The output of `pipe` on Dask arrays, computed block by block when Dask computes it;
    each block equals the same points of a whole-image call.

    Args:
        pipe: a compiled pipeline.
        chunks: output points per block along every split axis (an int, or a dict by size
            parameter); by default the blocks follow the chunks of the inputs. Block borders
            are rounded to multiples of the alignment the pipeline's scale factors need.
        threads: the OpenMP threads of each block's call (as in a call of the pipeline; 1
            when Dask runs several blocks at once on every core).
        **arguments: the images and Parameters by name, as in a call of the pipeline:
            Dask arrays; NumPy arrays are wrapped; Zarr arrays are read window by window in
            each block's task, with no task per input chunk.

    Returns:
        A Dask array, or a tuple of them in the outputs' order for several outputs.

    Raises:
        SplitError: the pipeline cannot be computed block by block, and why.
    """
    check_threads(threads)
    images, values = _bind(pipe, arguments)
    split = split_plan(pipe.stage_graph, pipe.constraints, values)
    params = {k: v for k, v in arguments.items() if k not in images}
    blocks = {a.param: _blocks(split, a, images, chunks) for a in split.axes}
    sources = [a.name if isinstance(a, da.Array) else id(a) for a in images.values()]
    token = dask.base.tokenize(pipe.name, id(pipe), sources, params, blocks, threads)
    layer, block_keys = _block_tasks(split, _Runner(pipe, threads), images, params, blocks, token)
    collections = [a for a in images.values() if isinstance(a, da.Array)]
    outputs = []
    for k, name in enumerate(split.graph.outputs):
        func, array_name = split.graph.stage(name).func, f"{name}-{token}"
        chunk_sizes = [(size,) for size in _extents(split, func)]
        for axis in split.axes:
            chunk_sizes[axis.output_dims[name]] = tuple(b - a + 1 for a, b in blocks[axis.param])
        for index, key in block_keys.items():
            position = [0] * len(chunk_sizes)
            for axis, i in zip(split.axes, index):
                position[axis.output_dims[name]] = i
            layer[(array_name, *position)] = (operator.getitem, key, k)
        dsk = HighLevelGraph.from_collections(array_name, layer, dependencies=collections)
        outputs.append(da.Array(dsk, array_name, tuple(chunk_sizes), dtype=func.typ.dtype))
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _block_tasks(split, runner, images, params, blocks, token) -> tuple:
    """({key: task} computing every block of the outputs, {block index: its key})."""
    windows = {
        a.param: [block_window(split, a, first, last) for first, last in blocks[a.param]]
        for a in split.axes
    }
    layer, block_keys = {}, {}
    for index in itertools.product(*(range(len(blocks[a.param])) for a in split.axes)):
        chosen = {a.param: windows[a.param][i] for a, i in zip(split.axes, index)}
        block = {a.param: blocks[a.param][i] for a, i in zip(split.axes, index)}
        assembled, read, keys = [], [], []
        for img in split.graph.images:
            array, window = images[img.name], window_slices(split, chosen, img)
            if isinstance(array, da.Array):
                parts = list(_pieces(array, window))
                shape = _window_shape(array, window)
                assembled.append((img.name, shape, [(a, b) for _, a, b in parts]))
                keys += [key for key, _, _ in parts]
            else:
                read.append((img.name, array, window))
        cuts = [block_slices(split, chosen, n, block) for n in split.graph.outputs]
        block_keys[index] = (f"polyimage-block-{token}", *index)
        recipe = _Block(assembled, read, cuts)
        layer[block_keys[index]] = (_run_block, runner, recipe, params, *keys)
    return layer, block_keys


def _extents(split, func) -> list:
    return [
        last - first + 1
        for first, last in (stage_range(func, d, split.values) for d in range(len(func.intervals)))
    ]


def _window_shape(array, window) -> tuple:
    return tuple(len(range(*w.indices(n))) for w, n in zip(window, array.shape))


def _pieces(array, window):
    """(input chunk key, part of the chunk, where it goes in the window) for every chunk of
    `array` that `window` (slices) overlaps."""
    per_dim = []
    for sizes, w, n in zip(array.chunks, window, array.shape):
        start, stop, _ = w.indices(n)
        edges = np.cumsum((0,) + sizes)
        found = []
        for i, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
            lo, hi = max(a, start), min(b, stop)
            if lo < hi:
                found.append((i, slice(lo - a, hi - a), slice(lo - start, hi - start)))
        per_dim.append(found)
    for combo in itertools.product(*per_dim):
        key = (array.name, *(i for i, _, _ in combo))
        yield key, tuple(s for _, s, _ in combo), tuple(d for _, _, d in combo)


class _Block:
    """What a block task needs besides the input chunks: the windows to assemble from chunks
    (image name, window shape, where each chunk's part goes), the windows to read from Zarr
    arrays (image name, array, slices), and where the block lies in each output."""

    def __init__(self, assembled, read, cuts):
        self.assembled, self.read, self.cuts = assembled, read, cuts

    def window_shapes(self) -> list:
        return [shape for _, shape, _ in self.assembled] + [
            _window_shape(array, window) for _, array, window in self.read
        ]


def _run_block(runner, recipe: _Block, params: dict, *chunks) -> tuple:
    """One block of every output: the windows assembled from input chunks or read from Zarr,
    the pipeline run on them, its outputs cut to the block."""
    pending, windows = iter(chunks), {}
    for name, shape, parts in recipe.assembled:
        for source, target in parts:
            chunk = next(pending)
            if name not in windows:
                windows[name] = np.empty(shape, chunk.dtype)
            windows[name][target] = chunk[source]
    for name, array, window in recipe.read:
        windows[name] = np.ascontiguousarray(array[window])
    result = runner(**windows, **params)
    results = result if isinstance(result, tuple) else (result,)
    return tuple(np.ascontiguousarray(r[cut]) for r, cut in zip(results, recipe.cuts))


def _bind(pipe, arguments) -> tuple:
    """({image name: Dask or Zarr array}, every parameter's value) of a call, checked as a
    call of the pipeline checks them."""
    graph = pipe.graph
    known = {img.name for img in graph.images} | {p.name for p in graph.parameters}
    unknown = sorted(set(arguments) - known)
    if unknown:
        raise ArgumentTypeError(f"unknown argument {unknown[0]!r} of {pipe.name}")
    images = {}
    for img in graph.images:
        array = arguments.get(img.name)
        if array is None:
            raise ArgumentTypeError(f"missing input image {img.name}")
        if not isinstance(array, (da.Array, zarr.Array)):
            array = da.from_array(np.asarray(array))
        if array.dtype != img.typ.dtype or array.ndim != len(img.extents):
            raise ArgumentTypeError(
                f"image {img.name} must be {img.typ.dtype} with {len(img.extents)} "
                f"dimension(s), got {array.dtype} {array.shape}"
            )
        images[img.name] = array
    params = {p.name: p for p in graph.parameters}
    given = {n: check_param(params[n], v) for n, v in arguments.items() if n in params}
    values, _, _ = derive_values(graph, params, images, given, pipe.constraints)
    return images, values


def _blocks(split, axis, images, chunks) -> list:
    """(first, last) output points of every block along `axis`."""
    output = split.graph.outputs[0]
    func = split.graph.stage(output).func
    start, end = stage_range(func, axis.output_dims[output], split.values)
    size = chunks.get(axis.param) if isinstance(chunks, dict) else chunks
    step = axis.alignment
    if size is not None:
        if not is_count(size):
            raise ArgumentError(f"chunks along {axis.param}: a positive integer, not {size!r}")
        size = -(-int(size) // step) * step
        borders = list(range(start, end + 1, size))
    else:
        name, dim = next((n, r.dim) for n, r in axis.reaches.items() if n in images)
        sizes = images[name].chunks[dim]  # a Zarr array's is one chunk size
        extent = images[name].shape[dim]
        cuts = range(sizes, extent, sizes) if isinstance(sizes, int) else np.cumsum(sizes)[:-1]
        borders = sorted({start} | {int(c) // step * step for c in cuts if start < c <= end})
    return [(b, e - 1) for b, e in zip(borders, borders[1:] + [end + 1])]


class _Runner:
    """The pipeline as a task argument: itself within a process; on another process, compiled
    again there from its outputs and compile options (the build cache makes that cheap)."""

    def __init__(self, pipe, threads=None):
        self.pipe, self.threads = pipe, threads

    def __reduce__(self):
        p = self.pipe
        outputs = [p.graph.stage(n).func for n in p.graph.outputs]
        recipe = (outputs, p.estimates, p.constraints, p.name, p.schedule, p.inlined != [])
        return (_recompiled, (recipe, self.threads))

    def __call__(self, **arguments):
        return self.pipe(threads=self.threads, **arguments)


def _recompiled(recipe, threads):
    from .driver.compiling import compile

    return _Runner(compile(*recipe), threads)


def open_image(path, chunks=None):
    """A Zarr array or TIFF file as a Dask array, read chunk by chunk when computed.

    Args:
        path: a `.zarr` folder or a `.tif`/`.tiff` file.
        chunks: the Dask chunks (an int, or a tuple of them per axis); by default the
            file's own.

    Returns:
        A Dask array of the file's shape and type.

    Raises:
        ArgumentError: the file does not exist, is of another kind, or `chunks` is not
            positive integers.
    """
    suffix = os.path.splitext(os.fspath(path).rstrip("/"))[1].lower()
    if chunks is not None and not all(
        map(is_count, chunks if isinstance(chunks, tuple) else (chunks,))
    ):
        raise ArgumentError(f"chunks must be a positive integer or a tuple of them, got {chunks!r}")
    if suffix in ZARR_SUFFIXES + TIFF_SUFFIXES and not os.path.exists(path):
        raise ArgumentError(f"path {os.fspath(path)!r}: no such file or folder")
    if suffix in ZARR_SUFFIXES:
        source = zarr.open_array(os.fspath(path), mode="r")
    elif suffix in TIFF_SUFFIXES:
        source = _TiffImage(os.fspath(path))
    else:
        raise ArgumentError(f"cannot stream {os.fspath(path)!r}: give a .zarr or .tif file")
    array = da.from_array(source, chunks=source.chunks, asarray=False)
    return array if chunks is None else array.rechunk(chunks)


class _TiffImage:
    """A TIFF file read region by region (through tifffile's Zarr view of its tiles or
    strips), opened anew by each read so that tasks on other processes can read it too."""

    def __init__(self, path: str):
        self.path = path
        with tifffile.imread(path, aszarr=True) as store:
            source = zarr.open_array(store, mode="r")
            self.shape, self.dtype, self.chunks = source.shape, source.dtype, source.chunks
        self.ndim = len(self.shape)

    def __getitem__(self, key):
        with tifffile.imread(self.path, aszarr=True) as store:
            return zarr.open_array(store, mode="r")[key]


class _TiffTarget:
    """An uncompressed TIFF file written region by region through a memory map opened by each
    write (so that tasks on other processes write the file, not a copy of it)."""

    def __init__(self, path: str):
        self.path = path

    def __setitem__(self, key, value):
        target = tifffile.memmap(self.path, mode="r+")
        target[key] = value
        target.flush()


def save_image(path, array, **compute) -> None:
    """Write a Dask array to a Zarr array or an uncompressed TIFF file, block by block.

    Args:
        path: a `.zarr` folder or a `.tif`/`.tiff` file, replaced if it exists.
        array: the Dask array to compute and write (`apply`'s output, say).
        **compute: passed to `dask.array.store` (`scheduler=`, say).

    Raises:
        ArgumentError: the path is of another kind.
    """
    suffix = os.path.splitext(os.fspath(path).rstrip("/"))[1].lower()
    if suffix in ZARR_SUFFIXES:
        target = zarr.open_array(
            os.fspath(path),
            mode="w",
            shape=array.shape,
            dtype=array.dtype,
            chunks=array.chunksize,
        )
        da.store(array.rechunk(target.chunks), target, lock=False, **compute)  # type: ignore[arg-type]  # any __setitem__
    elif suffix in TIFF_SUFFIXES:
        colour = array.ndim == 3 and array.shape[2] in (3, 4)  # HWC photos; the rest as planes
        photometric = "rgb" if colour else "minisblack"
        tifffile.memmap(
            os.fspath(path), shape=array.shape, dtype=array.dtype, photometric=photometric
        ).flush()
        da.store(array, _TiffTarget(os.fspath(path)), lock=False, **compute)  # type: ignore[arg-type]  # any __setitem__
    else:
        raise ArgumentError(f"cannot stream to {os.fspath(path)!r}: give a .zarr or .tif path")
