"""exp of our own: a range reduction and a polynomial with only +, * and bit operations,
computed here for NumPy and described (a Form per precision) for the C that codegen.cexp
writes, in double for Double values and in float for Float ones. Both do the same IEEE
operations in the same order, so compiled and interpreted results agree to the bit; unlike
the C library's `exp`, the C has no call and no branch, so loops that use it vectorize (a
Float exp at the width of floats).

exp(x) = 2^k * exp(r), k = round(x / ln 2), r = x - k ln 2 (in two parts, the first exact),
exp(r) on |r| <= ln 2 / 2 by a polynomial (Horner): in double its Taylor series of degree 13;
in float 1 + r + r^2 q(r) with q of degree 4 fitted to exp's relative error (least squares at
Chebyshev points, coefficients rounded to float). The float form does its multiply-adds fused
(one rounding each: `fmaf`, an instruction wherever the target has one, an exact emulation in
double elsewhere and in NumPy), which makes a Float exp about a third cheaper than with
separate products and sums: at each of the 2.2e9 floats in [-104, 89] it is within 1 ulp of
the correctly rounded exp and rounds 99.5% of them correctly. 2^k is applied in two halves,
so results that overflow give inf and those that underflow round once into the subnormals.
Measured against the correctly rounded exp (tests/test_exp_poly.py): within 1 ulp in double
and in float.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def taylor(degree: int) -> tuple:
    """exp's Taylor series to `degree`: 1/n! from n = degree down to 0."""
    return tuple(1.0 / math.factorial(n) for n in range(degree, -1, -1))


@dataclass(frozen=True)
class Form:
    """The constants of one precision."""

    dtype: type
    c_type: str
    limit: float  # past it every result is 0 or inf; the clamp keeps 2^k's halves normal
    ln2_hi: float  # few significant bits: k * ln2_hi is exact
    ln2_lo: float
    shifter: float  # 1.5 * 2^mantissa bits: adding it rounds to an integer in the low bits
    mantissa: int
    bias: int
    polynomial: tuple  # exp(r)'s coefficients from the highest power of r down to r^0
    fused: bool = False  # multiply-adds rounded once (fmaf); only the float form: see fma32

    @property
    def coefficients(self) -> tuple:
        """`polynomial`, rounded to the precision."""
        return tuple(float(self.dtype(c)) for c in self.polynomial)

    @property
    def degree(self) -> int:
        return len(self.polynomial) - 1

    @property
    def bits(self) -> type:
        """The unsigned integer of the same width (its signed twin: `signed`)."""
        return np.dtype(f"u{np.dtype(self.dtype).itemsize}").type

    @property
    def signed(self) -> type:
        return np.dtype(f"i{np.dtype(self.dtype).itemsize}").type

    @property
    def shifter_bits(self) -> int:
        return int(np.array(self.shifter, self.dtype).view(self.bits))

    @property
    def exponent_bits(self) -> int:
        """What subtracted from kd's bits leaves m = k + 2 * bias: m >> 1 and m - (m >> 1) are
        then the biased exponents of 2^k's two halves (k rounds down and up in them)."""
        return self.shifter_bits - 2 * self.bias


DOUBLE = Form(
    np.float64,
    "double",
    1100.0,
    6.93147180369123816490e-01,
    1.90821492927058770002e-10,
    6755399441055744.0,
    52,
    1023,
    taylor(13),
)
FLOAT = Form(
    np.float32,
    "float",
    150.0,
    0.693145751953125,
    1.428606765330187045e-06,
    12582912.0,
    23,
    127,
    (
        float.fromhex("0x1.687c22p-10"),
        float.fromhex("0x1.123b8ep-7"),
        float.fromhex("0x1.555b58p-5"),
        float.fromhex("0x1.55548ep-3"),
        float.fromhex("0x1.fffff8p-2"),
        1.0,
        1.0,
    ),
    fused=True,
)
FORMS = {np.dtype(np.float64): DOUBLE, np.dtype(np.float32): FLOAT}


def form_of(c_type: str) -> Form:
    """The form of a C type, double or float."""
    return DOUBLE if c_type == "double" else FLOAT


def fma32(a, b, c) -> np.ndarray:
    """float32 a * b + c rounded once, as C's fmaf, for arrays of any shape: the product is
    exact in double and so is the sum's error (TwoSum); rounding the sum to float can differ
    from one rounding only where the sum lies on a tie between two floats (its low 28 bits
    clear), and there it is rounded to odd first."""
    a, b, c = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b, c))
    p = a * b
    with np.errstate(all="ignore"):
        total = np.asarray(p + c)
        tie = np.flatnonzero((total.view(np.uint64) & np.uint64((1 << 28) - 1)) == 0)
        if tie.size:
            tp, tq = (np.broadcast_to(v, total.shape).ravel()[tie] for v in (p, c))
            ts = total.ravel()[tie]
            v = ts - tp
            e = (tp - (ts - v)) + (tq - v)
            bits = ts.view(np.uint64).copy()
            odd = (e != 0) & ((bits & np.uint64(1)) == 0)
            up = (e > 0) == (ts > 0)
            bits[odd & up] += np.uint64(1)
            bits[odd & ~up] -= np.uint64(1)
            flat = total.ravel().copy()
            flat[tie] = bits.view(np.float64)
            total = flat.reshape(total.shape)
        return total.astype(np.float32)


def apply(x, dtype=np.float64) -> np.ndarray:
    """exp of an array (any shape) in `dtype` (float64 or float32), bit for bit as the C of
    codegen.cexp for that type."""
    f = FORMS[np.dtype(dtype)]
    t = f.dtype
    x = np.asarray(x, dtype=t)  # np.where below makes new arrays: the input stays as it is

    def madd(a, b, c):
        return fma32(a, b, c) if f.fused else a * b + c

    with np.errstate(all="ignore"):
        x = np.where(x < t(-f.limit), t(-f.limit), x)
        x = np.where(x > t(f.limit), t(f.limit), x)
        kd = madd(x, t(1 / math.log(2)), t(f.shifter))
        k = kd - t(f.shifter)
        r = madd(-k, t(f.ln2_hi), x)
        r = madd(-k, t(f.ln2_lo), r)
        coefficients = f.coefficients
        p = np.full_like(r, coefficients[0])
        for c in coefficients[1:]:
            p = madd(p, r, t(c))
        m = (kd.view(f.bits) - f.bits(f.exponent_bits)).view(f.signed)
        h = m >> 1
        s1 = (h.view(f.bits) << f.bits(f.mantissa)).view(t)
        s2 = ((m - h).view(f.bits) << f.bits(f.mantissa)).view(t)
        return p * s1 * s2


def operations(c_type: str) -> int:
    """The operations of one exp in vector lanes (clamps, reduction, Horner, scaling), for the
    cost model."""
    form = form_of(c_type)
    return (13 + form.degree) if form.fused else (16 + 2 * form.degree)


def scalar(x: float) -> float:
    """exp of a Python number, in double."""
    return float(apply(np.float64(x)))
