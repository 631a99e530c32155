"""PolyMage's DSL as polyimage takes it, continued: Stencil, the errors where PolyMage accepted
a wrong program, and its bilateral grid as written."""

import numpy as np
import pytest
from helpers import signature

import polyimage
from polyimage import (
    Case,
    Cast,
    Condition,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Op,
    Parameter,
    PipelineError,
    Reduce,
    Reduction,
    Stencil,
    Variable,
)
from polyimage.dsl import expr as E

# -- Stencil -----------------------------------------------------------------------------------


def test_stencil_skips_zero_weights_and_unit_multiplications():
    N = Parameter(Int, "N")
    x = Variable(Int, "x")
    img = Image(Float, "img", [N])
    assert signature(Stencil(img, [x], [1, 0, -2])) == signature(img(x - 1) + img(x + 1) * -2)
    assert signature(Stencil(img, [x], np.array([0.5, 0.0, 0.5]))) == signature(
        img(x - 1) * 0.5 + img(x + 1) * 0.5
    )
    assert signature(Stencil(img, [x], [0, 0])) == signature(E.to_expr(0))


@pytest.mark.parametrize(
    "kernel, origin, error, message",
    [
        ([[1, 2], [3]], None, ValueError, r"ragged: row \[1\] has 1 entries, expected 2"),
        ([[1, 2], 3], None, ValueError, r"ragged: entry \[1\] is 3, expected a list of 2"),
        ([[1, [2]], [3, 4]], None, ValueError, r"ragged: entry \[0, 1\] is a list"),
        ([1, 2, 3], None, ValueError, r"nests 1 level\(s\) of lists but img is indexed with 2"),
        ([[[1]]], None, ValueError, r"nests 3 level\(s\)"),
        ([[]], None, ValueError, r"empty row"),
        ([[1, "a"]], None, TypeError, r"kernel entry \[0, 1\] is 'a', not a number"),
        ([[1, True]], None, TypeError, r"kernel entry \[0, 1\] is True"),
        ([[1, 2]], [0], ValueError, r"origin must be 2 integer\(s\), got \[0\]"),
        ([[1, 2]], [0, 0.5], ValueError, r"origin must be 2 integer\(s\)"),
    ],
)
def test_stencil_shape_errors(kernel, origin, error, message):
    N = Parameter(Int, "N")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [N, N])
    with pytest.raises(error, match=r"Stencil of img: .*" + message):
        Stencil(img, [x, y], kernel, origin)


def test_stencil_argument_errors():
    N = Parameter(Int, "N")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [N, N])
    with pytest.raises(ValueError, match=r"img has 2 dimension\(s\) but 1 index\(es\) were given"):
        Stencil(img, [x], [1, 2, 1])
    with pytest.raises(TypeError, match=r"Stencil needs a Function or Image first"):
        Stencil(x, [x, y], [[1]])


# -- errors where PolyMage accepted a wrong program ----------------------------------------------


def test_condition_on_a_variable_the_stage_does_not_have():
    N = Parameter(Int, "N")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    f = Function(([x], [Interval(Int, 0, N - 1)]), Float, "f")
    with pytest.raises(
        ValueError,
        match=r"f: `y >= 1` uses variable y, which is not one of its "
        r"variables \(x\)",
    ):
        f.defn = [Case(Condition(y, ">=", 1), 1.0)]
    f.defn = [Case(Condition(x, ">=", 1), 1.0)]
    with pytest.raises(ValueError, match=r"uses variable y"):
        f.defn.append(Case(Condition(y, ">=", 1), 1.0))
    assert len(f.defn) == 1


def test_two_images_with_one_name():
    N = Parameter(Int, "N")
    x = Variable(Int, "x")
    first, second = Image(Float, "frame", [N]), Image(Float, "frame", [N])
    both = Function(([x], [Interval(Int, 0, N - 1)]), Float, "both")
    both.defn = [first(x) + second(x)]
    with pytest.raises(PipelineError, match=r"two different stages are named frame"):
        polyimage.compile(both)
    with pytest.raises(PipelineError, match=r"two different stages are named frame"):
        polyimage.interpret(both, frame=np.zeros(3, np.float32))


def test_zero_dimensional_stages_are_rejected():
    N = Parameter(Int, "N")
    r = Variable(Int, "r")
    one_point = r"use a one-point domain such as \(\[v\], \[Interval\(Int, 0, 0\)\]\)"
    with pytest.raises(
        ValueError,
        match=r"scalar: a stage domain needs at least one dimension; "
        r"for a single value " + one_point,
    ):
        Function(([], []), Float, "scalar")
    with pytest.raises(ValueError, match=r"total: a stage domain needs at least one dimension"):
        Reduction(([], []), ([r], [Interval(Int, 0, N - 1)]), Float, "total")
    with pytest.raises(
        ValueError,
        match=r"rows: a reduction domain needs at least one "
        r"dimension.*" + one_point,
    ):
        Reduction(([r], [Interval(Int, 0, N - 1)]), ([], []), Float, "rows")


