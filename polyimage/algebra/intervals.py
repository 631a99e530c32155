"""Interval bounds of integer expressions: given a (low, high) pair of expressions per variable,
the (low, high) of an index expression, exact for sums, constant scaling, floor division by a
constant and Min/Max; `%` by a constant gives the remainder's range. Bounds are Long DSL
expressions, so they can be evaluated with NumPy or printed as C."""

from __future__ import annotations

from ..dsl import expr as E


def as_long(e):
    """`e` as a Long expression (a Cast unless it already is one)."""
    return e if e.typ is E.Long else E.Cast(E.Long, e)


def constant_bounds(interval) -> tuple | None:
    """(lo, hi) of a domain Interval whose bounds are both integer constants, else None."""
    lb, ub = interval.lb, interval.ub
    if isinstance(lb, E.Const) and isinstance(ub, E.Const):
        if isinstance(lb.value, int) and isinstance(ub.value, int):
            return lb.value, ub.value
    return None


def index_interval(e, env, interval):
    """(low, high) of integer expression `e` when its variables range over `env`; the whole
    producer interval where it is not affine."""
    try:
        return _interval(e, env)
    except _NotMonotone:
        return as_long(interval.lb), as_long(interval.ub)


class _NotMonotone(Exception):
    pass


def _interval(e, env):
    if isinstance(e, E.Const) and isinstance(e.value, int):
        c = E.Const(e.value, E.Long)
        return c, c
    if isinstance(e, E.Parameter) and e.typ.is_int:
        return as_long(e), as_long(e)
    if isinstance(e, E.Variable) and id(e) in env:
        return env[id(e)]
    if (
        isinstance(e, E.Cast)
        and e.typ.is_int
        and e.a.typ.is_int
        and e.typ.max_value() >= e.a.typ.max_value()
        and e.typ.min_value() <= e.a.typ.min_value()
    ):
        return _interval(e.a, env)
    if isinstance(e, E.Neg):
        lo, hi = _interval(e.a, env)
        return -hi, -lo
    if isinstance(e, E.BinOp):
        return _binop_interval(e, env)
    raise _NotMonotone(str(e))


def _binop_interval(e, env):
    if e.op in ("+", "-", "min", "max"):
        (alo, ahi), (blo, bhi) = _interval(e.a, env), _interval(e.b, env)
        if e.op == "+":
            return alo + blo, ahi + bhi
        if e.op == "-":
            return alo - bhi, ahi - blo
        combine = E.Min if e.op == "min" else E.Max
        return combine(alo, blo), combine(ahi, bhi)
    const, other = (e.a, e.b) if isinstance(e.a, E.Const) else (e.b, e.a)
    if not (isinstance(const, E.Const) and isinstance(const.value, int)):
        raise _NotMonotone(str(e))
    k = const.value
    if e.op == "*":
        lo, hi = _interval(other, env)
        return (lo * k, hi * k) if k >= 0 else (hi * k, lo * k)
    if e.op == "//" and const is e.b and k != 0:
        lo, hi = _interval(e.a, env)
        return (lo // k, hi // k) if k > 0 else (hi // k, lo // k)
    if e.op == "%" and const is e.b and k != 0:
        return E.Const(min(0, k + 1), E.Long), E.Const(max(0, k - 1), E.Long)
    raise _NotMonotone(str(e))
