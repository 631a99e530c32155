"""Semantics of choices: Cases (the first that holds wins, 0 where none does), Select with
guarded reads, and &, | and ~ on conditions (short-circuit where a read needs it)."""

import numpy as np
import pytest
from helpers import SHAPE_IDS, SHAPES, box, grid, random_values, shifted
from oracle import run_both

import polyimage
from polyimage import Case, Cast, Double, Float, Function, Image, Int, Select, Short

# -- Cases -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_cases_first_wins_and_uncovered_points_are_zero(rng, shape):
    R, C, x, y = grid()
    img = Image(Int, "img", [R, C])
    f = Function(([x, y], box(R, C)), Int, "f")
    f.defn = [
        Case(x < 3, 100 + y),
        Case(x < 6, 200 + y),  # overlaps the first one
        Case((y >= 2) & (y <= 5), img(x, y)),
        Case(img(x, y) > 50, -1),  # data-dependent condition
        Case((x + y) % 3 == 0, img(x - 6, y)),
    ]  # in domain only because x >= 6 here
    g = Function(([x, y], box(R, C)), Float, "g")
    g.defn = [Case(x > y, 1.5), Case(x == y, img(x, y))]
    z = Function(([x, y], box(R, C)), Short, "z")
    z.defn = [Case(x < 0, img(x, y))]  # never holds: all zero, never read
    a = random_values(rng, shape, Int, -100, 100)
    X, Y = np.indices(shape)
    prev6 = np.zeros_like(a)
    prev6[6:] = a[:-6]
    ref_f = np.select(
        [X < 3, X < 6, (Y >= 2) & (Y <= 5), a > 50, (X + Y) % 3 == 0],
        [100 + Y, 200 + Y, a, np.full(shape, -1), prev6],
        default=0,
    )
    ref_g = np.where(X > Y, 1.5, np.where(X == Y, a, 0)).astype(np.float32)
    ref_z = np.zeros(shape, np.int16)
    got_f, got_g, got_z = run_both(
        [f, g, z], reference=(ref_f.astype(np.int32), ref_g, ref_z), img=a
    )
    if shape[0] > 6 and shape[1] > 1:
        # some points are covered by no Case at all: they hold 0
        uncovered = ~((X < 6) | ((Y >= 2) & (Y <= 5)) | (a > 50) | ((X + Y) % 3 == 0))
        assert uncovered.any() and (got_f[uncovered] == 0).all()


# -- Select ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_select(rng, shape):
    R, C, x, y = grid()
    img = Image(Float, "img", [R, C])
    ii = Image(Int, "ii", [R, C])
    guarded = Function(([x, y], box(R, C)), Float, "guarded")
    # the untaken branches read img(-1, y) and img(x, C): out of domain if evaluated
    guarded.defn = [Select(x > 0, img(x - 1, y), img(x, y)) + Select(y < C - 1, img(x, y + 1), 0.0)]
    nested = Function(([x, y], box(R, C)), Float, "nested")
    nested.defn = [
        Select(x == 0, -5.0, Select(img(x - 1, y) > img(x, y), img(x - 1, y), img(x, y) * 2))
    ]
    data = Function(([x, y], box(R, C)), Float, "data")
    data.defn = [Select(img(x, y) > 0.25, img(x, y) * 2, -img(x, y))]
    mixed = Function(([x, y], box(R, C)), Double, "mixed")
    mixed.defn = [Select(x >= y, ii(x, y), img(x, y))]
    assert mixed.defn[0].value.typ is Double
    a = random_values(rng, shape, Float)
    b = random_values(rng, shape, Int, -1000, 1000)
    X, Y = np.indices(shape)
    up = shifted(a, -1, 0)
    right = shifted(a, 0, 1)
    ref_guarded = np.where(X > 0, up, a) + np.where(Y < shape[1] - 1, right, np.float32(0))
    ref_nested = np.where(X == 0, np.float32(-5), np.where(up > a, up, a * np.float32(2))).astype(
        np.float32
    )
    ref_data = np.where(a > np.float32(0.25), a * np.float32(2), -a)
    ref_mixed = np.where(X >= Y, b.astype(np.float64), a.astype(np.float64))
    run_both(
        [guarded, nested, data, mixed],
        reference=(ref_guarded, ref_nested, ref_data, ref_mixed),
        img=a,
        ii=b,
    )


def test_unguarded_out_of_domain_read_is_rejected():
    """The guard is what makes test_select compile: without it, BoundsError."""
    R, C, x, y = grid()
    img = Image(Float, "img", [R, C])
    f = Function(([x, y], box(R, C)), Float, "f")
    f.defn = [Select(x >= 0, img(x - 1, y), 0.0)]  # does not exclude x = 0
    with pytest.raises(polyimage.BoundsError):
        polyimage.compile(f)
    with pytest.raises(polyimage.BoundsError):
        polyimage.interpret(f, img=np.zeros((3, 4), np.float32))


# -- logic on conditions ---------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_and_or_not_with_short_circuit(rng, shape):
    R, C, x, y = grid()
    img = Image(Float, "img", [R, C])
    both = Function(([x, y], box(R, C)), Int, "both")
    # the right side of & reads img(x - 1, y), out of domain exactly where x > 0 is false
    both.defn = [Select((x > 0) & (img(x - 1, y) > 0.0), 1, 0)]
    either = Function(([x, y], box(R, C)), Int, "either")
    either.defn = [Select((y == C - 1) | (img(x, y + 1) < img(x, y)), 2, -2)]
    negated = Function(([x, y], box(R, C)), Int, "negated")
    negated.defn = [
        Case(~(x >= 1) | (img(x - 1, y) > 0.5), 7),
        Case(~((img(x, y) > 0.0) & (y > 0)), -7),
    ]
    as_number = Function(([x, y], box(R, C)), Int, "as_number")
    as_number.defn = [Cast(Int, (img(x, y) > 0.0) & ~(x == y)) * 10]
    a = random_values(rng, shape, Float)
    X, Y = np.indices(shape)
    up, right = shifted(a, -1, 0), shifted(a, 0, 1)
    ref_both = np.where((X > 0) & (up > 0), 1, 0).astype(np.int32)
    ref_either = np.where((Y == shape[1] - 1) | (right < a), 2, -2).astype(np.int32)
    ref_neg = np.select([(X < 1) | (up > 0.5), ~((a > 0) & (Y > 0))], [7, -7], 0)
    ref_num = (((a > 0) & (X != Y)) * 10).astype(np.int32)
    run_both(
        [both, either, negated, as_number],
        reference=(ref_both, ref_either, ref_neg.astype(np.int32), ref_num),
        img=a,
    )