def _polymage_bilateral_grid():
    """PolyMage's bilateral grid in its own form: one Reduction over (c, x, y, z) that
    reduces over (x, y) (the same Variable objects), whose two Cases test the target
    variable c (`c == 0` with target grid(0, ...), `c == 1` with grid(1, ...)); then three
    blurs of the grid under one guard, trilinear slicing and a Select."""
    rows, cols = Parameter(Int, "rows"), Parameter(Int, "cols")
    x, y, z, c = (Variable(Int, n) for n in "xyzc")
    img = Image(Float, "input", [rows, cols])
    step, levels = 8, 10
    rowr, colr = Interval(Int, 0, rows - 1), Interval(Int, 0, cols - 1)
    grid_dom = (
        [c, x, y, z],
        [
            Interval(Int, 0, 1),
            Interval(Int, 0, rows / step + 3),
            Interval(Int, 0, cols / step + 3),
            Interval(Int, 0, levels + 3),
        ],
    )
    level = Cast(Int, img(x, y) * levels)
    grid = Reduction(grid_dom, ([x, y], [rowr, colr]), Float, "grid")
    grid.defn = [
        Case(
            Condition(c, "==", 0),
            Reduce(grid(0, 2 + x / step, 2 + y / step, 2 + level), img(x, y), Op.Sum),
        ),
        Case(
            Condition(c, "==", 1), Reduce(grid(1, 2 + x / step, 2 + y / step, 2 + level), 1, Op.Sum)
        ),
    ]
    grid.default = 0
    inside = (
        Condition(x, ">=", 2)
        & Condition(x, "<=", rows / step + 1)
        & Condition(y, ">=", 2)
        & Condition(y, "<=", cols / step + 1)
        & Condition(z, ">=", 2)
        & Condition(z, "<=", levels + 1)
    )
    previous = grid
    blurred = {}
    for name, shift in (("blurz", (0, 0, 1)), ("blurx", (1, 0, 0)), ("blury", (0, 1, 0))):
        stage = Function(grid_dom, Float, name)
        taps = [
            previous(c, x + k * shift[0], y + k * shift[1], z + k * shift[2]) * w
            for k, w in zip(range(-2, 3), (1, 4, 6, 4, 1))
        ]
        stage.defn = [Case(inside, taps[0] + taps[1] + taps[2] + taps[3] + taps[4])]
        previous = blurred[name] = stage
    blury = blurred["blury"]
    zv = img(x, y) * levels
    zi = Cast(Int, zv)
    xf = Cast(Float, x % step) / step
    yf = Cast(Float, y % step) / step
    xi, yi = x / step, y / step

    def lerp(a, b, w):
        return a + w * (b - a)

    def corner(dz):
        low = lerp(blury(c, 2 + xi, 2 + yi, 2 + zi + dz), blury(c, 3 + xi, 2 + yi, 2 + zi + dz), xf)
        high = lerp(
            blury(c, 2 + xi, 3 + yi, 2 + zi + dz), blury(c, 3 + xi, 3 + yi, 2 + zi + dz), xf
        )
        return lerp(low, high, yf)

    interpolated = Function(([c, x, y], [Interval(Int, 0, 1), rowr, colr]), Float, "interpolated")
    interpolated.defn = [lerp(corner(0), corner(1), zv - zi)]
    filtered = Function(([c, x, y], [Interval(Int, 0, 0), rowr, colr]), Float, "filtered")
    filtered.defn = [
        polyimage.Select(
            Condition(interpolated(1, x, y), ">", 0),
            interpolated(0, x, y) / interpolated(1, x, y),
            img(x, y),
        )
    ]
    return filtered, grid


@pytest.mark.filterwarnings("ignore::polyimage.UncoveredReadWarning")  # the blurs' borders
@pytest.mark.parametrize("schedule", ["naive", "auto"])
def test_polymage_bilateral_grid_with_conditions_on_its_target(schedule, rng):
    """A condition on a target variable selects the updates whose target has that index:
    `c == 0` holds for grid(0, ...), so both Cases update their own channel at every pixel."""
    filtered, grid = _polymage_bilateral_grid()
    assert all(not E.free_symbols(case.cond, E.Variable) for case in grid.defn)
    img = rng.random((37, 45), dtype=np.float32)
    pipe = polyimage.compile([filtered], schedule=schedule, estimates={"rows": 64, "cols": 64})
    want = polyimage.interpret([filtered], input=img)
    np.testing.assert_allclose(pipe(input=img), want, rtol=1e-5, atol=1e-6)
    counts = polyimage.interpret([grid], input=img)[1]
    assert counts.sum() == img.size  # every pixel counted once, in channel 1


def test_a_target_variable_inside_an_expression_is_refused_with_the_way_to_write_it():
    x, c = Variable(Int, "x"), Variable(Int, "c")
    img = Image(Float, "img", [10])
    hist = Reduction(
        ([c, x], [Interval(Int, 0, 1), Interval(Int, 0, 9)]),
        ([x], [Interval(Int, 0, 9)]),
        Float,
        "hist",
    )
    with pytest.raises(ValueError, match="alone on one side of a comparison"):
        hist.defn = [Case(Condition(c + 1, "==", 1), Reduce(hist(0, x), img(x), Op.Sum))]
