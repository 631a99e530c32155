"""`compile()`: one function, `compiled_pipeline`, lists every step of a compile in order,
each timed (`pass_seconds`), logged at DEBUG and, with a dump folder, written out (dump.py):
the request resolved, the record from the cache (record.py) or the passes (lower.py), the
build, the record saved; `compile` itself only chooses the kind of pipeline (plain,
background, measured)."""

from __future__ import annotations

import dataclasses
import functools
import logging
import warnings
from typing import TYPE_CHECKING, Literal, Mapping, Sequence, Union, overload

from ..config import Options
from ..errors import ArgumentError, EstimateWarning
from ..graph.dag import build_graph
from ..grouping.cost import unpriced_scalar
from ..jit.build import build
from ..tools.dump import Dump, passes_text
from .background import BackgroundPipeline
from .lower import Compiled, run_passes
from .measured import MeasuredPipeline
from .pipeline import Pipeline, listing
from .record import compile_key, load_compiled, save_compiled
from .request import (
    DEFAULT_ESTIMATE,
    PROGRESS_AFTER_SECONDS,
    PROGRESS_MIN_PASS_SECONDS,
    Asked,
    PassTimer,
    check_constraints,
    check_estimates,
    pipeline_name,
    resolve_request,
)

if TYPE_CHECKING:
    import os

    from ..dsl.constructs import Function
    from ..dsl.expr import BoolExpr, Parameter
    from ..grouping.cost import Weights
    from ..jit.build import Kernel
    from ..schedule.plan import Schedule

log = logging.getLogger("polyimage")

# what compile() takes: the outputs, estimates by Parameter (or its name), the schedule (a name
# such as "auto", a Schedule, or its text or JSON form) and cost weights (or some of them)
Outputs = Union["Function", Sequence["Function"]]
Estimates = Union[
    Mapping["Parameter", float], Mapping[str, float], Mapping[Union["Parameter", str], float]
]
ScheduleLike = Union[str, "Schedule"]
WeightsLike = Union["Weights", Mapping[str, float]]


# schedule="measured" returns a MeasuredPipeline, which acts as a Pipeline: the overlap with
# the next overload (any schedule text) is the one of a Literal with its str
@overload
def compile(  # type: ignore[overload-overlap]
    outputs: Outputs,
    estimates: Estimates | None = None,
    constraints: Sequence[BoolExpr] = (),
    name: str | None = None,
    *,
    schedule: Literal["measured"],
    inline: bool = True,
    options: Options | None = None,
    weights: WeightsLike | None = None,
    dump: str | os.PathLike[str] | None = None,
    check: bool | None = None,
    march: str | None = None,
    contract: bool | None = None,
    reassociate: bool | None = None,
    background: Literal[False] = False,
    build: Literal[True] = True,
) -> MeasuredPipeline[Pipeline]: ...


@overload
def compile(
    outputs: Outputs,
    estimates: Estimates | None = None,
    constraints: Sequence[BoolExpr] = (),
    name: str | None = None,
    schedule: ScheduleLike = "auto",
    inline: bool = True,
    options: Options | None = None,
    weights: WeightsLike | None = None,
    dump: str | os.PathLike[str] | None = None,
    check: bool | None = None,
    march: str | None = None,
    contract: bool | None = None,
    reassociate: bool | None = None,
    background: Literal[False] = False,
    build: bool = True,
) -> Pipeline: ...


@overload
def compile(
    outputs: Outputs,
    estimates: Estimates | None = None,
    constraints: Sequence[BoolExpr] = (),
    name: str | None = None,
    schedule: ScheduleLike = "auto",
    inline: bool = True,
    options: Options | None = None,
    weights: WeightsLike | None = None,
    dump: str | os.PathLike[str] | None = None,
    check: bool | None = None,
    march: str | None = None,
    contract: bool | None = None,
    reassociate: bool | None = None,
    *,
    background: Literal[True],
    build: bool = True,
) -> BackgroundPipeline[Pipeline]: ...


@overload
def compile(
    outputs: Outputs,
    estimates: Estimates | None = None,
    constraints: Sequence[BoolExpr] = (),
    name: str | None = None,
    schedule: ScheduleLike = "auto",
    inline: bool = True,
    options: Options | None = None,
    weights: WeightsLike | None = None,
    dump: str | os.PathLike[str] | None = None,
    check: bool | None = None,
    march: str | None = None,
    contract: bool | None = None,
    reassociate: bool | None = None,
    background: bool = False,
    build: bool = True,
) -> Pipeline | BackgroundPipeline[Pipeline] | MeasuredPipeline[Pipeline]: ...


