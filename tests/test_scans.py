"""Scans: stages reading their own earlier points along one dimension (cumulative sums,
integral images, recursive filters), compiled under several schedules and thread counts against
NumPy and the interpreter; the code they get; and the self-reads that stay cycle errors."""

import re

import numpy as np
import pytest
from helpers import ROOT, stage_trees
from oracle import assert_same

import polyimage
from polyimage import (
    BoundsError,
    Case,
    Cast,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Long,
    Min,
    Op,
    Parameter,
    PipelineError,
    Reduce,
    Reduction,
    Schedule,
    Select,
    Short,
    UChar,
    UInt,
    Variable,
)
from polyimage.codegen import scans
from polyimage.graph.dag import build_graph, scan_dimension
from polyimage.schedule.tiling import WHOLE_TILE, TiledGroup, untileable_reason

THREADS = (1, 2, 3)
# odd sizes, single rows and columns, one point, and one large enough to run in parallel
SHAPES = [(13, 17), (1, 17), (13, 1), (1, 1), (131, 257)]


def _grid():
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    return R, C, x, y, ([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)])


def _compiled_everywhere(outputs, hand, estimates, calls):
    """Run `outputs` under naive, auto and the `hand` schedule text on every thread count for
    each argument set of `calls`; check against the interpreter and return the results."""
    pipes = [
        polyimage.compile(outputs, schedule=schedule, estimates=estimates)
        for schedule in ("naive", "auto", hand)
    ]
    for pipe in pipes:
        for plan in pipe.group_plans:
            if set(_scans(pipe)) & set(plan.members) and isinstance(plan, TiledGroup):
                _assert_strips(pipe, plan)
    results = []
    for args in calls:
        expected = polyimage.interpret(outputs, **args)
        for pipe in pipes:
            for threads in THREADS:
                got = pipe(threads=threads, **args)
                pairs = zip(got, expected) if isinstance(got, tuple) else [(got, expected)]
                for g, e in pairs:
                    assert_same(g, e, f"{pipe.schedule} on {threads} threads vs interpreter")
        results.append(expected)
    return results


def _scans(pipe):
    return [s.name for s in pipe.stage_graph.computed if scan_dimension(s.func) is not None]


def _assert_strips(pipe, plan):
    """Every tile of a tiled group holds whole each dimension of the tile space a member
    scans, at every level."""
    for name in plan.members:
        func = pipe.stage_graph.stage(name).func
        scan = scan_dimension(func)
        if scan is not None and func.variables[scan].name in plan.anchor_variables:
            d = plan.anchor_variables.index(func.variables[scan].name)
            assert d in plan.whole, (pipe.schedule, plan.whole)
            assert all(sizes[d] == WHOLE_TILE for sizes in plan.tile_sizes), plan.tile_sizes


# -- cumulative sums -------------------------------------------------------------------------


