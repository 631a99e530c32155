"""Expression inlining: which stages go, and results that do not change (bit-exact)."""

import numpy as np
import pytest
from oracle import assert_same

import polyimage
from polyimage import (
    Case,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Parameter,
    Select,
    UChar,
    Variable,
)
from polyimage.apps import camera_pipe, harris, unsharp_mask
from polyimage.apps.inputs import bundled
from polyimage.dsl.expr import Cast
from polyimage.io import load_image

R, C = Parameter(Int, "R"), Parameter(Int, "C")
x, y = Variable(Int, "x"), Variable(Int, "y")


def stage_names(pipe):
    return [s.name for s in pipe.stage_graph.computed]


def test_harris_shrinks_to_a_handful():
    outputs, _ = harris.build()
    pipe = polyimage.compile(outputs)
    assert len(pipe.graph.computed) == 11
    assert sorted(stage_names(pipe)) == ["Ix", "Iy", "harris"]
    rules = {producer: rule for producer, _, rule in pipe.inlined}
    assert rules["Ixx"] == "pointwise producer" and rules["trace"] == "pointwise producer"
    assert rules["Sxy"] == "pointwise consumer", "det reads Sxy only at its own point"
    # once det and trace are inlined, harris reads Sxx at its own point (and Ix around it)
    assert rules["Sxx"] == rules["Syy"] == "pointwise consumer"
    arrays = harris.prepare([load_image(bundled("astronaut.png"))], {"R": 37, "C": 53})
    assert_same(pipe(**arrays), polyimage.interpret(outputs, **arrays))
    plain = polyimage.compile(outputs, inline=False)
    assert len(plain.stage_graph.computed) == 11 and plain.inlined == []
    np.testing.assert_array_equal(pipe(**arrays), plain(**arrays))


def test_unsharp_mask_inlines_sharpen_then_blury():
    outputs, _ = unsharp_mask.build()
    pipe = polyimage.compile(outputs)
    assert stage_names(pipe) == ["blurx", "mask"]
    assert [(p, r) for p, _, r in pipe.inlined] == [
        ("sharpen", "pointwise producer"),
        ("blury", "pointwise consumer"),
    ]
    arrays = unsharp_mask.prepare([load_image(bundled("coffee.png"))], {"R": 19, "C": 41})
    np.testing.assert_array_equal(
        pipe(**arrays, **unsharp_mask.DEFAULTS),
        unsharp_mask.reference(**arrays, **unsharp_mask.DEFAULTS),
    )


def test_camera_pipe_stays_bit_exact():
    outputs, _ = camera_pipe.build()
    pipe = polyimage.compile(outputs)
    assert len(pipe.stage_graph.computed) < len(pipe.graph.computed)
    arrays = camera_pipe.prepare([load_image(bundled("coffee.png"))], {"R": 21, "C": 35})
    np.testing.assert_array_equal(
        pipe(**arrays, **camera_pipe.DEFAULTS),
        camera_pipe.reference(**arrays, **camera_pipe.DEFAULTS),
    )


def test_live_outs_and_stencil_producers_stay():
    img = Image(Float, "img", [R + 2])
    blur = Function(([x], [Interval(Int, 1, R)]), Float, "blur")
    blur.defn = [img(x - 1) + img(x) + img(x + 1)]
    out1 = Function(([x], [Interval(Int, 2, R - 1)]), Float, "out1")
    out1.defn = [blur(x - 1) + blur(x + 1)]
    out2 = Function(([x], [Interval(Int, 2, R - 1)]), Float, "out2")
    out2.defn = [out1(x) * blur(x)]
    pipe = polyimage.compile([out1, out2], constraints=[R >= 3])
    assert pipe.inlined == []
    assert stage_names(pipe) == ["blur", "out1", "out2"]


def test_non_overlapping_reads_are_inlined():
    """A deinterleave: even and odd points go to different consumers, each read once."""
    img = Image(UChar, "img", [2 * R])
    pairs = Function(([x], [Interval(Int, 0, 2 * R - 2)]), Int, "pairs")
    pairs.defn = [Case(x % 2 == 0, Cast(Int, img(x)) * 3 - img(x + 1)), Cast(Int, img(x + 1)) - 7]
    even = Function(([x], [Interval(Int, 0, R - 1)]), Int, "even")
    even.defn = [pairs(2 * x) + 1]
    odd = Function(([x], [Interval(Int, 0, R - 2)]), Int, "odd")
    odd.defn = [pairs(2 * x + 1) * 2]
    both = Function(([x], [Interval(Int, 0, R - 2)]), Int, "both")
    both.defn = [even(x) - odd(x) + even(x + 1)]
    pipe = polyimage.compile([both])
    assert ("pairs", ("even", "odd"), "non-overlapping reads") in pipe.inlined
    data = np.arange(20, dtype=np.uint8) * 13
    assert_same(pipe(img=data), polyimage.interpret([both], img=data))


