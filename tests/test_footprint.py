"""Footprints from backward composition of access maps, checked against brute force: walk the
points of one tile back through every reference, numerically, and compare the point sets."""

import itertools

import numpy as np
import pytest
from footprint import FootprintAnalyzer
from helpers import brute_force, channel_stencil, guarded_blur_chain, isl_points, sampling_pyramid

from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable
from polyimage.apps import harris
from polyimage.dsl import expr as E
from polyimage.graph import build_graph
from polyimage.poly.analysis import analyze


def check_against_brute_force(outputs, estimates, tile_sizes):
    """Query the footprint of every tile of the whole pipeline as one group and compare each
    member's and live-in's points with brute force; returns the footprint."""
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


@pytest.mark.parametrize("tile_sizes", [(3, 4), (5, 17), (64, 64)])
def test_blur_chain(tile_sizes):
    footprint = check_against_brute_force(guarded_blur_chain(), {"R": 11, "C": 13}, tile_sizes)
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
    footprint = check_against_brute_force(sampling_pyramid(), {"R": 37}, (tile,))
    assert footprint.bounded


def test_reads_at_two_scales_are_unbounded():
    """`up` reads `down` both through down2(x/2) (near x) and directly at (x+1)/2 (near x/2):
    a tile's reads drift apart as the image grows."""
    graph = build_graph(sampling_pyramid(misaligned=True))
    footprint = FootprintAnalyzer(analyze(graph), {"R": 37}).query(
        ["down", "down2", "up"], ["up"], (3,)
    )
    assert footprint.unbounded_dims() == {"down": [0]}
    assert footprint.members["up"].extent == (3,)


def test_channel_stencil():
    footprint = check_against_brute_force(channel_stencil(), {"R": 9, "C": 10}, (2, 3, 4))
    assert footprint.members["f"].extent == (2, 5, 4)


def test_data_dependent_read_is_unbounded():
    R, x = Parameter(Int, "R"), Variable(Int, "x")
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
    graph = build_graph(guarded_blur_chain())
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
    graph = build_graph(guarded_blur_chain())
    with pytest.raises(ValueError, match="missing C"):
        FootprintAnalyzer(analyze(graph), {"R": 10})
