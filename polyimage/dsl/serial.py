"""Expressions over parameters as JSON data and back: the extents, domains and constraints an
exported pipeline's manifest keeps, so that `polyimage.load` checks a call as `compile` does
without the pipeline's source."""

from __future__ import annotations

from . import expr as E
from .types import ALL_TYPES, Bool

_TYPES = {t.name: t for t in ALL_TYPES + (Bool,)}


def to_data(e: E.Expr):
    """`e` (constants, parameters, arithmetic, casts, calls, conditions) as nested lists."""
    if isinstance(e, E.Const):
        return ["const", e.value, e.typ.name]
    if isinstance(e, E.Parameter):
        return ["param", e.name]
    if isinstance(e, E.BinOp):
        return ["binop", e.op, to_data(e.a), to_data(e.b), e.typ.name]
    if isinstance(e, E.Neg):
        return ["neg", to_data(e.a)]
    if isinstance(e, E.Cast):
        return ["cast", e.typ.name, to_data(e.a)]
    if isinstance(e, E.Call):
        return ["call", e.fn, [to_data(a) for a in e.args], e.typ.name]
    if isinstance(e, E.Condition):
        return ["cond", to_data(e.lhs), e.op, to_data(e.rhs)]
    if isinstance(e, E.Logic):
        return ["logic", e.op, to_data(e.a), to_data(e.b)]
    if isinstance(e, E.Not):
        return ["not", to_data(e.a)]
    if isinstance(e, E.Select):
        return ["select", to_data(e.cond), to_data(e.a), to_data(e.b)]
    raise ValueError(f"{e} ({type(e).__name__}) cannot be kept: only parameter expressions can")


def from_data(data, params: dict) -> E.Expr:
    """The expression `data` (from to_data) with its parameters taken from `params` by name."""
    kind, *rest = data
    if kind == "const":
        return E.Const(rest[0], _TYPES[rest[1]])
    if kind == "param":
        return params[rest[0]]
    if kind == "binop":
        op, a, b, typ = rest
        return E.BinOp(op, from_data(a, params), from_data(b, params), _TYPES[typ])
    if kind == "neg":
        return E.Neg(from_data(rest[0], params))
    if kind == "cast":
        return E.Cast(_TYPES[rest[0]], from_data(rest[1], params))
    if kind == "call":
        fn, args, typ = rest
        return E.Call(fn, tuple(from_data(a, params) for a in args), _TYPES[typ])
    if kind == "cond":
        return E.Condition(from_data(rest[0], params), rest[1], from_data(rest[2], params))
    if kind == "logic":
        return E.Logic(rest[0], from_data(rest[1], params), from_data(rest[2], params))
    if kind == "not":
        return E.Not(from_data(rest[0], params))
    if kind == "select":
        cond, a, b = (from_data(x, params) for x in rest)
        return E.Select(cond, a, b)  # type: ignore[arg-type]  # Select checks it
    raise ValueError(f"not an expression: {data!r}")


def type_named(name: str):
    """The ScalarType called `name` ("Int", "Float", ...)."""
    return _TYPES[name]