def test_cumulative_histogram():
    """A histogram Reduction, its cumulative distribution as a scan and an equalization table:
    int32, exact."""
    R, C, x, y, box = _grid()
    b = Variable(Int, "b")
    img = Image(UChar, "img", [R, C])
    bins = ([b], [Interval(Int, 0, 255)])
    hist = Reduction(bins, box, Int, "hist")
    hist.defn = [Reduce(hist(img(x, y)), 1, Op.Sum)]
    cdf = Function(bins, Int, "cdf")
    cdf.defn = [Case(b == 0, hist(0)), cdf(b - 1) + hist(b)]
    equalized = Function(box, UChar, "equalized")
    equalized.defn = [Cast(UChar, cdf(img(x, y)) * 255 // (R * C))]
    rng = np.random.default_rng(1)
    calls = [{"img": rng.integers(0, 256, shape).astype(np.uint8)} for shape in SHAPES]
    results = _compiled_everywhere(
        [equalized, cdf],
        "group 0: hist [untiled]\ngroup 1: cdf [16]\ngroup 2: equalized [8x32]",
        {R: 512, C: 512},
        calls,
    )
    for args, (got_equalized, got_cdf) in zip(calls, results):
        a = args["img"]
        ref_cdf = np.cumsum(np.bincount(a.ravel(), minlength=256)).astype(np.int32)
        assert_same(got_cdf, ref_cdf, "cdf vs np.cumsum")
        ref = (ref_cdf[a].astype(np.int64) * 255 // a.size).astype(np.uint8)
        assert_same(got_equalized, ref, "equalized vs NumPy")


@pytest.mark.parametrize("n", [1, 2, 7, 300])
def test_cumulative_sum_of_an_input(n):
    """A 1-D scan over a whole input, 1 to 300 points, with a guard written as a Select."""
    N = Parameter(Int, "N")
    i = Variable(Int, "i")
    values = Image(Float, "values", [N])
    total = Function(([i], [Interval(Int, 0, N - 1)]), Float, "total")
    total.defn = [Select(i > 0, total(i - 1), 0.0) + values(i)]
    a = np.random.default_rng(n).random(n, dtype=np.float32)
    for schedule in ("naive", "auto"):
        pipe = polyimage.compile(total, schedule=schedule, estimates={N: 256})
        expected = polyimage.interpret(total, values=a)
        for threads in THREADS:
            assert_same(pipe(values=a, threads=threads), expected)
    np.testing.assert_allclose(expected, np.cumsum(a, dtype=np.float32), rtol=1e-5)


# -- integral images -------------------------------------------------------------------------


def _integral(typ, img, box, x, y):
    rows = Function(box, typ, "rows")
    rows.defn = [Case(y == 0, Cast(typ, img(x, 0))), rows(x, y - 1) + img(x, y)]
    sat = Function(box, typ, "sat")
    sat.defn = [Case(x == 0, rows(0, y)), sat(x - 1, y) + rows(x, y)]
    return rows, sat


def test_integral_image_int32():
    R, C, x, y, box = _grid()
    img = Image(UChar, "img", [R, C])
    rows, sat = _integral(Int, img, box, x, y)
    rng = np.random.default_rng(2)
    calls = [{"img": rng.integers(0, 256, shape).astype(np.uint8)} for shape in SHAPES]
    results = _compiled_everywhere(
        [sat, rows], "group 0: rows, sat [16x64]", {R: 1024, C: 1024}, calls
    )
    for args, (got_sat, got_rows) in zip(calls, results):
        a = args["img"]
        assert_same(got_rows, np.cumsum(a, 1, dtype=np.int32), "rows vs np.cumsum")
        assert_same(
            got_sat,
            np.cumsum(np.cumsum(a, 1, dtype=np.int32), 0, dtype=np.int32),
            "sat vs np.cumsum",
        )


def test_integral_image_float32_and_box_sums():
    """The integral image of a Float image read by a box filter (four corners per pixel)."""
    R, C, x, y, box = _grid()
    img = Image(Float, "img", [R, C])
    rows, sat = _integral(Float, img, box, x, y)
    inner = ([x, y], [Interval(Int, 2, R - 1), Interval(Int, 2, C - 1)])
    boxsum = Function(inner, Float, "boxsum")
    boxsum.defn = [sat(x, y) - sat(x - 2, y) - sat(x, y - 2) + sat(x - 2, y - 2)]
    rng = np.random.default_rng(3)
    calls = [{"img": rng.random(shape, dtype=np.float32)} for shape in [(13, 17), (3, 3)]]
    calls.append({"img": rng.random((131, 257), dtype=np.float32)})
    results = _compiled_everywhere(
        [boxsum, sat],
        "group 0: rows [32x32]\ngroup 1: sat, boxsum [8x16]",
        {R: 1024, C: 1024},
        calls,
    )
    for args, (got_box, got_sat) in zip(calls, results):
        a = args["img"].astype(np.float64)
        ref_sat = a.cumsum(1).cumsum(0)
        np.testing.assert_allclose(got_sat, ref_sat, rtol=1e-5 * a.shape[0], atol=1e-6)
        # the same float32 arithmetic on the compiled table, and the 2x2 sums it stands for
        s = got_sat
        assert_same(got_box, s[2:, 2:] - s[:-2, 2:] - s[2:, :-2] + s[:-2, :-2], "boxsum")
        windows = a[1:-1, 1:-1] + a[2:, 1:-1] + a[1:-1, 2:] + a[2:, 2:]
        np.testing.assert_allclose(got_box, windows, atol=4 * np.finfo(np.float32).eps * s.max())


# -- recursive filters -----------------------------------------------------------------------


def _exponential(a: np.ndarray, axis: int, alpha: float) -> np.ndarray:
    """out[k] = alpha * a[k] + (1 - alpha) * out[k - 1] along `axis`, in float32."""
    a = np.moveaxis(a, axis, 0)
    out = np.empty_like(a)
    out[0] = a[0]
    w, v = np.float32(alpha), np.float32(1 - alpha)
    for k in range(1, len(a)):
        out[k] = w * a[k] + v * out[k - 1]
    return np.moveaxis(out, 0, axis)


@pytest.mark.parametrize("axis", [0, 1], ids=["outermost", "innermost"])
def test_first_order_recursive_filter(axis):
    R, C, x, y, box = _grid()
    img = Image(Float, "img", [R, C])
    along = (x, y)[axis]
    earlier = (x - 1, y) if axis == 0 else (x, y - 1)
    smooth = Function(box, Float, "smooth")
    smooth.defn = [Case(along == 0, img(x, y)), 0.25 * img(x, y) + 0.75 * smooth(*earlier)]
    rng = np.random.default_rng(4)
    calls = [{"img": rng.random(shape, dtype=np.float32)} for shape in SHAPES]
    results = _compiled_everywhere([smooth], "group 0: smooth [4x8]", {R: 1024, C: 1024}, calls)
    for args, got in zip(calls, results):
        assert_same(got, _exponential(args["img"], axis, 0.25), "vs the NumPy recursion")


def test_a_scan_along_the_innermost_dimension_keeps_its_last_value_in_a_variable():
    """The read one step back comes from a variable set after each step, not from the buffer
    just written (a store and a load on the recursion's critical path), in every schedule (a
    variable per line where lines run side by side); a read two steps back still reads the
    buffer."""
    R, C, x, y, box = _grid()
    img = Image(Float, "img", [R, C])
    smooth = Function(box, Float, "smooth")
    smooth.defn = [Case(y == 0, img(x, y)), 0.25 * img(x, y) + 0.75 * smooth(x, y - 1)]
    for schedule in ("naive", "group 0: smooth [4x8]"):
        source = polyimage.compile([smooth], schedule=schedule, build=False).c_source
        assert "0.75f * pim_prev_y" in source, schedule
        assert not re.search(r"smooth\[[^]]*pim_w_y - INT64_C\(1\)", source), schedule
    # untiled, rows run side by side, each with its own value one step back
    lines = [f"0.75f * pim_prev_y_{k})" for k in range(scans.LINES)]
    assert all(line in polyimage.compile([smooth], build=False).c_source for line in lines)
    second = Function(box, Float, "second")
    second.defn = [Case(y < 2, img(x, y)), second(x, y - 1) - 0.5 * second(x, y - 2)]
    source = polyimage.compile([second], schedule="naive", build=False).c_source
    assert "pim_prev_y" in source and re.search(r"second\[[^]]*INT64_C\(2\)", source)
    img_values = np.random.default_rng(6).random((5, 9), dtype=np.float32)
    assert_same(
        polyimage.compile([second])(img=img_values), polyimage.interpret([second], img=img_values)
    )


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_second_order_scan_of_a_3d_stage(axis):
    """Reads two earlier points (k = 1 and 2) along each dimension of a 3-D stage, int32 with
    wrap-around."""
    K, R, C = Parameter(Int, "K"), Parameter(Int, "R"), Parameter(Int, "C")
    c, x, y = Variable(Int, "c"), Variable(Int, "x"), Variable(Int, "y")
    variables = (c, x, y)
    box = (list(variables), [Interval(Int, 0, n - 1) for n in (K, R, C)])
    img = Image(Int, "img", [K, R, C])

    def back(k):
        return [v - k if d == axis else v for d, v in enumerate(variables)]

    fib = Function(box, Int, "fib")
    fib.defn = [Case(variables[axis] < 2, img(c, x, y)), fib(*back(1)) + 3 * fib(*back(2))]
    rng = np.random.default_rng(5)
    shapes = [(3, 5, 7), (1, 1, 1), (2, 1, 9), (3, 67, 131)]
    calls = [{"img": rng.integers(-1000, 1000, s).astype(np.int32)} for s in shapes]
    results = _compiled_everywhere([fib], "group 0: fib [1x4x8]", {K: 3, R: 256, C: 256}, calls)
    for args, got in zip(calls, results):
        a = np.moveaxis(args["img"], axis, 0).copy()
        with np.errstate(over="ignore"):
            for k in range(2, len(a)):
                a[k] = a[k - 1] + 3 * a[k - 2]
        assert_same(got, np.moveaxis(a, 0, axis), "vs the NumPy recursion")


# -- the code a scan gets --------------------------------------------------------------------


def _loops_by_iterator(pipe, name) -> tuple:
    """The loops of the tree computing stage `name` by iterator, and its parallel regions
    (ctree.Parallel)."""
    from polyimage.codegen.ctree import Parallel, for_loops, walk

    (tree,) = stage_trees(pipe, name)
    found = {}
    for loop in for_loops(tree):
        found.setdefault(loop.var, []).append(loop)
    return found, [n for n in walk(tree) if isinstance(n, Parallel)]


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_scan_dimension_is_neither_parallel_nor_vectorized(axis):
    K, R, C = Parameter(Int, "K"), Parameter(Int, "R"), Parameter(Int, "C")
    c, x, y = Variable(Int, "c"), Variable(Int, "x"), Variable(Int, "y")
    variables = (c, x, y)
    img = Image(Float, "img", [K, R, C])
    f = Function((list(variables), [Interval(Int, 0, n - 1) for n in (K, R, C)]), Float, "f")
    back = [v - 1 if d == axis else v for d, v in enumerate(variables)]
    f.defn = [Case(variables[axis] == 0, img(c, x, y)), f(*back) * 0.5 + img(c, x, y)]
    pipe = polyimage.compile(f, schedule="naive", estimates={K: 3, R: 512, C: 512})
    loops, regions = _loops_by_iterator(pipe, "f")
    scanned = [name for name in loops if name.endswith("_" + variables[axis].name)]
    assert scanned and not any(loop.parallel or loop.simd for loop in loops[scanned[0]])
    others = [name for name in loops if name not in scanned]
    assert any(loop.parallel for name in others for loop in loops[name])
    innermost = "pim_w_y"
    if axis == 2:
        assert not any(loop.simd for loop in loops[innermost]), loops
    else:
        assert all(loop.simd for loop in loops[innermost]), loops
    (tree,) = stage_trees(pipe, "f")
    assert _waits_per_step(tree) == []
    if axis == 0:  # blocks of the next dimension share the threads, each scanned to the end
        assert not regions
        assert [loop.parallel for loop in loops["pim_b_x"]] == ["parallel for"]
        assert not any(loop.parallel for loop in loops["pim_w_x"])


def _waits_per_step(tree) -> list:
    """The work-shared loops and parallel regions inside a serial loop: each waits for every
    thread once per step of that loop (a barrier, or a fork and join)."""
    from polyimage.codegen.ctree import For, Parallel

    found, stack = [], [(tree, False)]
    while stack:
        node, in_serial = stack.pop()
        shared = isinstance(node, Parallel) or (isinstance(node, For) and node.parallel)
        if shared and in_serial:
            found.append(node)
        serial = isinstance(node, For) and not node.parallel
        stack += [(child, in_serial or serial) for child in node.children()]
    return found


@pytest.mark.parametrize("axis", [0, 1])
def test_no_scan_waits_for_all_threads_once_per_step(axis):
    """Scans along either dimension, untiled, tiled in strips, fused with a producer: no
    parallel loop nor region inside a serial loop, in any function of the module."""
    R, C, x, y, box = _grid()
    img = Image(Float, "img", [R, C])
    doubled = Function(box, Float, "doubled")
    doubled.defn = [img(x, y) * 2]
    along = (x, y)[axis]
    earlier = (x - 1, y) if axis == 0 else (x, y - 1)
    total = Function(box, Float, "total")
    total.defn = [Case(along == 0, doubled(x, y)), total(*earlier) + doubled(x, y)]
    for schedule in ("naive", "auto", "group 0: doubled, total [8x16]"):
        pipe = polyimage.compile(
            total, schedule=schedule, inline=False, estimates={R: 1024, C: 1024}
        )
        for function in pipe.cmodule.functions:
            assert _waits_per_step(function) == [], (schedule, function)
        arr = np.random.default_rng(axis).random((37, 45), dtype=np.float32)
        expected = np.cumsum(arr.astype(np.float64) * 2, axis=axis)
        for threads in (1, 2):
            assert_same(pipe(img=arr, threads=threads), expected.astype(np.float32), schedule)


def test_scan_is_tiled_in_strips_and_never_inlined():
    """A scan is tileable (tiles hold its scan dimension whole, a size there is widened) and
    fuses with its producers and consumers; it is never inlined into its consumer."""
    R, C, x, y, box = _grid()
    img = Image(Float, "img", [R, C])
    doubled = Function(box, Float, "doubled")  # pointwise: inlined into the scan
    doubled.defn = [img(x, y) * 2]
    run = Function(box, Float, "run")
    run.defn = [Select(y > 0, run(x, y - 1), 0.0) + doubled(x, y)]
    half = Function(box, Float, "half")  # its pointwise consumer does not absorb it
    half.defn = [run(x, y) * 0.5]
    graph = build_graph([half])
    assert untileable_reason(graph, ("run", "half")) is None
    for schedule in ("auto", "greedy", "greedy-cost"):
        pipe = polyimage.compile(half, schedule=schedule, estimates={R: 1024, C: 1024})
        names = [s.name for s in pipe.stage_graph.computed]
        assert names == ["run", "half"], names
    hand = polyimage.compile(half, schedule=Schedule.parse("group 0: run, half [8x16]"))
    (plan,) = hand.group_plans
    assert isinstance(plan, TiledGroup) and plan.tile_sizes == ((8, WHOLE_TILE),)
    assert "tiles hold y whole (scanned)" in hand.report()
    a = np.random.default_rng(6).random((9, 11), dtype=np.float32)
    for threads in (1, 2):
        assert_same(hand(img=a, threads=threads), polyimage.interpret(half, img=a))
    np.testing.assert_allclose(hand(img=a), np.cumsum(a * 2, 1) * 0.5, rtol=1e-5)


def test_docs_integral_image_runs():
    text = (ROOT / "docs" / "dsl.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "sat.defn" in b)
    namespace = {}
    exec(compile(block, "docs/dsl.md", "exec"), namespace)
    assert namespace["out"].shape == (480, 640)


# -- self-reads that stay errors -------------------------------------------------------------


def _self_reading(defn):
    R, C, x, y, box = _grid()
    img = Image(Float, "img", [R, C])
    f = Function(box, Float, "f")
    f.defn = defn(f, img, x, y, R, C)
    return f


CYCLES = {
    "later point": (
        lambda f, img, x, y, R, C: [Case(x < R - 1, f(x + 1, y)), img(x, y)],
        r"cycle: f reads itself at `f\(x \+ 1, y\)`, a later point along x",
    ),
    "same point": (
        lambda f, img, x, y, R, C: [f(x, y) + 1],
        r"cycle: f reads itself at `f\(x, y\)`, the point being computed",
    ),
    "one read along two dimensions": (
        lambda f, img, x, y, R, C: [Case((x > 0) & (y > 0), f(x - 1, y - 1)), img(x, y)],
        r"cycle: f reads itself at `f\(x - 1, y - 1\)`, earlier along more than one "
        r"dimension \(x, y\) at once",
    ),
    "one-stage summed-area table": (
        lambda f, img, x, y, R, C: [
            Case(
                (x > 0) & (y > 0),
                f(x - 1, y) + f(x, y - 1) - f(x - 1, y - 1) + img(x, y),
            ),
            img(x, y),
        ],
        r"cycle: f reads itself at `f\(x - 1, y - 1\)`, earlier along more than one dimension",
    ),
    "summed-area table with border rows": (
        lambda f, img, x, y, R, C: [
            Case((x == 0) & (y == 0), img(x, y)),
            Case(x == 0, f(0, y - 1) + img(x, y)),
            Case(y == 0, f(x - 1, 0) + img(x, y)),
            f(x - 1, y) + f(x, y - 1) - f(x - 1, y - 1) + img(x, y),
        ],
        r"cycle: f reads itself at `f\(0, y - 1\)`, whose index 0 `0` is not x shifted by a "
        r"constant while it reads an earlier point along another dimension; a scan reads its "
        r"own earlier points along one dimension only.*split it into one scan per dimension",
    ),
    "reads along two dimensions": (
        lambda f, img, x, y, R, C: [Case((x > 0) & (y > 0), f(x - 1, y) + f(x, y - 1)), 0],
        r"cycle: f reads itself earlier along more than one dimension \(`f\(x - 1, y\)` along x, "
        r"`f\(x, y - 1\)` along y\); a scan runs along one dimension only",
    ),
    "shifted other dimension": (
        lambda f, img, x, y, R, C: [Case((x > 0) & (y < C - 1), f(x - 1, y + 1)), 0],
        r"cycle: f reads itself at `f\(x - 1, y \+ 1\)`, a later point along y",
    ),
    "clamped other dimension": (
        lambda f, img, x, y, R, C: [Case(x > 0, f(x - 1, Min(y + 1, C - 1))), 0],
        r"cycle: f reads itself at `f\(x - 1, Min\(y \+ 1, C - 1\)\)`, whose index 1 "
        r"`Min\(y \+ 1, C - 1\)` is not y shifted by a constant",
    ),
    "data-dependent index": (
        lambda f, img, x, y, R, C: [Case(x > 0, f(Cast(Int, img(x, y)), y)), 0],
        r"cycle: f reads itself at `f\(Cast\(Int, img\(x, y\)\), y\)`, whose index 0",
    ),
    "scaled scan index": (
        lambda f, img, x, y, R, C: [Case(x > 0, f(x // 2, y)), 0],
        r"cycle: f reads itself at `f\(x // 2, y\)`, whose index 0 `x // 2` is not x",
    ),
}


@pytest.mark.parametrize("kind", list(CYCLES))
def test_other_self_reads_are_cycles(kind):
    defn, message = CYCLES[kind]
    f = _self_reading(defn)
    with pytest.raises(PipelineError, match=message):
        polyimage.compile(f)
    with pytest.raises(PipelineError, match=message):
        polyimage.interpret(f, img=np.zeros((3, 3), np.float32))


def test_unguarded_scan_is_a_bounds_error():
    f = _self_reading(lambda f, img, x, y, R, C: [f(x, y - 1) + img(x, y)])
    message = (
        r"f \(its definition\): f\(x, y - 1\) reads f outside its domain: at x=0, y=0 .*"
        r"index 1 `y - 1` = -1 is outside \[0, C - 1\] = \[0, 0\]; f reads its own earlier "
        r"points \(a scan\): give its first points along y a Case of their own, e\.g\. "
        r"Case\(y == 0, \.\.\.\)"
    )
    with pytest.raises(BoundsError, match=message):
        polyimage.compile(f)
    with pytest.raises(BoundsError, match=message):
        polyimage.interpret(f, img=np.zeros((3, 3), np.float32))


def test_guard_too_short_for_the_offset_is_a_bounds_error():
    f = _self_reading(lambda f, img, x, y, R, C: [Case(x == 0, img(x, y)), f(x - 2, y)])
    with pytest.raises(BoundsError, match=r"f\(x - 2, y\) reads f outside its domain: at x=1"):
        polyimage.compile(f)


def test_reduction_reading_itself_is_a_cycle():
    R, C, x, y, box = _grid()
    b = Variable(Int, "b")
    img = Image(Int, "img", [R, C])
    hist = Reduction(([b], [Interval(Int, 0, 9)]), box, Int, "hist")
    hist.defn = [Reduce(hist(img(x, y) % 10), hist(Min(img(x, y) % 10, 9)) + 1, Op.Sum)]
    with pytest.raises(PipelineError, match=r"cycle: hist reads itself at `hist\(.*a Reduction"):
        polyimage.compile(hist)


# -- running sums along the contiguous dimension at vector width -----------------------------


def _running_sum(typ, term_first=False, clamped=False):
    """A running sum along y of an input read at (x, y), or, `clamped`, at (x, y - 3) with its
    edge repeated; `term_first` writes the term before the read one step back."""
    R, C, x, y, box = _grid()
    img = Image(typ, "img", [R, C])
    read = img(x, Min(y, C - 1)) if not clamped else img(x, Select(y < 3, 0, y - 3))
    total = Function(box, typ, "total")
    prev = total(x, y - 1)
    total.defn = [Case(y == 0, read), read + prev if term_first else prev + read]
    return total, R, C


@pytest.mark.parametrize("term_first", [False, True])
@pytest.mark.parametrize("clamped", [False, True])
def test_an_integer_running_sum_along_the_rows_runs_as_an_openmp_scan(term_first, clamped):
    """An integer running sum along the innermost dimension (a Case for its first point, then
    `prev + term`) runs its interior as `omp simd reduction(inscan, ...)`, gcc's vector prefix
    sum: wrapping integer sums are the same in any grouping, so results are the interpreter's
    at every size, thread count and schedule, with the first point and a clamped border run
    in order around it."""
    total, R, C = _running_sum(Int, term_first, clamped)
    source = polyimage.compile([total], schedule="naive", build=False).c_source
    assert "reduction(inscan, +: pim_prev_y)" in source
    assert "#pragma omp scan inclusive(pim_prev_y)" in source
    rng = np.random.default_rng(7)
    calls = [
        {"img": rng.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32)}
        for shape in SHAPES + [(3, 2), (2, 5)]
    ]
    for args in calls:
        want = polyimage.interpret([total], **args)
        for schedule in ("naive", "auto", "group 0: total [4x8]"):
            pipe = polyimage.compile([total], schedule=schedule, estimates={R: 256, C: 256})
            for threads in (1, 2):
                assert_same(pipe(**args, threads=threads), want, f"{schedule}, {threads}")
    checked = polyimage.compile([total], schedule="naive", check=True)
    assert_same(checked(**calls[0]), polyimage.interpret([total], **calls[0]))


def test_other_scans_keep_their_step_by_step_loop():
    """A float running sum (its sums would change with their grouping), a scan that scales
    its value one step back, and one along the outer dimension get no OpenMP scan."""
    float_sum, _, _ = _running_sum(Float)
    R, C, x, y, box = _grid()
    img = Image(Int, "img", [R, C])
    scaled = Function(box, Int, "scaled")
    scaled.defn = [Case(y == 0, img(x, y)), scaled(x, y - 1) * 3 + img(x, y)]
    down = Function(box, Int, "down")
    down.defn = [Case(x == 0, img(x, y)), down(x - 1, y) + img(x, y)]
    for stage in (float_sum, scaled, down):
        source = polyimage.compile([stage], schedule="naive", build=False).c_source
        assert "inscan" not in source, stage.name


@pytest.mark.parametrize("typ", [UChar, Short, Long, UInt], ids=str)
def test_running_sums_of_every_integer_width_wrap_as_the_interpreter_does(typ):
    """Narrow, wide and unsigned running sums run as an OpenMP scan too: their wrapping sums
    are the same in any grouping."""
    total, _, _ = _running_sum(typ)
    pipe = polyimage.compile([total], schedule="naive")
    assert "reduction(inscan, +: pim_prev_y)" in pipe.c_source
    info = np.iinfo(typ.dtype)
    rng = np.random.default_rng(11)
    for shape in [(1, 1), (3, 2), (13, 17), (5, 131)]:
        values = rng.integers(info.min, info.max, shape, dtype=np.int64).astype(typ.dtype)
        want = polyimage.interpret([total], img=values)
        for threads in (1, 2):
            assert_same(pipe(img=values, threads=threads), want, f"{shape}, {threads}")
