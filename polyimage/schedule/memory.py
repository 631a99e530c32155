"""Buffers a schedule needs: full buffers with their lifetimes, and per-thread scratchpads.

A full buffer is allocated before the first group that writes it and freed after the last
group that reads it, so the allocator reuses memory across groups. `memory_estimate` gives the
bytes at the estimates: all full buffers at once (what keeping every buffer for the whole run
would take), the peak of those alive together, and each tiled group's scratchpads per thread.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..algebra.evaluate import Evaluator, extent, scalar
from .blocking import buffer_bytes
from .reductions import kept_in_tasks
from .tiling import UntiledGroup, tile_origin, tile_span

MAX_TILES_EVALUATED = 20000


def small_stages(graph, params, limit: int) -> frozenset:
    """Stages with fewer than `limit` points at the parameter values `params`: their run time
    is too short for versions of their innermost loop (residue blocks, interior split) to pay
    for the C they take to compile."""
    evaluate = Evaluator({}, {}, params)
    return frozenset(
        s.name
        for s in graph.computed
        if math.prod(extent(evaluate, iv) for iv in s.func.intervals) < limit
    )


def buffer_lifetimes(graph, plans, in_tasks=frozenset()) -> dict:
    """{stage: (first group, last group)} for every intermediate that needs a full buffer:
    members of untiled groups and live-outs of tiled ones that are not pipeline outputs, nor
    Reductions kept in their tasks' buffers (`in_tasks`: schedule.reductions.kept_in_tasks)."""
    owner = {n: i for i, plan in enumerate(plans) for n in plan.members}
    lifetimes = {}
    for i, plan in enumerate(plans):
        full = plan.members if isinstance(plan, UntiledGroup) else plan.liveouts
        for name in full:
            if name in graph.outputs or name in in_tasks:
                continue
            readers = [owner[c] for c in graph.stage(name).consumers]
            lifetimes[name] = (i, max(readers, default=i))
    return lifetimes


def buffer_slots(lifetimes: dict) -> dict:
    """{stage: slot} for the full buffers of `buffer_lifetimes`: in order of first use, each
    takes the first slot whose buffers are all dead before its first group (so buffers alive in
    one group never share), else a new slot. A workspace keeps one allocation per slot."""
    busy_until: list
    slots, busy_until = {}, []
    for name, (first, last) in sorted(lifetimes.items(), key=lambda item: item[1][0]):
        slot = next((k for k, until in enumerate(busy_until) if until < first), len(busy_until))
        if slot == len(busy_until):
            busy_until.append(last)
        busy_until[slot] = last
        slots[name] = slot
    return slots


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes at the estimates."""

    all_full: int
    peak_full: int
    scratch_per_thread: tuple
    kept_full: int = 0
    blocks: tuple = (0, 0)  # register blocks' buffers: (per thread, shared), the largest

    def describe(self, threads: int) -> str:
        scratch = max(self.scratch_per_thread, default=0)
        text = (
            f"intermediate full buffers {_mb(self.peak_full)} at peak, {_mb(self.kept_full)} "
            f"kept between calls ({_mb(self.all_full)} if each had its own); scratchpads "
            f"{_mb(scratch)} per thread"
            f" in the largest group ({_mb(scratch * threads)} for {threads} "
            f"thread{'s' if threads != 1 else ''})"
        )
        each, shared = self.blocks
        if each or shared:
            text += (
                f"; register blocks' copies and cells {_mb(each)} per thread and "
                f"{_mb(shared)} shared"
            )
        return text


def _mb(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def memory_estimate(graph, plans, params: dict, strategies=None) -> MemoryEstimate:
    """Bytes at the estimates `params`; `strategies` ({Reduction: ReductionStrategy}) give
    the register blocks' buffers and the Reductions kept in their tasks (no full buffer)."""
    strategies = strategies or {}
    in_tasks = kept_in_tasks(strategies)
    evaluate = Evaluator({}, {}, params)
    lifetimes = buffer_lifetimes(graph, plans, in_tasks)
    sizes = {name: _buffer_bytes(graph.stage(name).func, evaluate) for name in lifetimes}
    peak = max(
        (
            sum(sizes[n] for n, (a, b) in lifetimes.items() if a <= i <= b)
            for i in range(len(plans))
        ),
        default=0,
    )
    scratch = tuple(
        0 if isinstance(plan, UntiledGroup) else _scratch_bytes(graph, plan, params, evaluate)
        for plan in plans
    )
    slots = buffer_slots(lifetimes)
    kept = sum(max(sizes[n] for n in lifetimes if slots[n] == slot) for slot in set(slots.values()))
    used = [
        buffer_bytes(graph.stage(name).func, s.block, evaluate)
        for name, s in strategies.items()
        if s.block is not None
    ]
    blocks = (max((u[0] for u in used), default=0), max((u[1] for u in used), default=0))
    return MemoryEstimate(sum(sizes.values()), peak, scratch, kept, blocks)


def _buffer_bytes(func, evaluate) -> int:
    n = 1
    for iv in func.intervals:
        n *= max(scalar(evaluate, iv.ub) - scalar(evaluate, iv.lb) + 1, 0)
    return n * func.typ.dtype.itemsize


def tile_indices(graph, plan, evaluate) -> list:
    """Per tile dimension, the range of outer tile indices (as the generated C computes)."""
    ranges = []
    for d, size in enumerate(plan.tile_sizes[0]):
        lo, hi = (scalar(evaluate, e) for e in tile_span(graph, plan, d, size))
        ranges.append(range(lo, hi + 1))
    return ranges


def _scratch_bytes(graph, plan, params, evaluate) -> int:
    ranges = tile_indices(graph, plan, evaluate)
    sizes = plan.tile_sizes[0]
    count = int(np.prod([len(r) for r in ranges]))
    step = max(1, count // MAX_TILES_EVALUATED)
    tiles = np.array(
        list(itertools.islice(itertools.product(*ranges), 0, None, step)), np.int64
    ).reshape(-1, len(ranges))
    origins = np.array([scalar(evaluate, tile_origin(graph, plan, d)) for d in range(len(sizes))])
    lows = origins + tiles * np.array(sizes)
    first = np.broadcast_to(
        origins + np.array([r.start for r in ranges]) * np.array(sizes), lows.shape
    )
    points = np.concatenate([lows, lows + np.array(sizes) - 1, first], axis=1)
    regions = plan.regions.evaluate(points, params)
    total = 0
    for name in plan.scratch:
        lo, hi = regions[name]
        volume = np.prod(np.maximum(hi - lo + 1, 0), axis=1).max(initial=0)
        total += int(volume) * graph.stage(name).func.typ.dtype.itemsize
    return total
