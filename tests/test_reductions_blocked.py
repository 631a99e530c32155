"""Register-blocked Reductions (schedule.blocking, codegen.blocked; issue 52): a matrix
product and convolutions written the natural way run by register blocks accumulated across
their reduction-only loops, in panels, and equal the interpreter bit for bit whatever the block
shape, the sizes (tails along every dimension) and the thread count."""

import re

import numpy as np
import pytest
from helpers import conv_nchw, conv_nhwc, matmul, matmul_nt, window_sum
from oracle import assert_same

import polyimage
from polyimage import (
    Case,
    Cast,
    Condition,
    Double,
    Float,
    Image,
    Int,
    Interval,
    Min,
    Op,
    Parameter,
    Reduce,
    Reduction,
    UInt,
    Variable,
)
from polyimage.algebra.evaluate import Evaluator
from polyimage.codegen.names import VECTOR_TYPES
from polyimage.config import Options
from polyimage.grouping.machine import Machine
from polyimage.schedule import blocking


def _random(shape, typ, rng):
    if typ.is_float:
        return rng.standard_normal(shape).astype(typ.dtype)
    return rng.integers(0, 7, shape).astype(typ.dtype)


def _compiled(out, estimates, tmp_path, **options):
    pipe = polyimage.compile([out], estimates=estimates, options=Options(cache_dir=tmp_path))
    strategy = pipe.compiled.reductions[out.name]
    assert strategy.kind == "blocked", strategy.describe()
    return pipe


