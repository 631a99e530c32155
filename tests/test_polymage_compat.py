"""PolyMage programs as written: defn edited as a list, Powf/Sqrtf/Expf/Logf, the fifth Function
argument, PolyMage's attribute names and Stencil; plus the errors where PolyMage said nothing.

The programs below are written for these tests in PolyMage's style (Conditions spelled out,
ghost zones appended to defn one by one); each is compiled and compared with the interpreter
(and a NumPy reference where one is short) on random inputs of odd sizes.
"""

import numpy as np
import pytest
from helpers import signature
from oracle import run_both

import polyimage
from polyimage import (
    Case,
    Cast,
    Clamp,
    Condition,
    Double,
    Expf,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Logf,
    Op,
    Parameter,
    PipelineError,
    Pow,
    Powf,
    Reduce,
    Reduction,
    Sqrtf,
    Stencil,
    UChar,
    Variable,
)

# -- the corpus --------------------------------------------------------------------------------


def test_harris_style_corners_with_stencils_and_appended_ghosts(rng):
    """Sobel gradients as Stencils, a 3x3 box sum as a Stencil, Powf, ghost rows appended."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 2, C + 2])
    rows, cols = Interval(Int, 1, R), Interval(Int, 1, C)
    sobel = [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]
    ix = Function(([x, y], [rows, cols]), Float, "ix")
    ix.defn = [Stencil(img, [x, y], sobel) * (1.0 / 12)]
    iy = Function(([x, y], [rows, cols]), Float, "iy")
    iy.defn = [Stencil(img, [x, y], [list(r) for r in zip(*sobel)]) * (1.0 / 12)]
    products = {}
    for name, a, b in (("ixx", ix, ix), ("iyy", iy, iy), ("ixy", ix, iy)):
        products[name] = Function(([x, y], [rows, cols]), Float, name)
        products[name].defn = [a(x, y) * b(x, y)]
    inner = (
        Condition(x, ">=", 2)
        & Condition(x, "<=", R - 1)
        & Condition(y, ">=", 2)
        & Condition(y, "<=", C - 1)
    )
    box = [[1, 1, 1]] * 3
    sxx, syy, sxy = (Stencil(products[n], [x, y], box) for n in ("ixx", "iyy", "ixy"))
    response = Function(([x, y], [rows, cols]), Float, "response")
    response.defn = [Case(inner, sxx * syy - sxy * sxy - 0.04 * Powf(sxx + syy, 2))]
    between = Condition(x, ">", 1) & Condition(x, "<", R)
    for ghost in (
        Condition(x, "==", 1),
        Condition(x, "==", R),
        Condition(y, "==", 1) & between,
        Condition(y, "==", C) & between,
    ):
        response.defn.append(Case(ghost, 0.0))
    assert len(response.defn) == 5

    a = rng.random((25, 33), dtype=np.float32)
    out = run_both([response], img=a)
    assert out.shape == (23, 31)
    assert not out[0].any() and not out[-1].any() and not out[:, 0].any() and not out[:, -1].any()
    assert np.abs(out[1:-1, 1:-1]).min() > 0


def test_jacobi_smoother_defined_by_appends_only(rng):
    """Multigrid style: the interior with `+=`, the ghost planes appended in a loop."""
    N = Parameter(Int, "N")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    extent = Interval(Int, 0, N + 1)
    u = Image(Double, "u", [N + 2, N + 2])
    f = Image(Double, "f", [N + 2, N + 2])
    interior = (
        Condition(x, ">=", 1)
        & Condition(x, "<=", N)
        & Condition(y, ">=", 1)
        & Condition(y, "<=", N)
    )
    ghosts = {
        "top": Condition(x, "==", 0),
        "bottom": Condition(x, "==", N + 1),
        "left": Condition(y, "==", 0),
        "right": Condition(y, "==", N + 1),
    }
    laplace = [[0, 1, 0], [1, -4, 1], [0, 1, 0]]

    def smooth(prev, name):
        s = Function(([x, y], [extent, extent]), Double, name)
        s.defn += [Case(interior, prev(x, y) + 0.2 * (Stencil(prev, [x, y], laplace) - f(x, y)))]
        for key in ghosts:
            s.defn.append(Case(ghosts[key], 0.0))
        return s

    s2 = smooth(smooth(u, "s1"), "s2")
    n = 29
    ua, fa = rng.random((n + 2, n + 2)), rng.random((n + 2, n + 2))

    def reference(p):
        out = np.zeros_like(p)
        lap = p[:-2, 1:-1] + p[1:-1, :-2] + p[1:-1, 1:-1] * -4 + p[1:-1, 2:] + p[2:, 1:-1]
        out[1:-1, 1:-1] = p[1:-1, 1:-1] + 0.2 * (lap - fa[1:-1, 1:-1])
        return out

    run_both([s2], reference=reference(reference(ua)), u=ua, f=fa)


def test_camera_style_curve_table_with_const_hint_and_powf(rng):
    """A lookup table declared with PolyMage's "const" hint, computed with Powf, read by data."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    gamma = Parameter(Double, "gamma")
    c, x, y, v = (Variable(Int, n) for n in "cxyv")
    curve = Function(([v], [Interval(Int, 0, 255)]), UChar, "curve", "const")
    assert curve.hint == "const"
    level = Powf(Cast(Double, v) / 255.0, 1.0 / gamma)
    curve.defn = [Cast(UChar, Clamp(level * 255.0 + 0.5, 0.0, 255.0))]
    img = Image(UChar, "img", [3, R, C])
    out = Function(
        ([c, x, y], [Interval(Int, 0, 2), Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]),
        UChar,
        "out",
    )
    out.defn = [curve(img(c, x, y))]
    a = rng.integers(0, 256, (3, 21, 47), dtype=np.uint8)
    table = np.clip(np.power(np.arange(256) / 255.0, 1.0 / 2.2) * 255.0 + 0.5, 0, 255)
    got = run_both([out], img=a, gamma=2.2)
    np.testing.assert_allclose(got.astype(int), table.astype(np.uint8)[a].astype(int), atol=1)


