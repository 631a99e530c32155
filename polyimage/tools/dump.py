"""What each compiler pass produced, written as text files into a folder (POLYIMAGE_DUMP=DIR or
`compile(..., dump=DIR)`), one folder per pipeline, like Halide's lowering log:

  01-graph.txt     the stages as written: kind, type, domain, definition
  02-inlined.txt   what was inlined into what, and the stages after inlining
  03-analysis.txt  the parameter context, the isl domain of every stage, the warnings
  04-schedule.txt  the schedule (text and JSON), and auto's search and group costs
  05-plans.txt     every group's plan: live-outs, scratchpads, tiles, loop nests, regions
  06-kernel.c      the generated C
  07-build.log     the C compiler's command line and output
  passes.txt       the seconds of every pass
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..dsl.constructs import Reduce
from ..schedule.tiling import UntiledGroup


class Dump:
    """Writes pass results under `root/<pipeline>`; does nothing when `root` is empty."""

    def __init__(self, root, pipeline: str):
        self.folder = Path(root) / pipeline if root else None
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)

    def write(self, name: str, text) -> None:
        """Write `text` (a string, or a function giving it: only called when dumping)."""
        if self.folder is not None:
            body = text() if callable(text) else text
            (self.folder / name).write_text(body if body.endswith("\n") else body + "\n")

    def copy(self, name: str, source: Path) -> None:
        if self.folder is not None and Path(source).is_file():
            shutil.copyfile(source, self.folder / name)


def graph_text(graph) -> str:
    """Every stage with its kind, type, domain and definition, producers first."""
    lines = []
    for stage in graph.stages:
        func = stage.func
        domain = ", ".join(
            f"{v.name} in [{iv.lb}, {iv.ub}]" for v, iv in zip(func.variables, func.intervals)
        )
        lines.append(
            f"{func.kind} {func.name}: {func.typ} over {domain}"
            + (" (output)" if func.name in graph.outputs else "")
        )
        for v, iv in zip(
            getattr(func, "reduction_variables", ()), getattr(func, "reduction_intervals", ())
        ):
            lines.append(f"  reduce over {v.name} in [{iv.lb}, {iv.ub}], from {func.default}")
        for case in func.cases:
            value = case.value
            if isinstance(value, Reduce):
                value = f"{value.target} {value.op.name}= {value.value}"
            lines.append(f"  {'otherwise' if case.cond is None else f'where {case.cond}'}: {value}")
    return "\n".join(lines)


def inlined_text(inlined, stage_graph) -> str:
    """What was inlined into what, by which rule, then the stages after inlining."""
    lines = [
        f"{producer} into {', '.join(consumers)} ({rule})" for producer, consumers, rule in inlined
    ] or ["nothing inlined"]
    return "\n".join(lines + ["", graph_text(stage_graph)])


def analysis_text(context: str, domains: dict, warnings) -> str:
    """The parameter context, every stage's isl domain, and the bounds check's warnings."""
    lines = [f"context: {context}", "domains:"]
    lines += [f"  {name}: {domain}" for name, domain in domains.items()]
    lines += ["warnings:"] + [f"  {w}" for w in warnings] if warnings else ["warnings: none"]
    return "\n".join(lines)


def schedule_text(schedule, auto, request) -> str:
    """The schedule as text and JSON; with `auto`'s search, its weights, statistics and the
    cost of every group."""
    lines = [str(schedule), "", schedule.to_json()]
    if auto is not None:
        stats = auto.stats
        lines += [
            "",
            f"auto: weights {request.weights} ({request.weights_origin}); "
            f"{stats.states} states, {stats.groups_costed} groups costed, "
            f"{stats.seconds:.3f} s",
        ]
        lines += [
            f"  group {i}: cost {cost.cost:.6g}, {cost.terms.describe()}"
            for i, cost in enumerate(auto.costs)
        ]
    return "\n".join(lines)


def plans_text(plans) -> str:
    """Every group's plan: members, tiles, live-outs, scratchpads, loop nests, regions."""
    lines = []
    for i, plan in enumerate(plans):
        if isinstance(plan, UntiledGroup):
            lines.append(f"group {i}: {', '.join(plan.members)} untiled ({plan.reason})")
            continue
        tiles = " then ".join("x".join(map(str, t)) for t in plan.tile_sizes)
        lines.append(
            f"group {i}: {', '.join(plan.members)} tiled [{tiles}] over the space of {plan.anchor}"
        )
        lines.append(
            f"  live-outs {', '.join(plan.liveouts)}; scratchpads "
            f"{', '.join(plan.scratch) or 'none'}"
        )
        lines += [
            f"  nest: {', '.join(n.stages)}{' (scratch)' if n.scratch else ''}" for n in plan.nests
        ]
        for name in plan.regions:
            bounds = ", ".join(f"[{lo}, {hi}]" for lo, hi in plan.regions[name].bounds)
            lines.append(f"  region of {name}: {bounds}")
    return "\n".join(lines)


def passes_text(pass_seconds) -> str:
    """The seconds of every pass, in the order they ran."""
    return "\n".join(f"{name} {seconds:.4f} s" for name, seconds in pass_seconds.items())


def compiled_texts(compiled) -> dict:
    """{file name: text} of what a dump folder holds for the `Compiled` record (01 to 06, as
    lowering writes them one pass at a time): a record loaded from the cache dumped whole."""
    return {
        "01-graph.txt": graph_text(compiled.request.graph),
        "02-inlined.txt": inlined_text(compiled.inlined, compiled.stage_graph),
        "03-analysis.txt": analysis_text(compiled.context, compiled.domains, compiled.warnings),
        "04-schedule.txt": schedule_text(compiled.schedule, compiled.auto, compiled.request),
        "05-plans.txt": plans_text(compiled.group_plans),
        "06-kernel.c": compiled.cmodule.source,
    }
