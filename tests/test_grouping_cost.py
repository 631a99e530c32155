"""Cost terms and tile sizes of groups, from exact regions (weights not yet calibrated)."""
import math

import polyimage
from apps import bilateral_grid, harris, unsharp_mask
from polyimage.grouping import Machine
from polyimage.grouping.cost import Weights, group_cost
from polyimage.schedule.tiling import estimate_values

MACHINE = Machine(l1_bytes=48 * 1024, l2_bytes=1024 * 1024, cores=2)


def stage_graph(app):
    outputs, _ = app.build()
    graph = polyimage.compile(outputs).stage_graph
    return graph, estimate_values(graph, app.PAPER_SIZE)


def test_fusing_cuts_live_data_per_point_and_adds_overlap():
    graph, params = stage_graph(harris)
    names = tuple(s.name for s in graph.computed)
    alone = group_cost(graph, names[:1], params, MACHINE)
    fused = group_cost(graph, names, params, MACHINE)
    assert fused.terms["live data / compute"] < alone.terms["live data / compute"]
    assert alone.terms["overlap"] == 0 and fused.terms["overlap"] > 0
    deeper = group_cost(graph, names[:2], params, MACHINE)
    assert 0 < deeper.terms["overlap"] <= fused.terms["overlap"]


def test_tile_sizes_fill_a_cache_with_the_innermost_fixed():
    graph, params = stage_graph(unsharp_mask)
    cost = group_cost(graph, ("blurx", "mask"), params, MACHINE, innermost=128)
    c, x, y = cost.tile_sizes
    assert y == 128 and 1 <= c <= 3 and x >= 1
    points = c * x * y * 2
    assert points * 4 <= MACHINE.l2_bytes
    weights = Weights(live_data=1.0, cleanup=0.0, overlap=0.0, spread=0.0)
    assert group_cost(graph, ("blurx", "mask"), params, MACHINE, weights, 128).cost == \
        cost.terms["live data / compute"]


def test_groups_that_cannot_be_tiled_cost_infinity():
    graph, params = stage_graph(bilateral_grid)
    names = [s.name for s in graph.computed]
    grid = next(n for n in names if n == "grid")
    pair = tuple(names[names.index(grid) - 1:names.index(grid) + 1])
    assert group_cost(graph, pair, params, MACHINE).cost == math.inf
    single = group_cost(graph, (grid,), params, MACHINE)
    assert single.cost < math.inf and single.tile_sizes == ()
