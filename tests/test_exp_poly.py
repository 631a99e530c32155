"""Exp is our own polynomial (dsl.exp_poly): compiled and interpreted results agree to the bit
at every argument, it is within 1 ulp of the correctly rounded exp, and a loop that uses it
vectorizes (the C library's exp is a call per point)."""

import importlib.util
import platform
from fractions import Fraction

import numpy as np
import pytest

import polyimage
from polyimage import Double, Exp, Float, Function, Image, Int, Interval, Parameter, Variable
from polyimage.codegen.cexp import exp_functions, fma_function
from polyimage.codegen.cprint import print_c
from polyimage.codegen.ctree import Seq
from polyimage.dsl import exp_poly, libm
from polyimage.tools.vectorization import vectorization

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


X86 = platform.machine().lower() in ("x86_64", "amd64")
NO_FMA = pytest.param(
    Float, "x86-64", marks=pytest.mark.skipif(not X86, reason="x86-64 without FMA: an x86 host")
)


@pytest.mark.parametrize("typ, march", [(Float, None), (Double, None), NO_FMA])
def test_compiled_exp_equals_the_interpreter_to_the_bit(typ, march):
    """Natively, and for an x86-64 without the FMA instruction, where the float form's fused
    multiply-adds are emulated in double."""
    out = _exp_pipeline(typ)
    values = _arguments(typ.dtype)
    pipe = polyimage.compile([out], estimates={"N": len(values)}, march=march)
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
    """The C (codegen.cexp) names every constant of the NumPy form: both come from one
    description."""
    for c_type, form in (("double", exp_poly.DOUBLE), ("float", exp_poly.FLOAT)):
        source = print_c(Seq(exp_functions("e", c_type, "static inline"))).text
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


@pytest.mark.parametrize("lo, hi", [(0.3, 1.1), (-1.1, -0.3), (-104.0, -86.0), (80.0, 89.0)])
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


def _rounded_once(a, b, c) -> np.float32:
    """a * b + c computed exactly and rounded to the nearest float32 (ties to even)."""
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    near = np.float32(float(exact))
    candidates = [near, np.nextafter(near, np.float32(np.inf)), np.nextafter(near, -np.inf)]
    return min(
        candidates,
        key=lambda f: (abs(Fraction(float(f)) - exact), int(np.array(f).view(np.uint32)) & 1),
    )


def _fma_cases(rng, count=1500):
    """Random triples, and triples whose sum in double lands on a tie between two floats
    while the exact sum lies just off it (8^2 (1 - i^2 2^-46) + (2^30 + 2^7), scaled): there a
    product and a sum rounded in double, then to float, round the wrong way."""
    i = rng.integers(1, 300, count)
    scale = 2.0 ** rng.integers(-40, 40, count)
    sign = rng.choice([-1.0, 1.0], count)
    tie_a = 8 * (1 + i * 2.0**-23) * scale
    tie_b = 8 * (1 - i * 2.0**-23) * scale
    tie_c = sign * (2.0**30 + 2.0**7) * scale * scale
    random = rng.standard_normal((3, count)) * 10.0 ** rng.integers(-3, 4, (3, count))
    triples = np.concatenate([np.stack([tie_a, tie_b, tie_c]), random], axis=1)
    return triples.astype(np.float32)


def test_the_numpy_fused_multiply_add_rounds_once(rng):
    a, b, c = _fma_cases(rng)
    want = np.array([_rounded_once(*t) for t in zip(a, b, c)], np.float32)
    assert (exp_poly.fma32(a, b, c).view(np.uint32) == want.view(np.uint32)).all()
    twice = (a.astype(np.float64) * b + c).astype(np.float32)
    assert (twice != want).sum() >= len(a) // 3, "the ties must catch a double rounding"


@pytest.mark.skipif(not X86, reason="-mno-fma: an x86 host")
@pytest.mark.parametrize("flags", [["-mfma"], ["-march=x86-64", "-mno-fma"]])
def test_the_c_fused_multiply_add_rounds_once(rng, tmp_path, flags):
    """The instruction where the target has it, the emulation in double where not."""
    cffi = pytest.importorskip("cffi")
    ffi = cffi.FFI()
    ffi.cdef("void fma_all(const float *, const float *, const float *, float *, long);")
    source = print_c(fma_function("pim_fma", "static inline")).text + (
        "void fma_all(const float *a, const float *b, const float *c, float *o, long n)"
        " { for (long i = 0; i < n; i++) o[i] = pim_fma(a[i], b[i], c[i]); }"
    )
    ffi.set_source("_fma_check", "#include <stdint.h>\n" + source, extra_compile_args=flags)
    library = ffi.compile(tmpdir=str(tmp_path))
    spec = importlib.util.spec_from_file_location("_fma_check", library)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    a, b, c = _fma_cases(rng)
    out = np.empty_like(a)
    pointer = [ffi.cast("float *", ffi.from_buffer(v)) for v in (a, b, c, out)]
    module.lib.fma_all(*pointer, len(a))
    assert (out.view(np.uint32) == exp_poly.fma32(a, b, c).view(np.uint32)).all()
