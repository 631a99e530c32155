"""The loop order of Reductions (schedule.reduction_order): a convolution written with its
contiguous variable outside the kernel loops runs it innermost under `omp simd`; an order
that would change some cell's sequence of updates (a histogram bin, a blocked or strided
index) is left as written; results equal the interpreter's bit for bit under naive, auto and
tiled schedules on 1 and 2 threads; a pointwise consumer may share the Reduction's group."""

import random

import numpy as np
import pytest
from helpers import assert_exact_on_threads, loop_structure, stage_trees

import polyimage
from polyimage import (
    Case,
    Cast,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Max,
    Op,
    Parameter,
    Reduce,
    Reduction,
    Variable,
)
from polyimage.graph import build_graph
from polyimage.schedule.reduction_order import (
    cell_fixed,
    is_legal_order,
    loop_order,
    owned_forms,
    reordered,
)
from polyimage.schedule.tiling import TiledGroup, plan_group

SIZES = dict(N=1, CI=5, CO=5, H=9, W=13)


def _conv_layer():
    """relu(n, co, x, y) = Max(conv + bias(co), 0), conv a 3x3 convolution written in the
    textbook order (n, co, x, y, ci, kx, ky)."""
    N, CI, CO, H, W = (Parameter(Int, s) for s in SIZES)
    n, co, x, y, ci, kx, ky = (Variable(Int, s) for s in ("n", "co", "x", "y", "ci", "kx", "ky"))
    inp = Image(Float, "inp", [N, CI, H + 2, W + 2])
    w = Image(Float, "w", [CO, CI, 3, 3])
    bias = Image(Float, "bias", [CO])
    cells = [Interval(Int, 0, N - 1), Interval(Int, 0, CO - 1)]
    cells += [Interval(Int, 0, H - 1), Interval(Int, 0, W - 1)]
    kernel = [Interval(Int, 0, CI - 1), Interval(Int, 0, 2), Interval(Int, 0, 2)]
    conv = Reduction(
        ([n, co, x, y], cells), ([n, co, x, y, ci, kx, ky], cells + kernel), Float, "conv"
    )
    conv.defn = [Reduce(conv(n, co, x, y), w(co, ci, kx, ky) * inp(n, ci, x + kx, y + ky), Op.Sum)]
    relu = Function(([n, co, x, y], cells), Float, "relu")
    relu.defn = [Max(conv(n, co, x, y) + bias(co), 0.0)]
    return relu, conv, {N: SIZES["N"], CI: SIZES["CI"], CO: SIZES["CO"], H: 9, W: 13}


def _conv_arguments(seed=3):
    rng = np.random.default_rng(seed)
    n, ci, co, h, w = SIZES.values()
    return dict(
        SIZES,
        inp=rng.standard_normal((n, ci, h + 2, w + 2)).astype(np.float32),
        w=rng.standard_normal((co, ci, 3, 3)).astype(np.float32),
        bias=rng.standard_normal(co).astype(np.float32),
    )


def _kernel_loops(pipe) -> list:
    """The loops of the trees computing `conv` from its `ci` loop on, five of them."""
    loops = [entry for tree in stage_trees(pipe, "conv") for entry in loop_structure(tree)]
    names = [entry.split(":")[0] for entry in loops]
    assert names.count("ci") == 1, loops
    return loops[names.index("ci") : names.index("ci") + 5]


def test_conv_order_is_legal_and_moves_y_innermost():
    _, conv, _ = _conv_layer()
    assert cell_fixed(conv) == {0, 1, 2, 3}
    assert loop_order(conv) == (0, 1, 2, 4, 5, 6, 3) and reordered(conv)
    assert is_legal_order(conv, (3, 2, 1, 0, 4, 5, 6))
    assert not is_legal_order(conv, (0, 1, 2, 3, 4, 6, 5))
    assert not is_legal_order(conv, (0, 1, 2, 3, 4, 5))


