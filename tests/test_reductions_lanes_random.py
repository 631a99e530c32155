"""Random owner Reductions of the forms that run in lanes or side by side
(schedule.reductions: vector_owner, jammed_chains): windows of strided reads in any written
order, and float chains along the innermost loop, against the interpreter bit for bit at odd
sizes on 1 and 3 threads, NaNs and negative zeros included."""

import random

import numpy as np
import pytest

import polyimage
from polyimage import (
    Double,
    Float,
    Image,
    Int,
    Interval,
    Op,
    Parameter,
    Reduce,
    Reduction,
    Short,
    UChar,
    Variable,
)

SEEDS = range(8)


def _values(rng, shape, typ, nans: bool):
    if not typ.is_float:
        return rng.integers(0, 20, shape).astype(typ.dtype)
    values = rng.uniform(0.5, 1.5, shape).astype(typ.dtype)
    if nans:
        values.flat[rng.integers(0, values.size, 2)] = np.nan
        values.flat[rng.integers(0, values.size, 2)] = -0.0
    return values


def _in_order(name: str, typ, cells: str, order, named: dict, bounds: dict) -> Reduction:
    """A Reduction `name` over the cells of the variables named in `cells`, its reduction
    variables in `order` (names of `named`, each within its `bounds`)."""
    return Reduction(
        ([named[n] for n in cells], [bounds[n] for n in cells]),
        ([named[n] for n in order], [bounds[n] for n in order]),
        typ,
        name,
    )


def _window(seed: int):
    """m(x, y) = op over a ta x tb window of img(sx x + ca a + ox, sy y + cb b + oy), its
    reduction variables in a random order (the cells' first three times in four)."""
    rng = random.Random(seed)
    typ = rng.choice([Float, Double, Int, UChar, Short])
    op = rng.choice([Op.Sum, Op.Mul, Op.Max, Op.Min])
    ta, tb = rng.choice([1, 2, 3, 9]), rng.choice([1, 2, 3])
    ca, cb, sx, sy = rng.choice([1, 2]), rng.choice([1, 2]), rng.choice([1, 2]), rng.randint(1, 5)
    ox, oy = rng.randint(0, 2), rng.randint(0, 2)
    rows, columns = (ta - 1) * ca + ox + 1, (tb - 1) * cb + oy + 1
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(typ, "img", [sx * R + rows, sy * C + columns])
    x, y, a, b = (Variable(Int, v) for v in "xyab")
    bounds = {
        "x": Interval(Int, 0, R - 1),
        "y": Interval(Int, 0, C - 1),
        "a": Interval(Int, 0, ta - 1),
        "b": Interval(Int, 0, tb - 1),
    }
    order = rng.choice([["x", "y"], ["y", "x"]]) + rng.choice([["a", "b"], ["b", "a"]])
    if rng.random() < 0.25:
        rng.shuffle(order)
    m = _in_order("m", typ, "xy", order, {"x": x, "y": y, "a": a, "b": b}, bounds)
    m.defn = [Reduce(m(x, y), img(sx * x + ca * a + ox, sy * y + cb * b + oy), op)]
    if rng.random() < 0.3:
        m.default = 1

    def arguments(g, r: int, c: int) -> dict:
        return {"img": _values(g, (sx * r + rows, sy * c + columns), typ, rng.random() < 0.5)}

    return m, arguments, {"R": 2048, "C": 2048}


def _chain(seed: int):
    """t(c, x) = op over r (innermost) of A(c, q, x, r) (times w(r)), with an optional
    reduction-only q over the planes, before the lines or after them: float chains in order
    along r."""
    rng = random.Random(seed)
    typ = rng.choice([Float, Double])
    op = rng.choice([Op.Sum, Op.Mul, Op.Max, Op.Min])
    N, X, K = Parameter(Int, "N"), Parameter(Int, "X"), Parameter(Int, "K")
    c, q, x, r = (Variable(Int, v) for v in "cqxr")
    planes = rng.choice([1, 2])
    A = Image(typ, "A", [N, planes, X, K])
    w = Image(typ, "w", [K])
    bounds = {
        "c": Interval(Int, 0, N - 1),
        "q": Interval(Int, 0, planes - 1),
        "x": Interval(Int, 0, X - 1),
        "r": Interval(Int, 0, K - 1),
    }
    order = rng.choice(
        [["c", "x", "r"], ["c", "x", "r"], ["c", "q", "x", "r"], ["c", "x", "q", "r"]]
    )
    t = _in_order("t", typ, "cx", order, {"c": c, "q": q, "x": x, "r": r}, bounds)
    weighted = rng.random() < 0.5
    plane = q if "q" in order else 0
    value = A(c, plane, x, r) * w(r) if weighted else A(c, plane, x, r)
    t.defn = [Reduce(t(c, x), value, op)]
    if rng.random() < 0.3:
        t.default = rng.choice([1.0, float("nan")])

    def arguments(g, n: int, cells: int) -> dict:
        given = {"A": _values(g, (max(1, n // 8), planes, cells, n), typ, rng.random() < 0.5)}
        if weighted:
            given["w"] = _values(g, (n,), typ, False)
        return given

    return t, arguments, {"N": 16, "X": 2048, "K": 2048}


@pytest.mark.parametrize("make", [_window, _chain])
@pytest.mark.parametrize("seed", SEEDS)
def test_random_lane_and_chain_reductions_match_the_interpreter(make, seed):
    """Each random Reduction, planned for large sizes (so that its blocks run in lanes or
    side by side where they may), gives the interpreter's result at sizes down to one."""
    func, arguments, estimates = make(seed)
    pipe = polyimage.compile([func], estimates=estimates)
    g = np.random.default_rng(seed)
    for r, c in ((1, 1), (7, 13), (37, 61)):
        given = arguments(g, r, c)
        want = polyimage.interpret([func], **given)
        strategy = pipe.compiled.reductions[func.name]
        for threads in (1, 3):
            got = pipe(**given, threads=threads)
            if strategy.kind == "privatized" and func.typ.is_float:
                np.testing.assert_allclose(got, want, rtol=1e-4)  # reassociated by chunk
            else:
                assert np.array_equal(got, want, equal_nan=True), (r, c, threads)


def test_the_random_reductions_run_in_lanes_and_side_by_side():
    """The seeds above exercise what they are for: some windows run in lanes (strided or not,
    inside other owners' blocks or their own), some chains side by side (owned or per tile),
    some cells starting from the default in their variables."""
    lanes = jammed = started = 0
    for seed in SEEDS:
        window, _, estimates = _window(seed)
        strategy = polyimage.compile([window], estimates=estimates, build=False)
        lanes += strategy.compiled.reductions["m"].vector_owner
        started += strategy.compiled.reductions["m"].initializes
        chain, _, estimates = _chain(seed)
        strategy = polyimage.compile([chain], estimates=estimates, build=False)
        jammed += "run side by side" in strategy.compiled.reductions["t"].reason
        started += strategy.compiled.reductions["t"].initializes
    assert lanes >= 2 and jammed >= 2 and started >= 2, (lanes, jammed, started)
