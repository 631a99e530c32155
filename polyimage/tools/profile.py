"""`pipe.profile(...)`: a run of a separately built copy of the pipeline with timers compiled in
(the normal build carries none), reported per group and per stage with the memory traffic the
group must move at least (its inputs read once, its full buffers written once)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..schedule.tiling import UntiledGroup


@dataclass(frozen=True)
class ProfileRow:
    """One line: a group (seconds of wall time per call) or a stage inside it."""

    group: int
    stages: tuple
    seconds: float
    share: float
    traffic_bytes: int = 0
    inner: bool = False


@dataclass(frozen=True)
class Profile:
    """Per-call times of a pipeline's groups and stages, averaged over `runs` calls; `threads`
    is None for OpenMP's default count."""

    name: str
    threads: int | None
    runs: int
    seconds: float
    rows: tuple

    def __str__(self) -> str:
        lines = [
            f"profile of {self.name}: {self.seconds * 1e3:.3f} ms per call (mean of {self.runs}"
            f" runs, {self.threads or 'the default number of'} threads)",
            f"  {'group':<7}{'stages':<40}{'ms':>9}{'share':>8}{'MB':>9}{'GB/s':>8}",
        ]
        for row in self.rows:
            label = ", ".join(row.stages)
            label = label if len(label) <= 38 else label[:35] + "..."
            if row.inner:
                lines.append(f"  {'':<7}  {label:<38}{row.seconds * 1e3:>9.3f}{row.share:>7.1%}")
                continue
            rate = row.traffic_bytes / row.seconds / 1e9 if row.seconds > 0 else 0.0
            lines.append(
                f"  {row.group:<7}{label:<40}{row.seconds * 1e3:>9.3f}{row.share:>7.1%}"
                f"{row.traffic_bytes / 2**20:>9.1f}{rate:>8.1f}"
            )
        rest = self.seconds - sum(r.seconds for r in self.rows if not r.inner)
        lines.append(f"  {'':<7}{'(outside the groups: Python, threads)':<40}{rest * 1e3:>9.3f}")
        return "\n".join(lines)


def profile_run(compiled, kernel, call: tuple, runs: int) -> Profile:
    """Call `kernel`, the profiled build of `compiled`, `runs` times (after one warm-up) on
    `call`: (binding, outputs, thread count, parameters, inputs) as a Pipeline prepares it."""
    binding, outputs, nthreads, params, inputs = call
    timers = np.zeros(len(kernel.cmodule.profile))
    workspace = kernel.workspace()
    kernel(workspace, nthreads, params, inputs, outputs, timers)
    timers[:] = 0
    start = time.perf_counter()
    for _ in range(max(runs, 1)):
        kernel(workspace, nthreads, params, inputs, outputs, timers)
    seconds = (time.perf_counter() - start) / max(runs, 1)
    kernel.release(workspace)
    timers /= max(runs, 1)
    return Profile(
        compiled.name,
        nthreads or None,
        max(runs, 1),
        seconds,
        tuple(_rows(compiled, binding, kernel.cmodule.profile, timers, seconds)),
    )


def _rows(compiled, binding, slots, timers, total):
    nests = {}
    for (kind, group, stages), value in zip(slots, timers):
        if kind == "nest":
            nests.setdefault(group, []).append((stages, value))
    for (kind, group, stages), value in zip(slots, timers):
        if kind == "nest":
            continue
        plan = compiled.group_plans[group]
        traffic = _traffic(compiled.stage_graph, binding, plan, stages)
        yield ProfileRow(group, stages, value, value / total, traffic)
        inner = nests.get(group, [])
        if len(inner) == 1 and inner[0][0] == tuple(stages):
            continue  # one nest of the whole group: nothing more to say
        busy = sum(v for _, v in inner)
        for nest_stages, nest_value in inner:
            part = value * nest_value / busy if busy else 0.0
            yield ProfileRow(group, nest_stages, part, part / total, inner=True)


def _traffic(graph, binding, plan, stages) -> int:
    """Bytes read from outside and written to full buffers: producers outside `stages` read
    once, the full buffers of `stages` (all of them untiled, the live-outs tiled) written once."""
    inside = set(stages)
    written = stages if isinstance(plan, UntiledGroup) else plan.liveouts
    read = {p for s in stages for p in graph.stage(s).producers if p not in inside}
    return sum(_bytes(graph, binding, n) for n in set(written) | read)


def _bytes(graph, binding, name) -> int:
    itemsize = graph.stage(name).func.typ.dtype.itemsize
    return int(np.prod(binding.shapes[name])) * itemsize
