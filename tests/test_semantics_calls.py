"""Calling a compiled pipeline: several outputs, threads, out=, non-contiguous inputs; and
the generated C, the same in every process."""

import subprocess
import sys

import numpy as np
import pytest
from helpers import box, child_env, grid, random_values, saturate, shifted
from oracle import assert_same, run_both

import polyimage
from polyimage import (
    Case,
    Cast,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Long,
    Max,
    Min,
    Op,
    Parameter,
    Reduce,
    Reduction,
    UShort,
    Variable,
)

# -- several outputs -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(13, 17), (1, 1)])
def test_two_outputs_in_order_and_an_output_consumed_by_another(rng, shape):
    R, C, x, y = grid()
    img = Image(Int, "img", [R, C])
    hidden = Function(([x, y], box(R, C)), Int, "hidden")
    hidden.defn = [img(x, y) + 1]
    twice = Function(([x, y], box(R, C)), Int, "twice")
    twice.defn = [hidden(x, y) * 2]
    summed = Function(([x, y], box(R, C)), Long, "summed")
    summed.defn = [twice(x, y) + twice(Max(x - 1, 0), y) + hidden(x, y)]
    a = random_values(rng, shape, Int, -1000, 1000)
    ref_twice = (a + 1) * 2
    ref_sum = (ref_twice + shifted(ref_twice, -1, 0) + a + 1).astype(np.int64)
    got = run_both([twice, summed], reference=(ref_twice, ref_sum), img=a)
    assert isinstance(got, tuple) and len(got) == 2
    assert got[0].dtype == np.int32 and got[1].dtype == np.int64
    got = run_both([summed, twice], reference=(ref_sum, ref_twice), img=a)
    assert got[0].dtype == np.int64 and got[1].dtype == np.int32
    interp = polyimage.interpret([summed, twice], img=a)
    assert isinstance(interp, tuple) and len(interp) == 2


# -- threads, out=, non-contiguous inputs ----------------------------------------------------------


def _blur_pipeline():
    R, C, x, y = grid()
    w = Parameter(Float, "w")
    img = Image(Float, "img", [R, C])
    bx = Function(([x, y], box(R, C)), Float, "bx")
    bx.defn = [img(x, Max(y - 1, 0)) * w + img(x, y) + img(x, Min(y + 1, C - 1)) * w]
    by = Function(([x, y], box(R, C)), Float, "by")
    by.defn = [bx(Max(x - 1, 0), y) * w + bx(x, y) + bx(Min(x + 1, R - 1), y) * w]
    b = Variable(Int, "b")
    hist = Reduction(([b], [Interval(Int, 0, 9)]), ([x, y], box(R, C)), Int, "hist")
    hist.defn = [Reduce(hist(Cast(Int, by(x, y) * 3)), 1, Op.Sum)]
    return by, hist


def _blur_reference(a, w):
    w = np.float32(w)
    bx = shifted(a, 0, -1) * w + a + shifted(a, 0, 1) * w
    by = shifted(bx, -1, 0) * w + bx + shifted(bx, 1, 0) * w
    bins = np.clip(saturate((by * np.float32(3)).ravel(), np.int32), 0, 9)
    return by, np.bincount(bins, minlength=10).astype(np.int32)


def test_threads_out_and_noncontiguous_inputs(rng):
    by, hist = _blur_pipeline()
    pipe = polyimage.compile([by, hist])
    big = random_values(rng, (140, 190), Float, 0, 1)
    a = np.ascontiguousarray(big[:67, :93])
    ref = _blur_reference(a, 0.3)
    one = pipe(img=a, w=0.3, threads=1)
    two = pipe(img=a, w=0.3, threads=2)
    for o, t, r in zip(one, two, ref):
        np.testing.assert_array_equal(o, t)  # bit-identical whatever the thread count
        assert_same(o, r)
    # out= fills preallocated arrays and returns them
    outs = (np.full((67, 93), -1, np.float32), np.full(10, -1, np.int32))
    got = pipe(img=a, w=0.3, out=outs, threads=2)
    assert got[0] is outs[0] and got[1] is outs[1]
    for o, r in zip(outs, ref):
        assert_same(o, r)
    # non-contiguous views: a transposed array, a strided slice
    transposed = np.ascontiguousarray(a.T).T
    assert not transposed.flags.c_contiguous
    sliced = big[::2, 1::2][:67, :93]
    assert not sliced.flags.c_contiguous
    for view in (transposed, sliced):
        expected = _blur_reference(np.ascontiguousarray(view), 0.3)
        got = run_both([by, hist], reference=expected, img=view, w=0.3)
        interp = polyimage.interpret([by, hist], img=view, w=0.3)
        for g, i in zip(got, interp):
            assert_same(g, i)
    assert not np.array_equal(_blur_reference(sliced, 0.3)[0], ref[0])