def test_overlapping_or_clamped_reads_are_not_inlined():
    img = Image(Float, "img", [R])
    f = Function(([x], [Interval(Int, 0, R - 1)]), Float, "f")
    f.defn = [img(x) * 2 + img(R - 1 - x)]
    g = Function(([x], [Interval(Int, 0, R - 1)]), Float, "g")
    g.defn = [f(Cast(Int, img(x) * 4))]
    h = Function(([x], [Interval(Int, 0, R / 2)]), Float, "h")
    h.defn = [f(x / 2) + g(x)]
    pipe = polyimage.compile([h])
    assert "f" in stage_names(pipe), "f is read through a clamped index"
    data = np.linspace(-1, 2, 17, dtype=np.float32)
    assert_same(pipe(img=data), polyimage.interpret([h], img=data))


def test_inlining_keeps_cases_and_uncovered_zeros():
    img = Image(Float, "img", [R])
    f = Function(([x], [Interval(Int, 0, R - 1)]), Float, "f")
    f.defn = [Case(x < 3, img(x) + 1), Case(x > R - 3, img(x) * 2)]
    g = Function(([x], [Interval(Int, 0, R - 1)]), Float, "g")
    g.defn = [Select(x > 0, f(x), -f(x))]
    with pytest.warns(polyimage.UncoveredReadWarning, match=r"g \(its definition\) reads f"):
        pipe = polyimage.compile([g])
    assert stage_names(pipe) == ["g"]
    data = np.arange(9, dtype=np.float32)
    expected = np.where(np.arange(9) < 3, data + 1, np.where(np.arange(9) > 6, data * 2, 0))
    expected[0] = -expected[0]
    assert_same(pipe(img=data), expected.astype(np.float32))


def test_user_functions_are_not_modified():
    outputs, _ = harris.build()
    before = [case.value for case in outputs[0].defn]
    polyimage.compile(outputs)
    after = [case.value for case in outputs[0].defn]
    assert len(after) == len(before) and all(a is b for a, b in zip(after, before))


@pytest.mark.parametrize("inline", [True, False])
def test_dot_shows_the_compiled_graph(inline):
    outputs, _ = unsharp_mask.build()
    text = polyimage.compile(outputs, inline=inline).to_dot()
    assert ('"sharpen"' in text) is not inline


def test_table_read_at_fixed_indices_stays_a_stage():
    """A 3-entry pointwise table read as table(0..2) by every pixel would be recomputed per
    pixel if inlined."""
    k = Variable(Int, "k")
    weights = Image(Float, "weights", [3])
    table = Function(([k], [Interval(Int, 0, 2)]), Float, "table")
    table.defn = [weights(k) * 2 + 1]
    img = Image(Float, "img", [R])
    out = Function(([x], [Interval(Int, 0, R - 1)]), Float, "out")
    out.defn = [img(x) * table(0) + table(2)]
    pipe = polyimage.compile([out])
    assert stage_names(pipe) == ["table", "out"]
    data, w = np.arange(7, dtype=np.float32), np.float32([0.5, 0, 2])
    assert_same(pipe(img=data, weights=w), polyimage.interpret([out], img=data, weights=w))


def _without_clamps(e):
    """`e` with every `Clamp(a, lo, hi)` (min of a max) replaced by `a`."""
    from polyimage.algebra.substitute import rebuild
    from polyimage.dsl import expr as E

    if isinstance(e, E.BinOp) and e.op == "min" and isinstance(e.a, E.BinOp) and e.a.op == "max":
        return _without_clamps(e.a.a)
    children = e.children()
    if not children:
        return e
    new = [_without_clamps(c) for c in children]
    return E.Reference(e.func, new) if isinstance(e, E.Reference) else rebuild(e, new)


def test_an_affine_index_inlining_cannot_prove_is_caught(monkeypatch):
    """The affine indices of an inlined graph are proven again (poly.bounds.check_inlined):
    a substitution that lost a clamp, as this test makes it do, is a BoundsError naming the
    compiler bug, never C that reads out of bounds."""
    import dataclasses

    import polyimage.graph.inline as inline_pass
    from polyimage.config import Options

    img = Image(Float, "img", [R])
    near = Function(([x], [Interval(Int, 0, R - 1)]), Float, "near")
    near.defn = [img(polyimage.Clamp(x + 3, 0, R - 1)) * 2]
    out = Function(([x], [Interval(Int, 0, R - 1)]), Float, "near_out")
    out.defn = [near(x) + 1]
    fresh = dataclasses.replace(Options.from_env(), use_cache=False)
    pipe = polyimage.compile([out], options=fresh)
    assert stage_names(pipe) == ["near_out"], "near is inlined into its one pointwise reader"
    data = np.arange(7, dtype=np.float32)
    assert_same(pipe(img=data), polyimage.interpret([out], img=data))

    original = inline_pass.producer_value
    monkeypatch.setattr(inline_pass, "producer_value", lambda f: _without_clamps(original(f)))
    with pytest.raises(polyimage.BoundsError, match="after inlining.*near_out.*reads img"):
        polyimage.compile([out], options=fresh)
