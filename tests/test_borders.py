"""Border modes (dsl.borders): a source read at any integer point. The interpreter's values
equal NumPy's pad modes at every size (1 x 1 included, reads several widths out); compiled
pipelines equal the interpreter under naive, auto and fused tilings on 1 and 2 threads, with
images and stages as sources and random pipelines whose reads mirror or wrap; the innermost
loop's interior reads without a fold, clamp or select; mistakes are named."""

import itertools
import random

import numpy as np
import pytest
from helpers import stage_trees
from oracle import assert_calls_match

import polyimage
from polyimage import (
    Float,
    Function,
    Image,
    Int,
    Interval,
    Parameter,
    UChar,
    Variable,
    constant_exterior,
    mirror,
    mirror_interior,
    repeat_edge,
    wrap,
)
from polyimage.codegen.ctree import for_loops, names_used
from polyimage.testing import random_pipeline, random_schedule

# each mode beside the NumPy pad mode that defines the same values
MODES = {
    "repeat_edge": (repeat_edge, "edge"),
    "mirror": (mirror, "symmetric"),
    "mirror_interior": (mirror_interior, "reflect"),
    "wrap": (wrap, "wrap"),
    "constant_exterior": (lambda f, **kw: constant_exterior(f, 0.25, **kw), "constant"),
}
SHAPES = [(1, 1), (1, 4), (2, 3), (5, 7), (9, 33)]
REACH = 3  # reads up to 3 points out: past the whole image for the small shapes


def _weight(i, j):
    return 1.0 + 3 * i + 0.5 * j


def _stencil(border, source_domain, name="out"):
    """A 7 x 7 weighted stencil of `border` over the domain of `source_domain`."""
    out = Function.like(source_domain, Float, name)
    x, y = out.variables
    taps = itertools.product(range(-REACH, REACH + 1), repeat=2)
    out.defn = [sum(border(x + i, y + j) * _weight(i, j) for i, j in taps)]
    return out


def _padded_stencil(a, np_mode):
    """The same stencil on NumPy's padded array."""
    extra = {"constant_values": 0.25} if np_mode == "constant" else {}
    p = np.pad(a, REACH, mode=np_mode, **extra)
    rows, cols = a.shape
    return sum(
        p[REACH + i : REACH + i + rows, REACH + j : REACH + j + cols] * np.float32(_weight(i, j))
        for i, j in itertools.product(range(-REACH, REACH + 1), repeat=2)
    )


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_interpreter_gives_numpys_pad_modes(mode):
    make, np_mode = MODES[mode]
    img = Image(Float, "img", [Parameter(Int, "R"), Parameter(Int, "C")])
    out = _stencil(make(img), img)
    rng = np.random.default_rng(7)
    for shape in SHAPES:
        a = rng.random(shape, dtype=np.float32)
        got = polyimage.interpret([out], img=a)
        assert got.shape == shape
        np.testing.assert_allclose(got, _padded_stencil(a, np_mode), rtol=1e-5, err_msg=shape)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_compiled_borders_of_an_image_match_the_interpreter(mode):
    make, _ = MODES[mode]
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [R, C])
    out = _stencil(make(img), img)
    rng = np.random.default_rng(len(mode))
    arrays = [rng.random(shape, dtype=np.float32) for shape in SHAPES]
    for schedule in ("naive", "auto"):
        pipe = polyimage.compile([out], schedule=schedule, estimates={R: 256, C: 256})
        for a in arrays:
            assert_calls_match(pipe, polyimage.interpret([out], img=a), {"img": a}, mode)