@pytest.mark.parametrize("schedule", ["naive", "auto", "group 0: conv, relu [1x2x4x13]"])
def test_textbook_conv_runs_y_innermost_under_simd(schedule):
    relu, _, estimates = _conv_layer()
    pipe = polyimage.compile([relu], estimates=estimates, schedule=schedule)
    assert _kernel_loops(pipe) == ["ci", "kx", "ky", "pim_res_y", "pim_q_y:simd"]
    assert "conv: loops reordered (n, co, x, ci, kx, ky, y)" in pipe.report()
    assert_exact_on_threads(pipe, [relu], _conv_arguments(), threads=(1, 2))


def test_relu_may_share_the_convolutions_tiled_group():
    relu, _, _ = _conv_layer()
    graph = build_graph([relu])
    plan = plan_group(graph, ("conv", "relu"), ((1, 2, 4, 13),), SIZES)
    assert isinstance(plan, TiledGroup) and plan.scratch == ("conv",)


def _histogram():
    """A weighted histogram: its bin depends on the data, so no variable is fixed."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    u, v, b = (Variable(Int, s) for s in ("u", "v", "b"))
    img = Image(Float, "img", [R, C])
    hist = Reduction(
        ([b], [Interval(Int, 0, 7)]),
        ([u, v], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]),
        Float,
        "hist",
    )
    hist.defn = [Reduce(hist(Cast(Int, img(u, v) * 4.0) % 8), img(u, v), Op.Sum)]
    return hist


def _blocked():
    """Sums of column pairs along a window: cell (i, j) takes v = 2j and 2j + 1, so v is not
    fixed by the cell and may not move past k."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    u, v, k, i, j = (Variable(Int, s) for s in ("u", "v", "k", "i", "j"))
    img = Image(Float, "img", [R + 3, C])
    pairs = Reduction(
        ([i, j], [Interval(Int, 0, R - 1), Interval(Int, 0, (C - 1) // 2)]),
        ([u, v, k], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1), Interval(Int, 0, 3)]),
        Float,
        "pairs",
    )
    pairs.defn = [Reduce(pairs(u, v // 2), img(u + k, v) * (k + 1.0), Op.Sum)]
    return pairs


def _transposed():
    """out(x, y) sums img(y, x + k): y is fixed by the cell but strides the read by a row."""
    R = Parameter(Int, "R")
    x, y, k = (Variable(Int, s) for s in ("x", "y", "k"))
    img = Image(Float, "img", [R, R + 3])
    square = [Interval(Int, 0, R - 1), Interval(Int, 0, R - 1)]
    out = Reduction(([x, y], square), ([x, y, k], square + [Interval(Int, 0, 3)]), Float, "out")
    out.defn = [Reduce(out(x, y), img(y, x + k) * 0.5, Op.Sum)]
    return out


@pytest.mark.parametrize(
    "build, order, shape, sizes",
    [
        (_histogram, (1, 0), (37, 53), dict(R=37, C=53)),
        (_blocked, (0, 2, 1), (37, 53), dict(R=34, C=53)),
        (_transposed, None, (37, 40), dict(R=37)),
    ],
)
def test_orders_that_change_updates_or_stride_are_left_as_written(build, order, shape, sizes):
    red = build()
    assert loop_order(red) == tuple(range(len(red.reduction_variables)))
    assert not reordered(red)
    if order is not None:
        assert not is_legal_order(red, order)
    rng = np.random.default_rng(5)
    img = (rng.standard_normal(shape) * 3).astype(np.float32)
    pipe = polyimage.compile([red])
    assert "loops reordered" not in pipe.report()
    assert_exact_on_threads(pipe, [red], dict(sizes, img=img), threads=(1, 2))


def _random_reduction(seed):
    """A Reduction over (a, b) cells written in a random order of (a, b, k, m), with a Case, a
    random operator and offsets; b (the contiguous cell index) never innermost."""
    rnd = random.Random(seed)
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    a, b, k, m, i, j = (Variable(Int, s) for s in ("a", "b", "k", "m", "i", "j"))
    ka, kb = rnd.randint(1, 3), rnd.randint(2, 5)
    ranges = {a: Interval(Int, 0, R - 1), b: Interval(Int, 0, C - 1)}
    ranges |= {k: Interval(Int, 0, ka), m: Interval(Int, 0, kb)}
    order = [a, b, k, m]
    while order[-1] is b:
        rnd.shuffle(order)
    img = Image(Float, "img", [R + 3, C + 5])
    oa, ob = rnd.randint(0, 2), rnd.randint(0, 2)
    cells = [Interval(Int, oa, R - 1 + oa), Interval(Int, ob, C - 1 + ob)]
    red = Reduction(([i, j], cells), (order, [ranges[v] for v in order]), Float, "red")
    op = rnd.choice([Op.Sum, Op.Max, Op.Min])
    value = img(a + k, b + m) * (1.0 + 0.25 * Cast(Float, k - m))
    red.defn = [
        Case((k + m) % 3 == 1, Reduce(red(a + oa, b + ob), value * value, op)),
        Reduce(red(a + oa, b + ob), value - 0.5, op),
    ]
    red.default = Cast(Float, i - j) * 0.125
    return red


@pytest.mark.parametrize("seed", range(3))
def test_random_reordered_reductions_match_the_interpreter(seed):
    red = _random_reduction(seed)
    order = loop_order(red)
    b = [v.name for v in red.reduction_variables].index("b")
    assert reordered(red) and order[-1] == b and is_legal_order(red, order)
    rng = np.random.default_rng(seed)
    img = (rng.standard_normal((30, 36)) * 2).astype(np.float32)
    arguments = dict(R=27, C=31, img=img)
    for schedule in ("naive", "auto"):
        pipe = polyimage.compile([red], estimates=dict(R=27, C=31), schedule=schedule)
        assert "loops reordered" in pipe.report()
        assert_exact_on_threads(pipe, [red], arguments, threads=(1, 2))


def _shifted_cases_reduction(typ):
    """red(a, b) over (a, k, b): one Case updates red(a, b), the other red(a, b + 1), so b
    fixes no target cell (a cell takes updates from two values of b) and its loop may not
    move innermost; the values span magnitudes, so a Float sum in another order differs."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    a, b, k, i, j = (Variable(Int, s) for s in ("a", "b", "k", "i", "j"))
    img = Image(typ, "img", [R, C + 3])
    cells = [Interval(Int, 0, R - 1), Interval(Int, 0, C)]
    over = [Interval(Int, 0, R - 1), Interval(Int, 0, 2), Interval(Int, 0, C - 1)]
    red = Reduction(([i, j], cells), ([a, k, b], over), typ, "red")
    value = img(a, b + k)
    red.defn = [
        Case((b + k) % 2 == 0, Reduce(red(a, b), value, Op.Sum)),
        Reduce(red(a, b + 1), value * 3, Op.Sum),
    ]
    red.default = 0 if typ is Int else 0.0
    return red


def test_cases_at_different_offsets_fix_no_variable():
    red = _shifted_cases_reduction(Float)
    b = [v.name for v in red.reduction_variables].index("b")
    a = [v.name for v in red.reduction_variables].index("a")
    assert owned_forms(red, red.reduction_variables[b]) == [None, None]
    assert cell_fixed(red) == {a}
    assert not reordered(red)
    assert not is_legal_order(red, (0, 2, 1))


@pytest.mark.parametrize("typ", [Float, Int])
def test_cases_at_different_offsets_match_the_interpreter(typ):
    """Serial Float sums keep the written order bit for bit; tiled Int ones lose no update at
    a tile's edge (a cell's updates come from two tiles' values of b)."""
    red = _shifted_cases_reduction(typ)
    rng = np.random.default_rng(4)
    shape = (7, 26)
    if typ is Float:
        img = (rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 7, shape)).astype(np.float32)
    else:
        img = rng.integers(-1000, 1000, shape).astype(np.int32)
    arguments = dict(R=7, C=23, img=img)
    naive = polyimage.compile([red], schedule="naive")
    assert "loops reordered" not in naive.report()
    assert_exact_on_threads(naive, [red], arguments, threads=(1, 2))
    for tiles in ((3, 5), (2, 4), (7, 1)):
        sched = polyimage.Schedule((polyimage.GroupSchedule(("red",), (tiles,)),))
        pipe = polyimage.compile([red], schedule=sched)
        assert_exact_on_threads(pipe, [red], arguments, threads=(1, 2))
