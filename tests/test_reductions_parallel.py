"""Parallel Reductions (schedule/reductions.py, codegen/reduction_loops.py): owner-computes and
privatized strategies against the interpreter for every operator, integer and float types,
affine, data-dependent and mixed targets, several Cases (each applied, PolyMage's semantics)
and defaults, on 1, 2 and 3 threads. Integer results and float Min/Max are exact; float Sum and
Mul within reassociation rounding of the interpreter and bit-identical across thread counts."""

import numpy as np
import pytest
from helpers import assert_exact_on_threads, pooling, row_reduction, stage_trees

import polyimage
from polyimage import (
    Case,
    Cast,
    Char,
    Double,
    Float,
    Image,
    Int,
    Interval,
    Long,
    Op,
    Parameter,
    Reduce,
    Reduction,
    Short,
    UChar,
    Variable,
)
from polyimage.codegen.ctree import for_loops
from polyimage.schedule.reductions import (
    CONTIGUOUS_RUN,
    JAM_LINES,
    LANE_ROWS,
    LANE_RUN,
    PARALLEL_MIN_POINTS,
)

SHAPE = (131, 127)  # more reduction points than PARALLEL_MIN_POINTS: threads are used
TYPES = {
    "int8": Char,
    "int16": Short,
    "int32": Int,
    "int64": Long,
    "float32": Float,
    "float64": Double,
}
OPS = {"Sum": Op.Sum, "Mul": Op.Mul, "Min": Op.Min, "Max": Op.Max}
TARGETS = ("affine", "data", "mixed")