def _bordered_stage_pipeline(mode):
    """A stage over a shifted domain read through a border by a consumer over another one:
    the border's bounds are the stage's, not 0 and the extent."""
    make, _ = MODES[mode]
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [R, C])
    x, y = Variable(Int, "x"), Variable(Int, "y")
    inner = Function(([x, y], [Interval(Int, 1, R - 1), Interval(Int, 2, C - 1)]), Float, "inner")
    inner.defn = [img(x, y) * 2.0 - img(x - 1, y - 2)]
    out = _stencil(make(inner), img)
    return out, (R, C)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_borders_of_a_stage_match_the_interpreter_in_any_grouping(mode):
    out, (R, C) = _bordered_stage_pipeline(mode)
    rng = np.random.default_rng(3 + len(mode))
    arrays = [rng.random(shape, dtype=np.float32) for shape in [(2, 3), (5, 7), (12, 40)]]
    schedules = ["naive", "auto", "group 0: inner, out [4x16]", "group 0: inner, out [3x5]"]
    for schedule in schedules:
        pipe = polyimage.compile([out], schedule=schedule, inline=False, estimates={R: 256, C: 256})
        for a in arrays:
            want = polyimage.interpret([out], img=a)
            assert_calls_match(pipe, want, {"img": a}, f"{mode}, {schedule}, {a.shape}")


def test_a_border_on_some_dimensions_leaves_the_others_checked():
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [3, R, C])
    edge = repeat_edge(img, dims=(1, 2))
    out = Function.like(img, Float, "out")
    c, x, y = out.variables
    out.defn = [edge(c, x - 1, y + 2) + edge(c, x + 5, y - 4)]
    a = np.random.default_rng(0).random((3, 4, 6), dtype=np.float32)
    p = np.pad(a, ((0, 0), (5, 5), (5, 5)), mode="edge")
    want = p[:, 4:8, 7:13] + p[:, 10:14, 1:7]
    np.testing.assert_array_equal(polyimage.interpret([out], img=a), want)
    np.testing.assert_array_equal(polyimage.compile([out])(img=a), want)
    bad = Function.like(out, Float, "bad")
    bad.defn = [edge(c + 1, x, y)]  # the channel is not extended: read past it, refused
    with pytest.raises(polyimage.BoundsError, match="img"):
        polyimage.compile([bad])


@pytest.mark.parametrize("mode", ["repeat_edge", "mirror", "wrap", "constant_exterior"])
def test_the_interior_reads_without_folds_clamps_or_selects(mode):
    """Extended along the innermost dimension only, the middle of the innermost loop is plain
    arithmetic on affine reads: no helper call at all (the head and tail, one loop run on
    both sides, keep the folds)."""
    make, _ = MODES[mode]
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [R, C])
    out = Function.like(img, Float, "out")
    x, y = out.variables
    b = make(img, dims=(1,))
    out.defn = [b(x, y - 2) + b(x, y + 1) * 2.0]
    pipe = polyimage.compile([out], schedule="naive")
    (tree,) = stage_trees(pipe, "out")
    loops = [loop for loop in for_loops(tree) if loop.var == "pim_w_x1"]
    assert len(loops) == 2, [loop.var for loop in loops]
    middle, border = loops
    assert middle.simd and not border.simd
    assert (border.lo, border.hi) == ("pim_slo_x1", "pim_shi_x1")
    helpers = lambda loop: {name for kind, name in names_used(loop) if kind == "helper"}  # noqa: E731
    assert not helpers(middle), helpers(middle)
    assert helpers(border)


def test_random_pipelines_with_mirrored_and_wrapped_reads_match_the_interpreter():
    checked = 0
    for seed in range(1, 40, 2):
        rp = random_pipeline(seed, borders=True)
        # planned first: a seed whose reads fold no index (most of them) is not built
        planned = polyimage.compile(rp.outputs, schedule="naive", inline=rp.inline, build=False)
        if "_index_i64(" not in planned.c_source:
            continue
        naive = polyimage.compile(rp.outputs, schedule="naive", inline=rp.inline)
        assert naive.c_source == planned.c_source
        expected = polyimage.interpret(rp.outputs, **rp.arguments)
        assert_calls_match(naive, expected, rp.arguments, f"seed {seed}: naive")
        for k in range(2):
            schedule = random_schedule(naive.stage_graph, random.Random(seed * 100 + k))
            pipe = polyimage.compile(rp.outputs, schedule=schedule, inline=rp.inline)
            assert_calls_match(pipe, expected, rp.arguments, f"seed {seed}: {schedule}")
        checked += 1
    assert checked >= 5, checked


