"""`schedule="auto"`: groups by the DP over the cost model, tile sizes from the cost model;
where pairwise merging (greedy-cost) finds a grouping the same model prices lower than the
bounded DP's, that one."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from ..algebra.evaluate import Evaluator
from ..dsl.reduction import Reduction
from ..schedule.plan import GroupSchedule, Schedule
from ..schedule.reductions import computed_first, foldable, reduction_strategy
from ..schedule.tiling import UntiledGroup, tiling_plan, with_tiles
from .cost import CostModel, CostTerms, GroupCost, Weights
from .dp import FusionDag, GroupingStats, incremental_grouping
from .greedy import greedy_cost_schedule
from .machine import Machine

INITIAL_LIMIT = 3
STEP = 2
MAX_STATES = 2000
# a search running longer than this reports its progress, again after each such period
PROGRESS_SECONDS = 1.0
progress = logging.getLogger("polyimage.progress")
log = logging.getLogger("polyimage")


@dataclass(frozen=True)
class AutoResult:
    """The schedule chosen, each group's plan (what code generation runs) and cost (terms
    included), and the search statistics."""

    schedule: Schedule
    plans: tuple
    costs: tuple
    stats: GroupingStats


def auto_schedule(
    graph,
    params,
    machine: Machine | None = None,
    weights: Weights = Weights(),
    initial_limit=INITIAL_LIMIT,
    step=STEP,
    max_states=MAX_STATES,
    multilevel=False,
    model=None,
    scalar=frozenset(),
) -> AutoResult:
    """The cheapest grouping the bounded incremental DP finds, with its tile sizes (two levels
    where the multi-level cost prefers them); `params`: the parameter values at the estimates.
    `model`: a CostModel of this graph whose computed facts to reuse, priced under `weights`.
    `scalar`: stages a build found left scalar, priced so."""
    machine = machine or Machine.detect()
    order = {s.name: k for k, s in enumerate(graph.stages)}
    if model is None:
        model = CostModel(graph, params, machine, weights, multilevel=multilevel, scalar=scalar)
    else:
        model = model.reweighted(weights)
    costs = {}

    stats = GroupingStats()
    start = time.perf_counter()
    next_report = start + PROGRESS_SECONDS

    def group_cost(stages):
        nonlocal next_report
        key = tuple(sorted(stages, key=order.get))
        if key not in costs:
            costs[key] = model(key)
            if time.perf_counter() >= next_report:
                next_report = time.perf_counter() + PROGRESS_SECONDS
                progress.info(
                    "grouping: %d groups costed, %d states explored, round %d, %.1f s",
                    len(costs),
                    stats.states,
                    len(stats.rounds) + 1,
                    time.perf_counter() - start,
                )
        return costs[key]

    def cost(stages):
        return group_cost(stages).cost

    _, groups = incremental_grouping(
        FusionDag.from_graph(graph), cost, initial_limit, step, stats, max_states
    )
    chosen = [tuple(sorted(g, key=order.__getitem__)) for g in groups]

    # the DP is bounded: where pairwise merging, from one group per stage or from the DP's
    # groups, finds a grouping its own model prices lower, take that one
    for initial in (None, chosen):
        greedy = greedy_cost_schedule(graph, params, machine, weights, group_cost, initial)
        merged = [tuple(sorted(g.stages, key=order.__getitem__)) for g in greedy.groups]
        if sum(cost(g) for g in merged) < sum(cost(g) for g in chosen):
            log.info("auto: pairwise merging found a cheaper grouping than the DP; taking it")
            chosen, stats.greedy_cheaper = merged, True
    stats.seconds = time.perf_counter() - start
    chosen, folded = folded_epilogues(graph, chosen, params, machine)
    for group, (reduction, stages) in folded.items():
        parts = [costs[(reduction,)], *(costs[(name,)] for name in stages)]
        why = f"{', '.join(stages)} computed by the tasks of {reduction}'s register blocks"
        costs[group] = GroupCost(sum(p.cost for p in parts), (), CostTerms(untiled=why))
    schedule = Schedule(tuple(GroupSchedule(g, costs[g].levels) for g in chosen))
    plans = tuple(
        UntiledGroup(g, costs[g].terms.untiled)
        if g in folded or (len(g) > 1 and not costs[g].levels)
        else with_tiles(tiling_plan(graph, g, params), costs[g].levels)
        for g in chosen
    )
    return AutoResult(schedule, plans, tuple(costs[g] for g in chosen), stats)


def folded_epilogues(graph, groups: list, params, machine) -> tuple:
    """`groups` (tuples of member names, in order) with each group of one Reduction that runs
    by register blocks joined by the groups of one stage its tasks can compute from their
    cells in cache (schedule.blocking.folds_into_tasks: a conv layer's bias and ReLU), where
    those read nothing computed later; and {joined group: (the Reduction, the stages)}."""
    evaluate = Evaluator({}, {}, params)
    groups, folded = list(groups), {}
    for i, group in enumerate(groups):
        func = graph.stage(group[0]).func
        if len(group) != 1 or not isinstance(func, Reduction):
            continue
        if reduction_strategy(func, evaluate, machine).kind != "blocked":
            continue
        ready = {*computed_first(graph), *(m for g in groups[: i + 1] for m in g)}
        alone = [later[0] for later in groups[i + 1 :] if len(later) == 1]
        joined = foldable(graph, group[0], alone, ready)
        if joined:
            groups[i] = (group[0], *joined)
            folded[groups[i]] = (group[0], joined)
    kept = [g for g in groups if not (len(g) == 1 and any(g[0] in f[1] for f in folded.values()))]
    return kept, folded