def compile(
    outputs: Outputs,
    estimates: Estimates | None = None,
    constraints: Sequence[BoolExpr] = (),
    name: str | None = None,
    schedule: ScheduleLike = "auto",
    inline: bool = True,
    options: Options | None = None,
    weights: WeightsLike | None = None,
    dump: str | os.PathLike[str] | None = None,
    check: bool | None = None,
    march: str | None = None,
    contract: bool | None = None,
    reassociate: bool | None = None,
    background: bool = False,
    build: bool = True,
) -> Pipeline | BackgroundPipeline[Pipeline] | MeasuredPipeline[Pipeline]:
    """Compile the pipeline computing `outputs` to a callable `Pipeline`.

    Args:
        outputs: the output Functions (one, or a list).
        estimates: typical parameter values, `{R: 2848, C: 4256}`, that the optimizer plans
            for (any size runs).
        constraints: Conditions on Parameters that every call satisfies, e.g. `[R >= 32]`.
        name: the name of the pipeline and its C entry `pipeline_<name>` (default: the first
            output's name).
        schedule: "auto" (the default: groups and tile sizes from the cost model), "naive"
            (one parallel loop nest per stage), the baselines "greedy" (PolyMage's heuristic)
            and "greedy-cost" (pairwise merging by the cost model), "measured" (the first
            call times auto's choice, greedy-cost, greedy, naive and auto's tiles halved and doubled
            on its arguments and keeps the fastest, remembered for this machine in the cache
            folder: a `MeasuredPipeline`), or a `Schedule` (or its text or JSON form) naming
            groups of stages after inlining, with one or two levels of tile sizes.
        inline: substitute pointwise and non-overlapping producers into their consumers.
        options: build options, a `polyimage.config.Options` (default: `Options.from_env()`,
            from the POLYIMAGE_* environment variables: cache folder, compiler flags, the
            machine model); see the Build cache and environment page.
        weights: cost weights for "auto" and "greedy-cost" (a `polyimage.grouping.Weights`,
            or a dict of some of its fields); default: POLYIMAGE_WEIGHTS, else the weights
            file `polyimage tune` writes, else the defaults.
        dump: a folder to write what each pass produced into (default: POLYIMAGE_DUMP); see
            How the compiler works.
        check: the checked build: every buffer index checked at run time, a failure raising
            `CheckError` (default: POLYIMAGE_CHECK; slow, for debugging).
        march: the CPU to build for, a gcc -march value (default: POLYIMAGE_MARCH, else
            "native"; "x86-64-v3" is AVX2 without AVX-512); part of the cache key.
        contract: True lets the C compiler fuse `a * b + c` into one multiply-add
            (`-ffp-contract=fast`): faster where the CPU has FMA, float results may differ
            from the interpreter's in the last bits (default: off, results identical, unless
            POLYIMAGE_CFLAGS say otherwise); part of the cache key.
        reassociate: True lets the C compiler regroup float sums and products (a sum along
            a Reduction's loop then runs in vectors) and divide by a constant as a
            multiplication by its reciprocal, as Halide does by default: float results may
            differ from the interpreter's by rounding (default: off); part of the cache key.
        background: return at once a `BackgroundPipeline` that compiles in a thread; calls
            made before it is built run on a naive compile.
        build: False runs every pass but builds no module for this machine: the pipeline can
            be exported (for another CPU, or with a cross compiler as CC), not called.

    Returns:
        The compiled pipeline, to call with images and parameters by name: a `Pipeline`,
            or a `BackgroundPipeline` with `background=True`, a `MeasuredPipeline` with
            `schedule="measured"`.

    Raises:
        BoundsError: a read may leave its producer's domain.
        PipelineError: the pipeline is malformed (a stage without a definition, a cycle).
        CompileError: the C compiler failed (its log is kept).
    """
    asked = Asked.of(locals())
    make_pipeline = functools.partial(compiled_again, asked)
    if isinstance(schedule, str) and schedule == "measured":
        if background or not build:
            raise ArgumentError(
                'schedule="measured" times calls of the candidates on the first call: it '
                "cannot go with background=True or build=False"
            )
        auto = dataclasses.replace(asked, schedule="auto")
        return MeasuredPipeline(
            make_pipeline, resolve_request(auto, PassTimer(pipeline_name(auto)))
        )
    if not background:
        return compiled_pipeline(asked)
    if not build:
        raise ArgumentError("background=True compiles to call: it cannot go with build=False")
    graph = build_graph(outputs)
    check_estimates(graph, estimates or {})
    check_constraints(graph, constraints)
    return BackgroundPipeline(make_pipeline, schedule, asked.options or Options.from_env())


