"""The driver: `compile()` runs the passes in order, and a `Pipeline` is the callable result.

Passes, each timed (`pass_seconds`), logged at DEBUG and, with a dump folder, written out
(dump.py): build_graph -> analyze -> check_bounds -> inline (-> analyze_inlined) -> schedule
(auto: the DP over the cost model, which plans each group) -> plan_groups (other schedules) ->
generate_c -> build. Estimates become parameter values once, before scheduling. `graph` is the
pipeline as written (calls are checked against it); `stage_graph` is what code is generated
from, after inlining.
"""

from __future__ import annotations

import contextlib
import dataclasses
import html
import logging
import time
import warnings

import numpy as np

from .arguments import (  # noqa: F401  (MAX_THREADS is read from here too)
    MAX_THREADS,
    bind_arguments,
    bind_positional,
    check_threads,
    output_arrays,
)
from .background import BackgroundPipeline
from .codegen.cmodule import generate_module
from .config import Options
from .dsl import expr as E
from .dump import (
    Dump,
    analysis_text,
    graph_text,
    inlined_text,
    passes_text,
    plans_text,
    schedule_text,
)
from .errors import (
    ArgumentError,
    ArgumentTypeError,
    EstimateWarning,
    PipelineError,
    UncoveredReadWarning,
    WeightsWarning,
)
from .graph.dag import build_graph
from .graph.dot import render_svg, to_dot
from .graph.inline import inline_stages
from .grouping.auto import auto_schedule
from .grouping.greedy import greedy_cost_schedule, greedy_schedule
from .grouping.machine import Machine, cpu_model
from .grouping.weights import foreign_weights, resolve_weights
from .jit.build import build, evict_over_cap
from .jit.calibrate import load_calibration
from .jit.toolchain import compiler_command, facts_dir, target_facts
from .poly.analysis import analyze
from .poly.bounds import branch_free_stages, check_analysis, check_inlined
from .profile import Profile, profile_run
from .record import FIELDS, compile_key, load_record, save_record
from .schedule.memory import MemoryEstimate, memory_estimate, small_stages
from .schedule.plan import Schedule, ScheduleError
from .schedule.reductions import reduction_strategies
from .schedule.tiling import TiledGroup, plan_groups

log = logging.getLogger("polyimage")
# compiles that take longer than this report each pass as it ends (the command line shows them)
progress = logging.getLogger("polyimage.progress")
PROGRESS_AFTER_SECONDS = 1.0
PROGRESS_MIN_PASS_SECONDS = 0.05

SCHEDULES = ("naive", "auto", "greedy", "greedy-cost")
DEFAULT_ESTIMATE = 1024


def compile(
    outputs,
    estimates=None,
    constraints=(),
    name=None,
    schedule="auto",
    inline=True,
    options=None,
    weights=None,
    dump=None,
    check=None,
    march=None,
    background=False,
    build=True,
):
    """Compile the pipeline computing `outputs` to a callable `Pipeline`.

    estimates: typical parameter values, `{R: 2848, C: 4256}` (used by the optimizer).
    constraints: Conditions on Parameters that every call satisfies, e.g. `[R >= 32]`.
    name: the C entry is `pipeline_<name>` (default: the first output's name).
    schedule: "auto" (the default: groups and tile sizes from the cost model,
        polyimage.grouping), "naive" (one parallel loop nest per stage), the baselines
        "greedy" (PolyMage's heuristic) and "greedy-cost" (pairwise merging by the cost
        model), or a `Schedule` (or its text / JSON form) naming groups of stages after
        inlining, with one or two levels of tile sizes.
    inline: substitute pointwise and non-overlapping producers into their consumers.
    weights: cost weights for "auto" and "greedy-cost" (a grouping.Weights or a dict of some of
        its fields); default: POLYIMAGE_WEIGHTS, else the weights file, else Weights(). Only
        those schedules read them.
    dump: a folder to write what each pass produced into (default: POLYIMAGE_DUMP; see dump.py).
    check: the checked build, every buffer index checked at run time, a failure raising
        CheckError (default: POLYIMAGE_CHECK; slow, for debugging: see codegen.checked).
    march: the CPU to build for, a gcc -march value (default: POLYIMAGE_MARCH, else "native";
        "x86-64-v3" is AVX2 without AVX-512): part of the cache key.
    background: return at once a `BackgroundPipeline` that compiles in a thread; calls made
        before it is built run on a naive compile (see background.py).
    build: False runs every pass but builds no module for this machine: the pipeline can be
        exported (`export`, for another CPU or with a cross compiler as CC), not called.
    """
    if check is not None:
        options = dataclasses.replace(options or Options.from_env(), check=bool(check))
    if march is not None:
        options = (options or Options.from_env()).for_march(march)

    def make_pipeline(chosen_schedule, chosen_options):
        return Pipeline(
            outputs,
            estimates,
            constraints,
            name,
            chosen_schedule,
            inline,
            chosen_options or options,
            weights,
            dump,
            build,
        )

    if not background:
        return make_pipeline(schedule, None)
    if not build:
        raise ArgumentError("background=True compiles to call: it cannot go with build=False")
    graph = build_graph(outputs)
    _check_estimates(graph, estimates or {})
    _check_constraints(graph, constraints)
    return BackgroundPipeline(make_pipeline, schedule, options or Options.from_env())


