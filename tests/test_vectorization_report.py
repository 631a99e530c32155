"""pipe.report(vectorization=True): every innermost loop mapped to its stage, with whether gcc
vectorized it and why not."""

import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Select, Variable
from polyimage.vectorization import _loop_end, _messages, vectorization


def _pipeline():
    N = Parameter(Int, "N")
    i = Variable(Int, "i")
    a = Image(Float, "a", [N])
    table = Image(Int, "table", [256])
    smooth = Function(([i], [Interval(Int, 1, N - 2)]), Float, "smooth")
    smooth.defn = [(a(i - 1) + a(i) + a(i + 1)) * 0.5]
    looked = Function(([i], [Interval(Int, 1, N - 2)]), Float, "looked")
    # a read guarded by a data-dependent Select stays a branch: not vectorizable as written
    looked.defn = [Select(smooth(i) > 0.5, a(table(i % 256) % N), 0.0)]
    return looked


def test_every_innermost_loop_gets_a_verdict():
    pipe = polyimage.compile([_pipeline()], schedule="naive", inline=False)
    loops = vectorization(pipe)
    stages = [v.stages for v in loops]
    assert ("smooth",) in stages and ("looked",) in stages
    smooth = next(v for v in loops if v.stages == ("smooth",))
    assert smooth.vectorized and "vectorized using" in smooth.detail
    assert all(v.detail for v in loops)
    text = pipe.report(vectorization=True)
    assert "vectorization (innermost loops):" in text and "smooth (line" in text


def test_messages_and_loop_spans():
    log = (
        "# 1.20 s\ngcc ...\n"
        "kernel.c:12:5: optimized: loop vectorized using 32 byte vectors\n"
        "kernel.c:15:1: missed: not vectorized: control flow in loop.\n"
        "cffi wrappers:3:1: missed: not vectorized: unsupported data-type\n"
    )
    messages = _messages(log)
    assert messages == {
        12: [("optimized", "loop vectorized using 32 byte vectors")],
        15: [("missed", "not vectorized: control flow in loop.")],
    }
    source = ["for (;;)", "{", "  a;", "  { b; }", "}", "after"]
    assert _loop_end(source, 0) == 5


def test_a_gather_from_a_fixed_table_reports_its_int64_copy_unused():
    """A lookup in a table of constant bounds gets a 32-bit and an int64 copy of its loop
    (codegen.loops.WIDE_COPY); gcc removes the int64 one, which the report says is unused
    rather than not vectorized."""
    from polyimage import UChar
    from polyimage.vectorization import UNUSED_WIDE_COPY, describe

    N = Parameter(Int, "N")
    i, j, b = Variable(Int, "i"), Variable(Int, "j"), Variable(Int, "b")
    keys = Image(UChar, "keys", [N, N])
    lut = Function(([b], [Interval(Int, 0, 255)]), Float, "lut")
    lut.defn = [b * 0.5]
    rows = Interval(Int, 0, N - 1)
    out = Function(([i, j], [rows, rows]), Float, "out")
    out.defn = [lut(keys(i, j)) + 1.0]
    pipe = polyimage.compile([out], schedule="naive", inline=False, estimates={"N": 1000})
    verdicts = [v for v in vectorization(pipe) if v.stages == ("out",)]
    assert len(verdicts) == 2
    assert verdicts[0].vectorized and "vectorized using" in verdicts[0].detail
    assert verdicts[1].detail == UNUSED_WIDE_COPY
    assert "unused: the int64 copy" in describe(verdicts)
