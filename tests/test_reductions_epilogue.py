"""A stage over a blocked Reduction's cells (a conv layer's bias and ReLU) computed by the
tasks of its register blocks, from each task's cells while they are in cache
(schedule.blocking.folds_into_tasks; issue 52): `auto` joins it to the Reduction's group, the
Reduction then needs no full buffer where nothing else reads it, and every result equals the
interpreter's bit for bit, at odd sizes and on 1 and 2 threads."""

import numpy as np
import pytest
from oracle import assert_same

import polyimage
from polyimage import (
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


def _layer(how: str):
    """(outputs, conv): a 3x3 conv layer in NHWC, then `relu` of it plus a bias: at its own
    point ("pointwise"), one column on ("shifted"), or with the conv an output too
    ("exported")."""
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
    relu = Function(([n, y, x, o], domain), Float, "relu")
    column = Min(x + 1, W - 1) if how == "shifted" else x
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
    assert "relu computed by each task from its cells" in text
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
