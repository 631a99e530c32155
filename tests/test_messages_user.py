"""Refusals and messages in the user's terms (issue 50, items 3 and 4): every border refuses a
non-integer index as a plain read does, constant_exterior refuses a value its type cannot hold,
bounds errors and uncovered-read warnings quote a border read as written, Function.like's
variables are shared by name, and a Reduction's domain may leave out the target's variables."""

import re
import warnings

import numpy as np
import pytest
from oracle import assert_calls_match, run_both

import polyimage
from polyimage import (
    BoundsError,
    Case,
    Condition,
    Float,
    Function,
    Half,
    Image,
    Int,
    Interval,
    Op,
    Parameter,
    Reduce,
    Reduction,
    UChar,
    UncoveredReadWarning,
    Variable,
    constant_exterior,
    mirror,
    mirror_interior,
    repeat_edge,
    wrap,
)

MODES = {
    "repeat_edge": repeat_edge,
    "mirror": mirror,
    "mirror_interior": mirror_interior,
    "wrap": wrap,
    "constant_exterior": lambda f, **kw: constant_exterior(f, 0.5, **kw),
}
INTERNAL = ("_index", "Cast(Long", "Min(Max(", "Cast(Double")


def _clean(message: str) -> None:
    for word in INTERNAL:
        assert word not in message, (word, message)


@pytest.mark.parametrize("mode", [None, *sorted(MODES)])
@pytest.mark.parametrize("kind", ["scaled", "condition"])
def test_every_border_refuses_a_non_integer_index_as_a_plain_read_does(mode, kind):
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [R, C])
    x, y = Variable(Int, "x"), Variable(Int, "y")
    index, shown = (x * 0.5, "x * 0.5") if kind == "scaled" else (Condition(x, "<", 3), "x < 3")
    source = img if mode is None else MODES[mode](img)
    with pytest.raises(TypeError, match="indices must be integers") as caught:
        source(index, y)
    message = str(caught.value)
    assert f"index `{shown}` of {source.name}" in message
    if mode is not None:
        assert f"`{mode}(img)({shown}, y)`" in message
    _clean(message)


def test_constant_exterior_refuses_a_float_that_its_type_rounds_to_infinity():
    R = Parameter(Int, "R")
    half, single = Image(Half, "half", [R]), Image(Float, "single", [R])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy overflow warning either
        for source, value in [(half, 70000.0), (half, -65520.0), (half, 70000), (single, 1e39)]:
            with pytest.raises(TypeError, match=re.escape(f"{value!r} does not fit {source.typ}")):
                constant_exterior(source, value)
        with pytest.raises(TypeError, match="300 does not fit UChar, whose values are 0 to 255"):
            constant_exterior(Image(UChar, "small", [R]), 300)
        kept = [constant_exterior(half, v).value.value for v in (np.inf, -np.inf, np.nan, 65519.0)]
    assert kept[:2] == [np.inf, -np.inf] and np.isnan(kept[2]) and kept[3] == 65504.0
    out = Function.like(half, Half, "out")
    (x,) = out.variables
    out.defn = [constant_exterior(half, np.inf)(x - 1)]
    got = polyimage.interpret([out], half=np.ones(3, np.float16))
    np.testing.assert_array_equal(got, np.array([np.inf, 1, 1], np.float16))


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_read_past_a_dimension_left_out_of_dims_is_quoted_as_written(mode):
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img3 = Image(Float, "img3", [3, R, C])
    out = Function.like(img3, Float, "out")
    c, x, y = out.variables
    border = MODES[mode](img3, dims=(1, 2))
    out.defn = [border(c + 1, x - 3, y) * 2.0]
    with pytest.raises(BoundsError) as caught:
        polyimage.compile([out])
    message = str(caught.value)
    value = ", 0.5" if mode == "constant_exterior" else ""
    assert f"{mode}(img3{value}, dims=(1, 2))(x0 + 1, x1 - 3, x2) reads img3" in message
    assert f"add dimension 0 to the border's dims= (`{mode}(img3{value})`)" in message
    assert "Clamp(" not in message
    _clean(message)


