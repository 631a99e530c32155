"""Baseline groupings, to measure what the DP buys (TOPLAS 2020, Sec. 2.2, 2.3 and 7.4).

"greedy": PolyMage's original heuristic. A group whose stages are all read by one other group
is merged into it while the share of recomputed points (at the fixed tile size) stays under a
threshold; every group gets the same tile sizes.
"greedy-cost": Halide's pairwise merging with this cost function (the paper's PolyMage+G+TC):
the producer-consumer pair of groups whose merge saves the most cost is merged, until no merge
saves anything; tile sizes come from the cost function.
"""

from __future__ import annotations

from ..schedule.plan import GroupSchedule, Schedule, tile_rank
from .cost import CostModel, Weights, redundant_fraction

OVERLAP_THRESHOLD = 0.4


def fixed_tiles(rank: int) -> tuple:
    """PolyMage's one tile size for every group: 32 x 256 in the last two dimensions."""
    return ((1,) * max(rank - 2, 0) + (32, 256))[-rank:]


def greedy_schedule(graph, params, threshold=OVERLAP_THRESHOLD) -> Schedule:
    groups = _singletons(graph)
    merged = True
    while merged:
        merged = False
        children_of = _children_of(graph, groups)
        for group in list(groups):
            children = children_of[group]
            if len(children) != 1 or not _can_merge(children_of, group, children[0]):
                continue
            union = group | children[0]
            stages = _ordered(graph, union)
            fraction = redundant_fraction(
                graph, stages, params, fixed_tiles(tile_rank(graph, stages))
            )
            if fraction is not None and fraction <= threshold:
                groups = [g for g in groups if g not in (group, children[0])] + [union]
                merged = True
                break
    return _schedule(graph, groups, lambda stages: _fixed_or_untiled(graph, stages, params))


def greedy_cost_schedule(
    graph, params, machine, weights=Weights(), price=None, start=None, scalar=frozenset()
) -> Schedule:
    """Pairwise merging by the cost model, from one group per stage or from the groups `start`
    (stage names each); `price(stages)` gives a group's GroupCost (default: a fresh
    CostModel's, pricing the stages `scalar` as scalar loops; auto passes its own, whose
    groups are already priced)."""
    costs = {}
    price = price or CostModel(graph, params, machine, weights, scalar=scalar)

    def cost(group):
        if group not in costs:
            costs[group] = price(_ordered(graph, group))
        return costs[group]

    groups = [frozenset(g) for g in start] if start is not None else _singletons(graph)
    while True:
        best, pair = 0.0, None
        children_of = _children_of(graph, groups)
        for group in groups:
            for child in children_of[group]:
                if not _can_merge(children_of, group, child):
                    continue
                saving = cost(group).cost + cost(child).cost - cost(group | child).cost
                if saving > best:
                    best, pair = saving, (group, child)
        if pair is None:
            break
        groups = [g for g in groups if g not in pair] + [pair[0] | pair[1]]
    return _schedule(graph, groups, lambda stages: cost(frozenset(stages)).tile_sizes)


def _singletons(graph) -> list:
    return [frozenset((s.name,)) for s in graph.computed]


def _ordered(graph, group) -> tuple:
    return tuple(s.name for s in graph.computed if s.name in group)


def _owner(groups) -> dict:
    return {name: g for g in groups for name in g}


def _children_of(graph, groups) -> dict:
    """The groups reading each group, in stage order."""
    owner = _owner(groups)
    result: dict = {group: [] for group in groups}
    for stage in graph.computed:  # each group's members in stage order
        group = owner.get(stage.name)
        if group is None:
            continue
        found = result[group]
        for consumer in stage.consumers:
            child = owner[consumer]
            if child != group and child not in found:
                found.append(child)
    return result


def _can_merge(children_of, producer, consumer) -> bool:
    """No path from `producer` to `consumer` through a third group (that would be a cycle)."""
    stack = [c for c in children_of[producer] if c != consumer]
    seen = set(stack)
    while stack:
        group = stack.pop()
        if group == consumer:
            return False
        for child in children_of[group]:
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return True


def _fixed_or_untiled(graph, stages, params) -> tuple:
    tiles = fixed_tiles(tile_rank(graph, stages))
    return tiles if redundant_fraction(graph, stages, params, tiles) is not None else ()


def _schedule(graph, groups, tiles_of) -> Schedule:
    """The groups in an order where producers come first, each with its tile sizes."""
    order = {s.name: k for k, s in enumerate(graph.computed)}
    done: set
    owner, done, result = _owner(groups), set(), []
    remaining = sorted(groups, key=lambda g: min(order[n] for n in g))
    while remaining:
        for group in remaining:
            needs = {owner[p] for n in group for p in graph.stage(n).producers if p in owner}
            if needs - {group} <= done:
                stages = _ordered(graph, group)
                tiles = tiles_of(stages)
                result.append(GroupSchedule(stages, (tiles,) if tiles else ()))
                done.add(group)
                remaining.remove(group)
                break
    return Schedule(tuple(result)).validate(graph)