def target_machine(options) -> tuple:
    """(Machine, where its operation cost came from) for the host under `options`: the vector
    width of the compiler's target, the figures `polyimage calibrate` kept for this CPU and
    target if any, then the overrides of `options.machine` (any field of Machine: a test or a
    bench can plan for a machine fixed whole, vector width and op cost included)."""
    facts = target_facts(compiler_command(), tuple(options.cflags), facts_dir(options))
    calibration = load_calibration(options)
    measured = calibration.machine_fields() if calibration else {}
    origin = (
        "op cost set by the options' machine model"
        if "op_bytes" in options.machine
        else calibration.describe()
        if calibration
        else "op cost of the reference machine (run `polyimage calibrate` to measure this one)"
    )
    fields = {"vector_bytes": facts.vector_bytes, **measured, **options.machine}
    return Machine.detect(**fields), origin


class Pipeline:
    """A compiled pipeline: call it with images and parameters as keyword arguments."""

    def __init__(
        self,
        outputs,
        estimates=None,
        constraints=(),
        name=None,
        schedule="auto",
        inline=True,
        options=None,
        weights=None,
        dump=None,
        build_module=True,
    ):
        self.pass_seconds, self._bindings, self._workspaces = {}, {}, []
        self._started = time.perf_counter()
        self._profiled = None
        self.options = options or Options.from_env()
        self.weights = self.weights_origin = None
        self._weights_given = weights
        with self._timed("build_graph"):
            self.graph = build_graph(outputs)
        self.name = name or self.graph.outputs[0]
        if not self.name.isidentifier():
            raise ArgumentError(f"pipeline name must be an identifier, got {self.name!r}")
        dumped = Dump(dump or self.options.dump_dir, self.name)
        self.estimates = _check_estimates(self.graph, estimates or {})
        self.param_values, self.assumed = resolve_estimates(self.graph, self.estimates)
        self.constraints = _check_constraints(self.graph, constraints)
        if schedule in ("auto", "greedy-cost"):
            self.weights, self.weights_origin = resolve_weights(self._weights_given, self.options)
            if self.weights_origin.startswith("weights file"):
                note = foreign_weights(self.options.weights_file, cpu_model(), self.options.march)
                if note:
                    warnings.warn(note, WeightsWarning, stacklevel=3)
        self.machine, self.machine_origin = target_machine(self.options)
        self.cached, key = False, None
        if self.options.use_cache and dumped.folder is None:
            with self._timed("load_record"):
                key = compile_key(
                    self.graph,
                    name=self.name,
                    estimates=self.estimates,
                    constraints=self.constraints,
                    schedule=schedule,
                    inline=inline,
                    weights=self.weights,
                    machine=self.machine,
                    options=self.options,
                )
                record = load_record(self.options.cache_dir, key)
            if record is not None:
                self._restore(record)
        if not self.cached:
            self._run_passes(schedule, inline, dumped)
        self._warn_assumed_estimates()
        self.kernel = None
        if build_module:
            with self._timed("build"):
                self.kernel = build(self.cmodule, self.options)
            dumped.copy("07-build.log", self.kernel.info.path / "build.log")
        dumped.write("passes.txt", lambda: passes_text(self.pass_seconds))
        if key is not None and not self.cached:
            try:
                record = save_record(
                    self.options.cache_dir, key, {f: getattr(self, f) for f in FIELDS}
                )
            except OSError as exc:
                log.warning("could not save the compile record: %s", exc)
            else:
                evict_over_cap(
                    self.options.cache_dir,
                    self.options.cache_max_bytes,
                    keep=[record] + ([self.kernel.info.path] if self.kernel else []),
                )
        log.info(
            "%s %s in %.3f s",
            "loaded" if self.cached else "compiled",
            self.name,
            sum(self.pass_seconds.values()),
        )

    def _restore(self, record: dict) -> None:
        """Take a saved compile's results; its warnings are issued again."""
        for field in FIELDS:
            setattr(self, field, record[field])
        self.cached = True
        for message in self.warnings:
            warnings.warn(message, UncoveredReadWarning, stacklevel=4)

    def _run_passes(self, schedule, inline, dumped) -> None:
        """Analysis, bounds check, inlining, scheduling, planning and code generation."""
        dumped.write("01-graph.txt", lambda: graph_text(self.graph))
        with self._timed("analyze"):
            analysis = analyze(self.graph, self.constraints)
        with self._timed("check_bounds"):
            self.warnings = check_analysis(analysis)
        self.stage_graph, self.inlined = self.graph, []
        if inline:
            with self._timed("inline"):
                self.stage_graph, self.inlined = inline_stages(
                    self.graph, lambda g, consumers: analyze(g, self.constraints, consumers)
                )
            for producer, consumers, rule in self.inlined:
                log.debug("inlined %s into %s (%s)", producer, ", ".join(consumers), rule)
            if self.inlined:
                with self._timed("analyze_inlined"):
                    analysis = analyze(self.stage_graph, self.constraints)
                    check_inlined(
                        analysis, {c for _, consumers, _ in self.inlined for c in consumers}
                    )
        dumped.write("02-inlined.txt", lambda: inlined_text(self))
        dumped.write("03-analysis.txt", lambda: analysis_text(analysis, self.warnings))
        self.branch_free = branch_free_stages(analysis)
        self.auto = None
        with self._timed("schedule"):
            self.schedule = self._resolve_schedule(schedule)
        dumped.write("04-schedule.txt", lambda: schedule_text(self))
        with self._timed("plan_groups"):
            self.group_plans = (
                self.auto.plans
                if self.auto is not None
                else plan_groups(self.stage_graph, self.schedule, self.param_values)
            )
        with self._timed("plan_reductions"):
            tiled = {
                name: i
                for i, plan in enumerate(self.group_plans)
                if isinstance(plan, TiledGroup)
                for name in plan.members
            }
            self.reductions = reduction_strategies(self.stage_graph, self.param_values, tiled)
        dumped.write("05-plans.txt", lambda: plans_text(self.group_plans))
        with self._timed("generate_c"):
            self.cmodule = generate_module(
                self.stage_graph,
                self.name,
                self.group_plans,
                self.branch_free,
                reductions=self.reductions,
                check=self.options.check,
                plain=self.plain_stages,
            )
        dumped.write("06-kernel.c", self.cmodule.source)

    def _warn_assumed_estimates(self) -> None:
        if self.assumed and any(group.tile_sizes for group in self.schedule.groups):
            warnings.warn(
                f"no estimate for {_listing(self.assumed)}: the optimizer assumes "
                f"{DEFAULT_ESTIMATE}; give estimates={{...}} to compile for the sizes "
                f"you run",
                EstimateWarning,
                stacklevel=4,
            )

    def _resolve_schedule(self, schedule) -> Schedule:
        """The Schedule to generate code for: a name from SCHEDULES, a Schedule, or its text."""
        if schedule == "naive":
            return Schedule.naive(self.stage_graph)
        if schedule == "auto":
            self.auto = auto_schedule(
                self.stage_graph,
                self.param_values,
                self.machine,
                self.weights,
                multilevel=self.options.multilevel,
            )
            return self.auto.schedule
        if schedule == "greedy":
            return greedy_schedule(self.stage_graph, self.param_values)
        if schedule == "greedy-cost":
            return greedy_cost_schedule(
                self.stage_graph,
                self.param_values,
                self.machine,
                self.weights,
            )
        if isinstance(schedule, str) and ("{" in schedule or "group" in schedule):
            schedule = Schedule.parse(schedule)
        if not isinstance(schedule, Schedule):
            raise ArgumentError(
                f"unknown schedule {schedule!r}; give a Schedule, its text, or "
                f"one of: {', '.join(SCHEDULES)}"
            )
        inlined = {producer: consumers for producer, consumers, _ in self.inlined}
        for group in schedule.groups:
            for name in group.stages:
                if name in inlined:
                    raise ScheduleError(
                        f"{name} was inlined into {', '.join(inlined[name])}; leave it out of "
                        f"the schedule or compile with inline=False"
                    )
        return schedule.validate(self.stage_graph)

    @property
    def plain_stages(self) -> frozenset:
        """The stages generated as one plain loop nest: fewer points at the estimates than
        Options.plain_points (schedule.memory.small_stages)."""
        return small_stages(self.stage_graph, self.param_values, self.options.plain_points)

    def release(self) -> None:
        """Free the memory calls keep for the next ones (intermediate buffers, scratchpads);
        the next call allocates afresh. Collecting the Pipeline frees it too."""
        while self._workspaces:
            self.kernel.release(self._workspaces.pop())

    def memory(self) -> MemoryEstimate:
        """Bytes of intermediate buffers at the estimates (see schedule.memory)."""
        return memory_estimate(self.stage_graph, self.group_plans, self.param_values)

    @contextlib.contextmanager
    def _timed(self, pass_name: str):
        start = time.perf_counter()
        yield
        self.pass_seconds[pass_name] = time.perf_counter() - start
        log.debug("%s: %.3f s", pass_name, self.pass_seconds[pass_name])
        if (
            time.perf_counter() - self._started > PROGRESS_AFTER_SECONDS
            and self.pass_seconds[pass_name] >= PROGRESS_MIN_PASS_SECONDS
        ):
            progress.info(
                "%s: %s done in %.2f s (%.1f s so far)",
                getattr(self, "name", "pipeline"),
                pass_name,
                self.pass_seconds[pass_name],
                time.perf_counter() - self._started,
            )

    @property
    def c_source(self) -> str:
        """The generated C translation unit."""
        return self.cmodule.source

    def report(self, vectorization=False) -> str:
        """Stages after inlining with their domains, the parameter context, what was inlined,
        warnings and pass times; with `vectorization`, whether the C compiler vectorized each
        innermost loop and why not (a separate build with its report, a few seconds)."""
        from .report import pipeline_report

        return pipeline_report(self, vectorization)

    @property
    def origin(self) -> str:
        """How this compile was made: "loaded from the cache" (no pass ran) or "compiled"."""
        return "loaded from the cache" if self.cached else "compiled"

    def __repr__(self):
        groups = len(self.schedule.groups)
        return (
            f"<Pipeline {self.name}: {len(self.stage_graph.computed)} stages in {groups} "
            f"group{'s' if groups != 1 else ''}, {self.origin}>"
        )

    def _repr_html_(self) -> str:
        """Jupyter shows the stage graph (SVG through Graphviz's `dot` where it is installed),
        else the text report."""
        svg = render_svg(self.to_dot())
        if svg is not None:
            return svg
        return f"<pre>{html.escape(self.report())}</pre>"

    def to_dot(self) -> str:
        """The stage DAG as compiled (after inlining) as Graphviz text, a colour per group."""
        return to_dot(self.stage_graph, self.name, [g.stages for g in self.schedule.groups])

    @property
    def build_info(self):
        """Cache key, module path and whether the build came from the cache."""
        return self._built().info

    def _built(self):
        if self.kernel is None:
            raise PipelineError(
                f"{self.name} was compiled with build=False: it can be exported, not called"
            )
        return self.kernel

    def __call__(self, *images, out=None, threads=None, **arguments):
        """Run on the given images and parameters (by name; a pipeline with one input image
        also takes it by position); returns the output array, or a tuple of them for several
        outputs. `out` takes preallocated outputs, `threads` overrides OMP_NUM_THREADS for this
        call (at most MAX_THREADS). Intermediate buffers are kept for the next call (see
        `release`); calls from several threads at once each use their own."""
        _, outputs, nthreads, params, inputs = self._prepare_call(images, out, threads, arguments)
        pool = self._workspaces
        workspace = pool.pop() if pool else self._built().workspace()
        try:
            self.kernel(workspace, nthreads, params, inputs, outputs)
        finally:
            pool.append(workspace)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def export(self, folder, name=None):
        """Write this pipeline into `folder` as a C library (source, header, static and shared
        library, README, manifest) with entry `name` (default: the pipeline's name), built as
        this pipeline was; `polyimage.load(folder)` calls it back without a compiler. Returns
        an `export.Exported` listing the files."""
        from .export import export_pipeline

        return export_pipeline(self, folder, name)

    def _prepare_call(self, images, out, threads, arguments) -> tuple:
        """(binding, output arrays, thread count, parameter values and input arrays in the
        entry's order) of a call, every argument checked."""
        if images:
            arguments = bind_positional(self.graph, images, arguments)
        binding = bind_arguments(self.graph, arguments, self.constraints, self._bindings)
        outputs = output_arrays(self.graph, out, binding)
        params = [binding.params[p] for p in self.cmodule.params]
        inputs = [binding.arrays[n] for n in self.cmodule.inputs]
        return binding, outputs, check_threads(threads), params, inputs

    def profile(self, *images, runs=5, threads=None, **arguments) -> Profile:
        """Time the groups and stages of a call on these arguments (a separate build with
        timers compiled in, made once; the normal build has none). Print the result."""
        if self._profiled is None:
            cmodule = generate_module(
                self.stage_graph,
                self.name,
                self.group_plans,
                self.branch_free,
                profile=True,
                reductions=self.reductions,
                check=self.options.check,
                plain=self.plain_stages,
            )
            self._profiled = build(cmodule, self.options)
        return profile_run(self, self._profiled, runs, threads, images, arguments)


