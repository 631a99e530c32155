"""`polyimage bench --dask`: apps run block by block on Dask against the floors that bound
them when the image lives on disk: reading the same Zarr alone, and copying it Zarr to Zarr
with the same chunks; with the whole-image call in memory beside them and the peak memory of
a Zarr-to-Zarr run."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from polyimage.algebra.evaluate import evaluate_scalar
from polyimage.apps import APP_NAMES, load_app
from polyimage.dsl import expr as E
from polyimage.errors import ArgumentError
from polyimage.graph import build_graph
from polyimage.grouping.machine import available_cores
from polyimage.scale.halo import SplitError

from .batch import compiled_app
from .bench import machine_record, measure_interleaved, write_run
from .cli_arguments import check_folder, parse_params
from .targets import describe, header, target_options

DASK_SIZE = 4096
DASK_CHUNK = 1024
VARIANTS = ("whole", "read", "apply", "copy", "apply-zarr")


def input_image(name: str):
    """The one input image of app `name`, or ArgumentError saying why it has none."""
    outputs, _ = load_app(name).build()
    images = build_graph(outputs).images
    if len(images) != 1:
        raise ArgumentError(f"--dask: {name} takes {len(images)} input images; it needs one")
    return images[0]


def dask_apps(names=()) -> list:
    """The apps with one input image (all of them when `names` is empty); an app named that
    has several is refused."""
    chosen = []
    for name in names or APP_NAMES:
        try:
            input_image(name)
        except ArgumentError:
            if names:
                raise
            continue
        chosen.append(name)
    return chosen


def write_input(folder, image, size: int, chunk: int) -> str:
    """A Zarr of random values laid out as `image` with every size parameter `size`, in chunks
    of `chunk` points along its sized dimensions (whole along the others, such as colour)."""
    import dask.array as da

    sized = {p.name: size for e in image.extents for p in E.free_symbols(e, E.Parameter)}
    shape = tuple(int(evaluate_scalar(e, sized)) for e in image.extents)
    chunks = tuple(
        chunk if E.free_symbols(e, E.Parameter) else n for e, n in zip(image.extents, shape)
    )
    rng = da.random.default_rng(0)
    dtype = image.typ.dtype
    if dtype.kind == "f":
        values = rng.random(shape, chunks=chunks).astype(dtype)
    else:
        values = rng.integers(0, np.iinfo(dtype).max, shape, chunks=chunks, endpoint=True)
        values = values.astype(dtype)
    path = os.path.join(folder, f"{image.name}.zarr")
    values.to_zarr(_fresh(path))
    return path


def _described(source: str) -> str:
    import zarr

    stored = zarr.open_array(source, mode="r")
    return f"{'x'.join(map(str, stored.shape))} {stored.dtype}"


def _fresh(path: str) -> str:
    shutil.rmtree(path, ignore_errors=True)
    return path


def app_calls(name: str, source: str, folder: str, chunk: int, threads: int) -> tuple:
    """({variant: call} for app `name` on its input image held in the Zarr `source`
    (VARIANTS), the Dask array of its output); SplitError when the app cannot run block by
    block."""
    import dask.array as da
    import zarr

    import polyimage.dask as pdask

    values = parse_params(load_app(name), ())
    pipe = compiled_app(name)
    image = input_image(name).name
    stored = zarr.open_array(source, mode="r")
    pdask.plan(pipe, **{image: stored}, **values)
    in_memory = {image: stored[...]}
    target = os.path.join(folder, "out.zarr")

    def output():
        lazy = pdask.open_image(source)
        return pdask.apply(pipe, chunks=chunk, threads=1, **{image: lazy}, **values)

    calls = {
        "whole": lambda: pipe(threads=threads, **in_memory, **values),
        "read": lambda: da.from_zarr(source).sum().compute(),
        "apply": lambda: output().sum().compute(),
        "copy": lambda: da.from_zarr(source).to_zarr(_fresh(target)),
        "apply-zarr": lambda: pdask.save_image(_fresh(target), output()),
    }
    return calls, output()


def block_bytes(output) -> int:
    """Bytes of the largest block of a Dask array."""
    return int(np.prod([max(sizes) for sizes in output.chunks])) * output.dtype.itemsize


def _memory_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise OSError(f"no {field} in /proc/self/status")


def _peak_child(name: str, source: str, folder: str, chunk: int, threads: int):
    """Bytes the Zarr-to-Zarr run of app `name` adds to the resident memory of a fresh process
    at its peak (Linux: the high-water mark is reset just before it), or None elsewhere."""
    import dask

    run = app_calls(name, source, folder, chunk, threads)[0]["apply-zarr"]
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current VmRSS
        before = _memory_kib("VmRSS")
    except OSError:
        return None
    with dask.config.set(scheduler="threads", num_workers=threads):
        run()
    return (_memory_kib("VmHWM") - before) * 1024


def peak_bytes(name: str, source: str, folder: str, chunk: int, threads: int):
    """_peak_child() in a process of its own, so that no earlier run's memory hides it."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_peak_child, (name, source, folder, chunk, threads))