def test_the_bordered_unsharp_mask_equals_the_padded_app():
    """The app's algorithm with the border in the pipeline (apps/unsharp_mask.build_bordered)
    gives the padded app's output bit for bit, at its input's shape."""
    from polyimage.apps import load_app

    app = load_app("unsharp_mask")
    rng = np.random.default_rng(5)
    rgb = rng.random((23, 31, 3), dtype=np.float32)
    inputs = app.prepare([rgb])
    params = dict(app.DEFAULTS)
    padded = polyimage.compile(app.build()[0])(**inputs, **params)
    outputs, _ = app.build_bordered()
    plain = app.unpadded(inputs)
    assert plain["img"].shape == padded.shape
    for schedule in ("naive", "auto"):
        got = polyimage.compile(outputs, schedule=schedule)(**plain, **params)
        np.testing.assert_array_equal(got, padded)
    np.testing.assert_array_equal(polyimage.interpret(outputs, **plain, **params), padded)


def test_modes_change_the_c_and_the_cache_key():
    img = Image(Float, "img", [Parameter(Int, "R"), Parameter(Int, "C")])
    sources, keys = set(), set()
    for mode, (make, _) in sorted(MODES.items()):
        pipe = polyimage.compile([_stencil(make(img), img)], schedule="naive")
        sources.add(pipe.c_source)
        keys.add(pipe.build_info.key)
    assert len(sources) == len(keys) == len(MODES)


def test_mistakes_are_named():
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [R, C])
    with pytest.raises(TypeError, match="mirror needs an Image or a stage"):
        mirror(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="dims must be dimensions of img"):
        wrap(img, dims=(2,))
    with pytest.raises(TypeError, match=r"repeat_edge\(img\) has 2 dimension"):
        repeat_edge(img)(1)
    small = Image(UChar, "small", [R, C])
    with pytest.raises((TypeError, ValueError), match="300"):
        constant_exterior(small, 300)
    weight = Parameter(Float, "w")
    bordered = constant_exterior(small, weight)  # an expression: cast to the source's type
    assert bordered(0, 0).typ is UChar


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_interior_of_a_2d_border_vectorizes(mode):
    """Bordered along both dimensions: the row's folds, clamps and selects are computed once
    before the innermost loop (codegen.cexpr.Hoisted), whose interior gcc vectorizes."""
    from polyimage.tools.vectorization import vectorization

    make, _ = MODES[mode]
    img = Image(Float, "img", [Parameter(Int, "R"), Parameter(Int, "C")])
    pipe = polyimage.compile([_stencil(make(img), img)], schedule="naive")
    verdicts = [v for v in vectorization(pipe) if v.stages == ("out",)]
    assert verdicts and all(v.vectorized for v in verdicts), verdicts
    assert "pim_inv0" in pipe.c_source


@pytest.mark.parametrize("typ", ["Half", "UChar"])
def test_borders_of_half_and_8_bit_images(typ):
    """Borders read the source's own pixel type: a Half image's bits, a UChar image summed with
    saturation (dsl.image_ops); compiled equal to the interpreter."""
    typ = getattr(polyimage, typ)
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(typ, "img", [R, C])
    a = (np.random.default_rng(0).random((5, 7)) * 200).astype(typ.dtype)
    for border in (mirror(img), constant_exterior(img, 3), wrap(img)):
        out = Function.like(img, typ, "out")
        x, y = out.variables
        if typ.is_int:
            out.defn = [polyimage.saturating_add(border(x - 1, y + 2), border(x + 2, y - 1))]
        else:
            out.defn = [border(x - 1, y + 2) + border(x + 2, y - 1) * 0.5]
        want = polyimage.interpret([out], img=a)
        assert want.dtype == typ.dtype
        for schedule in ("naive", "auto"):
            pipe = polyimage.compile([out], schedule=schedule, estimates={R: 64, C: 64})
            assert_calls_match(pipe, want, {"img": a}, f"{border} {schedule}")
