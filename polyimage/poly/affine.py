"""Which index expressions are (quasi-)affine in Variables and integer Parameters.

Affine indices are checked statically against the producer's domain; every other index
(data-dependent ones above all) is clamped to that domain at run time.
"""
from __future__ import annotations

from ..dsl import expr as E


def _is_const(e) -> bool:
    return isinstance(e, E.Const) and isinstance(e.value, int)


def _widening(cast: E.Cast) -> bool:
    src, dst = cast.a.typ, cast.typ
    return (src.is_int and dst.is_int and dst.min_value() <= src.min_value()
            and dst.max_value() >= src.max_value())


def is_affine(e: E.Expr) -> bool:
    """True when `e` is built from Variables, integer Parameters and integer constants with
    + - (negation), multiplication by a constant, // and % by a nonzero constant, Min, Max and
    widening integer casts."""
    if _is_const(e) or (isinstance(e, E.Symbol) and e.typ.is_int):
        return True
    if isinstance(e, E.Neg):
        return is_affine(e.a)
    if isinstance(e, E.Cast):
        return _widening(e) and is_affine(e.a)
    if isinstance(e, E.BinOp):
        if e.op in ("+", "-", "min", "max"):
            return is_affine(e.a) and is_affine(e.b)
        if e.op == "*":
            return (_is_const(e.a) and is_affine(e.b)) or (_is_const(e.b) and is_affine(e.a))
        if e.op in ("//", "%"):
            return _is_const(e.b) and e.b.value != 0 and is_affine(e.a)
    return False