def _equal_at_sizes(pipe, out, sizes, seed, what, threads=(None,)):
    """`pipe` (a matrix product `out`) equals the interpreter bit for bit on random A and B of
    each (m, n, k) of `sizes`, on each of `threads`."""
    rng = np.random.default_rng(seed)
    for m, n, k in sizes:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        want = polyimage.interpret([out], A=a, B=b)
        for count in threads:
            assert_same(pipe(A=a, B=b, threads=count), want, f"{what} {m}x{n}x{k}", exact=True)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks, tasks and panels small enough that test sizes cross each of their edges."""
    monkeypatch.setattr(blocking, "BLOCK_ROWS", 3)
    monkeypatch.setattr(blocking, "WIDE_BLOCK_ROWS", 5)
    monkeypatch.setattr(blocking, "CHUNK_BLOCKS", 2)
    monkeypatch.setattr(blocking, "PANEL_DEPTH", 5)


def test_a_matrix_product_runs_by_register_blocks_in_panels(tmp_path):
    pipe = _compiled(matmul(), {"M": 512, "N": 512, "K": 1024}, tmp_path)
    text = pipe.report()
    height = re.search(r"register blocks of (\d+) i by", text)
    assert height and "k in panels of" in text
    # and why: the block's intensity, where the accumulators and the panel of B live
    loads = rf"a step loads {height.group(1)} values \(broadcast\) and \d+ vectors? for \d+ vector"
    assert re.search(loads, text)
    assert "in vector variables" in text and re.search(
        r"a panel of B \(\d+ KiB\) stays in L2", text
    )
    assert pipe.scalar_stages in ((), None) and "priced as scalar" not in text
    assert "pim_vec pim_a0_0" in pipe.c_source


@pytest.mark.parametrize("typ, op", [(Float, Op.Max), (UInt, Op.Sum), (Int, Op.Mul)])
def test_updates_vectors_cannot_express_keep_their_cells_in_an_array(typ, op, tmp_path):
    """Only float sums and products run on vector variables; the others accumulate in an
    array under `omp simd`, which the compiler vectorizes as it can."""
    pipe = _compiled(matmul(typ, op), {"M": 256, "N": 256, "K": 256}, tmp_path)
    assert "pim_vec " not in pipe.c_source and "pim_acc[4][" in pipe.c_source


def _mixed(typ):
    """A product with every operation the vector blocks write (- * / negation, a same-type
    Cast, a parameter and a constant), and a row operand read through a clamp."""
    M, N, K = (Parameter(Int, n) for n in "MNK")
    s = Parameter(typ, "s")
    A, B = Image(typ, "A", [M, K]), Image(typ, "B", [K, N + 3])
    i, j, k = (Variable(Int, n) for n in "ijk")
    rows, cols = Interval(Int, 0, M - 1), Interval(Int, 0, N - 1)
    C = Reduction(([i, j], [rows, cols]), ([k], [Interval(Int, 0, K - 1)]), typ, "C")
    row = A(i, Min(k * 2, K - 1))
    value = -(row - B(k, j + 3) * 0.5) / s + Cast(typ, B(k, j) - s) * row
    C.defn = [Reduce(C(i, j), value, Op.Sum)]
    return C


@pytest.mark.parametrize("typ", [Float, Double])
def test_vector_blocks_equal_the_interpreter_on_any_arithmetic(typ, tmp_path, small_blocks, rng):
    out = _mixed(typ)
    pipe = _compiled(out, {"M": 64, "N": 256, "K": 64}, tmp_path)
    assert "pim_vec pim_a0_0" in pipe.c_source
    for m, n, k in [(3, 1, 2), (7, 37, 11), (10, 70, 23), (5, 131, 6)]:
        a, b = _random((m, k), typ, rng), _random((k, n + 3), typ, rng)
        want = polyimage.interpret([out], A=a, B=b, s=1.5)
        for threads in (1, 2):
            assert_same(pipe(A=a, B=b, s=1.5, threads=threads), want, exact=True)


@pytest.mark.parametrize(
    "typ, op", [(Float, Op.Sum), (Double, Op.Sum), (Float, Op.Max), (UInt, Op.Sum), (Int, Op.Mul)]
)
def test_matrix_products_equal_the_interpreter_at_every_size(typ, op, tmp_path, small_blocks, rng):
    out = matmul(typ, op)
    pipe = _compiled(out, {"M": 64, "N": 256, "K": 64}, tmp_path)
    for m, n, k in [(1, 1, 1), (3, 31, 5), (7, 37, 11), (10, 70, 23), (13, 129, 6)]:
        a, b = _random((m, k), typ, rng), _random((k, n), typ, rng)
        want = polyimage.interpret([out], A=a, B=b)
        for threads in (1, 2):
            assert_same(pipe(A=a, B=b, threads=threads), want, exact=True)


@pytest.mark.parametrize("build", [conv_nchw, conv_nhwc])
def test_convolutions_equal_the_interpreter(build, tmp_path, small_blocks, rng):
    out = build()
    sizes = {"N": 2, "O": 32, "I": 8, "H": 28, "W": 40}
    pipe = _compiled(out, sizes, tmp_path)
    for n, o, i, h, w in [(1, 5, 3, 4, 7), (2, 11, 2, 5, 37), (1, 33, 4, 3, 19)]:
        if out.name and build is conv_nchw:
            images = {"inp": (n, i, h + 2, w + 2), "w": (o, i, 3, 3)}
        else:
            images = {"inp": (n, h + 2, w + 2, i), "w": (3, 3, i, o)}
        arrays = {name: _random(shape, Float, rng) for name, shape in images.items()}
        want = polyimage.interpret([out], **arrays)
        for threads in (1, 2):
            assert_same(pipe(threads=threads, **arrays), want, exact=True)


def test_the_blocks_follow_the_operand_read_along_the_columns(tmp_path):
    """NCHW blocks output channels (every channel reads the same input row), NHWC blocks
    columns of the image (every pixel reads the same weight row)."""
    sizes = {"N": 4, "O": 32, "I": 32, "H": 112, "W": 112}
    nchw = polyimage.compile([conv_nchw()], estimates=sizes, build=False)
    nhwc = polyimage.compile([conv_nhwc()], estimates=sizes, build=False)
    assert re.search("register blocks of [0-9]+ o by", nchw.compiled.reductions["out"].reason)
    assert re.search("register blocks of [0-9]+ x by", nhwc.compiled.reductions["out"].reason)


def test_what_is_not_blocked_keeps_its_strategy():
    """A conditional update and a target that is not the owned variables themselves are left
    to the other strategies."""
    M = Parameter(Int, "M")
    A = Image(Float, "A", [M, M])
    i, j, k = (Variable(Int, n) for n in "ijk")
    full = Interval(Int, 0, M - 1)
    upper = Reduction(([i, j], [full, full]), ([k], [full]), Float, "upper")
    upper.defn = [Case(Condition(k, ">=", i), Reduce(upper(i, j), A(i, k) * A(k, j), Op.Sum))]
    halved = Reduction(([i, j], [full, full]), ([i, j, k], [full] * 3), Float, "halved")
    halved.defn = [Reduce(halved(i // 2, j), A(i, k) * A(k, j), Op.Sum)]
    for out in (upper, halved):
        pipe = polyimage.compile([out], estimates={"M": 512}, build=False)
        assert pipe.compiled.reductions[out.name].kind != "blocked", out.name


@pytest.mark.parametrize("vector_bytes", [16, 32, 64])
def test_blocks_narrower_than_the_widest_take_more_rows(vector_bytes):
    """A block keeps as many accumulators whatever its width: NHWC's 32 output channels fill
    fewer vectors per row than a matrix product's 512 columns, and take more rows for it."""
    machine = Machine(l1_bytes=32 * 1024, l2_bytes=1024 * 1024, cores=2, vector_bytes=vector_bytes)
    evaluate = Evaluator({}, {}, {"N": 4, "O": 32, "I": 32, "H": 112, "W": 112})
    wide = blocking.register_block(
        matmul(), Evaluator({}, {}, {"M": 512, "N": 512, "K": 512}), machine
    )
    narrow = blocking.register_block(conv_nhwc(), evaluate, machine)
    lanes = vector_bytes // 4
    if vector_bytes >= 64:  # rows K apart, packed: blocks of 12 rows of one vector
        assert wide.packed and (wide.height, wide.width) == (blocking.WIDE_BLOCK_ROWS, lanes)
    else:
        assert wide.height == blocking.BLOCK_ROWS
    assert wide.height * wide.width // lanes == narrow.height * narrow.width // lanes
    assert narrow.width == min(32, wide.width) and narrow.height >= wide.height


