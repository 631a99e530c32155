"""Dynamic-programming grouping over the stage DAG (the recurrence of "An Effective Fusion and
Tile Size Model for PolyMage", TOPLAS 2020, Sec. 3, made exact).

A grouping is valid when the graph of its groups is acyclic; then its groups can run in an order
where everything a group reads is already done, so every valid grouping is a sequence of steps
`done -> done | H` with `done` and `done | H` both closed under producers (downsets; H is then
convex automatically). The DP memoizes the cheapest completion per `done`, and H ranges over the
sets that are connected (through producer-consumer edges, shared producers or shared consumers),
at most `group_limit` stages, and closed: every producer of a member is done or a member.

This departs from Algorithm 1 as printed, which memoizes over frontier groupings: there, a stage
reached again after its group was finalized is grouped a second time, and a stage that becomes a
successor before its other producers are grouped can never join them. Memoizing over the done
set avoids both, and the search is exhaustive over the groupings above (tests compare it with
brute force). Bounded incremental grouping (Algorithm 5) coarsens the DAG: groups found with a
small limit become the nodes of the next round.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class FusionDag:
    """Nodes (each a tuple of stage names) in topological order, as bitmask adjacency."""

    nodes: tuple
    preds: tuple
    near: tuple

    @classmethod
    def from_graph(cls, graph) -> "FusionDag":
        """The computed stages of a StageGraph, one node each."""
        names = [s.name for s in graph.computed]
        return cls.build(
            [(n,) for n in names], {n: [p for p in graph.stage(n).producers] for n in names}
        )

    @classmethod
    def build(cls, nodes, producers) -> "FusionDag":
        """`nodes`: tuples of stage names in topological order; `producers`: {stage: names}
        (names outside every node, like input images, still link the siblings that read them)."""
        owner = {name: i for i, node in enumerate(nodes) for name in node}
        readers: dict
        preds, readers = [0] * len(nodes), {}
        for i, node in enumerate(nodes):
            for name in node:
                for p in producers.get(name, ()):
                    if p in owner and owner[p] != i:
                        preds[i] |= 1 << owner[p]
                    readers.setdefault(p, 0)
                    readers[p] |= 1 << i
        succs = [0] * len(nodes)
        for i, mask in enumerate(preds):
            for j in _bits(mask):
                succs[j] |= 1 << i
        near = [preds[i] | succs[i] for i in range(len(nodes))]
        for group in readers.values():
            for i in _bits(group):
                near[i] |= group & ~(1 << i)
        for i in range(len(nodes)):
            for j in _bits(succs[i]):
                near[i] |= preds[j] & ~(1 << i)
        return cls(tuple(tuple(n) for n in nodes), tuple(preds), tuple(near))

    def stages(self, mask: int) -> tuple:
        """Stage names of the nodes in `mask`, in topological order."""
        return tuple(name for i in _bits(mask) for name in self.nodes[i])


@dataclass
class GroupingStats:
    """What a search did: states memoized, candidate groups costed, seconds, and whether
    pairwise merging beat it (grouping.auto)."""

    states: int = 0
    groups_costed: int = 0
    seconds: float = 0.0
    rounds: list = field(default_factory=list)
    greedy_cheaper: bool = False


def dp_grouping(dag: FusionDag, cost, group_limit=None, stats=None, leading=False):
    """(total cost, groups as bitmasks in execution order) minimizing the sum of `cost(stages)`
    (a tuple of stage names; math.inf forbids a group) over valid groupings. With `leading`,
    each next group must hold the first stage not yet done (in topological order): far fewer
    states on wide graphs, at the price of some groupings (a group whose first stage waits for
    another group)."""
    limit = len(dag.nodes) if group_limit is None else max(1, group_limit)
    full = (1 << len(dag.nodes)) - 1
    ancestors = _ancestors(dag)
    costs, memo = {}, {full: (0.0, ())}
    stats = stats if stats is not None else GroupingStats()
    start = time.perf_counter()

    def group_cost(mask):
        if mask not in costs:
            costs[mask] = cost(dag.stages(mask))
        return costs[mask]

    def best(done):
        result = (math.inf, ())
        for group in _candidates(dag, done, full, limit, ancestors, leading):
            c = costs[group] if group in costs else group_cost(group)
            if c == math.inf:
                continue
            after = done | group
            rest_cost, rest = memo[after] if after in memo else best(after)
            if c + rest_cost < result[0]:
                result = (c + rest_cost, (group,) + rest)
        memo[done] = result
        return result

    total, groups = memo[0] if 0 in memo else best(0)
    stats.states += len(memo)
    stats.groups_costed += len(costs)
    stats.seconds += time.perf_counter() - start
    return total, groups


def incremental_grouping(
    dag: FusionDag, cost, initial_limit=4, step=2, stats=None, max_states=None
):
    """Algorithm 5: group with `initial_limit`, make each group a node, group again at most
    `step` of those at a time, until a group may hold every stage. Returns (cost, stage tuples
    in execution order). Rounds whose DAG has more than `max_states` done sets search with
    `leading` groups (see dp_grouping)."""
    stats = stats if stats is not None else GroupingStats()
    stages = len(dag.nodes)
    limit, covered = initial_limit, initial_limit
    while True:
        leading = max_states is not None and count_states(dag, max_states) > max_states
        total, groups = dp_grouping(dag, cost, limit, stats, leading)
        stats.rounds.append((limit, len(groups)))
        if covered >= stages or len(groups) <= 1:
            return total, tuple(dag.stages(g) for g in groups)
        dag = _coarsen(dag, groups)
        limit, covered = step, covered * step


def count_states(dag: FusionDag, cap: int) -> int:
    """How many done sets (sets closed under producers) the DAG has, counting up to cap + 1."""
    seen: set
    seen, stack = set(), [0]
    while stack and len(seen) <= cap:
        done = stack.pop()
        if done in seen:
            continue
        seen.add(done)
        for i in range(len(dag.nodes)):
            if not done >> i & 1 and dag.preds[i] & ~done == 0:
                stack.append(done | 1 << i)
    return len(seen)


def _coarsen(dag: FusionDag, groups) -> FusionDag:
    """The DAG whose nodes are `groups` (bitmasks over `dag`), in execution order."""
    owner = {}
    for k, g in enumerate(groups):
        for i in _bits(g):
            owner[i] = k
    preds, near = [0] * len(groups), [0] * len(groups)
    for i, node in enumerate(dag.nodes):
        k = owner[i]
        for j in _bits(dag.preds[i]):
            if owner[j] != k:
                preds[k] |= 1 << owner[j]
        for j in _bits(dag.near[i]):
            if owner[j] != k:
                near[k] |= 1 << owner[j]
    nodes = tuple(dag.stages(g) for g in groups)
    return FusionDag(nodes, tuple(preds), tuple(near))


def _ancestors(dag: FusionDag) -> tuple:
    result: list = []
    for i, mask in enumerate(dag.preds):
        closure = mask
        for j in _bits(mask):
            closure |= result[j]
        result.append(closure)
    return tuple(result)


def _candidates(dag, done, full, limit, ancestors, leading=False):
    """Connected, closed groups of at most `limit` not-done nodes, each once, in a fixed
    order (by the bitmask's growth from its lowest ready node). A node joins a group only if
    fewer than `limit` of its ancestors remain (it could not be closed otherwise); that is
    asked of the nodes a group reaches, not of every remaining node."""
    preds, near = dag.preds, dag.near
    remaining = full & ~done
    if leading:  # the first remaining node, where it is ready
        first = (remaining & -remaining).bit_length() - 1
        ready = [first] if remaining and preds[first] & ~done == 0 else []
    else:  # a ready node's ancestors are all done: it is always allowed
        ready = [i for i in _bits(remaining) if preds[i] & ~done == 0]
    verdicts = {}
    seen, order = set(), []
    for root in ready:
        stack = [(1 << root, preds[root], near[root])]  # a group, its members' preds, near
        while stack:
            group, group_preds, group_near = stack.pop()
            if group in seen:
                continue
            seen.add(group)
            if group_preds & ~(done | group) == 0:
                order.append(group)
            if group.bit_count() >= limit:
                continue
            frontier = group_near & remaining & ~group
            while frontier:  # the highest first, so that the lowest is popped first
                j = frontier.bit_length() - 1
                frontier ^= 1 << j
                allowed = verdicts.get(j)
                if allowed is None:
                    allowed = verdicts[j] = (ancestors[j] & remaining).bit_count() < limit
                if allowed:
                    stack.append((group | 1 << j, group_preds | preds[j], group_near | near[j]))
    return order


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low
