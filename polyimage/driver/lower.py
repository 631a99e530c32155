"""Lowering: `lower(outputs, ...)` runs every pass from the stages a user wrote to the generated C
and returns one frozen record, `Compiled`, of what each pass decided.

The passes, in order, each timed (`PassTimer`), logged at DEBUG and, with a dump folder, written
out (dump.py): build_graph -> analyze -> check_bounds -> inline (-> analyze_inlined) -> schedule
-> plan_groups -> plan_reductions -> generate_c. What a compile was asked for (`Request`:
the graph, estimates, constraints, weights, machine model...) is resolved once, before the
passes; it is also everything the compile cache keys on (record.py). Building the module is
not lowering: pipeline.py builds `Compiled.cmodule` and wraps both in a `Pipeline`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..codegen.cmodule import CModule, generate_module
from ..config import Options
from ..dsl import expr as E
from ..errors import ArgumentError, ArgumentTypeError, PipelineError, WeightsWarning
from ..graph.dag import StageGraph, build_graph
from ..graph.inline import inline_stages
from ..grouping.auto import AutoResult, auto_schedule
from ..grouping.greedy import greedy_cost_schedule, greedy_schedule
from ..grouping.machine import Machine, cpu_model
from ..grouping.weights import foreign_weights, resolve_weights
from ..jit.calibrate import load_calibration
from ..jit.toolchain import facts_for
from ..poly.analysis import analyze
from ..poly.bounds import branch_free_stages, check_analysis, check_inlined
from ..schedule.memory import MemoryEstimate, memory_estimate, small_stages
from ..schedule.plan import Schedule, ScheduleError
from ..schedule.reductions import reduction_strategies
from ..schedule.tiling import TiledGroup, plan_groups
from ..tools.dump import (
    Dump,
    analysis_text,
    graph_text,
    inlined_text,
    plans_text,
    schedule_text,
)

log = logging.getLogger("polyimage")
# compiles that take longer than this report each pass as it ends (the command line shows them)
progress = logging.getLogger("polyimage.progress")
PROGRESS_AFTER_SECONDS = 1.0
PROGRESS_MIN_PASS_SECONDS = 0.05

SCHEDULES = ("naive", "auto", "greedy", "greedy-cost")
DEFAULT_ESTIMATE = 1024


@dataclass(frozen=True, eq=False)
class Asked:
    """What `compile` was called with, as given (its parameters are these fields, written
    once more in its signature): resolve_request checks it into a Request; a compile made
    again (another schedule, the background's quick options) replaces a field."""

    outputs: Any
    estimates: Any = None
    constraints: Any = ()
    name: str | None = None
    schedule: Any = "auto"
    inline: bool = True
    options: Options | None = None
    weights: Any = None
    dump: Any = None
    build: bool = True
    background: bool = False

    @classmethod
    def of(cls, arguments: Mapping) -> Asked:
        """The fields of `compile`'s `arguments` (its locals), with check, march, contract
        and reassociate folded into the options where given."""
        options = arguments["options"]
        check, march = arguments.get("check"), arguments.get("march")
        contract, reassociate = arguments.get("contract"), arguments.get("reassociate")
        if check is not None:
            options = dataclasses.replace(options or Options.from_env(), check=bool(check))
        if march is not None:
            options = (options or Options.from_env()).for_march(march)
        if contract is not None:
            options = (options or Options.from_env()).for_contract(contract)
        if reassociate is not None:
            options = (options or Options.from_env()).for_reassociate(reassociate)
        fields = {name: arguments[name] for name in cls.__dataclass_fields__}
        return cls(**{**fields, "options": options})


@dataclass(frozen=True, eq=False)
class Request:
    """What a compile was asked for, checked and resolved: the inputs of every pass and of the
    cache key. `graph` is the pipeline as written (calls are checked against it); `schedule`
    is the argument as given (a name from SCHEDULES, a Schedule or its text). Compared by
    identity: DSL expressions have no truth value (record.compile_key says when two agree).
    Kept as a Compiled record's `request`."""

    graph: StageGraph
    name: str
    estimates: dict
    assumed: tuple
    param_values: dict
    constraints: tuple
    schedule: object
    inline: bool
    options: Options
    weights: Any  # Weights for auto and greedy-cost, else None
    weights_origin: str | None
    machine: Machine
    machine_origin: str
    scalar_stages: tuple = ()  # left scalar by an earlier build of this request: priced so
    profile: bool = False  # a timer around every group and loop nest (Pipeline.profile)


@dataclass(frozen=True, eq=False)
class Compiled:
    """A lowered pipeline: the request, then what each pass produced. `stage_graph` is what code
    is generated from (after inlining, `inlined` saying what went where); `context` and
    `domains` are the parameter context and every stage's isl domain after inlining, as text;
    `auto` is the search result (its costs and statistics) when the schedule was "auto".
    Compared by identity, as its plans hold DSL expressions. Made by `lower`, and kept as a
    Pipeline's `compiled`."""

    request: Request
    stage_graph: StageGraph
    inlined: tuple
    context: str
    domains: dict
    warnings: tuple
    branch_free: frozenset
    schedule: Schedule
    group_plans: tuple
    auto: AutoResult | None
    reductions: dict
    plain_stages: frozenset
    cmodule: CModule

    @property
    def name(self) -> str:
        """The pipeline's name (the C entry is `pipeline_<name>`)."""
        return self.request.name

    @property
    def options(self) -> Options:
        """The options it was compiled under."""
        return self.request.options

    def memory(self) -> MemoryEstimate:
        """Bytes of intermediate buffers at the estimates: full buffers and scratchpads."""
        return memory_estimate(self.stage_graph, self.group_plans, self.request.param_values)


class PassTimer:
    """The seconds of every pass of one compile, logged as each ends; a compile running longer
    than `after_seconds` reports each pass of at least `min_pass_seconds` to the progress log."""

    def __init__(
        self,
        name: str = "pipeline",
        after_seconds=PROGRESS_AFTER_SECONDS,
        min_pass_seconds=PROGRESS_MIN_PASS_SECONDS,
    ):
        self.seconds: dict[str, float] = {}
        self.name, self._started = name, time.perf_counter()
        self.after_seconds, self.min_pass_seconds = after_seconds, min_pass_seconds

    @contextlib.contextmanager
    def __call__(self, pass_name: str):
        start = time.perf_counter()
        yield
        took = self.seconds[pass_name] = time.perf_counter() - start
        log.debug("%s: %.3f s", pass_name, took)
        elapsed = time.perf_counter() - self._started
        if elapsed > self.after_seconds and took >= self.min_pass_seconds:
            progress.info(
                "%s: %s done in %.2f s (%.1f s so far)", self.name, pass_name, took, elapsed
            )


def lower(
    outputs,
    estimates=None,
    constraints=(),
    name=None,
    schedule="auto",
    inline=True,
    options=None,
    weights=None,
    dump=None,
    timer=None,
) -> Compiled:
    """The Compiled record of the pipeline computing `outputs`: every pass of `compile` up to
    the C source, with nothing built.

    Args:
        outputs: the output Functions (one, or a list), as for `compile`.
        estimates: typical parameter values, as for `compile`.
        constraints: Conditions on Parameters that every call satisfies, as for `compile`.
        name: the pipeline's name, as for `compile`.
        schedule: a schedule's name ("auto", "naive", ...) or a `Schedule`, as for
            `compile`.
        inline: substitute pointwise producers into their consumers, as for `compile`.
        options: build options, as for `compile` (they choose the machine model).
        weights: cost weights, as for `compile`.
        dump: a folder to write what each pass produced into, as for `compile`.
        timer: collects the seconds of each pass (by default a fresh one).

    Returns:
        The `Compiled` record: the request, the stages after inlining, the schedule, the
            group plans and the C module.
    """
    asked = Asked(outputs, estimates, constraints, name, schedule, inline, options, weights, dump)
    timer = timer or PassTimer(pipeline_name(asked))
    request = resolve_request(asked, timer)
    return run_passes(request, Dump(dump or request.options.dump_dir, request.name), timer)


def pipeline_name(asked: Asked) -> str:
    """The name asked for, else the first output's (the C entry is `pipeline_<name>`)."""
    if asked.name is not None:
        if not (isinstance(asked.name, str) and asked.name.isidentifier()):
            raise ArgumentError(f"pipeline name must be an identifier, got {asked.name!r}")
        return asked.name
    outputs = asked.outputs if isinstance(asked.outputs, (list, tuple)) else [asked.outputs]
    return str(getattr(outputs[0], "name", "pipeline")) if outputs else "pipeline"


def resolve_request(asked: Asked, timer: PassTimer) -> Request:
    """What `asked` means, checked: the stage graph (the build_graph pass), estimates and
    constraints against its parameters, the weights (auto and greedy-cost only) and the
    machine model (the machine_model step: the C compiler's target, asked once per
    compiler and flags, and the calibration kept for this CPU)."""
    options = asked.options or Options.from_env()
    with timer("build_graph"):
        graph = build_graph(asked.outputs)
    name = pipeline_name(asked)
    estimates = check_estimates(graph, asked.estimates or {})
    param_values, assumed = resolve_estimates(graph, estimates)
    weights, weights_origin = None, None
    if asked.schedule in ("auto", "greedy-cost"):
        weights, weights_origin = resolve_weights(asked.weights, options)
        if weights_origin.startswith("weights file"):
            note = foreign_weights(options.weights_file, cpu_model(), options.march)
            if note:
                warnings.warn(note, WeightsWarning, stacklevel=5)
    with timer("machine_model"):
        machine, machine_origin = target_machine(options)
    return Request(
        graph=graph,
        name=name,
        estimates=estimates,
        assumed=assumed,
        param_values=param_values,
        constraints=check_constraints(graph, asked.constraints),
        schedule=asked.schedule,
        inline=bool(asked.inline),
        options=options,
        weights=weights,
        weights_origin=weights_origin,
        machine=machine,
        machine_origin=machine_origin,
    )


def run_passes(request: Request, dumped: Dump, timer: PassTimer) -> Compiled:
    """Analysis, bounds check, inlining, scheduling, planning and code generation, in order."""
    graph, constraints, params = request.graph, request.constraints, request.param_values
    dumped.write("01-graph.txt", lambda: graph_text(graph))
    with timer("analyze"):
        analysis = analyze(graph, constraints)
    with timer("check_bounds"):
        found = tuple(check_analysis(analysis, request.estimates))
    stage_graph, inlined = graph, ()
    if request.inline:
        stage_graph, inlined, analysis = inline_pass(graph, constraints, analysis, timer)
    dumped.write("02-inlined.txt", lambda: inlined_text(inlined, stage_graph))
    context = str(analysis.context_set)
    domains = {name: str(domain) for name, domain in analysis.domain_sets.items()}
    dumped.write("03-analysis.txt", lambda: analysis_text(context, domains, found))
    branch_free = branch_free_stages(analysis)
    with timer("schedule"):
        chosen = choose_schedule(request, stage_graph, inlined)
    with timer("plan_groups"):
        schedule, plans, auto = planned(chosen, stage_graph, params)
    dumped.write("04-schedule.txt", lambda: schedule_text(schedule, auto, request))
    with timer("plan_reductions"):
        reductions = reduction_strategies(
            stage_graph, params, tiled_members(plans), request.machine
        )
        plain = small_stages(stage_graph, params, request.options.plain_points)
    dumped.write("05-plans.txt", lambda: plans_text(plans))
    with timer("generate_c"):
        cmodule = generate_c(request, stage_graph, plans, branch_free, reductions, plain)
    dumped.write("06-kernel.c", cmodule.source)
    return Compiled(
        request=request,
        stage_graph=stage_graph,
        inlined=inlined,
        context=context,
        domains=domains,
        warnings=found,
        branch_free=branch_free,
        schedule=schedule,
        group_plans=plans,
        auto=auto,
        reductions=reductions,
        plain_stages=plain,
        cmodule=cmodule,
    )


def generate_c(request: Request, stage_graph, plans, branch_free, reductions, plain) -> CModule:
    """The generate_c pass: the C of the group plans, as the request asks (checked build,
    timers of the profiled build)."""
    return generate_module(
        stage_graph,
        request.name,
        plans,
        branch_free,
        profile=request.profile,
        reductions=reductions,
        check=request.options.check,
        plain=plain,
    )


def profiled(compiled: Compiled) -> Compiled:
    """The record under a request with `profile` set, its C generated again from its plans
    (the generate_c pass alone): a timer around every group and loop nest."""
    request = dataclasses.replace(compiled.request, profile=True)
    cmodule = generate_c(
        request,
        compiled.stage_graph,
        compiled.group_plans,
        compiled.branch_free,
        compiled.reductions,
        compiled.plain_stages,
    )
    return dataclasses.replace(compiled, request=request, cmodule=cmodule)


def inline_pass(graph, constraints, analysis, timer: PassTimer) -> tuple:
    """(stage graph after inlining, what was inlined, its analysis): the analysis is made again,
    and the changed consumers' indices proven in bounds again, only where something was
    inlined."""
    with timer("inline"):
        stage_graph, inlined = inline_stages(
            graph, lambda g, consumers: analyze(g, constraints, consumers)
        )
    for producer, consumers, rule in inlined:
        log.debug("inlined %s into %s (%s)", producer, ", ".join(consumers), rule)
    if inlined:
        with timer("analyze_inlined"):
            analysis = analyze(stage_graph, constraints)
            check_inlined(analysis, {c for _, consumers, _ in inlined for c in consumers})
    return stage_graph, tuple(inlined), analysis


def choose_schedule(request: Request, stage_graph, inlined) -> Schedule | AutoResult:
    """The schedule to generate code for, from the request's schedule argument: a name from
    SCHEDULES, a Schedule or its text; "auto" gives its whole search result, plans included."""
    schedule, params = request.schedule, request.param_values
    if schedule == "naive":
        return Schedule.naive(stage_graph)
    if schedule == "auto":
        return auto_schedule(
            stage_graph,
            params,
            request.machine,
            request.weights,
            multilevel=request.options.multilevel,
            scalar=frozenset(request.scalar_stages),
        )
    if schedule == "greedy":
        return greedy_schedule(stage_graph, params)
    if schedule == "greedy-cost":
        return greedy_cost_schedule(
            stage_graph,
            params,
            request.machine,
            request.weights,
            scalar=frozenset(request.scalar_stages),
        )
    if isinstance(schedule, str) and ("{" in schedule or "group" in schedule):
        schedule = Schedule.parse(schedule)
    if not isinstance(schedule, Schedule):
        raise ArgumentError(
            f"unknown schedule {schedule!r}; give a Schedule, its text, or "
            f"one of: {', '.join(SCHEDULES)}"
        )
    into = {producer: consumers for producer, consumers, _ in inlined}
    for group in schedule.groups:
        for name in group.stages:
            if name in into:
                raise ScheduleError(
                    f"{name} was inlined into {', '.join(into[name])}; leave it out of "
                    f"the schedule or compile with inline=False"
                )
    return schedule.validate(stage_graph)


def planned(chosen: Schedule | AutoResult, stage_graph, params) -> tuple:
    """(Schedule, its group plans, the auto search or None): auto planned its groups while it
    searched; any other schedule is planned here."""
    if isinstance(chosen, AutoResult):
        return chosen.schedule, tuple(chosen.plans), chosen
    return chosen, tuple(plan_groups(stage_graph, chosen, params)), None


def tiled_members(plans) -> dict:
    """{stage: index of its group} for the members of tiled groups."""
    return {
        name: i
        for i, plan in enumerate(plans)
        if isinstance(plan, TiledGroup)
        for name in plan.members
    }


def target_machine(options) -> tuple:
    """(Machine, where its operation cost came from) for the host under `options`: the vector
    width of the compiler's target, the figures `polyimage calibrate` kept for this CPU and
    target if any, then the overrides of `options.machine` (any field of Machine: a test or a
    bench can plan for a machine fixed whole, vector width and op cost included)."""
    facts = facts_for(options)
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


def _param_by_name(graph, key, what: str):
    name = key.name if isinstance(key, E.Parameter) else key
    for p in graph.parameters:
        if p.name == name:
            return p
    raise PipelineError(
        f"{what} names {name!r}, which is not a parameter of the pipeline "
        f"({', '.join(p.name for p in graph.parameters) or 'none'})"
    )


def check_estimates(graph, estimates: Mapping) -> dict:
    """{parameter name: estimate}, each naming a parameter of `graph`, integers for integers."""
    checked = {}
    for key, value in estimates.items():
        p = _param_by_name(graph, key, "estimates")
        if p.typ.is_int and not isinstance(value, (int, np.integer)):
            raise ArgumentTypeError(f"estimate of {p.name} must be an integer, got {value!r}")
        checked[p.name] = value
    return checked


def check_constraints(graph, constraints) -> tuple:
    """The constraints, each a Condition on parameters of `graph` only."""
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