def _written_in_order(order: str):
    """A matrix product whose reduction domain lists i, j and k in `order` (each cell still
    sums over k in order)."""
    M, N, K = (Parameter(Int, n) for n in "MNK")
    A, B = Image(Float, "A", [M, K]), Image(Float, "B", [K, N])
    var = {n: Variable(Int, n) for n in "ijk"}
    extent = {"i": M, "j": N, "k": K}
    rows, cols = Interval(Int, 0, M - 1), Interval(Int, 0, N - 1)
    domain = ([var[n] for n in order], [Interval(Int, 0, extent[n] - 1) for n in order])
    C = Reduction(([var["i"], var["j"]], [rows, cols]), domain, Float, "C")
    C.defn = [Reduce(C(var["i"], var["j"]), A(var["i"], var["k"]) * B(var["k"], var["j"]), Op.Sum)]
    return C


def _random_blocks(monkeypatch, draw, panels=True):
    """Block heights, vectors per row, tasks and (with `panels`) panel depths drawn from
    `draw`, so that test sizes cross every edge of the blocks."""
    monkeypatch.setattr(blocking, "BLOCK_ROWS", int(draw.integers(1, 6)))
    monkeypatch.setattr(blocking, "BLOCK_VECTORS", int(draw.integers(1, 3)))
    monkeypatch.setattr(blocking, "WIDE_BLOCK_ROWS", int(draw.integers(1, 14)))
    monkeypatch.setattr(blocking, "WIDE_BLOCK_VECTORS", int(draw.integers(1, 5)))
    monkeypatch.setattr(blocking, "WIDE_RUNTIME_VECTORS", int(draw.integers(1, 5)))
    monkeypatch.setattr(blocking, "CHUNK_BLOCKS", int(draw.integers(1, 4)))
    if panels:
        monkeypatch.setattr(blocking, "PANEL_DEPTH", int(draw.integers(1, 9)))


@pytest.mark.parametrize("seed", range(4))
def test_random_block_shapes_and_loop_orders_equal_the_interpreter(seed, tmp_path, monkeypatch):
    """Block heights, vectors per row, tasks and panels drawn at random, the reduction domain
    written in a random order: every size (tails along every dimension) on 1 and 2 threads
    gives the interpreter's result bit for bit."""
    draw = np.random.default_rng(seed)
    _random_blocks(monkeypatch, draw)
    order = "".join(draw.permutation(list("ijk")))
    out = _written_in_order(order)
    pipe = _compiled(out, {"M": 64, "N": 256, "K": 64}, tmp_path)
    for m, n, k in [(1, 1, 1), (5, 17, 3), (9, 67, 10), (6, 150, 13)]:
        a = draw.standard_normal((m, k)).astype(np.float32)
        b = draw.standard_normal((k, n)).astype(np.float32)
        want = polyimage.interpret([out], A=a, B=b)
        for threads in (1, 2):
            what = f"order {order}, {m}x{n}x{k}"
            assert_same(pipe(A=a, B=b, threads=threads), want, what, exact=True)


