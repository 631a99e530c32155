"""DSL-like text of expressions, for error messages and reports. It reads nodes by their class
name and fields only, so that expr (which prints through it) need not be imported here."""

from __future__ import annotations


class LazyText:
    """Text formatted only when an error message needs it (formatting every operand tree on
    every build would be quadratic)."""

    __slots__ = ("make",)

    def __init__(self, make):
        self.make = make

    def __str__(self):
        return self.make()

    def __format__(self, spec):
        return format(str(self), spec)


# the Calls of dsl.image_ops: they print under their own (lower-case) names, math functions
# capitalized (Sqrt)
INTEGER_OPS = ("saturating_add", "saturating_sub", "absd", "halving_add", "rounding_halving_add")

_PREC = {"||": 1, "&&": 2, "cmp": 3, "+": 4, "-": 4, "*": 5, "/": 5, "//": 5, "%": 5}


def format_expr(e) -> str:
    return _fmt(e, 0)


def _paren(text: str, prec: int, outer: int) -> str:
    return f"({text})" if prec < outer else text


def _args(args) -> str:
    return ", ".join(_fmt(a, 0) for a in args)


def _binop(e, outer):
    if e.op in ("min", "max"):
        return f"{e.op.capitalize()}({_args((e.a, e.b))})"
    prec = _PREC[e.op]
    return _paren(f"{_fmt(e.a, prec)} {e.op} {_fmt(e.b, prec + 1)}", prec, outer)


def _condition(e, outer):
    prec = _PREC["cmp"]
    return _paren(f"{_fmt(e.lhs, prec + 1)} {e.op} {_fmt(e.rhs, prec + 1)}", prec, outer)


def _logic(e, outer):
    prec = _PREC[e.op]
    word = "&" if e.op == "&&" else "|"
    return _paren(f"{_fmt(e.a, prec)} {word} {_fmt(e.b, prec + 1)}", prec, outer)


_FORMS = {
    "Const": lambda e, outer: repr(e.value),
    "Variable": lambda e, outer: e.name,
    "Parameter": lambda e, outer: e.name,
    "Reference": lambda e, outer: f"{e.func.name}({_args(e.args)})",
    "BinOp": _binop,
    "Neg": lambda e, outer: f"-{_fmt(e.a, 6)}",
    "Call": lambda e, outer: (
        f"{e.fn if e.fn in INTEGER_OPS else e.fn.capitalize()}({_args(e.args)})"
    ),
    "Cast": lambda e, outer: f"Cast({e.typ}, {_fmt(e.a, 0)})",
    "Select": lambda e, outer: f"Select({_args((e.cond, e.a, e.b))})",
    "Condition": _condition,
    "Logic": _logic,
    "Not": lambda e, outer: f"~({_fmt(e.a, 0)})",
}


def _fmt(e, outer: int) -> str:
    for cls in type(e).__mro__:
        form = _FORMS.get(cls.__name__)
        if form is not None:
            return form(e, outer)
    return object.__repr__(e)