def test_histogram_reduction_extended_case_by_case(rng):
    """A Reduction whose Cases are appended; all Reduce operators agree."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y, b = Variable(Int, "x"), Variable(Int, "y"), Variable(Int, "b")
    img = Image(UChar, "img", [R, C])
    hist = Reduction(
        ([b], [Interval(Int, 0, 15)]),
        ([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]),
        Int,
        "hist",
    )
    hist.default = 1
    hist.defn = [Case(Condition(img(x, y), "<", 128), Reduce(hist(img(x, y) // 16), 1, Op.Sum))]
    hist.defn.append(Case(Condition(img(x, y), ">=", 200), Reduce(hist(15), 2, Op.Sum)))
    assert hist.ops == (Op.Sum, Op.Sum) and len(hist.defn) == 2
    a = rng.integers(0, 256, (19, 27), dtype=np.uint8)
    ref = np.ones(16, np.int32)
    np.add.at(ref, a[a < 128] // 16, 1)
    ref[15] += 2 * int((a >= 200).sum())
    run_both([hist], reference=ref, img=a)


def test_tone_curve_with_logf_expf_sqrtf_and_a_subsampling_stencil(rng):
    """Logf/Expf/Sqrtf, a 1-D Stencil with an explicit origin, one at index 2*x."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R, C])
    loglum = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Float, "loglum")
    loglum.defn = [Logf(img(x, y) + 1.0)]
    blury = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 2, C - 3)]), Float, "blury")
    blury.defn = [Stencil(loglum, [x, y], [[1, 4, 6, 4, 1]], [0, 2]) * 0.0625]
    down = Function(
        ([x, y], [Interval(Int, 1, (R - 2) // 2), Interval(Int, 2, C - 3)]), Float, "down"
    )
    down.defn = [Sqrtf(Expf(Stencil(blury, [2 * x, y], [[1], [2], [1]]) * 0.25) - 1.0)]
    a = rng.random((31, 41), dtype=np.float32) * 4
    log = np.log(a + np.float32(1))
    blur = (
        log[:, :-4] + log[:, 1:-3] * 4 + log[:, 2:-2] * 6 + log[:, 3:-1] * 4 + log[:, 4:]
    ) * np.float32(0.0625)
    centres = np.arange(1, 15) * 2  # x = 1 .. (31 - 2) // 2
    mid = blur[centres - 1] + blur[centres] * 2 + blur[centres + 1]
    ref = np.sqrt(np.exp(mid * np.float32(0.25)) - np.float32(1))
    got = run_both([down], img=a)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_even_kernel_origin_follows_polymage(rng):
    """A 2x4 kernel: the default origin is ((2-1)//2, (4-1)//2) = (0, 1), as in PolyMage."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 1, C + 3])
    kernel = [[-1, 2, -3.5, 0], [0, -1, 0, 0.5]]
    default = Stencil(img, [x, y], kernel)
    explicit = Stencil(img, [x, y], kernel, origin=[0, 1])
    by_hand = (
        img(x, y - 1) * -1
        + img(x, y) * 2
        + img(x, y + 1) * -3.5
        + img(x + 1, y) * -1
        + img(x + 1, y + 2) * 0.5
    )
    assert signature(default) == signature(explicit) == signature(by_hand)
    out = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 1, C)]), Float, "out")
    out.defn = [default]
    a = rng.random((24, 37), dtype=np.float32)
    ref = (
        -a[:-1, :-3]
        + 2 * a[:-1, 1:-2]
        - np.float32(3.5) * a[:-1, 2:-1]
        - a[1:, 1:-2]
        + np.float32(0.5) * a[1:, 3:]
    )
    run_both([out], reference=ref, img=a)


# -- defn as a list --------------------------------------------------------------------------


def _stage(name="f", typ=Float):
    n = Parameter(Int, "n")
    i = Variable(Int, "i")
    return Function(([i], [Interval(Int, 0, n - 1)]), typ, name), i


def test_defn_list_edits_match_whole_assignment():
    f, i = _stage()
    f.defn.append(Case(i < 2, 1.0))
    f.defn.extend([Case(i < 4, 2.0)])
    f.defn += [3.0]
    g, j = _stage("g")
    g.defn = [Case(j < 2, 1.0), Case(j < 4, 2.0), 3.0]
    assert [str(c.value) for c in f.defn] == [str(c.value) for c in g.defn]
    assert all(isinstance(c, Case) and c.value.typ is Float for c in f.defn)
    assert f.defn[0].cond is not None and f.defn[-1].cond is None and len(f.defn) == 3
    f.defn.insert(0, Case(i == 5, 9.0))
    assert polyimage.interpret(f, n=7).tolist() == [1, 1, 2, 2, 3, 9, 3]


def test_defn_list_rejects_what_assignment_rejects_and_rolls_back():
    f, i = _stage()
    other = Variable(Int, "other")
    f.defn = [Case(i < 2, 1.0), 3.0]
    before = list(f.defn)
    with pytest.raises(TypeError, match=r"only the last entry of defn may be a plain value"):
        f.defn.append(Case(i > 4, 2.0))
    with pytest.raises(TypeError, match=r"only the last entry of defn may be a plain value"):
        f.defn += [5.0]
    with pytest.raises(ValueError, match=r"uses variable other, which is not one of its"):
        f.defn.insert(0, Case(other > 1, 2.0))
    with pytest.raises(TypeError, match=r"Reduce can only define a Reduction"):
        f.defn.insert(0, Case(i > 1, Reduce(f(i), 1.0, Op.Sum)))
    with pytest.raises(ValueError, match=r"the definition is empty"):
        f.defn.clear()
    with pytest.raises(TypeError, match=r"tried in order and cannot be sorted"):
        f.defn.sort()
    assert list(f.defn) == before
    del f.defn[0]
    assert len(f.defn) == 1 and f.defn[0].cond is None


def test_stale_defn_list_and_unset_defn():
    f, i = _stage("unset_f")
    with pytest.raises(PipelineError, match=r"Function unset_f has no definition"):
        len(f.defn)
    old = f.defn
    f.defn = [1.0]
    with pytest.raises(RuntimeError, match=r"old copy of unset_f.defn"):
        old.append(Case(i > 1, 2.0))
    assert len(f.defn) == 1


def test_reduction_defn_append_takes_each_case_with_its_operator():
    n = Parameter(Int, "n")
    i, r = Variable(Int, "i"), Variable(Int, "r")
    img = Image(Float, "img", [n])
    total = Reduction(
        ([i], [Interval(Int, 0, 0)]), ([r], [Interval(Int, 0, n - 1)]), Float, "total"
    )
    total.defn.append(Case(r < 3, Reduce(total(0), img(r), Op.Sum)))
    total.defn.append(Case(r >= 2, Reduce(total(0), img(r) * 2, Op.Max)))
    with pytest.raises(TypeError, match=r"a Reduction is defined by Reduce"):
        total.defn.append(img(r))
    assert len(total.defn) == 2 and total.ops == (Op.Sum, Op.Max)
    a = np.arange(6, dtype=np.float32)
    # r = 0, 1: sums; r = 2: sum then max; r >= 3: max
    want = 0.0
    for k in range(6):
        if k < 3:
            want += a[k]
        if k >= 2:
            want = max(want, 2 * a[k])
    assert polyimage.interpret(total, img=a).tolist() == [want]
    pipe = polyimage.compile([total])
    assert pipe(img=a).tolist() == [want]


def test_polymage_histogram_applies_every_case_that_holds():
    """PolyMage's sandbox test_hist: Min, Max and Sum Cases over overlapping conditions, each
    applied in order where its condition holds."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    c, x, y = Variable(Int, "c"), Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R, C])
    hist = Reduction(
        ([c, x], [Interval(Int, 0, 2), Interval(Int, 0, R - 1)]),
        ([c, x, y], [Interval(Int, 0, 2), Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]),
        Float,
        "hist",
    )
    hist.defn = [
        Case(c < 2, Reduce(hist(c, x), img(x, y), Op.Min)),
        Case(c > 0, Reduce(hist(c, x), img(x, y), Op.Max)),
        Case(y % 3 == 0, Reduce(hist(c, x), img(x, y), Op.Sum)),
    ]
    hist.default = 0.5
    rng = np.random.default_rng(2)
    a = rng.random((5, 7), dtype=np.float32)
    want = np.full((3, 5), 0.5, np.float32)
    for ci in range(3):
        for xi in range(5):
            for yi in range(7):
                v = a[xi, yi]
                if ci < 2:
                    want[ci, xi] = min(want[ci, xi], v)
                if ci > 0:
                    want[ci, xi] = max(want[ci, xi], v)
                if yi % 3 == 0:
                    want[ci, xi] = np.float32(want[ci, xi] + v)
    np.testing.assert_array_equal(polyimage.interpret(hist, img=a), want)
    np.testing.assert_array_equal(polyimage.compile([hist])(img=a), want)


def test_image_defn_cannot_be_edited():
    img = Image(Float, "img", [4])
    with pytest.raises(TypeError, match=r"Image img is an input"):
        img.defn.append(1.0)
    assert len(img.defn) == 0


# -- aliases -----------------------------------------------------------------------------------


def test_float_spellings_and_exports():
    assert (Powf, Sqrtf, Expf, Logf) == (Pow, polyimage.Sqrt, polyimage.Exp, polyimage.Log)
    for name in ("Powf", "Sqrtf", "Expf", "Logf", "Stencil"):
        assert name in polyimage.__all__ and name in polyimage.dsl.__all__


def test_attribute_aliases_are_read_only():
    N = Parameter(Int, "N")
    x = Variable(Int, "x")
    iv = Interval(Int, 1, N - 2)
    assert iv.lowerBound is iv.lb and iv.upperBound is iv.ub
    img = Image(UChar, "img", [N, 3])
    assert img.dimensions == img.extents and len(img.dimensions) == 2
    case = Case(x > 1, x + 1)
    assert case.condition is case.cond and case.expression is case.value
    for obj, name in (
        (iv, "lowerBound"),
        (iv, "upperBound"),
        (img, "dimensions"),
        (case, "condition"),
        (case, "expression"),
    ):
        with pytest.raises(AttributeError):
            setattr(obj, name, 0)


def test_function_fifth_argument():
    x = Variable(Int, "x")
    rows = Interval(Int, 0, 9)
    assert Function(([x], [rows]), Float, "plain").hint == ""
    assert Function(([x], [rows]), Float, "table", "const").hint == "const"
    paper = Function([x], [rows], Float, "paper")
    assert paper.variables == (x,) and paper.hint == ""
    with pytest.raises(TypeError, match=r"hint such as \"const\", got 3"):
        Function(([x], [rows]), Float, "bad", 3)
    with pytest.raises(TypeError, match=r"use Function\(\(\[vars\], \[intervals\]\), typ, name"):
        Function(([x], [rows]), Float, "bad", "const", "more")