def _product(how: str):
    """A matrix product whose update reads the rows' variable `i` as written ("affine"), in
    arithmetic besides ("arithmetic"), through an index that is not affine ("halved") or in
    two reads ("twice"); or that starts from a constant ("constant"), from a value of its own
    variable ("variable"), or sums into rows 1.. only, row 0 keeping the default ("part")."""
    M, N, K = (Parameter(Int, n) for n in "MNK")
    A, B = Image(Float, "A", [M, K]), Image(Float, "B", [K, N])
    i, j, k = (Variable(Int, n) for n in "ijk")
    rows, cols = Interval(Int, 0, M - 1), Interval(Int, 0, N - 1)
    summed = Interval(Int, 1, M - 1) if how == "part" else rows
    C = Reduction(
        ([i, j], [rows, cols]), ([i, j, k], [summed, cols, Interval(Int, 0, K - 1)]), Float, "C"
    )
    C.default = Cast(Float, j) if how == "variable" else 1.5 if how == "constant" else 0
    value = {
        "arithmetic": A(i, k) * B(k, j) + Cast(Float, i),
        "halved": A(i // 2, k) * B(k, j),
        "twice": A(i, k) * B(k, j) + A(i, 0) * B(0, j),
    }.get(how, A(i, k) * B(k, j))
    C.defn = [Reduce(C(i, j), value, Op.Sum)]
    return C


@pytest.mark.parametrize("how", ["affine", "arithmetic", "halved"])
def test_rows_read_at_fixed_steps_from_the_first_row(how, tmp_path):
    """Where every reference moves by a fixed step per row, a block's rows read at their
    steps from the first row's indices (the C compiler then addresses them at constant
    offsets from one pointer); where the rows' variable is used otherwise, each row declares
    its own point. Both equal the interpreter bit for bit, rows ending mid-block."""
    out = _product(how)
    # planned for 32-byte vectors: no packed copy of the rows (whose copies declare rows too)
    options = Options(cache_dir=tmp_path, machine={"vector_bytes": 32})
    pipe = polyimage.compile([out], estimates={"M": 256, "N": 256, "K": 64}, options=options)
    assert pipe.compiled.reductions["C"].kind == "blocked"
    assert ("pim_r0 + 1;" in pipe.c_source) == (how != "affine")
    _equal_at_sizes(pipe, out, [(13, 40, 5), (31, 17, 9)], 3, how)


@pytest.mark.parametrize("how", ["constant", "variable", "part"])
def test_tasks_set_their_own_cells_to_the_default_where_they_cover_them(how, tmp_path):
    """A constant default over cells the tasks cover exactly is set by each task just before
    its panels, with no pass over the whole buffer; a default that reads a variable, or
    updates that leave cells out, keep that pass. Each equals the interpreter bit for bit."""
    out = _product(how)
    pipe = _compiled(out, {"M": 256, "N": 256, "K": 64}, tmp_path)
    assert pipe.compiled.reductions["C"].block.initializes == (how == "constant")
    _equal_at_sizes(pipe, out, [(13, 40, 5), (2, 17, 1)], 5, how)


@pytest.mark.parametrize("vector_bytes", [32, 64])
def test_rows_a_constant_step_apart_take_more_rows_of_fewer_vectors(vector_bytes):
    """With 32 vector registers, rows a step apart known at compile time (a conv layer's
    image rows of 32 channels) take blocks of 12 rows by one vector, whose broadcasts fold
    into their multiplies; rows K apart (a matrix product) too, their read packed (else an
    address register a row would spill), or 4 rows by 4 vectors where that read cannot be
    packed. With 16 registers, all 4 rows by 2 vectors."""
    from apps import conv_nhwc as app

    conv = [s.func for s in polyimage.compile(app.build()[0], build=False).stage_graph.stages]
    conv = next(f for f in conv if f.name == "conv")
    product = matmul()
    rows = conv.reduction_variables[2]
    assert blocking.constant_row_steps(conv, rows)
    assert not blocking.constant_row_steps(product, product.reduction_variables[0])
    machine = Machine(l1_bytes=32 * 1024, l2_bytes=1024 * 1024, cores=2, vector_bytes=vector_bytes)
    lanes = vector_bytes // 4
    layer = blocking.register_block(conv, Evaluator({}, {}, {"N": 4, "R": 112, "C": 112}), machine)
    square = blocking.register_block(
        product, Evaluator({}, {}, {"M": 512, "N": 512, "K": 512}), machine
    )
    if vector_bytes == 64:
        assert (layer.height, layer.width, layer.packed) == (blocking.WIDE_BLOCK_ROWS, lanes, False)
        assert (square.height, square.width, square.packed) == (
            blocking.WIDE_BLOCK_ROWS,
            lanes,
            True,
        )
        twice = _product("twice")
        unpacked = blocking.register_block(
            twice, Evaluator({}, {}, {"M": 512, "N": 512, "K": 512}), machine
        )
        assert (unpacked.height, unpacked.width, unpacked.packed) == (4, 4 * lanes, False)
    else:
        assert (layer.height, layer.width) == (square.height, square.width) == (4, 2 * lanes)


def test_a_matrix_product_packs_its_rows_for_wide_vectors(tmp_path):
    """Planned for 64-byte vectors, a matrix product's rows (K apart, a step known at run
    time) are copied per panel into a buffer where they lie next to each other
    (codegen.packing), and run in blocks of 12 rows of one vector; a block of columns' slice
    of B is copied per panel too, once for all the tasks; the checked build reads both in
    place. Rows ending
    mid-block, a second panel of k, 1 and 2 threads: the interpreter's result bit for bit."""
    out = matmul()
    options = Options(cache_dir=tmp_path, machine={"vector_bytes": 64})
    pipe = polyimage.compile([out], estimates={"M": 512, "N": 512, "K": 512}, options=options)
    block = pipe.compiled.reductions["C"].block
    assert block.packed and block.packed_columns and block.height == blocking.WIDE_BLOCK_ROWS
    text = pipe.report()
    assert "A copied per panel, its rows a constant step apart" in text
    assert "B copied per block of columns and panel" in text
    assert "pim_pk[" in pipe.c_source and "pim_pb[" in pipe.c_source
    assert "pim_pbs" in pipe.c_source  # B's panels shared by the tasks: it reads no outer variable
    per_thread, shared = pipe.memory().blocks  # A's copy per thread, B's panel once
    assert per_thread == block.chunk * 256 * 4 and shared == block.panel_columns * 256 * 4
    assert "register blocks' copies and cells" in text
    checked = polyimage.compile(
        [out], estimates={"M": 512, "N": 512, "K": 512}, options=options, check=True
    )
    assert "pim_pk[" not in checked.c_source and "pim_pb[" not in checked.c_source
    for built, what in ((pipe, "packed"), (checked, "checked")):
        _equal_at_sizes(built, out, [(13, 70, 300), (25, 17, 5)], 11, what, threads=(1, 2))


def _window_arguments(rng, rows, cols, taps):
    return dict(
        img=rng.standard_normal((rows + taps - 1, cols + taps - 1)).astype(np.float32),
        wt=rng.standard_normal((taps, taps)).astype(np.float32),
    )


def test_a_window_sum_runs_by_register_blocks_each_row_reading_its_own(tmp_path):
    """A window written as a Reduction: the image read along the columns moves with every
    other owned variable, so the rows' variable is one that moves it, each row of a block
    loads its own vectors (nothing to pack) and the taps accumulate in registers."""
    pipe = _compiled(window_sum(), {"R": 1536, "C": 2560}, tmp_path)
    strategy = pipe.compiled.reductions["s"]
    block = strategy.block
    assert block.rows_read_own and not block.packed and not block.packed_columns
    assert re.search("register blocks of [0-9]+ x by", strategy.reason)
    assert "(each row its own)" in strategy.reason
    loops = [placed for placed in pipe.cmodule.loops if "s" in placed.stages]
    assert any(VECTOR_TYPES in placed.notes for placed in loops), "accumulators in vectors"


@pytest.mark.parametrize("seed", range(4))
def test_window_sums_equal_the_interpreter_at_random_block_shapes(seed, tmp_path, monkeypatch):
    """Block heights, vectors per row, tasks and window sizes drawn at random, rows a step
    apart known at run time or at compile time: every size (tails along both dimensions) on
    1 and 2 threads gives the interpreter's result bit for bit."""
    draw = np.random.default_rng(300 + seed)
    _random_blocks(monkeypatch, draw, panels=False)
    taps = int(draw.integers(3, 6))
    cols = 70 if seed % 2 else None
    out = window_sum(taps, cols)
    pipe = _compiled(out, {"R": 64, **({"C": 256} if cols is None else {})}, tmp_path)
    assert pipe.compiled.reductions["s"].block.rows_read_own
    sizes = [(1, 1), (5, 17), (13, 67), (30, 150)] if cols is None else [(1, 70), (23, 70)]
    for rows, width in sizes:
        arguments = _window_arguments(draw, rows, width, taps)
        want = polyimage.interpret([out], **arguments)
        for threads in (1, 2):
            what = f"{taps}x{taps} window, {rows}x{width}"
            assert_same(pipe(**arguments, threads=threads), want, what, exact=True)


@pytest.mark.parametrize("seed", range(3))
def test_a_transposed_operand_is_copied_for_its_blocks(seed, tmp_path, monkeypatch):
    """`A(i, k) * B(j, k)`: B moves with the columns a row apart, so the blocks read it from
    a copy per block of columns and panel, its columns side by side (never read as a vector
    where it lies: narrower blocks give way to the cells in place), in the checked build
    too; random block shapes, every size with tails, 1 and 2 threads, bit for bit."""
    draw = np.random.default_rng(400 + seed)
    _random_blocks(monkeypatch, draw)
    out = matmul_nt()
    estimates = {"M": 64, "N": 256, "K": 64}
    pipe = _compiled(out, estimates, tmp_path)
    assert pipe.compiled.reductions["C"].block.packed_columns
    assert "B copied per block of columns and panel" in pipe.compiled.reductions["C"].reason
    checked = polyimage.compile(
        [out], estimates=estimates, options=Options(cache_dir=tmp_path, check=True)
    )
    assert checked.compiled.reductions["C"].kind == "blocked"
    for m, n, k in [(1, 1, 1), (5, 17, 3), (13, 67, 10), (6, 150, 13)]:
        a = draw.standard_normal((m, k)).astype(np.float32)
        b = draw.standard_normal((n, k)).astype(np.float32)
        want = polyimage.interpret([out], A=a, B=b)
        for built in (pipe, checked):
            for threads in (1, 2):
                what = f"{m}x{n}x{k}, {threads} threads"
                assert_same(built(A=a, B=b, threads=threads), want, what, exact=True)


def test_a_transposed_operand_moving_with_the_rows_is_not_blocked(tmp_path):
    """`A(i, k) * B(j, k + i)`: the transposed operand moves with the rows too, so no copy per
    block of columns could serve a block's rows: not blocked, and the interpreter's result
    (blocked, its full blocks read B where it lies and summed the wrong elements)."""
    M, N, K = (Parameter(Int, n) for n in "MNK")
    A, B = Image(Float, "A", [M, K]), Image(Float, "B", [N, K + M])
    i, j, k = (Variable(Int, n) for n in "ijk")
    rows, cols = Interval(Int, 0, M - 1), Interval(Int, 0, N - 1)
    C = Reduction(([i, j], [rows, cols]), ([k], [Interval(Int, 0, K - 1)]), Float, "C")
    C.defn = [Reduce(C(i, j), A(i, k) * B(j, k + i), Op.Sum)]
    pipe = polyimage.compile(
        [C], estimates={"M": 512, "N": 512, "K": 512}, options=Options(cache_dir=tmp_path)
    )
    assert pipe.compiled.reductions["C"].kind != "blocked"
    rng = np.random.default_rng(6)
    a = rng.standard_normal((20, 30)).astype(np.float32)
    b = rng.standard_normal((70, 50)).astype(np.float32)
    for threads in (1, 2):
        want = polyimage.interpret([C], A=a, B=b)
        assert_same(pipe(A=a, B=b, threads=threads), want, "B(j, k + i)", exact=True)


def test_a_transposed_operand_off_vectors_keeps_another_strategy(tmp_path):
    """A transposed product combined by Max runs on no vectors: not blocked (its read
    would have to be copied to be a vector), and still the interpreter's result."""
    out = matmul_nt(Float, Op.Max)
    pipe = polyimage.compile(
        [out], estimates={"M": 64, "N": 256, "K": 64}, options=Options(cache_dir=tmp_path)
    )
    assert pipe.compiled.reductions["C"].kind != "blocked"
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((9, 11)).astype(np.float32), rng.standard_normal((21, 11))
    b = b.astype(np.float32)
    assert_same(pipe(A=a, B=b), polyimage.interpret([out], A=a, B=b), "max", exact=True)
