"""`polyimage run` on Dask: a batch of photos into an output folder, and one image larger than
memory (a Zarr or TIFF file) chunk by chunk. Both need the `dask` extra.

A run is a batch when its output is a folder (one that exists, or a path ending in `/`): each
input photo is one task, its output `<folder>/<stem>.png`, written as soon as it is done; a
photo that fails is reported by name and the others go on. Batches run on a local cluster of
all cores, or on the Dask cluster at `--scheduler ADDRESS`; each worker process compiles the
app once. A run is a large-image run when `--chunks` is given, its input is a Zarr or TIFF
file, or its output a Zarr store: the input is read lazily, converted as the app's `prepare`
does (checked on a small sample), computed by `polyimage.dask.apply` block by block and
written as it goes (Zarr, TIFF) or at the end (a photo).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import time
from pathlib import Path

import numpy as np

import polyimage
from polyimage.algebra.affine import linear_form
from polyimage.algebra.evaluate import evaluate_scalar
from polyimage.apps import load_app
from polyimage.apps.inputs import bundled, to_float
from polyimage.config import is_count
from polyimage.dsl import expr as E
from polyimage.errors import ArgumentError, PolyimageError
from polyimage.graph import build_graph
from polyimage.io import save_image

from .cli_arguments import (
    check_output_path,
    load_input,
    note_bundled_photos,
    parse_params,
    resolve_schedule,
)

STREAMED = (".zarr", ".tif", ".tiff")
SCHEDULER_TIMEOUT_SECONDS = 10
BAR_WIDTH = 30


class BatchError(PolyimageError):
    """Some photos of a batch failed (each was reported by name)."""


def is_batch_output(output) -> bool:
    """Whether `-o` names a folder (but not a Zarr store): a batch."""
    text = os.fspath(output)
    if _suffix(text) == ".zarr":  # a Zarr store is a folder, and an output of its own
        return False
    return text.endswith(("/", os.sep)) or os.path.isdir(text)


def is_large_run(inputs, output, chunks) -> bool:
    """Whether the run streams one large image: `--chunks`, a Zarr input or output, or a TIFF
    input (a TIFF output alone is refused as a photo format, as before)."""
    return (
        chunks is not None
        or any(_suffix(p) in STREAMED for p in inputs)
        or (output is not None and _suffix(output) == ".zarr")
    )


def _suffix(path) -> str:
    return Path(os.fspath(path).rstrip("/")).suffix.lower()


@functools.lru_cache(maxsize=8)
def compiled_app(name: str, schedule=None):
    """The compiled pipeline of app `name`, once per process (batch tasks of a worker share it)."""
    app = load_app(name)
    outputs, _ = app.build()
    return polyimage.compile(
        outputs, name=name, schedule=resolve_schedule(app, schedule), estimates=app.PAPER_SIZE
    )


def process_photo(name: str, path: str, folder: str, values: dict, schedule, threads) -> tuple:
    """One photo of a batch: (output path, seconds the pipeline took), or (None, why it
    failed) for a photo that cannot be read or processed."""
    try:
        app = load_app(name)
        arrays = app.prepare([load_input(path)])
        pipe = compiled_app(name, schedule)
        start = time.perf_counter()
        result = pipe(threads=threads, **arrays, **values)
        seconds = time.perf_counter() - start
        target = os.path.join(folder, Path(path).stem + ".png")
        save_image(target, app.to_photo(result))
    except Exception as exc:  # reported by name; the rest of the batch goes on
        return None, _reason(exc)
    return target, seconds


def _one_photo_app(name: str, app, what: str) -> None:
    if len(app.PHOTOS) != 1:
        raise ArgumentError(
            f"{name} takes {len(app.PHOTOS)} photos per run; {what} needs an app that takes one"
        )


def _client(scheduler, threads):
    from distributed import Client, LocalCluster

    if logging.getLogger("polyimage").getEffectiveLevel() > logging.INFO:  # unless --verbose
        logging.getLogger("distributed").setLevel(logging.ERROR)
    if scheduler:
        import dask

        previous = dask.config.config.get("scheduler")
        try:
            return Client(scheduler, timeout=SCHEDULER_TIMEOUT_SECONDS)
        except (OSError, ValueError) as exc:  # unreachable, refused, or not an address
            # a Client that failed to connect has already made itself dask's default scheduler
            if previous is None:
                dask.config.config.pop("scheduler", None)
            else:
                dask.config.set(scheduler=previous)
            raise ArgumentError(f"--scheduler {scheduler}: {exc}") from None
    cores = os.cpu_count() or 1
    workers = max(1, cores // (threads or 1))
    cluster = LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    return Client(cluster)


def run_batch(
    name, inputs, folder, params=(), schedule=None, scheduler=None, threads=None, report=print
) -> dict:
    """Run app `name` on every photo of `inputs`, writing `<folder>/<stem>.png` for each;
    returns {photo: output path}. Failed photos are reported and raise BatchError at the end."""
    app = load_app(name)
    _one_photo_app(name, app, "a batch")
    if not inputs:
        raise ArgumentError("a batch needs input photos: polyimage run APP photos/*.jpg -o outdir/")
    values = parse_params(app, params)
    resolve_schedule(app, schedule)
    targets: dict = {}
    for path in inputs:
        stem = Path(path).stem
        if stem in targets:
            raise ArgumentError(f"{targets[stem]} and {path} would both write {stem}.png")
        targets[stem] = path
    parent = Path(os.fspath(folder)).resolve().parent
    if not parent.is_dir():
        raise ArgumentError(f"cannot write into {os.fspath(folder)!r}: {parent} does not exist")
    os.makedirs(folder, exist_ok=True)
    from distributed import as_completed

    # on the local cluster every core runs a worker: one OpenMP thread per photo unless told
    per_photo = threads if threads or scheduler else 1
    done, failed = {}, []
    with _client(scheduler, threads) as client:
        futures = {
            client.submit(
                process_photo,
                name,
                os.fspath(p),
                os.fspath(folder),
                values,
                schedule,
                per_photo,
                key=f"{name}-{i}-{Path(p).name}",
            ): os.fspath(p)
            for i, p in enumerate(inputs)
        }
        for count, future in enumerate(as_completed(futures), 1):
            path = futures[future]
            target, seconds = future.result()
            if target is not None:
                done[path] = target
                line = f"{path} -> {target} ({seconds * 1e3:.1f} ms)"
            else:
                failed.append(path)
                line = f"{path}: failed: {seconds}"
            report(f"{_bar(count, len(futures))} {line}")
    if failed:
        raise BatchError(f"{len(failed)} of {len(inputs)} photos failed: {', '.join(failed)}")
    return done


def _reason(exc) -> str:
    """The first line of an error's message."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _bar(count: int, total: int) -> str:
    filled = BAR_WIDTH * count // total
    return f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {count}/{total}"


