"""Interval bounds inference: every tile's region contains the exact footprint (brute force),
and is the footprint's box where no guard narrows it."""

import itertools

import numpy as np
import pytest
from helpers import (
    brute_force,
    channel_stencil,
    guarded_blur_chain,
    numeric_regions,
    sampling_pyramid,
)

from polyimage.apps import harris
from polyimage.graph import build_graph
from polyimage.schedule.regions import infer_regions, tile_variables


def check_regions(outputs, params, tile_sizes, exact_boxes=True):
    graph = build_graph(outputs)
    group = [s.name for s in graph.computed]
    tile_vars = tile_variables(len(tile_sizes))
    regions = infer_regions(graph, group, graph.outputs, tile_sizes, tile_vars)
    out = graph.stage(graph.outputs[0]).func
    from polyimage.algebra.evaluate import evaluate_scalar

    extents = [
        evaluate_scalar(iv.ub, params) - evaluate_scalar(iv.lb, params) + 1 for iv in out.intervals
    ]
    tiles = np.array(
        list(itertools.product(*[range(-(-e // t)) for e, t in zip(extents, tile_sizes)]))
    )
    bounds = regions.evaluate(tiles, params)
    for i, tile in enumerate(tiles):
        needed = brute_force(graph, group, graph.outputs, tile_sizes, params, tuple(tile))
        for name, points in needed.items():
            if not points:
                continue
            lows, highs = bounds[name]
            pts = np.array(sorted(points))
            assert (pts.min(axis=0) >= lows[i]).all() and (pts.max(axis=0) <= highs[i]).all(), (
                name,
                tile,
            )
            if exact_boxes:
                np.testing.assert_array_equal(pts.min(axis=0), lows[i], err_msg=name)
                np.testing.assert_array_equal(pts.max(axis=0), highs[i], err_msg=name)
    return regions


@pytest.mark.parametrize("tile_sizes", [(3, 4), (5, 17)])
def test_blur_chain(tile_sizes):
    check_regions(guarded_blur_chain(), {"R": 11, "C": 13}, tile_sizes)


def test_harris():
    outputs, _ = harris.build()
    check_regions(outputs, {"R": 13, "C": 17}, (4, 8))


@pytest.mark.parametrize("tile", [1, 3, 8])
def test_down_and_up_sampling(tile):
    check_regions(sampling_pyramid(), {"R": 37}, (tile,))


def test_channel_stencil_modulo_is_widened():
    """(c + 1) % 3 is over-approximated by the whole channel range: a superset, not the box."""
    regions = check_regions(channel_stencil(), {"R": 9, "C": 10}, (1, 3, 4), exact_boxes=False)
    assert set(regions) == {"f", "g", "img"}


def test_regions_print_as_c_free_of_tile_loops():
    from polyimage.codegen.cexpr import CExprPrinter

    graph = build_graph(sampling_pyramid())
    tile_vars = tile_variables(1)
    regions = infer_regions(graph, ["down", "down2", "up"], ["up"], (8,), tile_vars)
    names = {tile_vars[0]: "o0"}
    names.update({p: p.name for p in graph.parameters})
    for region in regions.by_stage.values():
        names.update({v: v.name for pair in region.symbols for v in pair})
    low = CExprPrinter(names)(regions["down"].bounds[0][0])
    high = CExprPrinter(names)(regions["down"].bounds[0][1])
    assert "up_lo0" in low.text and "R" in high.text, "read from up's bounds, clipped to down's"
    helpers = {name for kind, name in low.uses | high.uses if kind == "helper"}
    assert ("min", "int64_t") in helpers and ("max", "int64_t") in helpers


def _symbolic_and_numeric(graph, params, groups, rng):
    """(symbolic, numeric) regions of every tileable group in `groups` for a few random tiles:
    the symbolic plan's regions evaluated, and NumericRegions composing per-stage reads."""
    from polyimage.schedule.regions import NumericRegions
    from polyimage.schedule.tiling import UntiledGroup, tiling_plan

    numeric = NumericRegions(graph, params)
    for group in groups:
        plan = tiling_plan(graph, group, params)
        if isinstance(plan, UntiledGroup):
            continue
        rank = len(plan.tile_lo)
        sizes = rng.choice([1, 3, 8, 32, 100], size=(6, rank))
        lows = rng.integers(-2, 40, size=(6, rank)) * sizes
        first = rng.integers(0, 3, size=(6, rank)) * sizes
        points = np.concatenate([lows, lows + sizes - 1, first], axis=1)
        yield (
            group,
            plan.regions.evaluate(points, params),
            numeric_regions(numeric, plan, points, params),
        )


@pytest.mark.parametrize("name", ["harris", "camera_pipe", "bilateral_grid", "interpolate"])
def test_numeric_regions_equal_the_symbolic_ones(name):
    """The cost model's regions (NumericRegions) are the code generator's, evaluated: for
    runs of consecutive stages of the apps, reductions and up- and down-sampling included."""
    import polyimage
    from polyimage.apps import load_app
    from polyimage.driver.request import resolve_estimates

    app = load_app(name)
    outputs, _ = app.build()
    graph = polyimage.compile(outputs, schedule="naive", build=False).stage_graph
    params = resolve_estimates(graph, app.SMALL_SIZE)[0]
    names = [s.name for s in graph.computed]
    groups = [tuple(names[i : i + k]) for k in (1, 2, 4, 7) for i in range(0, len(names), k)]
    rng = np.random.default_rng(len(name))
    compared = 0
    for group, symbolic, numeric in _symbolic_and_numeric(graph, params, groups, rng):
        assert set(symbolic) == set(numeric), group
        for stage, (lows, highs) in symbolic.items():
            np.testing.assert_array_equal(numeric[stage][0], lows, err_msg=f"{group} {stage}")
            np.testing.assert_array_equal(numeric[stage][1], highs, err_msg=f"{group} {stage}")
        compared += 1
    assert compared >= 3
