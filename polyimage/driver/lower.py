"""Lowering: `lower(outputs, ...)` runs every pass from the stages a user wrote to the generated C
and returns one frozen record, `Compiled`, of what each pass decided.

The passes, in order, each timed (`PassTimer`), logged at DEBUG and, with a dump folder, written
out (dump.py): build_graph -> machine_model (resolving the request, request.py) -> analyze ->
check_bounds -> inline (-> analyze_inlined) -> schedule -> plan_groups -> plan_reductions ->
generate_c. Building the module is not lowering: compiling.py builds `Compiled.cmodule` and
wraps both in a `Pipeline`.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from ..codegen.cmodule import CModule, generate_module
from ..config import Options
from ..errors import ArgumentError
from ..graph.dag import StageGraph
from ..graph.inline import inline_stages
from ..grouping.auto import AutoResult, auto_schedule
from ..grouping.greedy import greedy_cost_schedule, greedy_schedule
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
from .request import (
    Asked,
    PassTimer,
    Request,
    pipeline_name,
    resolve_request,
)

log = logging.getLogger("polyimage")
SCHEDULES = ("naive", "auto", "greedy", "greedy-cost")


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
        return memory_estimate(
            self.stage_graph,
            self.group_plans,
            self.request.param_values,
            self.reductions,
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
        groups = tuple(plan.members for plan in plans)
        reductions = reduction_strategies(
            stage_graph, params, tiled_members(plans), request.machine, groups
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
