"""Footprints from backward composition of access maps, checked against brute force: walk the
points of one tile back through every reference, numerically, and compare the point sets."""
import itertools

import islpy as isl
import numpy as np
import pytest

from polyimage.apps import harris
from polyimage import Case, Float, Function, Image, Int, Interval, Parameter, Variable
from polyimage.dsl import expr as E
from polyimage.graph import build_graph
from polyimage.algebra.evaluate import Evaluator, subset
from polyimage.interp.interpreter import _case_masks
from polyimage.poly.analysis import analyze
from footprint import FootprintAnalyzer

R, C = Parameter(Int, "R"), Parameter(Int, "C")
c, x, y = Variable(Int, "c"), Variable(Int, "x"), Variable(Int, "y")


def brute_force(graph, group, liveouts, tile_sizes, params, tile):
    """{stage: set of points} one tile needs, by evaluating every index of every reference."""
    evaluate = Evaluator({}, {}, params)
    needed = {name: set() for name in [s.name for s in graph.stages]}
    for name in liveouts:
        func = graph.stage(name).func
        ranges = []
        for t, o, iv in zip(tile_sizes, tile, func.intervals):
            lb = evaluate(iv.lb, {}, 1).item()
            ub = evaluate(iv.ub, {}, 1).item()
            ranges.append(range(max(lb, lb + t * o), min(ub, lb + t * o + t - 1) + 1))
        needed[name] |= set(itertools.product(*ranges))
    order = [s.name for s in graph.stages if s.name in group]
    for name in reversed(order):
        func = graph.stage(name).func
        if not needed[name]:
            continue
        pts = np.array(sorted(needed[name]))
        points = {v: pts[:, d].astype(np.int32) for d, v in enumerate(func.variables)}
        for case, chosen in _case_masks(func.defn, evaluate, points):
            sub = subset(points, chosen)
            for ref in E.references(case.value):
                idx = [np.broadcast_to(evaluate(a, sub, len(chosen)), (len(chosen),))
                       for a in ref.args]
                needed[ref.func.name] |= set(zip(*(i.tolist() for i in idx)))
    return needed


def isl_points(footprint_map, tile):
    fixed = footprint_map
    for d, o in enumerate(tile):
        fixed = fixed.fix_val(isl.dim_type.in_, d, isl.Val.int_from_si(fixed.get_ctx(), o))
    found = set()
    fixed.range().foreach_point(lambda p: found.add(tuple(
        p.get_coordinate_val(isl.dim_type.set, d).to_python()
        for d in range(fixed.dim(isl.dim_type.out)))))
    return found