def test_an_uncovered_read_through_a_border_is_quoted_as_written():
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [R, C])
    part = Function.like(img, Float, "part")
    x, y = part.variables
    part.defn = [Case(x > 2, img(x, y))]
    out = Function.like(img, Float, "out")
    out.defn = [
        mirror_interior(part)(x + 1, y - 3)
        + mirror(part)(x, y)
        + constant_exterior(part, 0.5, dims=(1,))(x, y - 1)
    ]
    with pytest.warns(UncoveredReadWarning) as caught:
        polyimage.compile([out], schedule="naive")
    messages = [str(w.message) for w in caught]
    assert any("reads mirror_interior(part)(x0 + 1, x1 - 3), which" in m for m in messages)
    assert any("reads mirror(part)(x0, x1), which" in m for m in messages)
    assert any("reads constant_exterior(part, 0.5, dims=(1,))(x0, x1 - 1)" in m for m in messages)
    for m in messages:
        _clean(m)
        assert "Reflect" not in m and "Mirror_" not in m


def test_stages_made_by_function_like_share_their_variables():
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    a, b = Image(Float, "a", [R, C]), Image(Float, "b", [R, C])
    first = Function.like(a, Float, "first")
    x, y = first.variables
    first.defn = [a(x, y) * 2.0]
    second = Function.like(b, Float, "second")  # read with first's x, y: the same variables
    assert all(u is v for u, v in zip(second.variables, first.variables))
    second.defn = [first(x, y) + b(x, y)]
    rng = np.random.default_rng(1)
    va, vb = rng.random((4, 6), dtype=np.float32), rng.random((4, 6), dtype=np.float32)
    run_both([second], reference=va * 2 + vb, a=va, b=vb)
    (k,) = Function.like(Image(Float, "v", [3]), Float, "per_channel").variables
    with pytest.raises(ValueError) as caught:
        Function(([k, x, y], [Interval(Int, 0, 2), *first.intervals]), Float, "stack")
    message = str(caught.value)
    assert "the variable x0 is used for two dimensions (x0, x0, x1)" in message
    assert "Function.like" in message and "variables=" in message


def _matrices():
    R, C, N = (Parameter(Int, n) for n in "RCN")
    A, B = Image(Float, "A", [R, N]), Image(Float, "B", [N, C])
    i, j, k = (Variable(Int, n) for n in "ijk")
    cells = [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]
    return A, B, (i, j, k), cells, Interval(Int, 0, N - 1), (R, C, N)


def test_a_reduction_domain_may_leave_out_the_target_s_variables():
    """As Halide's RDom: `mm(i, j) += A(i, k) * B(k, j)` over k alone is a matrix product, the
    same Reduction as one listing (i, j, k)."""
    A, B, (i, j, k), cells, inner, sizes = _matrices()
    mm = Reduction(([i, j], cells), ([k], [inner]), Float, "mm")
    mm.defn = [Reduce(mm(i, j), A(i, k) * B(k, j), Op.Sum)]
    assert [v.name for v in mm.reduction_variables] == ["i", "j", "k"]
    listed = Reduction(([i, j], cells), ([i, j, k], [*cells, inner]), Float, "listed")
    listed.defn = [Reduce(listed(i, j), A(i, k) * B(k, j), Op.Sum)]
    rng = np.random.default_rng(2)
    a, b = rng.random((5, 7), dtype=np.float32), rng.random((7, 4), dtype=np.float32)
    want = polyimage.interpret([mm], A=a, B=b)
    np.testing.assert_array_equal(want, polyimage.interpret([listed], A=a, B=b))
    np.testing.assert_allclose(want, a.astype(np.float64) @ b, rtol=1e-5)
    for schedule in ("naive", "auto"):
        pipe = polyimage.compile([mm], schedule=schedule, estimates=dict.fromkeys(sizes, 64))
        assert_calls_match(pipe, want, {"A": a, "B": b}, schedule)


def test_a_reduction_variable_of_the_stage_used_elsewhere_is_named_with_the_fix():
    A, B, (i, j, k), cells, inner, _ = _matrices()
    row = Reduction(([i, j], cells), ([k], [inner]), Float, "row")
    with pytest.raises(ValueError) as caught:
        row.defn = [Reduce(row(0, j), A(i, k) * B(k, j), Op.Sum)]
    message = str(caught.value)
    assert "uses i, a variable of row's own domain" in message
    assert "index 0" in message and "list i in the reduction domain" in message
    assert [v.name for v in row.reduction_variables] == ["k"]  # left as it was