def compiled_again(asked: Asked, schedule: ScheduleLike, options: Options | None) -> Pipeline:
    """The compile `asked` under another schedule and, where given, other options (the
    candidates of "measured", the background's quick compile)."""
    return compiled_pipeline(
        dataclasses.replace(asked, schedule=schedule, options=options or asked.options)
    )


def compiled_pipeline(asked: Asked) -> Pipeline:
    """`compile` in the foreground, every step in order and timed: the request resolved (the
    build_graph and machine_model steps), its record loaded from the cache (load_record) or
    lowered afresh (the passes of lower.run_passes), the module built (build, then
    plan_again/build_again where gcc left a stage scalar the model priced as vectors) unless
    `asked.build` is False, and the record saved."""
    timer = PassTimer(pipeline_name(asked), PROGRESS_AFTER_SECONDS, PROGRESS_MIN_PASS_SECONDS)
    request = resolve_request(asked, timer)
    dumped = Dump(asked.dump or request.options.dump_dir, request.name)
    key, compiled = None, None
    if request.options.use_cache and dumped.folder is None:
        with timer("load_record"):
            key = compile_key(request)
            compiled = load_compiled(request, key)
    cached = compiled is not None
    if compiled is None:
        compiled = run_passes(request, dumped, timer)
    _warn_assumed_estimates(compiled)
    kernel = None
    if asked.build:
        with timer("build"):
            kernel = build(compiled.cmodule, request.options)
        if not cached:
            compiled, kernel = _priced_as_built(compiled, kernel, dumped, timer)
        dumped.copy("07-build.log", kernel.info.path / "build.log")
    dumped.write("passes.txt", lambda: passes_text(timer.seconds))
    if key is not None and not cached:
        with timer("save_record"):
            save_compiled(compiled, key, keep=[kernel.info.path] if kernel else [])
    log.info(
        "%s %s in %.3f s",
        "loaded" if cached else "compiled",
        request.name,
        sum(timer.seconds.values()),
    )
    return Pipeline(compiled, kernel, cached, timer.seconds)


def _priced_as_built(compiled: Compiled, kernel: Kernel, dumped: Dump, timer: PassTimer) -> tuple:
    """(record, module) after checking the model's prices against the build: where gcc left
    the innermost loop of a stage scalar that the model priced as vector code (auto and
    greedy-cost), the schedule is chosen once more with that stage priced scalar, and built
    if it changed. Small stages (one plain nest) are left out: they are scalar by design."""
    from ..tools.vectorization import logged_verdicts, scalar_stages

    request = compiled.request
    if request.schedule not in ("auto", "greedy-cost"):
        return compiled, kernel
    verdicts = logged_verdicts(compiled, kernel)
    if verdicts is None:
        return compiled, kernel
    found = [s for s in scalar_stages(verdicts) if s not in compiled.plain_stages]
    new = unpriced_scalar(compiled.stage_graph, found, request.scalar_stages)
    if not new:
        return compiled, kernel
    log.info("%s: %s left scalar by the build; planning again", request.name, ", ".join(new))
    again = dataclasses.replace(request, scalar_stages=request.scalar_stages + new)
    with timer("plan_again"):
        replanned = run_passes(again, dumped, PassTimer())
    if replanned.cmodule.source == compiled.cmodule.source:
        return replanned, kernel
    with timer("build_again"):
        return replanned, build(replanned.cmodule, request.options)


def _warn_assumed_estimates(compiled: Compiled) -> None:
    """An EstimateWarning naming the parameters assumed DEFAULT_ESTIMATE, where tile sizes were
    chosen for them."""
    assumed = compiled.request.assumed
    if assumed and any(group.tile_sizes for group in compiled.schedule.groups):
        warnings.warn(
            f"no estimate for {listing(assumed)}: the optimizer assumes "
            f"{DEFAULT_ESTIMATE}; give estimates={{...}} to compile for the sizes "
            f"you run",
            EstimateWarning,
            stacklevel=5,
        )