def check_against_brute_force(outputs, estimates, tile_sizes):
    graph = build_graph(outputs)
    group = [s.name for s in graph.computed]
    analyzer = FootprintAnalyzer(analyze(graph), estimates)
    footprint = analyzer.query(group, graph.outputs, tile_sizes)
    out = graph.stage(graph.outputs[0]).func
    extents = analyzer.domain_extents(out.name)
    tiles = [range(-(-e // t)) for e, t in zip(extents, tile_sizes)]
    for tile in itertools.product(*tiles):
        expected = brute_force(graph, group, graph.outputs, tile_sizes, estimates, tile)
        for name, box in footprint.members.items():
            assert isl_points(box.footprint_map, tile) == expected[name], (name, tile)
            if expected[name]:
                spread = np.ptp(np.array(sorted(expected[name])), axis=0) + 1
                assert all(s <= e for s, e in zip(spread, box.extent)), (name, tile)
        for name, box in footprint.live_ins.items():
            assert isl_points(box.footprint_map, tile) == expected[name], (name, tile)
    return footprint


def blur_chain():
    img = Image(Float, "img", [R + 4, C + 4])
    bx = Function(([x, y], [Interval(Int, 2, R + 1), Interval(Int, 0, C + 3)]), Float, "bx")
    bx.defn = [img(x - 2, y) + img(x, y) + img(x + 2, y)]
    by = Function(([x, y], [Interval(Int, 2, R + 1), Interval(Int, 2, C + 1)]), Float, "by")
    by.defn = [bx(x, y - 2) + bx(x, y + 1) + bx(x, y + 2)]
    out = Function(([x, y], [Interval(Int, 2, R + 1), Interval(Int, 2, C + 1)]), Float, "out")
    out.defn = [Case(x < 6, by(x, y) * 2), by(x, y) - bx(x, y)]
    return [out]


def pyramid(misaligned=False):
    img = Image(Float, "img", [R])
    down = Function(([x], [Interval(Int, 0, (R - 2) / 2)]), Float, "down")
    down.defn = [img(2 * x) + img(2 * x + 1)]
    down2 = Function(([x], [Interval(Int, 0, (R - 4) / 4)]), Float, "down2")
    down2.defn = [down(2 * x) + down(2 * x + 1)]
    up = Function(([x], [Interval(Int, 0, 2 * ((R - 4) / 4) + 1)]), Float, "up")
    up.defn = [down2(x / 2) + (down((x + 1) / 2) if misaligned else down(x))]
    return [up]


def channel_stencil():
    img = Image(Float, "img", [3, R, C + 2])
    f = Function(([c, x, y], [Interval(Int, 0, 2), Interval(Int, 0, R - 1),
                              Interval(Int, 1, C)]), Float, "f")
    f.defn = [img(c, x, y - 1) + img((c + 1) % 3, x, y + 1)]
    g = Function(([c, x, y], [Interval(Int, 0, 2), Interval(Int, 1, R - 2),
                              Interval(Int, 1, C)]), Float, "g")
    g.defn = [f(c, x - 1, y) + f(c, x + 1, y)]
    return [g]


@pytest.mark.parametrize("tile_sizes", [(3, 4), (5, 17), (64, 64)])
def test_blur_chain(tile_sizes):
    footprint = check_against_brute_force(blur_chain(), {"R": 11, "C": 13}, tile_sizes)
    assert footprint.bounded
    assert footprint.members["bx"].extent == (min(tile_sizes[0], 11), min(tile_sizes[1] + 4, 17))


@pytest.mark.parametrize("tile_sizes", [(4, 8), (7, 5)])
def test_harris(tile_sizes):
    outputs, _ = harris.build()
    footprint = check_against_brute_force(outputs, {"R": 13, "C": 17}, tile_sizes)
    assert footprint.bounded
    assert footprint.members["Ix"].extent == (tile_sizes[0] + 2, tile_sizes[1] + 2)
    assert set(footprint.live_ins) == {"img"}


@pytest.mark.parametrize("tile", [1, 3, 8])
def test_down_and_up_sampling(tile):
    footprint = check_against_brute_force(pyramid(), {"R": 37}, (tile,))
    assert footprint.bounded


def test_reads_at_two_scales_are_unbounded():
    """`up` reads `down` both through down2(x/2) (near x) and directly at (x+1)/2 (near x/2):
    a tile's reads drift apart as the image grows."""
    graph = build_graph(pyramid(misaligned=True))
    footprint = FootprintAnalyzer(analyze(graph), {"R": 37}).query(
        ["down", "down2", "up"], ["up"], (3,))
    assert footprint.unbounded_dims() == {"down": [0]}
    assert footprint.members["up"].extent == (3,)


def test_channel_stencil():
    footprint = check_against_brute_force(channel_stencil(), {"R": 9, "C": 10}, (2, 3, 4))
    assert footprint.members["f"].extent == (2, 5, 4)


def test_data_dependent_read_is_unbounded():
    img = Image(Float, "img", [R])
    lut = Function(([x], [Interval(Int, 0, R - 1)]), Float, "lut")
    lut.defn = [img(x) * 2]
    out = Function(([x], [Interval(Int, 0, R - 1)]), Float, "out")
    out.defn = [lut(E.Cast(Int, img(x) * 10))]
    graph = build_graph([out])
    footprint = FootprintAnalyzer(analyze(graph), {"R": 40}).query(["lut", "out"], ["out"], (8,))
    assert not footprint.bounded
    assert footprint.unbounded_dims() == {"lut": [0]}
    assert footprint.members["out"].extent == (8,)


def test_redundant_and_live_in_volumes():
    graph = build_graph(blur_chain())
    analyzer = FootprintAnalyzer(analyze(graph), {"R": 100, "C": 100})
    small = analyzer.query(["bx", "by", "out"], ["out"], (8, 8))
    large = analyzer.query(["bx", "by", "out"], ["out"], (32, 32))
    assert small.redundant_volume > 0
    assert small.redundant_volume / 64 > large.redundant_volume / 1024, "overlap per point shrinks"
    assert small.live_in_volume == (8 + 4) * (8 + 4)
    assert analyzer.calls == 2
    analyzer.query(["out", "bx", "by"], ["out"], (8, 8))
    assert analyzer.calls == 2, "cached regardless of member order"


def test_missing_estimate_is_an_error():
    graph = build_graph(blur_chain())
    with pytest.raises(ValueError, match="missing C"):
        FootprintAnalyzer(analyze(graph), {"R": 10})
