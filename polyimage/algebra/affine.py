"""Which index expressions are (quasi-)affine in Variables and integer Parameters.

Affine indices are checked statically against the producer's domain; every other index
(data-dependent ones above all) is clamped to that domain at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..dsl import expr as E

if TYPE_CHECKING:
    from typing_extensions import TypeGuard


def _is_const(e: E.Expr) -> TypeGuard[E.Const]:
    return isinstance(e, E.Const) and isinstance(e.value, int)


def _widening(cast: E.Cast) -> bool:
    src, dst = cast.a.typ, cast.typ
    return (
        src.is_int
        and dst.is_int
        and dst.min_value() <= src.min_value()
        and dst.max_value() >= src.max_value()
    )


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


def data_dependent(ref: E.Reference) -> bool:
    """True when some index of the read `ref` is not affine (a table lookup, a clamped or
    computed index)."""
    return not all(is_affine(a) for a in ref.args)


def linear_form(e: E.Expr):
    """(symbol, a, b) when `e` is `a*s + b` for one integer Symbol s and integer constants,
    a != 0 (through negation and integer casts); None otherwise."""
    if isinstance(e, E.Symbol) and e.typ.is_int:
        return e, 1, 0
    if isinstance(e, E.Neg):
        inner = linear_form(e.a)
        return inner and (inner[0], -inner[1], -inner[2])
    if isinstance(e, E.Cast) and e.typ.is_int and e.a.typ.is_int:
        return linear_form(e.a)
    if not (isinstance(e, E.BinOp) and e.op in ("+", "-", "*")):
        return None
    if _is_const(e.b):
        inner, k, const_left = linear_form(e.a), e.b.value, False
    elif _is_const(e.a):
        inner, k, const_left = linear_form(e.b), e.a.value, True
    else:
        return None
    if inner is None:
        return None
    symbol, a, b = inner
    if e.op == "*":
        return (symbol, a * k, b * k) if k != 0 else None
    if e.op == "+":
        return symbol, a, b + k
    return (symbol, -a, k - b) if const_left else (symbol, a, b - k)


def coefficient(e, var):
    """The coefficient of `var` in `e` when `e` is affine in it through + - and constant
    multiples (0 when `var` does not occur), else None."""
    if not any(n is var for n in E.walk(e)):
        return 0
    if e is var:
        return 1
    if isinstance(e, E.Neg):
        inner = coefficient(e.a, var)
        return None if inner is None else -inner
    if isinstance(e, E.Cast) and e.typ.is_int and e.a.typ.is_int:
        return coefficient(e.a, var)
    if not isinstance(e, E.BinOp) or e.op not in ("+", "-", "*"):
        return None
    a, b = coefficient(e.a, var), coefficient(e.b, var)
    if a is None or b is None:
        return None
    if e.op == "+":
        return a + b
    if e.op == "-":
        return a - b
    constant = [x.value for x in (e.a, e.b) if isinstance(x, E.Const)]
    return (a + b) * constant[0] if constant and isinstance(constant[0], int) else None
