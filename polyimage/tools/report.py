"""Human-readable report of a compile, read from its `Compiled` record (lower.py): stages after
inlining, domains, context, schedule, plans, costs; with the built kernel, how it was built."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Mapping, Sequence

from ..calls import describe_waiting
from ..codegen.reduction_loops import STAGED_STRIP, staged_scatter
from ..dsl.reduction import Reduction
from ..schedule.reduction_order import loop_order, reordered
from ..schedule.tiling import TiledGroup, UntiledGroup

if TYPE_CHECKING:
    from ..driver.lower import Compiled
    from ..graph.arguments import CopiedInput
    from ..jit.build import Kernel

CONTRACT_NOTE = (
    "multiply-add contraction: on (-ffp-contract=fast); results may differ from the "
    "interpreter's in the last bits"
)
REASSOCIATE_NOTE = (
    "float reassociation: on (-fassociative-math -fno-signed-zeros -freciprocal-math); "
    "results may differ from the interpreter's by rounding"
)


def pipeline_report(
    compiled: Compiled,
    kernel: Kernel | None = None,
    pass_seconds: Mapping[str, float] | None = None,
    vectorization: bool = False,
    copied: Sequence[CopiedInput] = (),
) -> str:
    """The stages as compiled with their isl domains, the parameter context, what was inlined,
    the schedule and its plans, the warnings, the inputs calls copied (`copied`, CopiedInputs)
    and the time of each pass (`pass_seconds`, the build's included; none given: none shown);
    `kernel` is the built module, None if unbuilt."""
    request, pass_seconds = compiled.request, pass_seconds or {}
    assumed = [
        f"{k}={request.param_values[k]} (assumed: no estimate given)" for k in request.assumed
    ]
    lines = [
        f"pipeline {request.name}: {len(request.graph.computed)} stages as written, "
        f"{len(compiled.stage_graph.computed)} after inlining"
    ]
    declared = ", ".join(p.name for p in request.graph.declared_parameters)
    lines.append(f"parameters: {declared or '(none)'}")
    if request.estimates or request.assumed:
        lines.append(
            "estimates: " + ", ".join([f"{k}={v}" for k, v in request.estimates.items()] + assumed)
        )
    lines.append(f"context: {compiled.context}")
    lines.append("stages:")
    for stage in compiled.stage_graph.stages:
        func = stage.func
        reads = f" <- {', '.join(stage.producers)}" if stage.producers else ""
        lines.append(
            f"  {func.kind:9s} {func.name}: {func.typ} {compiled.domains[func.name]}{reads}"
        )
    if compiled.inlined:
        lines.append("inlined:")
        for producer, consumers, rule in compiled.inlined:
            lines.append(f"  {producer} into {', '.join(consumers)} ({rule})")
    lines.append("schedule:")
    lines += [f"  {line}" for line in str(compiled.schedule).splitlines()]
    for i, plan in enumerate(compiled.group_plans):
        if isinstance(plan, UntiledGroup):
            lines.append(f"  group {i} runs untiled: {plan.reason}")
        else:
            fused = [", ".join(n.stages) for n in plan.nests if len(n.stages) > 1]
            lines.append(
                f"  group {i}: live-outs {', '.join(plan.liveouts)}; scratchpads "
                f"{', '.join(plan.scratch) or 'none'}"
                + (f"; fused loops {'; '.join(fused)}" if fused else "")
                + (f"; tiles hold {_whole(plan)} whole (scanned)" if plan.whole else "")
            )
    if compiled.auto is not None:
        stats = compiled.auto.stats
        lines.append(f"weights: {request.weights} ({request.weights_origin})")
        lines.append(f"machine: {request.machine.describe()}; {request.machine_origin}")
        lines.append(
            f"grouping: {stats.seconds:.2f} s, {stats.states} states, "
            f"{stats.groups_costed} groups costed, rounds (limit, groups) "
            f"{stats.rounds}"
            + (
                "; pairwise merging's grouping, cheaper by the model"
                if stats.greedy_cheaper
                else ""
            )
        )
        for i, cost in enumerate(compiled.auto.costs):
            lines.append(f"  group {i}: cost {cost.cost:.4g} ({cost.terms.describe()})")
    if compiled.reductions:
        lines.append("reductions:")
        for name, strategy in compiled.reductions.items():
            lines.append(f"  {name}: {strategy.describe()}")
            func = compiled.stage_graph.stage(name).func
            if isinstance(func, Reduction) and staged_scatter(func):
                lines.append(
                    f"  {name}: a scatter, staged: offsets and values computed in vectors, "
                    f"{STAGED_STRIP} points at a time, then applied in order"
                )
            if isinstance(func, Reduction) and reordered(func):
                order = ", ".join(func.reduction_variables[k].name for k in loop_order(func))
                lines.append(f"  {name}: loops reordered ({order})")
    serial = kernel is not None and kernel.info.serial
    lines.append("memory: " + compiled.memory().describe(1 if serial else os.cpu_count() or 1))
    lines.append("warnings:" if compiled.warnings else "warnings: none")
    lines += [f"  {w}" for w in compiled.warnings]
    lines += [copy.describe() for copy in copied]
    lines.append(f"C target: -march={request.options.march}")
    lines.append(describe_waiting())
    if request.options.contract:
        lines.append(CONTRACT_NOTE)
    if request.options.reassociate:
        lines.append(REASSOCIATE_NOTE)
    if serial and kernel is not None:
        lines.append(f"threads: serial build (the compiler {kernel.info.compiler} has no OpenMP)")
    lines.append("passes: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in pass_seconds.items()))
    built = kernel.info.describe() if kernel is not None else "not built (build=False)"
    lines.append("C compile: " + built)
    from .vectorization import describe, logged_verdicts, scalar_stages
    from .vectorization import vectorization as loops

    verdicts = loops(compiled, kernel) if vectorization else logged_verdicts(compiled, kernel)
    scalar = scalar_stages(verdicts or ())
    if scalar:
        lines.append(
            f"warning: the innermost loop of {', '.join(scalar)} did not vectorize"
            + ("" if vectorization else " (report(vectorization=True) says why)")
        )
    if request.scalar_stages:
        lines.append(
            f"priced as scalar loops, as the first build found them: "
            f"{', '.join(request.scalar_stages)} (the schedule was chosen again)"
        )
    if vectorization:
        lines.append("vectorization (innermost loops):")
        lines.append(describe(verdicts))
    return "\n".join(lines)


def _whole(plan: TiledGroup) -> str:
    """The tile space's dimensions a scan member makes every tile hold whole."""
    return ", ".join(plan.anchor_variables[d] for d in plan.whole)
