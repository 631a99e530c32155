"""Human-readable report of a compiled pipeline: stages after inlining, domains, context."""

from __future__ import annotations

import os

from .poly.analysis import analyze
from .schedule.tiling import UntiledGroup


def pipeline_report(pipe, vectorization=False) -> str:
    """The stages as compiled with their isl domains, the parameter context, what was inlined,
    the warnings, and the time of each compiler pass."""
    analysis = analyze(pipe.stage_graph, pipe.constraints)
    lines = [
        f"pipeline {pipe.name}: {len(pipe.graph.computed)} stages as written, "
        f"{len(pipe.stage_graph.computed)} after inlining"
    ]
    lines.append(f"parameters: {', '.join(p.name for p in pipe.graph.parameters) or '(none)'}")
    if pipe.estimates or pipe.assumed:
        lines.append(
            "estimates: "
            + ", ".join(
                [f"{k}={v}" for k, v in pipe.estimates.items()]
                + [f"{k}={pipe.param_values[k]} (assumed: no estimate given)" for k in pipe.assumed]
            )
        )
    lines.append(f"context: {analysis.context_set}")
    lines.append("stages:")
    for stage in pipe.stage_graph.stages:
        func = stage.func
        reads = f" <- {', '.join(stage.producers)}" if stage.producers else ""
        lines.append(
            f"  {func.kind:9s} {func.name}: {func.typ} {analysis.domain_sets[func.name]}{reads}"
        )
    if pipe.inlined:
        lines.append("inlined:")
        for producer, consumers, rule in pipe.inlined:
            lines.append(f"  {producer} into {', '.join(consumers)} ({rule})")
    lines.append("schedule:")
    lines += [f"  {line}" for line in str(pipe.schedule).splitlines()]
    for i, plan in enumerate(pipe.group_plans):
        if isinstance(plan, UntiledGroup):
            lines.append(f"  group {i} runs untiled: {plan.reason}")
        else:
            fused = [", ".join(n.stages) for n in plan.nests if len(n.stages) > 1]
            lines.append(
                f"  group {i}: live-outs {', '.join(plan.liveouts)}; scratchpads "
                f"{', '.join(plan.scratch) or 'none'}"
                + (f"; fused loops {'; '.join(fused)}" if fused else "")
            )
    if pipe.auto is not None:
        stats = pipe.auto.stats
        lines.append(f"weights: {pipe.weights} ({pipe.weights_origin})")
        lines.append(f"machine: {pipe.machine.describe()}; {pipe.machine_origin}")
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
        for i, cost in enumerate(pipe.auto.costs):
            lines.append(f"  group {i}: cost {cost.cost:.4g} ({cost.terms.describe()})")
    if pipe.reductions:
        lines.append("reductions:")
        for name, strategy in pipe.reductions.items():
            lines.append(f"  {name}: {strategy.describe()}")
    serial = pipe.kernel is not None and pipe.kernel.info.serial
    lines.append("memory: " + pipe.memory().describe(1 if serial else os.cpu_count() or 1))
    lines.append("warnings:" if pipe.warnings else "warnings: none")
    lines += [f"  {w}" for w in pipe.warnings]
    lines.append(f"C target: -march={pipe.options.march}")
    if serial:
        lines.append(
            f"threads: serial build (the compiler {pipe.kernel.info.compiler} has no OpenMP)"
        )
    lines.append(
        "passes: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in pipe.pass_seconds.items())
    )
    built = pipe.kernel.info.describe() if pipe.kernel is not None else "not built (build=False)"
    lines.append("C compile: " + built)
    if vectorization:
        from .vectorization import describe
        from .vectorization import vectorization as loops

        lines.append("vectorization (innermost loops):")
        lines.append(describe(loops(pipe)))
    return "\n".join(lines)
