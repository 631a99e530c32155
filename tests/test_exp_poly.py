"""Exp is our own polynomial (dsl.exp_poly): compiled and interpreted results agree to the bit
at every argument, it is within 1 ulp of the correctly rounded exp, and a loop that uses it
vectorizes (the C library's exp is a call per point)."""

import numpy as np
import pytest

import polyimage
from polyimage import Double, Exp, Float, Function, Image, Int, Interval, Parameter, Variable
from polyimage.dsl import exp_poly, libm
from polyimage.vectorization import vectorization

SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 0.5, -0.5, 1.0, 88.72, 88.73]
SPECIALS += [-87.33, -103.97, -103.98, -150.0, 150.0, 709.78, 709.79, -708.4, -745.13, -745.14]
SPECIALS += [1100.0, -1100.0, 1e10, -1e10, np.log(2) / 2, -np.log(2) / 2]


def _arguments(dtype, count=200_000, seed=0):
    rng = np.random.default_rng(seed)
    wide = 760.0 if dtype == np.float64 else 110.0
    parts = [rng.uniform(-wide, wide, count), rng.uniform(-1, 1, count), rng.normal(0, 4, count)]
    return np.concatenate(parts + [np.array(SPECIALS)]).astype(dtype)


def _exp_pipeline(typ):
    N = Parameter(Int, "N")
    i = Variable(Int, "i")
    a = Image(typ, "a", [N])
    out = Function(([i], [Interval(Int, 0, N - 1)]), typ, "out")
    out.defn = [Exp(a(i))]
    return out


@pytest.mark.parametrize("typ", [Float, Double])
def test_compiled_exp_equals_the_interpreter_to_the_bit(typ):
    out = _exp_pipeline(typ)
    values = _arguments(typ.dtype)
    pipe = polyimage.compile([out], estimates={"N": len(values)})
    got = pipe(a=values, N=len(values))
    want = polyimage.interpret([out], a=values, N=len(values))
    bits = np.uint64 if typ is Double else np.uint32
    same = (got.view(bits) == want.view(bits)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), values[~same][:5]
    assert np.isnan(got[np.isnan(values)]).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_within_one_ulp_of_the_correctly_rounded_exp(dtype):
    x = _arguments(dtype, seed=1)
    ours = exp_poly.apply(x, dtype)
    with np.errstate(over="ignore"):  # past float's range: inf, as exp is
        exact = libm.library("exp", x).astype(dtype)  # correctly rounded in practice
    normal = np.isfinite(exact) & (exact >= np.finfo(dtype).tiny)
    error = np.abs(ours[normal].astype(np.float64) - exact[normal]) / np.spacing(exact[normal])
    assert error.max() <= 1.0
    assert (ours[np.isinf(exact)] == np.inf).all() and np.isinf(ours).sum() == np.isinf(exact).sum()
    subnormal = (exact > 0) & (exact < np.finfo(dtype).tiny)
    step = np.finfo(dtype).smallest_subnormal
    assert np.abs(ours[subnormal] - exact[subnormal]).max() <= step
    assert (ours[exact == 0] == 0).all() and np.isnan(ours[np.isnan(x)]).all()


def test_the_c_is_the_numpy_form():
    """The C names every constant of the NumPy form (a change to one must be made to both)."""
    for c_type, form in (("double", exp_poly.DOUBLE), ("float", exp_poly.FLOAT)):
        source = exp_poly.c_source("e", c_type)
        for value in form.coefficients + (form.ln2_hi, form.ln2_lo, form.shifter):
            assert float.hex(float(form.dtype(value))) in source
        assert f"{form.exponent_bits}u" in source


@pytest.mark.parametrize("typ", [Float, Double])
def test_a_loop_with_exp_vectorizes(typ):
    pipe = polyimage.compile([_exp_pipeline(typ)], schedule="naive")
    loop = next(v for v in vectorization(pipe) if v.stages == ("out",))
    assert loop.vectorized, loop.detail
    assert " exp(" not in pipe.c_source and "pim_exp_" in pipe.c_source


def _every_float(lo, hi):
    """Every float32 in [lo, hi] (lo, hi of one sign)."""
    a, b = (np.array(v, np.float32).view(np.uint32).astype(np.int64) for v in (lo, hi))
    return np.arange(min(a, b), max(a, b) + 1, dtype=np.int64).astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("lo, hi", [(0.25, 4.0), (-4.0, -0.25), (-104.0, -86.0), (80.0, 89.0)])
def test_float_exp_within_one_ulp_at_every_float_of_a_band(lo, hi):
    """The float polynomial is fitted, not Taylor's: every float of bands around the
    reduction's breakpoints, the largest results and the subnormal ones."""
    x = _every_float(lo, hi)
    ours = exp_poly.apply(x, np.float32).astype(np.float64)
    with np.errstate(over="ignore"):
        exact = np.exp(x.astype(np.float64)).astype(np.float32)
    tiny = np.finfo(np.float32).tiny
    normal = np.isfinite(exact) & (exact >= tiny)
    ulps = np.abs(ours[normal] - exact[normal]) / np.spacing(exact[normal]).astype(np.float64)
    assert ulps.max() <= 1.0
    below = exact < tiny
    steps = np.abs(ours[below] - exact[below]) / np.finfo(np.float32).smallest_subnormal
    assert steps.max(initial=0.0) <= 1.0
    assert (ours[np.isinf(exact)] == np.inf).all()
