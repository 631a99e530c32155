"""The C of our exp from its description (dsl.exp_poly's Form: constants, range, polynomial):
a range reduction and a Horner polynomial with no call and no branch, and for the float form
the fused multiply-add it calls. It does the NumPy form's IEEE operations in the same order."""

from __future__ import annotations

import math

import numpy as np

from ..dsl.exp_poly import FLOAT, Form, form_of
from .ctext import copy_bits
from .ctree import BRACE_ON_HEAD, ONE_LINE, Assign, Declare, Directive, Function, Return

# where the target has a fused multiply-add instruction
_HAS_FMA = "defined(__FP_FAST_FMAF) || defined(__FMA__) || defined(__aarch64__)"


def fma_function(name: str, qualifiers: str) -> Function:
    """`qualifiers float name(float a, float b, float c)`: a * b + c rounded once, as fmaf: the
    instruction where the target has one; elsewhere the exact product plus c in double (s,
    with its error e by TwoSum), rounded to float (f), which differs from one rounding only
    where s lies on the tie between f and its neighbour m = s + (s - f) while e leans to m (e * d
    cannot underflow: both are at least 2^-345). Compares combined without branches: it
    vectorizes on any x86-64."""
    body = (
        Directive(f"#if {_HAS_FMA}"),
        Return("__builtin_fmaf(a, b, c)"),
        Directive("#else"),
        Declare(
            "double", (("p", "(double)a * (double)b"), ("q", "c"), ("s", "p + q"), ("v", "s - p"))
        ),
        Declare("double", (("e", "(p - (s - v)) + (q - v)"),)),
        Declare("double", (("f", "(double)(float)s"), ("d", "s - f"), ("m", "s + d"))),
        Return("(float)((m != f) & ((double)(float)m == m) & (e * d > 0.0) ? m : f)"),
        Directive("#endif"),
    )
    params = ("float a", "float b", "float c")
    return Function("float", name, params, body, qualifiers=qualifiers, form=BRACE_ON_HEAD)


def exp_functions(name: str, c_type: str, qualifiers: str) -> tuple:
    """The C function `qualifiers c_type name(c_type x)` (c_type double or float), after the
    fused multiply-add it calls (`name`_fma) for the float form."""
    form = form_of(c_type)
    t = form.c_type
    u = f"{np.dtype(form.bits).name}_t"
    s = u[1:]

    def lit(value):
        return _literal(form, value)

    def madd(a, b, c):
        return f"{name}_fma({a}, {b}, {c})" if form.fused else f"{a} * {b} + {c}"

    def msub(k, constant, x):
        return f"{name}_fma(-{k}, {constant}, {x})" if form.fused else f"{x} - {k} * {constant}"

    first, *rest = form.coefficients
    body = (
        Assign("x", f"x < {lit(-form.limit)} ? {lit(-form.limit)} : x"),
        Assign("x", f"x > {lit(form.limit)} ? {lit(form.limit)} : x"),
        Declare(t, (("kd", madd("x", lit(1 / math.log(2)), lit(form.shifter))),)),
        Declare(t, (("k", f"kd - {lit(form.shifter)}"),)),
        Declare(t, (("r", msub("k", lit(form.ln2_hi), "x")),)),
        Assign("r", msub("k", lit(form.ln2_lo), "r")),
        Declare(t, (("p", lit(first)),)),
        *(Assign("p", madd("p", "r", lit(c))) for c in rest),
        Declare(u, (("b", None),)),
        copy_bits("b", "kd"),
        Declare(s, (("m", f"({s})(b - ({u}){form.exponent_bits}u)"), ("h", "m >> 1"))),
        Declare(
            u, (("e1", f"({u})h << {form.mantissa}"), ("e2", f"({u})(m - h) << {form.mantissa}"))
        ),
        Declare(t, (("s1", None), ("s2", None))),
        copy_bits("s1", "e1"),
        copy_bits("s2", "e2"),
        Return("p * s1 * s2"),
    )
    exp = Function(t, name, (f"{t} x",), body, qualifiers=qualifiers, form=ONE_LINE)
    return (fma_function(f"{name}_fma", qualifiers), exp) if form.fused else (exp,)


def _literal(form: Form, value: float) -> str:
    return float.hex(float(form.dtype(value))) + ("f" if form is FLOAT else "")
