"""DSL-like text of expressions, for error messages and reports."""
from __future__ import annotations

from . import expr as E

_PREC = {"||": 1, "&&": 2, "cmp": 3, "+": 4, "-": 4, "*": 5, "/": 5, "//": 5, "%": 5}


def format_expr(e) -> str:
    return _fmt(e, 0)


def _paren(text: str, prec: int, outer: int) -> str:
    return f"({text})" if prec < outer else text


def _fmt(e, outer: int) -> str:
    if isinstance(e, E.Const):
        return repr(e.value)
    if isinstance(e, E.Symbol):
        return e.name
    if isinstance(e, E.Reference):
        return f"{e.func.name}({', '.join(_fmt(a, 0) for a in e.args)})"
    if isinstance(e, E.BinOp):
        if e.op in ("min", "max"):
            return f"{e.op.capitalize()}({_fmt(e.a, 0)}, {_fmt(e.b, 0)})"
        prec = _PREC[e.op]
        text = f"{_fmt(e.a, prec)} {e.op} {_fmt(e.b, prec + 1)}"
        return _paren(text, prec, outer)
    if isinstance(e, E.Neg):
        return f"-{_fmt(e.a, 6)}"
    if isinstance(e, E.Call):
        return f"{e.fn.capitalize()}({', '.join(_fmt(a, 0) for a in e.args)})"
    if isinstance(e, E.Cast):
        return f"Cast({e.typ}, {_fmt(e.a, 0)})"
    if isinstance(e, E.Select):
        return f"Select({_fmt(e.cond, 0)}, {_fmt(e.a, 0)}, {_fmt(e.b, 0)})"
    if isinstance(e, E.Condition):
        prec = _PREC["cmp"]
        return _paren(f"{_fmt(e.lhs, prec + 1)} {e.op} {_fmt(e.rhs, prec + 1)}", prec, outer)
    if isinstance(e, E.Logic):
        prec = _PREC[e.op]
        word = "&" if e.op == "&&" else "|"
        return _paren(f"{_fmt(e.a, prec)} {word} {_fmt(e.b, prec + 1)}", prec, outer)
    if isinstance(e, E.Not):
        return f"~({_fmt(e.a, 0)})"
    return object.__repr__(e)