def format_dask_table(results: dict) -> str:
    """The medians in ms, the ratios to the floors and the peak memory, one row per app. Where
    reading and computing share the cores, reading alone plus the whole-image call is the
    floor (both measured on every core)."""
    columns = (
        "app",
        "input",
        "whole call",
        "read alone",
        "apply (sum)",
        "/ read",
        "/ read+whole",
        "copy",
        "apply Zarr->Zarr",
        "/ copy",
        "peak MiB",
        "peak / block",
    )
    rows = [columns]
    for name, result in results.items():
        ms = {v: result[v]["median"] * 1e3 for v in VARIANTS}
        peak = result["peak_bytes"]
        rows.append(
            (
                name,
                result["input"],
                f"{ms['whole']:.1f}",
                f"{ms['read']:.1f}",
                f"{ms['apply']:.1f}",
                f"{ms['apply'] / ms['read']:.2f}",
                f"{ms['apply'] / (ms['read'] + ms['whole']):.2f}",
                f"{ms['copy']:.1f}",
                f"{ms['apply-zarr']:.1f}",
                f"{ms['apply-zarr'] / ms['copy']:.2f}",
                "-" if peak is None else f"{peak / 2**20:.0f}",
                "-" if peak is None else f"{peak / result['block_bytes']:.1f}",
            )
        )
    widths = [max(len(row[k]) for row in rows) for k in range(len(columns))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run_dask_bench(
    apps=(), size=DASK_SIZE, chunk=DASK_CHUNK, threads=None, runs=5, json_path=None, report=print
) -> dict:
    """Time the apps that take one input image (all that can run block by block by default) on
    a Zarr of random values holding it at size parameters `size`, block by block on Dask's
    threaded scheduler with `threads` workers of one OpenMP thread each, against reading the
    Zarr alone and copying it; print the table and write JSON when asked. Returns {app:
    {variant: timing, "peak_bytes", "block_bytes", "input"}}."""
    import dask

    from polyimage import dask as _  # noqa: F401  (names the extra to install when missing)

    if chunk > size:
        raise ArgumentError(f"--chunks {chunk} is larger than --dask-size {size}")
    if json_path:
        check_folder("--json", json_path)
    names = dask_apps(apps)
    workers = threads or available_cores()
    described = describe("native", target_options("native", {}), workers)
    report(header(described))
    report(
        f"each app's input image as a Zarr of random values, sizes {size}, chunks of {chunk}; "
        f"Dask's threaded scheduler, {workers} workers of 1 OpenMP thread each; the whole call "
        f"on {workers} threads"
    )
    results = {}
    with tempfile.TemporaryDirectory(prefix="polyimage-dask-") as folder:
        for name in names:
            report(f"{name}: writing its input, compiling and timing")
            source = write_input(folder, input_image(name), size, chunk)
            try:
                calls, output = app_calls(name, source, folder, chunk, workers)
            except SplitError as exc:
                if apps:
                    raise ArgumentError(f"--dask: {name} cannot run block by block: {exc}")
                report(f"{name}: left out, it cannot run block by block ({exc})")
                continue
            with dask.config.set(scheduler="threads", num_workers=workers):
                results[name] = measure_interleaved(calls, runs)
            results[name]["peak_bytes"] = peak_bytes(name, source, folder, chunk, workers)
            results[name]["block_bytes"] = block_bytes(output)
            results[name]["input"] = _described(source)
    report(format_dask_table(results))
    if json_path:
        document = {
            "machine": machine_record(described),
            "dask": {"size": size, "chunk": chunk, "workers": workers, "runs": runs},
            "apps": results,
        }
        write_run(json_path, document, report)
    return results
