"""Cost terms and tile sizes of groups, from exact regions."""

import math

import pytest
from helpers import MACHINE

import polyimage
from polyimage.apps import bilateral_grid, harris, unsharp_mask
from polyimage.grouping.cost import Weights, group_cost
from polyimage.pipeline import resolve_estimates

# only the work counts: recomputed halo points make a fused group cost more
OVERLAP_ONLY = Weights(live_data=0.0, cleanup=0.0, overlap=1.0, spread=0.0)


def stage_graph(app):
    """The stage graph of `app` and its parameter values at the paper's image size."""
    outputs, _ = app.build()
    graph = polyimage.compile(outputs).stage_graph
    return graph, resolve_estimates(graph, app.PAPER_SIZE)[0]


def test_fusing_saves_traffic_and_pays_for_overlap():
    graph, params = stage_graph(harris)
    names = tuple(s.name for s in graph.computed)
    alone = [group_cost(graph, (n,), params, MACHINE) for n in names]
    fused = group_cost(graph, names, params, MACHINE)
    assert fused.cost < sum(c.cost for c in alone)
    assert all(c.terms.redundant_fraction == 0 for c in alone)
    assert fused.terms.redundant_fraction > 0


def test_fusing_recomputes_work_per_point():
    """Per point of a tile, the fused group does more work than its stages run alone."""
    graph, params = stage_graph(harris)
    names = tuple(s.name for s in graph.computed)
    alone = [group_cost(graph, (n,), params, MACHINE, OVERLAP_ONLY) for n in names]
    fused = group_cost(graph, names, params, MACHINE, OVERLAP_ONLY)

    def ops_per_point(cost):
        return cost.terms.ops_per_tile / math.prod(cost.tile_sizes)

    assert ops_per_point(fused) > sum(ops_per_point(c) for c in alone)


@pytest.mark.xfail(
    strict=True,
    reason=(
        "the cost model counts every edge tile as a whole tile: on Harris at 2848x4256 the stages "
        "alone (48x256 tiles, 1020 of them, 3.3 to 3.4% of their points beyond the image) cost "
        "1729658880 while fused (102x256 tiles, 476, 2.5% beyond, 1.0% recomputed) cost 1723813056"
    ),
)
def test_with_overlap_only_fusing_costs_more_than_the_stages_alone():
    graph, params = stage_graph(harris)
    names = tuple(s.name for s in graph.computed)
    assert group_cost(graph, names, params, MACHINE, OVERLAP_ONLY).cost > sum(
        group_cost(graph, (n,), params, MACHINE, OVERLAP_ONLY).cost for n in names
    )


def test_tile_sizes_fill_a_cache_with_the_innermost_fixed():
    graph, params = stage_graph(unsharp_mask)
    cost = group_cost(graph, ("blurx", "mask"), params, MACHINE, innermost=128)
    c, x, y = cost.tile_sizes
    assert y == 128 and 1 <= c <= 3 and x >= 1
    points = c * x * y * 2
    assert points * 4 <= MACHINE.l2_bytes
    weights = Weights(live_data=1.0, cleanup=0.0, overlap=0.0, spread=0.0)
    traffic = group_cost(graph, ("blurx", "mask"), params, MACHINE, weights, 128)
    assert traffic.cost == traffic.terms.tiles * traffic.terms.bytes_per_tile / 2


def test_groups_that_cannot_be_tiled_cost_infinity():
    graph, params = stage_graph(bilateral_grid)
    names = [s.name for s in graph.computed]
    grid = next(n for n in names if n == "grid")
    pair = tuple(names[names.index(grid) - 1 : names.index(grid) + 1])
    assert group_cost(graph, pair, params, MACHINE).cost == math.inf
    single = group_cost(graph, (grid,), params, MACHINE)
    assert single.cost < math.inf and single.tile_sizes == ()
