"""Running an app from the command line: inputs, compile, time, check, save. Shared by all apps."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

import polyimage
from polyimage.apps import load_app
from polyimage.apps.inputs import bundled
from polyimage.errors import ArgumentError
from polyimage.io import load_image, save_image

from . import batch
from .cli_arguments import (
    check_folder,
    check_output_path,
    load_input,
    note_bundled_photos,
    parse_estimates,
    parse_params,
    pipeline_source,
    refuse_file_as_app,
    resolve_schedule,
)
from .timing import compile_timed, time_calls
from .tune_schedule import settle_measured
from .user_run import is_user_pipeline, run_user_pipeline


def run_app(
    name: str,
    inputs=(),
    output=None,
    params=(),
    threads=None,
    runs=3,
    check=False,
    report=print,
    schedule=None,
    profile=False,
    chunks=None,
    scheduler=None,
    contract=False,
) -> dict:
    """Compile app `name`, run it on photos (the bundled ones by default), save the result;
    with `profile`, also report the time of each group and stage; with `contract`, built with
    multiply-add contraction. Returns the timings in seconds. An output folder runs a batch;
    `chunks`, a Zarr or TIFF input or a Zarr output one large image block by block; both on
    Dask (commands/batch.py)."""
    on_dask = (output and batch.is_batch_output(output)) or batch.is_large_run(
        inputs, output, chunks
    )
    if contract and on_dask:
        raise ArgumentError("--contract runs one compile here: not a batch or a large image")
    # without --contract the build is as the options say (POLYIMAGE_CFLAGS may ask for it)
    contract = contract or None
    refuse_file_as_app(name)
    if is_user_pipeline(name):
        if on_dask:
            raise ArgumentError(f"{name}: batches and large images run the apps only")
        return run_user_pipeline(
            name, inputs, output, params, threads, runs, check, schedule, report, contract
        )
    if output and batch.is_batch_output(output):
        return batch.run_batch(name, inputs, output, params, schedule, scheduler, threads, report)
    if batch.is_large_run(inputs, output, chunks):
        if len(inputs) > 1 or not output:
            raise ArgumentError("a large-image run takes one INPUT (or none) and -o OUTPUT")
        return batch.run_large(name, inputs, output, chunks, params, schedule, scheduler, report)
    app = load_app(name)
    if output:
        check_output_path(output)
    values = parse_params(app, params)
    if inputs and len(inputs) != len(app.PHOTOS):
        raise ArgumentError(
            f"{name} takes {len(app.PHOTOS)} input photo(s), got {len(inputs)}; to run it on "
            f"each photo of a batch, give an output folder: -o outdir/"
        )
    photos = [load_input(p) for p in inputs] or [load_image(bundled(p)) for p in app.PHOTOS]
    arrays = app.prepare(photos)
    outputs, _ = app.build()
    chosen = resolve_schedule(app, schedule)
    if not inputs:
        note_bundled_photos(name, app.PHOTOS)
    pipe, compile_seconds = compile_timed(
        outputs,
        report,
        name=name,
        schedule=chosen,
        estimates=app.PAPER_SIZE,
        contract=contract,
    )
    result, median = time_calls(pipe, {**arrays, **values}, threads, runs, report)
    trial = getattr(pipe, "trial", None)  # schedule="measured": the first call chose
    if trial is not None:
        report(f"{name}: {trial.summary()}")
    if profile:
        report(str(pipe.profile(runs=runs, threads=threads, **arrays, **values)))
    if check:
        expected = app.reference(**arrays, **values)
        err = float(np.max(np.abs(result.astype(np.float64) - expected)))
        report(f"{name}: max abs difference from the NumPy reference {err:.3g}")
    if output:
        save_image(output, app.to_photo(result))
        report(f"{name}: wrote {output}")
    return {"compile": compile_seconds, "run": median}


def compile_target(target: str, schedule=None, estimates=(), inline=True, build=True):
    """`target` (an app, or FILE.py:function returning a user's outputs) compiled with its
    estimates (the app's paper size, then `estimates`, `K=V` texts) under `schedule`."""
    outputs, defaults, app = pipeline_source(target)
    chosen = resolve_schedule(app, schedule) if inline else "naive"
    pipe = polyimage.compile(
        outputs,
        name=app.NAME if app is not None else None,
        estimates={**defaults, **parse_estimates(estimates)},
        inline=inline,
        schedule=chosen,
        build=build or chosen == "measured",
    )
    settle_measured(pipe, app)
    return pipe


GRAPH_RENDERED = (".svg", ".png", ".pdf")


def draw_graph(
    name: str, output: str, report=print, schedule=None, estimates=(), as_written=False
) -> None:
    """Write the stage graph of `name` (an app or FILE.py:function) as Graphviz text, or
    render it with `dot`: as compiled under `schedule` (by default the one run and compile
    use), a box of its own colour per group; with `as_written`, the stages before inlining."""
    import subprocess

    from polyimage.graph import build_graph
    from polyimage.graph.dot import to_dot

    path = Path(output)
    dot = graphviz_dot(path)
    check_folder("-o", path)
    if as_written:
        if estimates:
            raise ArgumentError("--estimates plans the groups, which --as-written leaves out")
        outputs, _, app = pipeline_source(name)
        text = to_dot(build_graph(outputs), app.NAME if app is not None else "pipeline")
    else:
        text = compile_target(name, schedule, estimates, build=False).to_dot()
    if dot is None:
        path.write_text(text)
    else:
        subprocess.run(
            [dot, f"-T{path.suffix[1:].lower()}", "-o", str(path)],
            input=text,
            text=True,
            check=True,
        )
    report(f"{name}: wrote {path}")


def graphviz_dot(path: Path) -> str | None:
    """The `dot` program that renders a graph into `path`, None for Graphviz text (.dot);
    refuses, before any work, a format neither writes or a missing `dot`."""
    suffix = path.suffix.lower()
    if suffix == ".dot":
        return None
    if suffix not in GRAPH_RENDERED:
        raise ArgumentError(
            f"-o {path}: write Graphviz text (.dot) or a picture Graphviz's dot renders "
            f"({', '.join(GRAPH_RENDERED)})"
        )
    dot = shutil.which("dot")
    if dot is None:
        raise ArgumentError(
            f"-o {path}: rendering {suffix} needs Graphviz's `dot` program, not found on PATH: "
            "install the graphviz package (apt install graphviz, brew install graphviz, conda "
            f"install graphviz), or write -o {path.with_suffix('.dot')}, which needs no Graphviz"
        )
    return dot


def report_app(
    name: str, inline: bool = True, schedule=None, vectorization=False, estimates=()
) -> str:
    """`pipe.report()` of `name` (an app with its paper-size estimates, or FILE.py:function)."""
    return compile_target(name, schedule, estimates, inline).report(vectorization)


TABLE_LIMITS = (2, 4, 8)


def grouping_table(names=None, limits=TABLE_LIMITS, report=print) -> str:
    """The paper's Table 1 for our apps: stages as written and after inlining, the most
    successors of a stage, and per initial group limit the states the DP memoized, the groups
    it costed and the seconds it took (rounds over 2000 states search leading groups, as auto
    does)."""
    from polyimage.apps import APP_NAMES
    from polyimage.config import Options
    from polyimage.grouping import Machine
    from polyimage.grouping.auto import auto_schedule
    from polyimage.grouping.weights import resolve_weights

    machine = Machine.detect()
    weights, _ = resolve_weights(None, Options.from_env())
    heads = "".join(f"{'limit ' + str(l):>26}" for l in limits)
    lines = [
        f"{'app':<16}{'stages':>8}{'inlined':>8}{'succ':>6}{heads}",
        f"{'':<38}" + f"{'states / groups / s':>26}" * len(limits),
    ]
    for name in names or APP_NAMES:
        app = load_app(name)
        outputs, _ = app.build()
        pipe = polyimage.compile(outputs, name=name)
        graph = pipe.stage_graph
        successors = max(len(s.consumers) for s in graph.computed)
        cells = []
        for limit in limits:
            report(f"{name}: grouping with limit {limit or 'none'} ...")
            result = auto_schedule(graph, app.PAPER_SIZE, machine, weights, initial_limit=limit)
            s = result.stats
            cells.append(f"{s.states} / {s.groups_costed} / {s.seconds:.2f}")
        lines.append(
            f"{name:<16}{len(pipe.graph.computed):>8}{len(graph.computed):>8}"
            f"{successors:>6}" + "".join(f"{c:>26}" for c in cells)
        )
    return "\n".join(lines)
