"""A stage over a blocked Reduction's cells (a conv layer's bias and ReLU) computed by the
tasks of its register blocks, from each task's cells while they are in cache
(schedule.blocking.folds_into_tasks; issue 52): `auto` joins it to the Reduction's group, the
Reduction then needs no full buffer where nothing else reads it, and every result equals the
interpreter's bit for bit, at odd sizes and on 1 and 2 threads."""

import dataclasses

import numpy as np
import pytest
from helpers import pinned_options, window_sum
from oracle import assert_same

import polyimage
from polyimage import (
    Cast,
    Double,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Max,
    Min,
    Op,
    Parameter,
    Reduce,
    Reduction,
    Schedule,
    Variable,
)
from polyimage.config import Options

ESTIMATES = {"N": 2, "H": 32, "W": 64, "I": 8, "O": 32}
SIZES = [(1, 5, 7, 3, 17), (2, 9, 29, 4, 33)]


def _conv():
    """(conv, bias, domain): a 3x3 conv layer in NHWC (N, H, W, O) over inputs `inp` and `w`,
    and an image `bias` of O values."""
    N, O, I, H, W = (Parameter(Int, n) for n in ("N", "O", "I", "H", "W"))
    inp = Image(Float, "inp", [N, H + 2, W + 2, I])
    w = Image(Float, "w", [3, 3, I, O])
    bias = Image(Float, "bias", [O])
    n, o, y, x, c, dy, dx = (Variable(Int, v) for v in ("n", "o", "y", "x", "c", "dy", "dx"))
    domain = [Interval(Int, 0, d - 1) for d in (N, H, W, O)]
    taps = Interval(Int, 0, 2)
    conv = Reduction(
        ([n, y, x, o], domain), ([dy, dx, c], [taps, taps, Interval(Int, 0, I - 1)]), Float, "conv"
    )
    conv.defn = [Reduce(conv(n, y, x, o), inp(n, y + dy, x + dx, c) * w(dy, dx, c, o), Op.Sum)]
    return conv, bias, domain


def _layer(how: str):
    """(outputs, conv): the conv layer of _conv, then `relu` of it plus a bias: at its own
    point ("pointwise"), one column on ("shifted"), or with the conv an output too
    ("exported")."""
    conv, bias, domain = _conv()
    n, y, x, o = conv.variables
    relu = Function(([n, y, x, o], domain), Float, "relu")
    column = Min(x + 1, domain[2].ub) if how == "shifted" else x
    relu.defn = [Max(conv(n, y, column, o) + bias(o), 0.0)]
    return ([relu, conv] if how == "exported" else [relu]), conv


def _compiled(outputs, tmp_path, schedule="auto"):
    options = Options(cache_dir=tmp_path)
    return polyimage.compile(outputs, estimates=ESTIMATES, schedule=schedule, options=options)


def _check(pipe, outputs, what):
    rng = np.random.default_rng(7)
    for n, h, w, i, o in SIZES:
        arrays = {
            "inp": rng.standard_normal((n, h + 2, w + 2, i)).astype(np.float32),
            "w": rng.standard_normal((3, 3, i, o)).astype(np.float32),
            "bias": rng.standard_normal(o).astype(np.float32),
        }
        want = polyimage.interpret(outputs, **arrays)
        for threads in (1, 2):
            got = pipe(**arrays, threads=threads)
            assert_same(got, want, f"{what} {n}x{h}x{w}x{i}x{o}, {threads} threads", exact=True)


def test_auto_computes_the_relu_in_the_tasks_of_the_conv(tmp_path):
    outputs, conv = _layer("pointwise")
    pipe = _compiled(outputs, tmp_path)
    block = pipe.compiled.reductions["conv"].block
    assert [g.stages for g in pipe.schedule.groups] == [("conv", "relu")]
    assert block.epilogue == ("relu",) and block.scratch
    memory = pipe.memory()
    assert memory.all_full == 0  # the conv's cells live in the tasks' buffers, a task's each
    assert memory.blocks[0] >= block.chunk * ESTIMATES["O"] * 4 and memory.blocks[1] == 0
    text = pipe.report()
    assert "relu computed from each block's accumulators as it ends, in registers" in text
    assert "relu computed by the tasks of conv's register blocks" in text
    _check(pipe, outputs, "folded")


def test_a_conv_read_elsewhere_keeps_its_buffer(tmp_path):
    """The conv an output too: its tasks still compute the relu, into and from its buffer."""
    outputs, conv = _layer("exported")
    pipe = _compiled(outputs, tmp_path)
    block = pipe.compiled.reductions["conv"].block
    assert block.epilogue == ("relu",) and not block.scratch
    _check(pipe, outputs, "exported")


