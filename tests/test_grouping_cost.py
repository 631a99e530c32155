"""Cost terms and tile sizes of groups, from exact regions."""
import math

import polyimage
from polyimage.apps import bilateral_grid, harris, unsharp_mask
from polyimage.grouping import Machine
from polyimage.grouping.cost import Weights, group_cost
from polyimage.pipeline import resolve_estimates

MACHINE = Machine(l1_bytes=48 * 1024, l2_bytes=1024 * 1024, cores=2)


def stage_graph(app):
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
    no_traffic = Weights(live_data=0.0, cleanup=0.0, overlap=1.0, spread=0.0)
    assert group_cost(graph, names, params, MACHINE, no_traffic).cost > \
        sum(group_cost(graph, (n,), params, MACHINE, no_traffic).cost for n in names[:1])


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
    pair = tuple(names[names.index(grid) - 1:names.index(grid) + 1])
    assert group_cost(graph, pair, params, MACHINE).cost == math.inf
    single = group_cost(graph, (grid,), params, MACHINE)
    assert single.cost < math.inf and single.tile_sizes == ()