def test_out_for_single_output_overwrites_every_point(rng):
    """Uncovered points are written as 0 even into a preallocated array full of garbage."""
    R, C, x, y = grid()
    img = Image(UShort, "img", [R, C])
    f = Function(([x, y], box(R, C)), UShort, "f")
    f.defn = [Case(x < 2, img(x, y) + 1), Case(img(x, y) > 30000, 7)]
    pipe = polyimage.compile(f)
    a = random_values(rng, (13, 17), UShort)
    X = np.indices(a.shape)[0]
    ref = np.where(X < 2, a + np.uint16(1), np.where(a > 30000, 7, 0)).astype(np.uint16)
    out = np.full(a.shape, 12345, np.uint16)
    got = pipe(img=a, out=out, threads=2)
    assert got is out
    assert_same(out, ref)
    assert_same(polyimage.interpret(f, img=a), ref)


def test_threads_on_integer_pipeline(rng):
    R, C, x, y = grid()
    img = Image(Int, "img", [R, C])
    f = Function(([x, y], box(R, C)), Int, "f")
    f.defn = [img(x, y) * 3 - img(Max(x - 1, 0), y) / 2 + img(x, Min(y + 1, C - 1)) % 7]
    a = random_values(rng, (67, 93), Int, -(10**6), 10**6)
    ref = a * 3 - shifted(a, -1, 0) // 2 + shifted(a, 0, 1) % 7
    r1 = run_both(f, reference=ref, threads=1, img=a)
    r2 = run_both(f, reference=ref, threads=2, img=a)
    np.testing.assert_array_equal(r1, r2)


# -- determinism of the generated C ----------------------------------------------------------------

_SCRIPT = """
import sys
import polyimage
from polyimage import *
R, C = Parameter(Int, "R"), Parameter(Int, "C")
w = Parameter(Float, "w")
x, y, c, b = (Variable(Int, n) for n in "xycb")
img = Image(UChar, "img", [R, C, 3])
dom = [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]
gray = Function(([x, y], dom), Float, "gray")
gray.defn = [Cast(Float, img(x, y, 0)) * 0.25 + img(x, y, 1) * 0.5 + img(x, y, 2) * 0.25]
blur = Function(([x, y], dom), Float, "blur")
blur.defn = [Case(x % 2 == 0, gray(Max(x - 1, 0), y) * w + gray(x, y)),
             Select(y > 0, gray(x, y - 1), -gray(x, y)) / 3]
small = Function(([x, y], [Interval(Int, 0, (R - 1) / 2), Interval(Int, 0, C - 1)]), Short,
                 "small")
small.defn = [Min(Cast(Int, blur(2 * x, y)), 300) // -7 + Abs(Cast(Char, gray(2 * x, y)))]
hist = Reduction(([b], [Interval(Int, 0, 15)]), ([x, y], dom), UInt, "hist")
hist.defn = [Reduce(hist(Cast(Int, gray(x, y)) / 16), 1, Op.Sum)]
pipe = polyimage.compile([small, hist, blur])
sys.stdout.write(pipe.c_source)
"""


def test_c_source_is_deterministic_across_processes(tmp_path, monkeypatch):
    procs = []
    for k, seed in enumerate(("1", "2")):
        env = child_env(tmp_path / f"cache{k}", PYTHONHASHSEED=seed)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", _SCRIPT],
                env=env,
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
    sources = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
        sources.append(out)
    assert b"pipeline_small" in sources[0] and b"hist" in sources[0]
    assert sources[0] == sources[1]
    # and the same as a build in this process, from the same cache (its calibration, if any
    # test wrote one, sets what the plan costs)
    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(tmp_path / "cache0"))
    namespace = {}
    exec(
        compile(_SCRIPT.replace("sys.stdout.write(pipe.c_source)", ""), "<pipeline>", "exec"),
        namespace,
    )
    assert namespace["pipe"].c_source.encode() == sources[0]