def test_a_read_off_the_cell_is_not_folded(tmp_path):
    outputs, conv = _layer("shifted")
    pipe = _compiled(outputs, tmp_path)
    assert pipe.compiled.reductions["conv"].block.epilogue == ()
    assert ("conv", "relu") not in [g.stages for g in pipe.schedule.groups]
    _check(pipe, outputs, "shifted")


@pytest.mark.parametrize("schedule", ["naive", "group 0: conv, relu [untiled]"])
def test_naive_keeps_stages_apart_and_a_written_group_folds(schedule, tmp_path):
    outputs, conv = _layer("pointwise")
    given = schedule if schedule == "naive" else Schedule.parse(schedule)
    pipe = _compiled(outputs, tmp_path, given)
    folded = pipe.compiled.reductions["conv"].block.epilogue
    assert folded == (() if schedule == "naive" else ("relu",))
    _check(pipe, outputs, schedule)


def _epilogue_layer(how: str, exported=False):
    """(outputs, conv): the conv layer of _conv, then `out` of it by `how` (every form
    blocking.epilogue_on_vectors takes but "through double", which it does not); `out`'s
    variables are its own, not the conv's."""
    conv, bias, domain = _conv()
    scale = Parameter(Float, "scale")
    n2, y2, x2, o2 = (Variable(Int, v) for v in ("n2", "y2", "x2", "o2"))
    cell = conv(n2, y2, x2, o2)
    value = {
        "relu": Max(cell + bias(o2), 0.0),
        "clamp": Min(Max(cell * scale, -1.0), 1.0) + bias(o2) * 0.0,
        "arithmetic": (cell - bias(o2)) / 3.0 + (-cell) * Cast(Float, 2),
        "scalar first": Min(-0.0, cell) + Max(bias(o2), cell),
        "through double": Cast(Float, Cast(Double, cell) * 2.0) + bias(o2),
    }[how]
    out = Function(([n2, y2, x2, o2], domain), Float, "out")
    out.defn = [value]
    return ([out, conv] if exported else [out]), conv