def lazy_inputs(app, photo) -> dict:
    """{image name: Dask array} from a lazily read photo (HWC or HW): converted to the image's
    type and channels, laid out and edge-padded as the app's `prepare` does; refused when a
    small sample shows that `prepare` does something else."""
    import dask.array

    outputs, _ = app.build()
    images = build_graph(outputs).images
    if len(images) != 1:
        raise ArgumentError(f"{app.NAME} takes {len(images)} input arrays; large images need one")
    convert = functools.partial(_convert, images[0])
    rng = np.random.default_rng(0)
    shape = (13, 17) + tuple(photo.shape[2:])
    sample: np.ndarray
    if photo.dtype.kind in "ui":
        sample = rng.integers(0, np.iinfo(photo.dtype).max, shape, endpoint=True)
    else:
        sample = rng.random(shape)
    sample = sample.astype(photo.dtype)
    expected = app.prepare([sample])[images[0].name]
    got = convert(dask.array.from_array(sample)).compute()
    if got.shape != expected.shape or not np.array_equal(got, expected):
        raise ArgumentError(
            f"{app.NAME} has no large-image path: its inputs are not the photo converted and "
            f"edge-padded (run it on photos that fit in memory)"
        )
    return {images[0].name: convert(photo)}


def _convert(image, photo):
    """The photo as `image` lays it out: CHW (a constant first extent), HWC or grey HW."""
    import dask.array as da

    extents = image.extents
    constant = [not E.free_symbols(e, E.Parameter) for e in extents]
    channels = 1
    if len(extents) == 3:
        position = 0 if constant[0] else 2
        channels = int(evaluate_scalar(extents[position], {}))
    if image.typ.dtype.kind != "f":
        raise ArgumentError(f"large images need a float input; {image.name} is {image.typ}")
    photo = photo.rechunk({2: -1}) if photo.ndim == 3 else photo
    chunks = photo.chunks[:2] + ((channels,),)
    rgb = photo.map_blocks(
        lambda block: to_float(block, channels).astype(image.typ.dtype),
        dtype=image.typ.dtype,
        chunks=chunks,
        new_axis=2 if photo.ndim == 2 else None,
    )
    if len(extents) == 2:
        array = rgb[:, :, 0]
    elif constant[0]:
        array = rgb.transpose(2, 0, 1)
    else:
        array = rgb
    spatial = [d for d, c in enumerate(constant) if not c]
    pad = [(0, 0)] * array.ndim
    for d in spatial:
        border = _border(extents[d])
        pad[d] = (border, border)
    return da.pad(array, pad, mode="edge") if any(p != (0, 0) for p in pad) else array


