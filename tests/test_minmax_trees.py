"""A tree of float Min/Max compiles to plain selects with one NaN test over its distinct
operands (codegen.cexpr _minmax_tree): every value, NaN, infinity and signed zero in every
position gives NumPy's minimum/maximum result, bit for bit (NaN payloads aside)."""

import itertools

import numpy as np
import pytest
from oracle import assert_same

import polyimage
from polyimage import Double, Float, Function, Image, Int, Interval, Max, Min, Parameter, Variable

VALUES = [np.nan, -np.inf, np.inf, -0.0, 0.0, -1.5, 1.5, 2.0]


def _trees(typ):
    """Stages over the same four images: a median of three, a median of three medians of
    three (operands shared), a min of maxes with a constant, and a single Min."""
    N = Parameter(Int, "N")
    i = Variable(Int, "i")
    a, b, c, d = (Image(typ, n, [N]) for n in "abcd")

    def median3(p, q, r):
        return Max(Min(p, q), Min(Max(p, q), r))

    def stage(name, value):
        f = Function(([i], [Interval(Int, 0, N - 1)]), typ, name)
        f.defn = [value]
        return f

    ai, bi, ci, di = a(i), b(i), c(i), d(i)
    return [
        stage("median", median3(ai, bi, ci)),
        stage("nested", median3(median3(ai, bi, ci), median3(bi, ci, di), median3(di, ai, bi))),
        stage("bounded", Min(Max(ai, 0.25), Max(Min(bi, di), ci))),
        stage("single", Min(ai, di)),
        stage("mixed", Max(ai + bi, Min(ci, di)) * 2.0),
    ]


@pytest.mark.parametrize("typ", [Float, Double])
def test_every_special_value_in_every_position(typ):
    grid = np.array(list(itertools.product(VALUES, repeat=4)), dtype=typ.dtype).T
    arguments = dict(zip("abcd", (np.ascontiguousarray(col) for col in grid)), N=grid.shape[1])
    outputs = _trees(typ)
    pipe = polyimage.compile(outputs, schedule="naive")
    got = pipe(**arguments)
    want = polyimage.interpret(outputs, **arguments)
    for g, w, f in zip(got, want, outputs):
        assert_same(g, w, f.name)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f.name)


def test_the_tree_tests_nan_once_per_two_operands():
    outputs = _trees(Float)[:1]
    source = polyimage.compile(outputs, schedule="naive").c_source
    assert source.count("__builtin_isunordered(") == 2  # operands a, b, c: two tests
    assert "pim_min_f32(" not in source.split("pipeline_")[-1]
