"""Candidate schedules of a pipeline, and what the cost model says they cost.

Besides what the compiler proposes (`auto` under the default weights and under other weight
vectors, `greedy`, `greedy-cost`, `naive`), the candidates cover what the model may misjudge:
`auto` with other group limits of its search, its tile sizes scaled, and its groups run as
full-width strips of a few rows with one channel per tile."""

from __future__ import annotations

import math

from polyimage.algebra.evaluate import extent
from polyimage.grouping.auto import INITIAL_LIMIT, auto_schedule
from polyimage.grouping.cost import CostModel, Weights
from polyimage.grouping.greedy import greedy_cost_schedule, greedy_schedule
from polyimage.schedule.plan import GroupSchedule, Schedule, ScheduleError
from polyimage.schedule.tiling import UntiledGroup

# the DP's first group limit (3 by default); 6 takes a minute on camera_pipe
GROUP_LIMITS = (2, 4)
TILE_FACTORS = (0.5, 2.0)
STRIP_ROWS = (2, 8, 32)


def auto_pick(
    subject, machine, weights: Weights, initial_limit=INITIAL_LIMIT, multilevel=False, model=None
):
    """The Schedule `auto` chooses for `subject` under `weights` (reusing what `model`, a
    CostModel of the subject, has computed under other weights)."""
    return auto_schedule(
        subject.graph,
        subject.params,
        machine,
        weights,
        initial_limit=initial_limit,
        multilevel=multilevel,
        model=model,
    ).schedule


def base_candidates(subject, machine, multilevel=False) -> dict:
    """{label: Schedule} of the candidates that do not depend on sampled weights, each schedule
    once (under its first label)."""
    graph, params = subject.graph, subject.params
    default = auto_pick(subject, machine, Weights(), multilevel=multilevel)
    found = {
        "auto": default,
        "naive": Schedule.naive(graph),
        "greedy": greedy_schedule(graph, params),
        "greedy-cost": greedy_cost_schedule(graph, params, machine, Weights()),
    }
    for limit in GROUP_LIMITS:
        found[f"auto, group limit {limit}"] = auto_pick(
            subject, machine, Weights(), limit, multilevel
        )
    model = CostModel(graph, params, machine)
    for factor in TILE_FACTORS:
        found[f"auto, tiles x{factor:g}"] = retiled(
            model, default, lambda sizes, tiles, f=factor: scaled(sizes, tiles, f)
        )
    for rows in STRIP_ROWS:
        found[f"auto, strips of {rows} rows"] = retiled(
            model, default, lambda sizes, tiles, r=rows: strip(sizes, r)
        )
    return distinct(graph, found)


def distinct(graph, schedules: dict) -> dict:
    """`schedules` without repeats and without those `graph` rejects (None included)."""
    kept, seen = {}, set()
    for label, schedule in schedules.items():
        if schedule is None or str(schedule) in seen:
            continue
        try:
            schedule.validate(graph)
        except ScheduleError:
            continue
        kept[label] = schedule
        seen.add(str(schedule))
    return kept


def anchor_sizes(model, stages) -> tuple | None:
    """The extents of the dimensions a group's tile sizes cut (None: the group cannot be
    tiled)."""
    plan = model.plan(tuple(stages))
    if isinstance(plan, UntiledGroup):
        return None
    intervals = model.graph.stage(plan.anchor).func.intervals
    return tuple(extent(model.evaluate, iv) for iv in intervals)


def retiled(model, schedule: Schedule, tiles_for) -> Schedule | None:
    """`schedule` with each tiled group given one level of `tiles_for(sizes, outer tiles)`
    (None when that changes nothing)."""
    groups = []
    for group in schedule.groups:
        sizes = anchor_sizes(model, group.stages) if group.tile_sizes else None
        if sizes is None or len(sizes) != len(group.tile_sizes[0]):
            groups.append(group)
            continue
        tiles = tiles_for(sizes, group.tile_sizes[0])
        groups.append(GroupSchedule(group.stages, (tiles,) if tiles else group.tile_sizes))
    changed = Schedule(tuple(groups))
    return None if changed == schedule else changed


def scaled(sizes, tiles, factor) -> tuple:
    """`tiles` times `factor`, within 1 and the extents."""
    return tuple(max(1, min(s, round(t * factor))) for s, t in zip(sizes, tiles))


def strip(sizes, rows) -> tuple | None:
    """Every column, `rows` rows, one along the outer dimensions (channels); None in 1-D."""
    if len(sizes) < 2:
        return None
    return (1,) * (len(sizes) - 2) + (min(rows, sizes[-2]), sizes[-1])


def schedule_cost(model: CostModel, schedule: Schedule) -> float:
    """The model's cost of `schedule` with its own tile sizes (nan when a group's tiles do not
    match the dimensions the model tiles)."""
    total = 0.0
    for group in schedule.groups:
        sizes = anchor_sizes(model, group.stages) if group.tile_sizes else None
        if sizes is None:
            total += sum(model.untiled(name) for name in group.stages)
            continue
        if len(group.tile_sizes[0]) != len(sizes):
            return math.nan
        total += model.at_tiles(group.stages, group.tile_sizes)
    return total