def _border(extent) -> int:
    """Points added on each side for an extent `P + 2b` (0 for a plain `P`)."""
    form = linear_form(extent)
    if form is None or form[1] != 1 or form[2] % 2:
        raise ArgumentError(f"large images need extents P + 2b; got {extent}")
    return form[2] // 2


def run_large(
    name, inputs, output, chunks=None, params=(), schedule=None, scheduler=None, report=print
) -> dict:
    """Run app `name` on one image read lazily from `inputs` (a Zarr, a TIFF or a photo; the
    bundled photo when empty), block by block, writing `output` (Zarr or TIFF chunk by chunk,
    or a photo)."""
    import dask.array

    import polyimage.dask as pdask

    app = load_app(name)
    _one_photo_app(name, app, "a large-image run")
    if _suffix(output) not in STREAMED:
        check_output_path(output)
    elif not Path(os.fspath(output)).resolve().parent.is_dir():
        raise ArgumentError(f"cannot write {os.fspath(output)!r}: its folder does not exist")
    values = parse_params(app, params)
    source = inputs[0] if inputs else bundled(app.PHOTOS[0])
    if chunks is not None and not is_count(chunks):
        raise ArgumentError(f"--chunks must be a positive integer, got {chunks!r}")
    if _suffix(source) in STREAMED:
        photo = pdask.open_image(source)
    else:
        photo = dask.array.from_array(load_input(source), chunks=chunks or "auto")
    arrays = lazy_inputs(app, photo)
    pipe = compiled_app(name, schedule)
    result = pdask.apply(pipe, chunks=chunks, **arrays, **values)
    picture = app.to_photo(result)
    start = time.perf_counter()
    with _client(scheduler, None) if scheduler else contextlib.nullcontext():
        if not inputs:
            note_bundled_photos(name, app.PHOTOS[:1])
        if _suffix(output) in STREAMED:
            pdask.save_image(output, picture)
        else:
            save_image(output, np.asarray(picture))
    seconds = time.perf_counter() - start
    blocks = int(np.prod(result.numblocks))
    shape = "x".join(map(str, result.shape))
    report(f"{name}: {shape} in {blocks} blocks, {seconds:.2f} s; wrote {output}")
    return {"run": seconds, "blocks": blocks}