def _reduction(typ, op, target, cases):
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y, a, b = (Variable(Int, n) for n in "xyab")
    bins = Image(UChar, "bins", [R, C])
    values = Image(typ, "values", [R, C])
    if target == "affine":
        dims, ref = [Interval(Int, 0, (R - 1) // 3)], lambda: (x // 3,)
    elif target == "data":
        dims, ref = [Interval(Int, 0, 15)], lambda: (Cast(Int, bins(x, y)) - 7,)
    else:
        dims, ref = (
            [Interval(Int, 0, (R - 1) // 8), Interval(Int, 0, 9)],
            lambda: (x // 8, Cast(Int, bins(x, y))),
        )
    variables = [a, b][: len(dims)]
    red = Reduction(
        (variables, dims),
        ([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]),
        typ,
        "red",
    )
    update = Reduce(red(*ref()), values(x, y), op)
    if cases:
        other = Op.Max if op is not Op.Max else Op.Min
        red.defn = [
            Case(bins(x, y) > 100, update),
            Case(bins(x, y) % 2 == 0, Reduce(red(*ref()), values(x, y), other)),
        ]
    else:
        red.defn = [update]
    red.default = 3
    return red


def _inputs(rng, typ, op):
    bins = rng.integers(0, 256, SHAPE, dtype=np.uint8)
    dtype = typ.dtype
    if np.issubdtype(dtype, np.integer):
        values = rng.integers(-5, 6, SHAPE).astype(dtype)
    elif op is Op.Mul:
        values = (1 + (rng.random(SHAPE) - 0.5) * 1e-3).astype(dtype)
    else:
        values = rng.random(SHAPE).astype(dtype) * 2 - 0.5
    return {"bins": bins, "values": values}


# every type with every operator, and each of them with every target: each (type, operator)
# pair once, its target cycling (24 of the 72 triples, every pair of the three covered)
CONFIGS = [
    (type_name, op_name, TARGETS[(i + j) % len(TARGETS)])
    for i, type_name in enumerate(sorted(TYPES))
    for j, op_name in enumerate(sorted(OPS))
]


@pytest.mark.parametrize("type_name, op_name, target", CONFIGS)
def test_parallel_reductions_match_the_interpreter(type_name, op_name, target):
    typ, op = TYPES[type_name], OPS[op_name]
    assert SHAPE[0] * SHAPE[1] >= PARALLEL_MIN_POINTS
    rng = np.random.default_rng(len(type_name) * 31 + len(op_name) * 7 + len(target))
    cases = rng.random() < 0.3
    red = _reduction(typ, op, target, cases)
    args = _inputs(rng, typ, op)
    if target == "affine" and not cases:
        del args["bins"]
    want = polyimage.interpret([red], **args)
    pipe = polyimage.compile(
        [red], schedule="auto", estimates={"R": SHAPE[0], "C": SHAPE[1]}, name="reduction"
    )
    results = [pipe(threads=t, **args) for t in (1, 2, 3)]
    for got in results[1:]:
        np.testing.assert_array_equal(got, results[0])  # the same bits on any thread count
    exact = typ.is_int or op in (Op.Min, Op.Max) or pipe.reductions["red"].kind != "privatized"
    if exact:
        np.testing.assert_array_equal(results[0], want)
    else:
        np.testing.assert_allclose(results[0], want, rtol=1e-5 if typ is Float else 1e-12)


def test_the_strategies_chosen():
    cases = {
        "affine": "owner",
        "mixed": "owner",
        "data": "privatized",
    }
    for target, kind in cases.items():
        red = _reduction(Float, Op.Sum, target, False)
        pipe = polyimage.compile([red], estimates={"R": SHAPE[0], "C": SHAPE[1]})
        assert pipe.reductions["red"].kind == kind, target
        assert f"red: {kind}: " in pipe.report()
    small = polyimage.compile(
        [_reduction(Float, Op.Sum, "data", False)], estimates={"R": 9, "C": 9}, build=False
    )
    assert small.reductions["red"].kind == "serial"
    mixed_ops = polyimage.compile(
        [_reduction(Float, Op.Sum, "data", True)],
        estimates={"R": SHAPE[0], "C": SHAPE[1]},
        build=False,
    )
    assert mixed_ops.reductions["red"].kind == "serial"


def test_the_bilateral_grid_is_owner_computed_and_exact():
    from polyimage.apps import load_app

    app = load_app("bilateral_grid")
    outs, _ = app.build()
    sizes = {"R": 97, "C": 181}
    pipe = polyimage.compile(outs, estimates=sizes)
    assert pipe.reductions["grid"].kind == "owner"
    img = np.random.default_rng(3).random((97, 181), dtype=np.float32)
    assert_exact_on_threads(pipe, outs, {"img": img, **app.DEFAULTS})


@pytest.mark.parametrize("op_name", sorted(OPS))
def test_nan_and_far_indices_stay_inside(op_name):
    """Indices far outside the target are clamped; NaN propagates as in the interpreter."""
    op = OPS[op_name]
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y, a = (Variable(Int, n) for n in "xya")
    where = Image(Int, "where", [R, C])
    values = Image(Float, "values", [R, C])
    red = Reduction(
        ([a], [Interval(Int, 0, 7)]),
        ([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]),
        Float,
        "red",
    )
    red.defn = [Reduce(red(where(x, y)), values(x, y), op)]
    rng = np.random.default_rng(5)
    far = rng.choice([-(2**31), -1000, 3, 5, 1000, 2**31 - 1], SHAPE).astype(np.int32)
    vals = (1 + (rng.random(SHAPE) - 0.5) * 1e-3).astype(np.float32)
    vals[7, 9] = np.nan
    pipe = polyimage.compile([red], estimates={"R": SHAPE[0], "C": SHAPE[1]})
    want = polyimage.interpret([red], where=far, values=vals)
    got = [pipe(where=far, values=vals, threads=t) for t in (1, 2, 3)]
    np.testing.assert_array_equal(got[1], got[0])
    np.testing.assert_array_equal(got[2], got[0])
    np.testing.assert_array_equal(np.isnan(got[0]), np.isnan(want))
    np.testing.assert_allclose(got[0], want, rtol=1e-5)


INNER_FORMS = [(1, 0), (1, -2), (2, 0), (3, 1), (8, 4), (4, -3)]


@pytest.mark.parametrize("size, offset", INNER_FORMS)
@pytest.mark.parametrize("outer", ["owner", "data", "small"])
def test_inner_variable_owning_cells_runs_by_residues(size, offset, outer):
    """A target indexed by the innermost reduction variable as (y + offset) // size runs as
    residue loops of independent points (omp simd): each cell keeps the serial order of its
    updates, so even float sums equal the interpreter bit for bit (unless privatized)."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y, a, b, c = (Variable(Int, n) for n in "xyabc")
    bins = Image(UChar, "bins", [R, C])
    values = Image(Float, "values", [R, C])
    shape = (9, 13) if outer == "small" else SHAPE
    cells = Interval(Int, offset // size, (C - 1 + offset) // size)
    first = (x // 4,) if outer == "owner" else (Cast(Int, bins(x, y)) % 5,)
    dims = [Interval(Int, 0, (R - 1) // 4) if outer == "owner" else Interval(Int, 0, 4)]
    red = Reduction(
        ([a, b, c], dims + [Interval(Int, 0, 2), cells]),
        ([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]),
        Float,
        "red",
    )
    target = (*first, Cast(Int, bins(x, y)) % 3, (y + offset) // size)
    red.defn = [
        Case(bins(x, y) > 200, Reduce(red(*target), values(x, y) * 2.0, Op.Sum)),
        Reduce(red(*target), values(x, y), Op.Sum),
    ]
    rng = np.random.default_rng(size * 10 + offset + len(outer))
    args = {
        "bins": rng.integers(0, 256, shape, dtype=np.uint8),
        "values": (rng.random(shape) * 2 - 0.5).astype(np.float32),
    }
    pipe = _check_float_sums(red, shape, args, "inner_cells")
    residues = [loop for tree in stage_trees(pipe, "red") for loop in for_loops(tree)]
    assert any(loop.var == "pim_res_y" for loop in residues)  # y runs by residues


def _check_float_sums(red, shape, args, name):
    """Compile `red` (float Sums): the same bits on 1, 2 and 3 threads, and the interpreter's
    bits unless privatized (reassociated by chunk). Returns the Pipeline."""
    want = polyimage.interpret([red], **args)
    pipe = polyimage.compile([red], estimates={"R": shape[0], "C": shape[1]}, name=name)
    results = [pipe(threads=t, **args) for t in (1, 2, 3)]
    for got in results[1:]:
        np.testing.assert_array_equal(got, results[0])
    if pipe.reductions["red"].kind == "privatized":
        np.testing.assert_allclose(results[0], want, rtol=1e-5)
    else:
        np.testing.assert_array_equal(results[0], want)
    return pipe


@pytest.mark.parametrize("cases", [False, True])
@pytest.mark.parametrize("channels", [1, 2, 3, 5])
def test_small_channel_variables_run_innermost_unrolled(channels, cases):
    """A reduction variable of a few constant values that indexes its own target dimension
    (a value and a weight channel) runs innermost, one copy of the update per value; every
    cell keeps the serial order of its updates, so float sums stay exact."""
    from polyimage.schedule.reductions import UNROLL_POINTS, unrolled_variables

    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    k, x, y, a, b, c = (Variable(Int, n) for n in "kxyabc")
    bins = Image(UChar, "bins", [R, C])
    values = Image(Float, "values", [R, C])
    red = Reduction(
        (
            [a, b, c],
            [Interval(Int, 0, channels - 1), Interval(Int, 0, 5), Interval(Int, 0, C // 16)],
        ),
        (
            [k, x, y],
            [Interval(Int, 0, channels - 1), Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)],
        ),
        Float,
        "red",
    )
    target = red(k, Cast(Int, bins(x, y)) % 6, (y + 1) // 16)
    value = values(x, y) * Cast(Float, k + 1)
    if cases:
        red.defn = [
            Case(bins(x, y) > 90, Reduce(target, value, Op.Sum)),
            Reduce(target, 1.0, Op.Sum),
        ]
    else:
        red.defn = [Reduce(target, value, Op.Sum)]
    assert unrolled_variables(red) == ((0,) if channels <= UNROLL_POINTS else ())
    rng = np.random.default_rng(channels)
    args = {
        "bins": rng.integers(0, 256, SHAPE, dtype=np.uint8),
        "values": (rng.random(SHAPE) * 2 - 0.5).astype(np.float32),
    }
    _check_float_sums(red, SHAPE, args, "unrolled")


def test_the_bilateral_grid_unrolls_its_channels():
    from polyimage.apps import load_app
    from polyimage.schedule.reductions import unrolled_variables

    outs, _ = load_app("bilateral_grid").build()
    grid = next(
        s
        for s in polyimage.compile(outs, schedule="naive", build=False).graph.stages
        if s.name == "grid"
    )
    assert unrolled_variables(grid.func) == (0,)


def _fir(taps: int):
    """y(t) = sum over k of h(k) * x(t + k): a 1-D filter, `t` its only owned variable."""
    N = Parameter(Int, "N")
    x, h = Image(Float, "x", [N + taps - 1]), Image(Float, "h", [taps])
    t, k = Variable(Int, "t"), Variable(Int, "k")
    y = Reduction(([t], [Interval(Int, 0, N - 1)]), ([k], [Interval(Int, 0, taps - 1)]), Float, "y")
    y.defn = [Reduce(y(t), x(t + k) * h(k), Op.Sum)]
    return y


def test_a_contiguous_owner_takes_long_blocks():
    """A 1-D filter's cells are owned by `t` alone, the variable its loop vectorizes: blocks
    of CONTIGUOUS_RUN values each run it under `omp simd` (one task per cell ran 100x
    slower), and every size (a partial block, one value) gives the interpreter's result on
    1, 2 and 3 threads, bit for bit (each cell sums its taps in order)."""
    y = _fir(7)
    pipe = polyimage.compile([y], estimates={"N": 1 << 20})
    strategy = pipe.compiled.reductions["y"]
    assert strategy.kind == "owner" and strategy.owned[0].size == CONTIGUOUS_RUN
    assert f"t in blocks of {CONTIGUOUS_RUN}" in strategy.reason
    assert strategy.vector_owner and "t runs under omp simd outside k" in strategy.reason
    rng = np.random.default_rng(2)
    for n in (1, 1000, 3001):
        x, h = rng.standard_normal(n + 6).astype(np.float32), rng.standard_normal(7)
        arguments = dict(x=x, h=h.astype(np.float32))
        want = polyimage.interpret([y], **arguments)
        for threads in (1, 2, 3):
            assert np.array_equal(pipe(**arguments, threads=threads), want), (n, threads)


@pytest.mark.parametrize(
    "typ, op", [(Float, Op.Sum), (Double, Op.Mul), (Int, Op.Max), (UChar, Op.Sum)]
)
def test_a_contiguous_owner_sums_each_cell_in_a_lane(typ, op):
    """The 1-D filter's cells each summed in a variable, their variable under `omp simd`
    outside two reduction-only loops (a 3x4 footprint of taps), for every operator and
    integer and float types: the interpreter's result bit for bit, on 1, 2 and 3 threads at
    sizes that end mid-block; gcc's report reads the outer loop as vectorized."""
    N = Parameter(Int, "N")
    x, h = Image(typ, "x", [N + 12]), Image(typ, "h", [3, 4])
    t, a, b = Variable(Int, "t"), Variable(Int, "a"), Variable(Int, "b")
    taps = [Interval(Int, 0, 2), Interval(Int, 0, 3)]
    y = Reduction(([t], [Interval(Int, 0, N - 1)]), ([a, b], taps), typ, "y")
    y.defn = [Reduce(y(t), x(t + a + 3 * b) * h(a, b), op)]
    pipe = polyimage.compile([y], estimates={"N": 1 << 20})
    assert pipe.compiled.reductions["y"].vector_owner
    rng = np.random.default_rng(4)
    dtype = typ.dtype
    for n in (1, 1500, 5001):
        if dtype.kind == "f":
            values = rng.uniform(0.5, 1.5, n + 12).astype(dtype)
            weights = rng.uniform(0.5, 1.5, (3, 4)).astype(dtype)
        else:
            values = rng.integers(0, 50, n + 12).astype(dtype)
            weights = rng.integers(0, 5, (3, 4)).astype(dtype)
        want = polyimage.interpret([y], x=values, h=weights)
        for threads in (1, 2, 3):
            got = pipe(x=values, h=weights, threads=threads)
            assert np.array_equal(got, want), (n, threads)
    assert pipe.scalar_stages in ((), None), pipe.report(vectorization=True)


def test_a_column_sum_keeps_its_rows_outside_its_lanes():
    """A column sum's cells are owned by its contiguous variable too, but each lane would walk
    down the rows, a page a step: it keeps the rows outside, each row's columns in a vector
    loop, and the interpreter's result."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [R, C])
    x, y = Variable(Int, "x"), Variable(Int, "y")
    s = Reduction(([y], [Interval(Int, 0, C - 1)]), ([x], [Interval(Int, 0, R - 1)]), Float, "s")
    s.defn = [Reduce(s(y), img(x, y), Op.Sum)]
    pipe = polyimage.compile([s], estimates={"R": 4096, "C": 4096})
    strategy = pipe.compiled.reductions["s"]
    assert strategy.kind == "owner" and not strategy.vector_owner
    values = np.random.default_rng(5).standard_normal((37, 2100)).astype(np.float32)
    assert np.array_equal(pipe(img=values, threads=2), polyimage.interpret([s], img=values))


@pytest.mark.parametrize("op", [Op.Max, Op.Min])
def test_a_pooling_runs_its_strided_columns_in_lanes(op):
    """Max and Min pooling of stride 2: the rows own the cells, and the columns, whose reads
    step two elements, run under `omp simd` outside the window's loops, each cell in a
    variable (a NaN noted beside it). The interpreter's result (NaN where a window holds
    one, ties of +0 and -0 as NumPy keeps them, a NaN default) at odd sizes on 1-3 threads;
    gcc's report reads the lanes' loop as vectorized."""
    m = pooling(3, op, default=float("nan") if op is Op.Min else None)
    pipe = polyimage.compile([m], estimates={"R": 2048, "C": 2048})
    strategy = pipe.compiled.reductions["m"]
    assert strategy.kind == "owner" and strategy.vector_owner
    assert [o.index for o in strategy.owned] == [0] and strategy.lanes == 1
    assert "y runs under omp simd outside dx, dy" in strategy.reason
    # tasks of several rows, whose shared rows of the image stay in cache; every cell starts
    # from the default in its variable, the buffer written once
    assert strategy.owned[0].size > 1 and strategy.initializes
    rng = np.random.default_rng(8)
    for rows, columns in ((1, 1), (7, 33), (64, 101)):
        values = rng.uniform(-1, 1, (2 * rows + 2, 2 * columns + 2)).astype(np.float32)
        values.flat[rng.integers(0, values.size, 3)] = np.nan
        values.flat[rng.integers(0, values.size, 5)] = -0.0
        values.flat[rng.integers(0, values.size, 5)] = 0.0
        want = polyimage.interpret([m], img=values)
        for threads in (1, 2, 3):
            got = pipe(img=values, threads=threads)
            np.testing.assert_array_equal(got, want)
            assert np.array_equal(np.signbit(got), np.signbit(want))
    assert pipe.scalar_stages in ((), None), pipe.report(vectorization=True)


def test_lanes_walk_only_a_few_rows():
    """A window of more rows than LANE_ROWS would take each lane down that many rows: the
    columns keep their written place, and the result is the interpreter's."""
    m = pooling(LANE_ROWS + 1, Op.Sum)
    pipe = polyimage.compile([m], estimates={"R": 2048, "C": 2048})
    assert not pipe.compiled.reductions["m"].vector_owner
    values = np.random.default_rng(9).uniform(0, 1, (2 * 20 + LANE_ROWS, 2 * 45 + 2))
    values = values.astype(np.float32)
    assert np.array_equal(pipe(img=values, threads=2), polyimage.interpret([m], img=values))


def test_a_decimating_filter_runs_its_strided_samples_in_lanes():
    """y(t) sums x(2 t + k) * h(k): `t` alone owns the cells and steps the reads two
    elements, so it is no contiguous variable. Its blocks take LANE_RUN values or more (one
    task per cell ran 75x slower), each under `omp simd` outside k: the interpreter's result
    bit for bit at sizes that end mid-block, on 1, 2 and 3 threads."""
    N = Parameter(Int, "N")
    x, h = Image(Float, "x", [2 * N + 16]), Image(Float, "h", [16])
    t, k = Variable(Int, "t"), Variable(Int, "k")
    y = Reduction(([t], [Interval(Int, 0, N - 1)]), ([k], [Interval(Int, 0, 15)]), Float, "y")
    y.defn = [Reduce(y(t), x(2 * t + k) * h(k), Op.Sum)]
    pipe = polyimage.compile([y], estimates={"N": 1 << 21})
    strategy = pipe.compiled.reductions["y"]
    assert strategy.vector_owner and strategy.lanes == 0
    assert strategy.owned[0].size >= LANE_RUN
    rng = np.random.default_rng(10)
    for n in (1, 77, 3001):
        arguments = dict(x=rng.random(2 * n + 16, np.float32), h=rng.random(16, np.float32))
        want = polyimage.interpret([y], **arguments)
        for threads in (1, 2, 3):
            assert np.array_equal(pipe(**arguments, threads=threads), want), (n, threads)


@pytest.mark.parametrize("op, typ", [(Op.Sum, Float), (Op.Max, Float), (Op.Mul, Double)])
def test_row_reductions_run_their_chains_side_by_side(op, typ):
    """A float reduction along each row sums every cell in order, one add's latency a step:
    JAM_LINES rows run side by side along the row, each cell in a variable, in blocks of
    whole sets of rows. The interpreter's result bit for bit (NaN rows too) at row counts
    that end mid-set and mid-block, on 1, 2 and 3 threads."""
    s = row_reduction(op, typ)
    pipe = polyimage.compile([s], estimates={"R": 4096, "C": 4096})
    strategy = pipe.compiled.reductions["s"]
    assert strategy.kind == "owner" and strategy.jam == JAM_LINES
    assert f"{JAM_LINES} values of x run side by side along y" in strategy.reason
    assert strategy.owned[0].size % JAM_LINES == 0 and strategy.initializes
    rng = np.random.default_rng(11)
    for rows, columns in ((1, 1), (13, 40), (203, 77)):
        img = rng.uniform(0.9, 1.1, (rows, columns)).astype(typ.dtype)
        img.flat[rng.integers(0, img.size, 2)] = np.nan
        w = rng.uniform(0.9, 1.1, columns).astype(typ.dtype)
        want = polyimage.interpret([s], img=img, w=w)
        for threads in (1, 2, 3):
            got = pipe(img=img, w=w, threads=threads)
            assert np.array_equal(got, want, equal_nan=True), (rows, threads)


def test_integer_row_sums_are_not_jammed():
    """Integer sums are the same in any order: their rows keep a vector loop with a
    reduction clause along y, not chains side by side."""
    s = row_reduction(Op.Sum, Int)
    pipe = polyimage.compile([s], estimates={"R": 4096, "C": 4096})
    assert pipe.compiled.reductions["s"].jam == 0


def test_cells_no_lane_reaches_keep_the_default():
    """Where the rows of the reduction domain miss the target's first row, the lanes cannot
    start their cells from the default: a pass sets the whole buffer first, and the row no
    lane reaches keeps the default, as in the interpreter."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [2 * R + 2, 2 * C + 2])
    x, y, dx, dy = (Variable(Int, v) for v in ("x", "y", "dx", "dy"))
    cells = [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]
    rows = [Interval(Int, 1, R - 1), Interval(Int, 0, C - 1)]
    taps = [Interval(Int, 0, 2), Interval(Int, 0, 2)]
    m = Reduction(([x, y], cells), ([x, y, dx, dy], [*rows, *taps]), Float, "m")
    m.default = -5.0
    m.defn = [Reduce(m(x, y), img(2 * x + dx, 2 * y + dy), Op.Max)]
    pipe = polyimage.compile([m], estimates={"R": 2048, "C": 2048})
    strategy = pipe.compiled.reductions["m"]
    assert strategy.vector_owner and not strategy.initializes
    values = np.random.default_rng(12).random((2 * 9 + 2, 2 * 21 + 2), np.float32)
    got = pipe(img=values, threads=2)
    assert np.array_equal(got, polyimage.interpret([m], img=values))
    assert (got[0] == -5.0).all()


def test_lines_visited_again_start_from_their_cells():
    """Row sums of each channel over q planes, q between the channels (which own the cells)
    and the rows: the lines run side by side along y once per plane, so each set starts
    from the cells' values so far, not the default: the interpreter's result bit for bit."""
    N, R, C = Parameter(Int, "N"), Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [N, 3, R, C])
    c, q, x, y = (Variable(Int, v) for v in ("c", "q", "x", "y"))
    cells = [Interval(Int, 0, N - 1), Interval(Int, 0, R - 1)]
    domain = [cells[0], Interval(Int, 0, 2), cells[1], Interval(Int, 0, C - 1)]
    s = Reduction(([c, x], cells), ([c, q, x, y], domain), Float, "s")
    s.default = 0.5
    s.defn = [Reduce(s(c, x), img(c, q, x, y), Op.Sum)]
    pipe = polyimage.compile([s], schedule="naive", estimates={"N": 16, "R": 4096, "C": 4096})
    strategy = pipe.compiled.reductions["s"]
    assert strategy.jam == JAM_LINES and not strategy.initializes
    values = np.random.default_rng(13).random((2, 3, 21, 30), np.float32)
    for threads in (1, 2):
        got = pipe(img=values, threads=threads)
        assert np.array_equal(got, polyimage.interpret([s], img=values))
