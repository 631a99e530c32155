"""Access maps checked point by point against numeric evaluation of the indices."""

import islpy as isl
import numpy as np
import pytest
from helpers import isl_points

from polyimage import (
    Cast,
    Clamp,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Max,
    Min,
    Parameter,
    Variable,
)
from polyimage.algebra.evaluate import Evaluator
from polyimage.graph import build_graph
from polyimage.poly.analysis import analyze

R = Parameter(Int, "R")
x, y = Variable(Int, "x"), Variable(Int, "y")
SIZE = 11


def image_of(access_map, point, params):
    return isl_points(access_map.intersect_params(params), point)


INDICES = {
    "stencil": lambda: (x - 1, y + 1),
    "down": lambda: (2 * x + 1, y / 2),
    "up": lambda: ((x + 1) // 2, y % 3),
    "clamped": lambda: (Clamp(x - 2, 0, R - 1), Max(Min(y + 3, R - 1), 0)),
}


@pytest.mark.parametrize("kind", sorted(INDICES))
def test_affine_access_maps_match_evaluation(kind):
    img = Image(Float, "img", [R + 2, R + 2])
    f = Function(([x, y], [Interval(Int, 1, R / 2 - 1), Interval(Int, 1, R - 1)]), Float, "f")
    f.defn = [img(*INDICES[kind]())]
    analysis = analyze(build_graph([f]))
    (access,) = analysis.accesses_of("f")
    assert all(access.affine)
    params = analysis.context_set.fix_val(
        isl.dim_type.param, 0, isl.Val.int_from_si(analysis.ctx, SIZE)
    )
    evaluate = Evaluator({}, {}, {"R": SIZE})
    for px in range(1, SIZE // 2):
        for py in range(1, SIZE):
            points = {x: np.array([px], np.int32), y: np.array([py], np.int32)}
            expected = tuple(
                int(np.broadcast_to(evaluate(a, points, 1), (1,))[0]) for a in access.ref.args
            )
            assert image_of(access.access_map, (px, py), params) == {expected}


def test_data_dependent_index_covers_the_producer_interval():
    img = Image(Float, "img", [R])
    f = Function(([x], [Interval(Int, 0, R - 1)]), Float, "f")
    f.defn = [img(Cast(Int, img(x) * 100))]
    analysis = analyze(build_graph([f]))
    outer = [a for a in analysis.accesses_of("f") if not all(a.affine)]
    assert len(outer) == 1 and outer[0].affine == (False,)
    params = analysis.context_set.fix_val(
        isl.dim_type.param, 0, isl.Val.int_from_si(analysis.ctx, SIZE)
    )
    assert image_of(outer[0].access_map, (3,), params) == {(i,) for i in range(SIZE)}


def test_guards_restrict_access_domains():
    img = Image(Float, "img", [R])
    f = Function(([x], [Interval(Int, 0, R - 1)]), Float, "f")
    from polyimage import Case, Select

    f.defn = [Case(x >= 2, Select(x < 5, img(x - 2), img(x - 1))), img(x)]
    analysis = analyze(build_graph([f]))
    params = analysis.context_set.fix_val(
        isl.dim_type.param, 0, isl.Val.int_from_si(analysis.ctx, SIZE)
    )
    domains = {}
    for a in analysis.accesses_of("f"):
        found = set()
        a.guard_set.intersect_params(params).foreach_point(
            lambda p: found.add(p.get_coordinate_val(isl.dim_type.set, 0).to_python())
        )
        domains[str(a.ref)] = found
    assert domains == {"img(x - 2)": {2, 3, 4}, "img(x - 1)": set(range(5, SIZE)), "img(x)": {0, 1}}
