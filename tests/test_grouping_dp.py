"""The DP grouping: exhaustive over valid groupings (checked by brute force on small DAGs),
valid on random DAGs, deterministic, and the incremental variant."""

import math
import random

import pytest

from polyimage.grouping.dp import FusionDag, GroupingStats, dp_grouping, incremental_grouping


def random_dag(rng, n, reach=None):
    """n stages s0..s{n-1} in topological order, random edges (from the `reach` stages before,
    or any), one or two input images."""
    producers = {}
    for k in range(n):
        earlier = [f"s{j}" for j in range(k if reach is None else max(0, k - reach), k)]
        picks = rng.sample(earlier, rng.randint(0, min(3, k))) if earlier else []
        if not picks or rng.random() < 0.2:
            picks.append(rng.choice(["in0", "in1"]))
        producers[f"s{k}"] = picks
    return FusionDag.build([(f"s{k}",) for k in range(n)], producers), producers


def random_cost(rng):
    """A cost per group, fixed on first use (some groups forbidden)."""
    table = {}

    def cost(stages):
        if stages not in table:
            table[stages] = (
                math.inf
                if rng.random() < 0.1 and len(stages) > 1
                else rng.uniform(0, 10) + len(stages) * rng.uniform(-2, 1)
            )
        return table[stages]

    return cost


def partitions(items):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in partitions(rest):
        yield [[first]] + part
        for k in range(len(part)):
            yield part[:k] + [[first] + part[k]] + part[k + 1 :]


def connected(dag, block):
    block = set(block)
    start = next(iter(block))
    seen, stack = {start}, [start]
    while stack:
        i = stack.pop()
        for j in block:
            if j not in seen and dag.near[i] >> j & 1:
                seen.add(j)
                stack.append(j)
    return seen == block


def acyclic(dag, blocks):
    owner = {i: k for k, b in enumerate(blocks) for i in b}
    edges = {
        (owner[j], owner[i])
        for i in range(len(dag.nodes))
        for j in range(len(dag.nodes))
        if dag.preds[i] >> j & 1 and owner[i] != owner[j]
    }
    indegree = {k: 0 for k in range(len(blocks))}
    for _, b in edges:
        indegree[b] += 1
    queue = [k for k, d in indegree.items() if d == 0]
    seen = 0
    while queue:
        a = queue.pop()
        seen += 1
        for x, b in edges:
            if x == a:
                indegree[b] -= 1
                if indegree[b] == 0:
                    queue.append(b)
    return seen == len(blocks)


def brute_force(dag, cost, limit):
    best = math.inf
    for blocks in partitions(list(range(len(dag.nodes)))):
        if any(len(b) > limit or not connected(dag, b) for b in blocks):
            continue
        if not acyclic(dag, blocks):
            continue
        total = sum(cost(dag.stages(sum(1 << i for i in b))) for b in blocks)
        best = min(best, total)
    return best


def check_valid(dag, groups):
    covered = 0
    for g in groups:
        assert covered & g == 0
        for i in range(len(dag.nodes)):
            if g >> i & 1:
                assert dag.preds[i] & ~(covered | g) == 0, "a group runs before a producer"
        covered |= g
    assert covered == (1 << len(dag.nodes)) - 1


@pytest.mark.parametrize("seed", range(40))
def test_dp_finds_the_brute_force_optimum(seed):
    rng = random.Random(seed)
    dag, _ = random_dag(rng, rng.randint(1, 7))
    cost = random_cost(rng)
    limit = rng.choice([2, 3, 7])
    total, groups = dp_grouping(dag, cost, limit)
    check_valid(dag, groups)
    assert total == pytest.approx(brute_force(dag, cost, limit))
    assert total == pytest.approx(sum(cost(dag.stages(g)) for g in groups))


@pytest.mark.parametrize("seed", range(20))
def test_larger_random_dags_give_valid_groupings(seed):
    rng = random.Random(1000 + seed)
    dag, _ = random_dag(rng, 20, reach=3)
    stats = GroupingStats()
    total, groups = incremental_grouping(
        dag, random_cost(rng), initial_limit=3, step=2, stats=stats
    )
    flat = [name for g in groups for name in g]
    assert sorted(flat) == sorted(n for node in dag.nodes for n in node)
    position = {name: k for k, g in enumerate(groups) for name in g}
    _, producers = random_dag(random.Random(1000 + seed), 20, reach=3)
    for name, preds in producers.items():
        for p in preds:
            if p in position:
                assert position[p] <= position[name]
    assert stats.states > 0 and stats.rounds[0][0] == 3


def test_same_answer_every_time():
    results = set()
    for _ in range(3):
        rng = random.Random(7)
        dag, _ = random_dag(rng, 12)
        results.add(dp_grouping(dag, random_cost(rng), 4))
    assert len(results) == 1


def test_a_chain_fuses_when_fusion_is_cheaper():
    dag = FusionDag.build([("a",), ("b",), ("c",)], {"a": ["img"], "b": ["a"], "c": ["b"]})
    total, groups = dp_grouping(dag, lambda stages: 10 - 3 * len(stages))
    assert [dag.stages(g) for g in groups] == [("a", "b", "c")] and total == 1
    total, groups = dp_grouping(dag, lambda stages: 1 if len(stages) == 1 else math.inf)
    assert [dag.stages(g) for g in groups] == [("a",), ("b",), ("c",)] and total == 3


def test_siblings_of_one_input_can_share_a_group():
    dag = FusionDag.build([("x",), ("y",)], {"x": ["img"], "y": ["img"]})
    total, groups = dp_grouping(dag, lambda stages: 1.0)
    assert [dag.stages(g) for g in groups] == [("x", "y")]


def test_leading_groups_search_fewer_states_and_stay_valid():
    rng = random.Random(99)
    dag, _ = random_dag(rng, 14)
    cost = random_cost(rng)
    exact, leading = GroupingStats(), GroupingStats()
    best, _ = dp_grouping(dag, cost, 4, exact)
    total, groups = dp_grouping(dag, cost, 4, leading, leading=True)
    check_valid(dag, groups)
    assert leading.states < exact.states and total >= best