def _param_by_name(graph, key, what: str):
    name = key.name if isinstance(key, E.Parameter) else key
    for p in graph.parameters:
        if p.name == name:
            return p
    raise PipelineError(
        f"{what} names {name!r}, which is not a parameter of the pipeline "
        f"({', '.join(p.name for p in graph.parameters) or 'none'})"
    )


def resolve_estimates(graph, estimates: dict) -> tuple:
    """(a value for every parameter, the names assumed): the estimate where given; a parameter
    that sizes a domain without one is assumed DEFAULT_ESTIMATE; the others never reach the
    optimizer, and get 1."""
    sizing = {
        p.name
        for s in graph.stages
        for e in _extent_exprs(s.func)
        for p in E.free_symbols(e, E.Parameter)
    }
    values, assumed = {}, []
    for p in graph.parameters:
        if p.name in estimates:
            values[p.name] = estimates[p.name]
        elif p.name in sizing:
            values[p.name] = DEFAULT_ESTIMATE
            assumed.append(p.name)
        else:
            values[p.name] = 1 if p.typ.is_int else 1.0
    return values, tuple(assumed)


def _extent_exprs(func):
    intervals = func.intervals + getattr(func, "reduction_intervals", ())
    yield from (bound for iv in intervals for bound in (iv.lb, iv.ub))
    yield from getattr(func, "extents", ())


def _listing(names) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]


def _check_estimates(graph, estimates: dict) -> dict:
    checked = {}
    for key, value in estimates.items():
        p = _param_by_name(graph, key, "estimates")
        if p.typ.is_int and not isinstance(value, (int, np.integer)):
            raise ArgumentTypeError(f"estimate of {p.name} must be an integer, got {value!r}")
        checked[p.name] = value
    return checked


def _check_constraints(graph, constraints) -> tuple:
    for cond in constraints:
        if not isinstance(cond, E.BoolExpr):
            raise ArgumentTypeError(f"constraints must be Conditions on Parameters, got {cond!r}")
        for node in E.walk(cond):
            if isinstance(node, (E.Variable, E.Reference)) and not isinstance(node, E.Parameter):
                raise ArgumentTypeError(
                    f"constraint `{cond}` may only use Parameters, not `{node}`"
                )
            if isinstance(node, E.Parameter):
                _param_by_name(graph, node, f"constraint `{cond}`")
    return tuple(constraints)
