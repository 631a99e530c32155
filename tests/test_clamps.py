"""Innermost loops cut where border clamps change their pick (codegen/clamps.py): the interior
computes each clamp's moving operand. Random clamped reads (nested, negative slopes, bounds of
outer variables and parameters, empty interiors) under naive, auto and tiled schedules on 1 and
2 threads equal the interpreter; the interior is exact and branch-free."""

import itertools

import numpy as np
import pytest
from helpers import stage_trees

import polyimage
from polyimage import Case, Float, Function, Image, Int, Interval, Max, Min, Parameter, Variable
from polyimage.algebra.evaluate import Evaluator
from polyimage.codegen.clamps import interior
from polyimage.codegen.cprint import print_c
from polyimage.codegen.ctree import for_loops, names_used
from polyimage.dsl import expr as E

FORMS = {
    "upper": lambda x, y, C: Min(2 * y + 1, C - 1),
    "lower": lambda x, y, C: Max(y - 3, 0),
    "nested": lambda x, y, C: Min(Max(2 * y - 2, 0), C - 1),
    "falling": lambda x, y, C: Max(Min(C - 1 - y, C - 1), 0),
    "outer bound": lambda x, y, C: Min(y + 1, Min(x + 2, C - 1)),
    "never inside": lambda x, y, C: Min(y + C + 5, C - 1),
    "twice": lambda x, y, C: Min(Max(y - 1, 0), C - 1) + Max(Min(y + 1, C - 1), 0) - y,
}


def _pipeline(form, cases):
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R, C])
    first = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Float, "first")
    first.defn = [img(x, y) * 2.0 + 1.0]
    index = FORMS[form](x, y, C)
    read = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Float, "read")
    if cases:
        read.defn = [Case(y < 2, first(x, y)), first(x, Min(Max(index, 0), C - 1)) * 0.5]
    else:
        read.defn = [first(x, Min(Max(index, 0), C - 1)) + img(x, Min(Max(index, 0), C - 1))]
    return read


CONFIGS = list(itertools.product(sorted(FORMS), (False, True)))


@pytest.mark.parametrize("form, cases", CONFIGS)
def test_clamped_reads_match_the_interpreter(form, cases):
    """Every form under the three schedules, with and without Cases: each schedule of a form
    with one of the two (alternating from form to form), so that every pair of form, Cases
    and schedule is built once (21 builds, not 42)."""
    read = _pipeline(form, cases)
    rng = np.random.default_rng(len(form) * 7 + cases)
    tiles = f"{rng.integers(1, 6)}x{rng.integers(1, 30)}"
    every = ["naive", "auto", f"group 0: first, read [{tiles}]"]
    turn = sorted(FORMS).index(form)
    schedules = [s for k, s in enumerate(every) if (turn + k) % 2 == cases]
    shapes = [(1, 1), (2, 3), (5, 9), (7, 40)]
    arrays = [rng.random(shape, dtype=np.float32) for shape in shapes]
    wants = [polyimage.interpret([read], img=a) for a in arrays]
    for schedule in schedules:
        pipe = polyimage.compile(
            [read], schedule=schedule, inline=False, estimates={"R": 64, "C": 64}
        )
        for arr, want in zip(arrays, wants):
            for threads in (1, 2):
                np.testing.assert_array_equal(
                    pipe(img=arr, threads=threads), want, err_msg=f"{schedule} {arr.shape}"
                )


def test_the_interior_loop_reads_without_clamps():
    read = _pipeline("nested", False)
    pipe = polyimage.compile([read], schedule="naive", inline=False)
    (tree,) = stage_trees(pipe, "read")
    (sides,) = [loop for loop in for_loops(tree) if loop.var == "pim_side_y"]
    middle, border = [loop for loop in for_loops(sides) if loop.var == "pim_w_y"]
    assert (sides.lo, sides.hi, sides.inclusive) == ("0", "3", False)
    assert (middle.lo, middle.hi, border.lo, border.hi) == (
        "pim_ilo_y",
        "pim_ihi_y",
        "pim_slo_y",
        "pim_shi_y",
    )
    bounds = print_c(sides).text  # the head, then the interior, then the tail
    assert "pim_slo_y = pim_side_y == 0 ? pim_lo_y : pim_is_y" in bounds
    assert "pim_shi_y = pim_side_y == 0 ? pim_ie_y : pim_hi_y" in bounds
    assert "if (pim_side_y == 1)" in bounds
    assert middle.simd and not border.simd
    assert "(INT64_C(2) * pim_w_y) - INT64_C(2)" in print_c(middle).text
    helpers = {name[0] for kind, name in names_used(middle) if kind == "helper"}
    assert not helpers & {"min", "max"}, helpers  # no clamp left on the interior


@pytest.mark.parametrize("form", sorted(FORMS))
def test_the_interior_is_exact_and_maximal_for_one_clamp(form):
    """On the interior every chosen clamp equals its moving operand; where an expression has
    a single clamp, one step outside the interior it picks the other operand."""
    C = Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    e = FORMS[form](x, y, C)
    found = interior([e], y)
    assert found is not None and found.chosen
    nodes = {id(n): n for n in E.walk(e)}
    ys = np.arange(-40, 60, dtype=np.int32)
    for c_value, x_value in ((9, 0), (9, 5), (1, 3), (30, 2)):
        evaluate = Evaluator({}, {}, {"C": c_value})
        env = {x: np.full_like(ys, x_value), y: ys}

        def values(ex):
            return np.broadcast_to(evaluate(ex, env, len(ys)), ys.shape).astype(np.int64)

        low = np.max([values(b) for b in found.lows], axis=0, initial=-(10**6))
        high = np.min([values(b) for b in found.highs], axis=0, initial=10**6)
        inside = (ys >= low) & (ys <= high)
        for key, operand in found.chosen.items():
            whole, picked = values(nodes[key]), values(_resolved(operand, found))
            np.testing.assert_array_equal(whole[inside], picked[inside], err_msg=form)
        if len(found.chosen) == 1:
            ((key, operand),) = found.chosen.items()
            differs = values(nodes[key]) != values(operand)
            edges = (ys == low - 1) | (ys == high + 1)
            assert differs[edges].all(), (form, c_value)


def _resolved(e, found):
    """`e` with the chosen clamps inside it replaced by their operands, as the printer does."""
    if id(e) in found.chosen:
        return _resolved(found.chosen[id(e)], found)
    if isinstance(e, E.BinOp):
        return E.BinOp(e.op, _resolved(e.a, found), _resolved(e.b, found), e.typ)
    return e
