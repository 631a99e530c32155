"""Defects an audit found, each pinned: Min and Max on signed zeros and NaN, math functions
bit-exact with the interpreter, the thread count's range, and positional call arguments."""

import numpy as np
import pytest

import polyimage
from polyimage import (
    Cast,
    Cos,
    Double,
    Exp,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Log,
    Max,
    Min,
    Op,
    Parameter,
    Pow,
    Reduce,
    Reduction,
    Sin,
    UShort,
    Variable,
)
from polyimage.graph.arguments import MAX_THREADS

SCHEDULES = ("naive", "auto")


def _line(typ=Float, name="f"):
    N, x = Parameter(Int, "N"), Variable(Int, "x")
    a, b = Image(typ, "a", [N]), Image(typ, "b", [N])
    return N, x, a, b, (lambda t=typ: Function(([x], [Interval(Int, 0, N - 1)]), t, name))


def _same_bits(got, want):
    """Equal to the bit, signed zeros included; any NaN equals any NaN (payloads and their
    signs follow the order operands meet in, which NumPy's loops do not fix)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    bits = f"u{got.itemsize}"
    assert np.array_equal(got[~nan].view(bits), want[~nan].view(bits)), (got, want)


@pytest.mark.parametrize("typ", [Float, Double])
@pytest.mark.parametrize("fn", [Min, Max])
def test_min_max_of_signed_zeros_and_nan_match_numpy(typ, fn):
    """NumPy returns the second operand on a tie: 1 / Min(0., -0.) is -inf, not inf."""
    _, x, a, b, stage = _line(typ)
    f = stage()
    f.defn = [1.0 / fn(a(x), b(x))]
    first = np.array([0.0, -0.0, 0.0, -0.0, np.nan, 1.0, np.nan, -0.0], typ.dtype)
    second = np.array([-0.0, 0.0, 0.0, -0.0, 1.0, np.nan, np.nan, np.nan], typ.dtype)
    want = polyimage.interpret([f], a=first, b=second)
    assert np.signbit(want[0]) and not np.signbit(want[1])  # numpy's choice, by construction
    for schedule in SCHEDULES:
        _same_bits(polyimage.compile([f], schedule=schedule)(a=first, b=second), want)


@pytest.mark.parametrize("op", [Op.Min, Op.Max])
def test_min_max_reductions_of_signed_zeros(op):
    N, x, a, _, _ = _line()
    k = Variable(Int, "k")
    r = Reduction(([x], [Interval(Int, 0, 1)]), ([k], [Interval(Int, 0, N - 1)]), Float, "r")
    r.defn = [Reduce(r(k % 2), a(k), op)]
    r.default = 0.0
    inv = Function(([x], [Interval(Int, 0, 1)]), Float, "inv")
    inv.defn = [1.0 / r(x)]
    data = np.array([-0.0, 0.0, 0.0, -0.0, -0.0, 0.0], np.float32)
    want = polyimage.interpret([inv], a=data)
    _same_bits(polyimage.compile([inv])(a=data), want)


def test_folding_constants_follows_numpy_on_ties_and_nan():
    assert np.signbit(Min(0.0, -0.0).value) and not np.signbit(Min(-0.0, 0.0).value)
    assert np.signbit(Max(0.0, -0.0).value)
    assert np.isnan(Min(float("nan"), 1.0).value) and np.isnan(Min(1.0, float("nan")).value)
    assert np.isnan(Log(-1.0).value) and Exp(1000.0).value == float("inf")


@pytest.mark.parametrize("typ", [Float, Double])
def test_math_functions_are_bit_exact(typ):
    """exp, log, pow, sin and cos give the interpreter's bits (the C library's double-precision
    functions, rounded once to float), whatever the input, special values included."""
    _, x, a, b, stage = _line(typ)
    f = stage()
    f.defn = [Exp(a(x)) + Log(b(x)) * Sin(a(x)) - Pow(b(x), a(x)) / Cos(b(x))]
    g = stage(Double) if typ is Float else stage()
    g.name = "g"
    rng = np.random.default_rng(11)
    first = np.concatenate(
        [rng.normal(0, 4, 4000), [0.0, -0.0, np.inf, -np.inf, np.nan, 88.7, -103.9, 1e-40]]
    ).astype(typ.dtype)
    second = np.concatenate(
        [rng.uniform(-3, 40, 4000), [1.0, 0.0, -1.0, np.inf, 2.0, 1e30, -0.0, np.nan]]
    ).astype(typ.dtype)
    want = polyimage.interpret([f], a=first, b=second)
    for schedule in SCHEDULES:
        _same_bits(polyimage.compile([f], schedule=schedule)(a=first, b=second), want)


def test_integer_results_of_math_functions_are_exact():
    """A uint16 table from Exp and Pow (as in a local Laplacian's remapping) is bit-exact."""
    _, x, a, _, stage = _line()
    f = stage(UShort)
    f.defn = [Cast(UShort, Exp(a(x) * 0.37) * 40.0 + Pow(a(x), 1.7))]
    data = np.linspace(0, 22, 18432, dtype=np.float32)
    want = polyimage.interpret([f], a=data)
    for schedule in SCHEDULES:
        np.testing.assert_array_equal(polyimage.compile([f], schedule=schedule)(a=data), want)


@pytest.fixture(scope="module")
def doubler():
    _, x, a, _, stage = _line()
    f = stage()
    f.defn = [a(x) * 2]
    return f, polyimage.compile([f])


@pytest.mark.parametrize(
    "threads", [0, -1, MAX_THREADS + 1, 40000, 100000, 2**31, 2**64, 2.0, True, "4"]
)
def test_thread_counts_out_of_range_are_refused(doubler, threads):
    _, pipe = doubler
    with pytest.raises(ValueError, match="threads must be an integer from 1 to"):
        pipe(a=np.ones(5, np.float32), threads=threads)


def test_many_threads_agree_with_one(doubler):
    _, pipe = doubler
    data = np.arange(1000, dtype=np.float32)
    one = pipe(a=data, threads=1)
    np.testing.assert_array_equal(pipe(a=data, threads=64), one)
    np.testing.assert_array_equal(pipe(a=data, threads=np.int64(3)), one)


def test_one_image_by_position(doubler):
    f, pipe = doubler
    data = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(pipe(data), data * 2)
    np.testing.assert_array_equal(pipe(data, threads=2), data * 2)
    out = np.empty(6, np.float32)
    assert pipe(data, out=out) is out
    with pytest.raises(TypeError, match=r"by name: pipe\(a=\.\.\., N=\.\.\.\)"):
        pipe(data, a=data)
    with pytest.raises(TypeError, match=r"2 positional"):
        pipe(data, out)


def test_several_images_are_refused_by_position():
    _, x, a, b, stage = _line()
    f = stage()
    f.defn = [a(x) + b(x)]
    pipe = polyimage.compile([f])
    data = np.ones(4, np.float32)
    with pytest.raises(TypeError, match=r"pipe\(a=\.\.\., b=\.\.\., N=\.\.\.\)"):
        pipe(data, data)
    np.testing.assert_array_equal(pipe(a=data, b=data), data * 2)
