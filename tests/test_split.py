"""Innermost loops cut where the chosen Case can change: which conditions qualify, and the
cut loops agree with the interpreter on every width, tiled or not."""

import numpy as np
import pytest
from helpers import stage_trees
from oracle import assert_same

import polyimage
from polyimage import (
    Case,
    Cast,
    Float,
    Function,
    GroupSchedule,
    Image,
    Int,
    Interval,
    Parameter,
    Schedule,
    Variable,
)
from polyimage.codegen.ctree import for_loops
from polyimage.codegen.split import case_breakpoints, lifted_cases
from polyimage.dsl import expr as E

R, C = Parameter(Int, "R"), Parameter(Int, "C")
x, y = Variable(Int, "x"), Variable(Int, "y")
img = Image(Float, "img", [R, C])

CONDITIONS = {
    "interior": lambda: (y >= 1) & (y <= C - 2) & (x >= 1),
    "halves": lambda: y * 2 < C,
    "diagonal": lambda: 2 * y - x >= 1,
    "ends": lambda: (y < 2) | (y > C - 3),
    "not the diagonal": lambda: ~(y == x),
    "outer only": lambda: x < R // 2,
}


def segment_loops(pipe, name) -> list:
    """The loops over the segments of the innermost loops computing `name` (each segment runs
    one Case: codegen.versions.segments), found in the C tree."""
    return [
        loop
        for tree in stage_trees(pipe, name)
        for loop in for_loops(tree)
        if loop.var == "pim_s" and loop.c_type == "int"
    ]


def border_pipeline(cond):
    """The first Case reads its neighbours: only in bounds where the condition holds."""
    f = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Float, "f")
    inside = (y >= 1) & (y <= C - 2)
    f.defn = [
        Case(cond & inside, img(x, y - 1) + img(x, y + 1)),
        Case(y == 0, img(x, y) * 3),
        img(x, y) * 2,
    ]
    return f


@pytest.mark.parametrize("name", sorted(CONDITIONS))
def test_conditions_on_loop_variables_qualify(name):
    f = border_pipeline(CONDITIONS[name]())
    points = case_breakpoints(f.cases, y)
    assert points is not None and len(points) >= 2


def test_data_conditions_and_modulo_do_not_qualify():
    f = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Float, "f")
    f.defn = [Case(img(x, y) > 0.5, img(x, y)), 0.0]
    assert case_breakpoints(f.cases, y) is None
    f.defn = [Case(y % 2 == 0, img(x, y)), 0.0]
    assert case_breakpoints(f.cases, y) is None
    f.defn = [Case(x % 2 == 0, img(x, y)), 0.0]
    assert case_breakpoints(f.cases, y) == []


@pytest.mark.parametrize("name", sorted(CONDITIONS))
@pytest.mark.parametrize("tiles", [None, ((3, 4),)])
def test_cut_loops_match_interpreter(name, tiles):
    f = border_pipeline(CONDITIONS[name]())
    schedule = "naive" if tiles is None else Schedule((GroupSchedule(("f",), tiles),))
    pipe = polyimage.compile([f], schedule=schedule)
    assert segment_loops(pipe, "f"), "the innermost loop is cut into segments"
    rng = np.random.default_rng(7)
    for rows, cols in [(1, 1), (2, 3), (5, 4), (6, 9), (7, 17)]:
        image = rng.random((rows, cols), dtype=np.float32)
        expected = polyimage.interpret([f], img=image)
        assert_same(pipe(img=image), expected, f"{name} at {rows}x{cols}")


def test_a_case_without_otherwise_leaves_zero():
    f = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Int, "g")
    f.defn = [Case(y >= 2, Cast(Int, img(x, y) * 10) + 1)]
    image = np.ones((3, 6), np.float32)
    out = polyimage.compile([f])(img=image)
    assert (out[:, :2] == 0).all() and (out[:, 2:] == 11).all()


def test_empty_ranges_write_nothing():
    """A table computed by one tile only: the other tiles pass an empty range, and must not
    write (the breakpoints of an empty range are not ordered)."""
    v = Variable(Int, "v")
    B = Parameter(Int, "B")
    lut = Function(([v], [Interval(Int, 0, 255)]), Int, "lut")
    lut.defn = [Case(v <= B, 0), Case(v >= 255, 1), v * 2]
    g = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Int, "g")
    g.defn = [Cast(Int, img(x, y))]
    out = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Int, "out")
    out.defn = [lut(polyimage.Clamp(g(x, y), 0, 255))]
    image = np.arange(9 * 13, dtype=np.float32).reshape(9, 13)
    expected = polyimage.interpret([out], img=image, B=10)
    schedule = Schedule((GroupSchedule(("lut", "g"), ((2, 3),)), GroupSchedule(("out",))))
    pipe = polyimage.compile([out], schedule=schedule, inline=False)
    for threads in (1, 2):
        assert_same(pipe(img=image, B=10, threads=threads), expected)


