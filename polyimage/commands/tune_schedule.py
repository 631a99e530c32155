"""`polyimage tune-schedule APP|FILE.py:function`: the trial of `schedule="measured"` run ahead,
on random inputs of the estimates' sizes, with a progress bar on stderr; it prints each
candidate's time and the winner, and keeps the choice in the cache for later compiles."""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Callable, Iterator, Sequence, TextIO

import numpy as np

import polyimage
from polyimage.algebra.evaluate import Evaluator, scalar
from polyimage.errors import ArgumentError

from .cli_arguments import parse_estimates, pipeline_source, typed_values

if TYPE_CHECKING:
    from polyimage.driver.measured import MeasuredPipeline, ProgressCallback
    from polyimage.driver.trial import Trial
    from polyimage.graph.dag import StageGraph

SEED = 0


def tune_schedule(
    target: str,
    estimates: Sequence[str] | None = (),
    params: Sequence[str] = (),
    threads: int | None = None,
    force: bool = False,
    report: Callable[[str], None] = print,
    stream: TextIO | None = None,
) -> Trial:
    """Time the candidate schedules of `target` (an app, or FILE.py:function) compiled for its
    estimates (the app's paper size, then `estimates`, `K=V` texts) on random inputs of those
    sizes, on `threads` threads (None: a call's default), measuring again with `force` though
    a choice is kept; report the table and return the Trial."""
    outputs, defaults, app = pipeline_source(target)
    pipe = polyimage.compile(
        outputs,
        name=app.NAME if app is not None else None,
        estimates={**defaults, **parse_estimates(estimates)},
        schedule="measured",
    )
    trial = tune_on_random(pipe, app, params, threads, force, report, stream)
    report(trial.describe())
    return trial


def tune_on_random(
    pipe: MeasuredPipeline,
    app=None,
    params: Sequence[str] = (),
    threads: int | None = None,
    force: bool = False,
    report: Callable[[str], None] = print,
    stream: TextIO | None = None,
) -> Trial:
    """The Trial of `pipe` (compiled with schedule="measured") on random inputs of its
    estimates' sizes, the app's defaults and `params` (`K=V` texts): the choice kept for them,
    else the candidates timed with a progress bar on `stream` (default stderr)."""
    graph = pipe.graph
    given = typed_values({p.name: p for p in graph.parameters}, params)
    values = {**pipe.param_values, **(app.DEFAULTS if app is not None else {}), **given}
    arrays = random_inputs(graph, values)
    sizes = ", ".join(f"{name} {'x'.join(map(str, a.shape))}" for name, a in arrays.items())
    report(f"{pipe.name}: choosing among candidate schedules on random {sizes}")
    with progress_bar(stream or sys.stderr) as progress:
        return pipe.tune(threads=threads, force=force, progress=progress, **arrays, **values)


def settle_measured(pipe: object, app=None) -> None:
    """Let a pipeline compiled with schedule="measured" choose its winner on this machine
    before it is reported, drawn or exported: the choice kept for its estimates' sizes, else
    the candidates timed now on random inputs of those sizes. Other pipelines: nothing."""
    from polyimage.driver.measured import MeasuredPipeline

    if isinstance(pipe, MeasuredPipeline):
        tune_on_random(pipe, app, report=lambda text: None)


def random_inputs(graph: StageGraph, values: dict) -> dict:
    """{image name: random array} of each input image's shape at the parameter `values` and of
    its pixel type: floats in [0, 1), integers over their whole range."""
    evaluate = Evaluator({}, {}, values)
    rng = np.random.default_rng(SEED)
    arrays = {}
    for image in sorted(graph.images, key=lambda img: img.name):
        shape = tuple(scalar(evaluate, e) for e in image.extents)
        if min(shape, default=1) < 1:
            raise ArgumentError(
                f"image {image.name} has shape {shape} at these sizes: give --estimates that "
                f"make every extent positive"
            )
        dtype = np.dtype(image.typ.dtype)
        if dtype.kind == "f":
            arrays[image.name] = rng.random(shape).astype(dtype)
        else:
            info = np.iinfo(dtype)
            arrays[image.name] = rng.integers(info.min, info.max, shape, dtype, endpoint=True)
    return arrays


@contextlib.contextmanager
def progress_bar(stream: TextIO) -> Iterator[ProgressCallback]:
    """A progress callback (done, total, what) drawing a bar on `stream` while the trial runs,
    through tqdm where it is installed, else a line per step."""
    try:
        from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]  # no stubs
    except ImportError:

        def line(done: int, total: int, what: str) -> None:
            print(f"[{done}/{total}] {what}", file=stream, flush=True)

        yield line
        return
    bar = tqdm(total=1, unit="step", file=stream, dynamic_ncols=True, leave=False)

    def update(done: int, total: int, what: str) -> None:
        bar.total, bar.n = total, done
        bar.set_description_str(what[:50], refresh=False)
        bar.refresh()

    try:
        yield update
    finally:
        bar.close()
