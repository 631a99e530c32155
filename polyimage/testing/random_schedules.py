"""Random valid schedules of a stage graph: contiguous segments of a random topological order,
each untiled or tiled with one or two levels of random sizes."""

from __future__ import annotations

from polyimage.schedule import GroupSchedule, Schedule
from polyimage.schedule.plan import tile_rank

from .stage_domains import TILE_SIZES


def _random_topological_order(graph, rng) -> list:
    computed = [s.name for s in graph.computed]
    members = set(computed)
    preds = {n: {p for p in graph.stage(n).producers if p in members} for n in computed}
    done: set
    order: list
    order, done = [], set()
    while len(order) < len(computed):
        ready = [n for n in computed if n not in done and preds[n] <= done]
        # mostly the given order, sometimes another valid one
        n = ready[0] if rng.random() < 0.6 else rng.choice(ready)
        order.append(n)
        done.add(n)
    return order


def random_tile_sizes(rank, rng, tiled=True) -> tuple:
    """(), one level or two levels of `rank` sizes; outer sizes from TILE_SIZES, and each inner
    size (INNER_SHAPES) equal to its outer one, a proper divisor of it, smaller without
    dividing it, or larger; sometimes the whole inner level equals the outer one."""
    if not tiled:
        return ()
    levels = rng.choice((0, 1, 1, 2, 2))
    if levels == 0:
        return ()
    outer = tuple(rng.choice(TILE_SIZES) for _ in range(rank))
    if levels == 1:
        return (outer,)
    if rng.random() < 0.2:
        return (outer, outer)
    return (outer, tuple(inner_tile_size(o, rng)[1] for o in outer))


INNER_SHAPES = ("equal", "dividing", "non-dividing", "larger")


def inner_tile_size(outer: int, rng) -> tuple:
    """(shape, size): an inner tile size for `outer` of a random shape among INNER_SHAPES
    that `outer` admits (1 has no smaller sizes, 2 no smaller non-divisor)."""
    sizes = {
        "equal": [outer],
        "dividing": [d for d in range(1, outer) if outer % d == 0],
        "non-dividing": [t for t in range(2, outer) if outer % t],
        "larger": [t for t in TILE_SIZES if t > outer] or [outer + 1],
    }
    shape = rng.choice([s for s in INNER_SHAPES if sizes[s]])
    return shape, rng.choice(sizes[shape])


def random_schedule(graph, rng, tiled=True) -> Schedule:
    """A valid Schedule for `graph` (a stage graph after inlining): contiguous segments of a
    random topological order (sometimes one group, sometimes one per stage), each with random
    tile sizes (none when `tiled` is false). Validated before it is returned."""
    order = _random_topological_order(graph, rng)
    shape = rng.random()
    if shape < 0.2:
        cuts = set()
    elif shape < 0.35:
        cuts = set(range(1, len(order)))
    else:
        p = rng.choice((0.25, 0.5, 0.75))
        cuts = {i for i in range(1, len(order)) if rng.random() < p}
    groups, start = [], 0
    for i in sorted(cuts) + [len(order)]:
        groups.append(tuple(order[start:i]))
        start = i
    schedule = Schedule(
        tuple(
            GroupSchedule(stages, random_tile_sizes(tile_rank(graph, stages), rng, tiled))
            for stages in groups
        )
    )
    return schedule.validate(graph)


def untiled_schedule(graph, rng) -> Schedule:
    """A random grouping with every group untiled."""
    return random_schedule(graph, rng, tiled=False)