def channel_pipeline():
    """A channel Case inlined into a data-dependent read: its Cases become Selects on `c`,
    constant along the innermost loop."""
    c = Variable(Int, "c")
    channels = Interval(Int, 0, 2)
    rows, cols = Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)
    weighted = Function(([c, x, y], [channels, rows, cols]), Int, "weighted")
    weighted.defn = [
        Case(c == 0, Cast(Int, img(x, y) * 7)),
        Case(c == 1, Cast(Int, img(x, y) * 3) + 1),
        Cast(Int, img(x, y)) - 2,
    ]
    v = Variable(Int, "v")
    table = Function(([v], [Interval(Int, 0, 63)]), Int, "table")
    table.defn = [v * v - 5 * v]
    out = Function(([c, x, y], [channels, rows, cols]), Int, "out")
    out.defn = [table(weighted(c, x, y)) + c]
    return out


def test_invariant_selects_are_lifted_into_cases():
    c = Variable(Int, "c")
    value = E.Select(c == 0, img(x, y) * 2, E.Select(c == 1, img(x, y), img(x, y) + y))
    data = E.Select(img(x, y) > 0.5, img(x, y), 0.0)
    along = E.Select(y < 3, img(x, y), 1.0)
    box = [Interval(Int, 0, 2), Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]
    f = Function(([c, x, y], box), Float, "f")
    f.defn = [value + data + along]
    cases = lifted_cases(f.cases, y)
    assert [str(case.cond) for case in cases][-1] == "None"
    assert len(cases) == 4  # MAX_LIFTED_CASES: the first channel's Case lifts `y < 3` too
    for case in cases:
        selects = [n for n in E.walk(case.value) if isinstance(n, E.Select)]
        # the data Select stays, the channel ones are gone
        assert str(data.cond) in [str(s.cond) for s in selects]
        assert not any("c ==" in str(s.cond) for s in selects)
    f.defn = [data]
    assert lifted_cases(f.cases, y) is None


def test_a_select_guarding_a_read_along_the_loop_is_lifted_into_cases():
    """`y < 3 ? img(x, y) : 1.0` becomes Cases cut where `y < 3` changes (codegen.split): no
    branch around the read in the loop (a masked load, which AVX2 has not for every type)."""
    data = E.Select(img(x, y) > 0.5, img(x, y), 0.0)
    along = E.Select(y < 3, img(x, y), 1.0)
    box = [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]
    f = Function(([x, y], box), Float, "f")
    f.defn = [data + along]
    cases = lifted_cases(f.cases, y)
    assert [str(case.cond) for case in cases] == ["y < 3", "None"]
    assert case_breakpoints(cases, y) is not None
    f.defn = [E.Select(y * y < 3, img(x, y), 1.0)]  # not linear in y: stays
    assert lifted_cases(f.cases, y) is None


@pytest.mark.parametrize("schedule", ["naive", "auto"])
def test_lifted_selects_match_interpreter(schedule):
    out = channel_pipeline()
    pipe = polyimage.compile([out], schedule=schedule, estimates={R: 40, C: 70})
    assert segment_loops(pipe, "out"), "one segment loop per lifted Case"
    rng = np.random.default_rng(3)
    for rows, cols in [(1, 1), (3, 5), (9, 33), (40, 70)]:
        image = (rng.random((rows, cols)) * 9).astype(np.float32)
        expected = polyimage.interpret([out], img=image)
        for threads in (1, 2):
            assert_same(pipe(img=image, threads=threads), expected, f"{rows}x{cols}")


def test_a_lifted_select_in_an_index_keeps_the_index_clamped():
    """`img(x, Select(c == 0, y, y + 1))` reads a clamped, non-affine index; lifted, the arm
    `y + 1` is affine, and reads one column past the image unless it keeps its clamp."""
    c = Variable(Int, "c")
    box = [Interval(Int, 0, 2), Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]
    out = Function(([c, x, y], box), Float, "out")
    out.defn = [img(x, E.Select(c == 0, y, y + 1)) * 2.0]
    rng = np.random.default_rng(5)
    for check in (False, True):
        pipe = polyimage.compile([out], schedule="naive", check=check)
        assert segment_loops(pipe, "out"), "one segment loop per lifted Case"
        for rows, cols in [(1, 1), (5, 7), (3, 33)]:
            image = rng.random((rows, cols), dtype=np.float32)
            expected = polyimage.interpret([out], img=image)
            assert_same(pipe(img=image), expected, f"{rows}x{cols}, check={check}")