def _arrays(rng, n, h, w, i, o):
    """Random layer inputs with NaN, zero and infinite values among them: a cell of the conv
    is NaN, exactly zero (ties of Min and Max with -0.0) or infinite somewhere."""
    inp = rng.standard_normal((n, h + 2, w + 2, i)).astype(np.float32)
    inp[:, : (h + 2) // 2, : (w + 2) // 2] = 0.0
    inp.flat[rng.integers(0, inp.size, 3)] = np.nan
    inp.flat[rng.integers(0, inp.size, 2)] = np.inf
    bias = rng.standard_normal(o).astype(np.float32)
    bias[o // 2] = np.nan
    weight = rng.standard_normal((3, 3, i, o)).astype(np.float32)
    return {"inp": inp, "w": weight, "bias": bias}


@pytest.mark.parametrize("exported", [False, True])
@pytest.mark.parametrize("how", ["relu", "clamp", "arithmetic", "scalar first", "through double"])
def test_epilogues_on_vectors_equal_the_interpreter(how, exported, tmp_path, monkeypatch):
    """A folded stage of + - * /, Min, Max and negation over the conv's cell, reads along the
    channels and values the same in every lane is computed from each register block's
    accumulators once its last panel is in (one computed in double is not: from the task's
    cells);
    with small blocks, panels of the taps and channel counts that leave narrow and partial
    blocks, every result (NaN, infinities and ties with -0.0 among them) equals the
    interpreter's bit for bit on 1 and 2 threads, the conv an output too or not."""
    from polyimage.schedule import blocking

    monkeypatch.setattr(blocking, "WIDE_BLOCK_ROWS", 3)
    monkeypatch.setattr(blocking, "BLOCK_ROWS", 2)
    monkeypatch.setattr(blocking, "CHUNK_BLOCKS", 2)
    monkeypatch.setattr(blocking, "PANEL_DEPTH", 2)
    outputs, conv = _epilogue_layer(how, exported)
    pipe = _compiled(outputs, tmp_path, Schedule.parse("group 0: conv, out [untiled]"))
    block = pipe.compiled.reductions["conv"].block
    assert block.epilogue == ("out",) and block.in_registers == (how != "through double")
    assert block.panel_depth == 2  # the taps in two panels: the epilogue after the last
    where = "as it ends, in registers" if block.in_registers else "from its cells, in cache"
    assert where in pipe.report()
    assert ("*(pim_vecu *)&out[" in pipe.c_source) == block.in_registers
    rng = np.random.default_rng(11)
    scale = {"scale": np.float32(0.25)} if how == "clamp" else {}
    for n, h, w, i, o in [(1, 5, 7, 3, 17), (2, 4, 9, 2, 35), (1, 3, 4, 5, 3)]:
        arrays = {**_arrays(rng, n, h, w, i, o), **scale}
        want = polyimage.interpret(outputs, **arrays)
        for threads in (1, 2):
            got = pipe(**arrays, threads=threads)
            what = f"{how}, {n}x{h}x{w}x{i}x{o}, {threads} threads"
            assert_same(got, want, what, exact=True)


def test_rows_a_page_apart_keep_the_pass_over_the_cells(tmp_path):
    """In NCHW a block's rows are output channels, a plane apart: stored from registers they
    would scatter over as many pages, so the task's pass over its cells computes the relu
    (blocking.rows_adjacent), and the result is the interpreter's."""
    N, O, I, H, W = (Parameter(Int, n) for n in ("N", "O", "I", "H", "W"))
    inp = Image(Float, "inp", [N, I, H + 2, W + 2])
    w = Image(Float, "w", [O, I, 3, 3])
    bias = Image(Float, "bias", [O])
    n, o, y, x, c, dy, dx = (Variable(Int, v) for v in ("n", "o", "y", "x", "c", "dy", "dx"))
    domain = [Interval(Int, 0, d - 1) for d in (N, O, H, W)]
    taps = Interval(Int, 0, 2)
    conv = Reduction(
        ([n, o, y, x], domain), ([c, dy, dx], [Interval(Int, 0, I - 1), taps, taps]), Float, "conv"
    )
    conv.defn = [Reduce(conv(n, o, y, x), inp(n, c, y + dy, x + dx) * w(o, c, dy, dx), Op.Sum)]
    relu = Function(([n, o, y, x], domain), Float, "relu")
    relu.defn = [Max(conv(n, o, y, x) + bias(o), 0.0)]
    estimates = {"N": 1, "O": 32, "I": 8, "H": 64, "W": 64}
    options = Options(cache_dir=tmp_path)
    pipe = polyimage.compile([relu], estimates=estimates, options=options)
    block = pipe.compiled.reductions["conv"].block
    assert block.epilogue == ("relu",) and block.columns == 3 and not block.in_registers
    assert "relu computed by each task from its cells, in cache" in pipe.report()
    rng = np.random.default_rng(5)
    arrays = {
        "inp": rng.standard_normal((2, 3, 7, 21)).astype(np.float32),
        "w": rng.standard_normal((19, 3, 3, 3)).astype(np.float32),
        "bias": rng.standard_normal(19).astype(np.float32),
    }
    want = polyimage.interpret([relu], **arrays)
    for threads in (1, 2):
        assert_same(pipe(**arrays, threads=threads), want, f"NCHW, {threads}", exact=True)


@pytest.mark.parametrize("l2_kib", [256, 1024])
def test_auto_folds_a_window_sums_scaling_into_tasks_that_keep_their_cells(l2_kib, tmp_path):
    """A 5x5 window summed as a Reduction over a wide image, then scaled: `auto` prices the
    pair computed by the window's tasks (not only after its search: tiled together was the
    cheaper of what it knew), and a task takes the whole blocks of rows whose cells fit in
    half the L2, kept in a buffer of its thread's: no full buffer of the sums."""
    out = window_sum(scale=0.04)
    options = dataclasses.replace(
        pinned_options(l2_bytes=l2_kib * 1024, vector_bytes=64), cache_dir=tmp_path
    )
    pipe = polyimage.compile([out], estimates={"R": 1536, "C": 2560}, options=options)
    assert [g.stages for g in pipe.schedule.groups] == [("s", "out")]
    block = pipe.compiled.reductions["s"].block
    assert block.epilogue == ("out",) and block.scratch and block.rows_read_own
    assert block.chunk % block.height == 0
    assert block.chunk == block.height or block.chunk * 2560 * 4 <= l2_kib * 1024 // 2
    assert pipe.memory().all_full == 0
    assert "out computed by the tasks of s's register blocks" in pipe.report()
    rng = np.random.default_rng(11)
    for rows, cols in [(1, 1), (7, 45), (40, 131)]:
        arrays = {
            "img": rng.standard_normal((rows + 4, cols + 4)).astype(np.float32),
            "wt": rng.standard_normal((5, 5)).astype(np.float32),
        }
        want = polyimage.interpret([out], **arrays)
        for threads in (1, 2):
            got = pipe(**arrays, threads=threads)
            assert_same(got, want, f"{rows}x{cols}, {threads} threads", exact=True)
