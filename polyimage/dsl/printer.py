"""DSL-like text of expressions, for error messages and reports: the expression as the user
wrote it, so a read through a border (dsl.borders) shows as `mirror(img)(x - 1, y)` rather than
its folded indices, and a Cast that NumPy's promotion adds anyway is left out (`x * 0.5`). It
reads nodes by their class name and fields, so that expr (which prints through it) need not be
imported here."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .types import common_type


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

# the index function of each folding border mode (dsl.borders builds them, the printer reads
# them back as the border read)
FOLDS = {"mirror_index": "mirror", "reflect_index": "mirror_interior", "wrap_index": "wrap"}

_PREC = {"||": 1, "&&": 2, "cmp": 3, "+": 4, "-": 4, "*": 5, "/": 5, "//": 5, "%": 5}


def format_expr(e) -> str:
    return _fmt(e, 0)


class BorderRead(NamedTuple):
    """A read through a border as written: `mode(source, value, dims=dims)(*indices)`."""

    mode: str
    source: Any  # the Function read
    indices: tuple
    dims: tuple
    value: Any = None  # constant_exterior's value

    @property
    def border(self) -> str:
        """The border as written: `mirror(img)`, `constant_exterior(img, 0.5, dims=(1, 2))`."""
        value = self.value
        if type(value).__name__ == "Cast" and value.typ is self.source.typ:
            value = value.a  # constant_exterior's conversion to the source's type
        extra = "" if value is None else f", {_fmt(value, 0)}"
        if self.dims != tuple(range(len(self.indices))):
            extra += f", dims={self.dims}"
        return f"{self.mode}({self.source.name}{extra})"

    def __str__(self) -> str:
        return f"{self.border}({_args(self.indices)})"


def border_read(e) -> BorderRead | None:
    """The border read that `e` is, or None: a Reference whose indices a border folded into its
    source's domain (a Clamp, for repeat_edge, or an index function), or constant_exterior's
    Select of such a clamped read and its value."""
    kind = type(e).__name__
    if kind == "Select":
        return _constant_read(e)
    if kind != "Reference":
        return None
    unfolded = [_unfold(a, iv) for a, iv in zip(e.args, e.func.intervals)]
    modes = {u[0] for u in unfolded if u}
    if len(modes) != 1:
        return None
    indices = tuple(u[1] if u else a for u, a in zip(unfolded, e.args))
    return BorderRead(modes.pop(), e.func, indices, tuple(d for d, u in enumerate(unfolded) if u))


def _unfold(arg, iv):
    """(mode, index as written) where `arg` is a border's fold of an index into `iv`."""
    kind = type(arg).__name__
    if kind == "Call" and arg.fn in FOLDS:
        index, lo, hi = arg.args
        if _is_bound(lo, iv.lb) and _is_bound(hi, iv.ub):
            return FOLDS[arg.fn], _unwidened(index)
    if kind == "BinOp" and arg.op == "min" and _is_op(arg.a, "max"):
        if _is_bound(arg.a.b, iv.lb) and _is_bound(arg.b, iv.ub):
            return "repeat_edge", _unwidened(arg.a.a)
    return None


def _constant_read(e) -> BorderRead | None:
    """constant_exterior's read: one Select per extended dimension, the first outermost, each
    with the same value where its index is outside, around the clamped read of the source."""
    node, conds = e, []
    while type(node).__name__ == "Select" and node.b is e.b:
        conds.append(node.cond)
        node = node.a
    read = border_read(node) if type(node).__name__ == "Reference" else None
    if read is None or read.mode != "repeat_edge" or len(read.dims) != len(conds):
        return None
    for cond, d in zip(conds, read.dims):
        iv = read.source.intervals[d]
        if type(cond).__name__ != "Logic":
            return None
        low, high = cond.a, cond.b
        if not (
            all(type(s).__name__ == "Condition" and s.op == "<=" for s in (low, high))
            and _is_bound(low.lhs, iv.lb)
            and _is_bound(high.rhs, iv.ub)
        ):
            return None
    return read._replace(mode="constant_exterior", value=e.b)


def _is_op(e, op: str) -> bool:
    return type(e).__name__ == "BinOp" and e.op == op


def _is_bound(e, bound) -> bool:
    """Whether `e` is the interval bound `bound` itself, or it converted to another type."""
    return e is bound or (type(e).__name__ == "Cast" and e.a is bound)


def _unwidened(e):
    """`e` without an outer Cast that only widens an integer (the Cast a fold or a promotion
    adds to an index)."""
    if type(e).__name__ == "Cast" and e.a.typ.is_int and e.typ.is_int:
        if np.can_cast(e.a.typ.dtype, e.typ.dtype, "safe"):
            return e.a
    return e


def _paren(text: str, prec: int, outer: int) -> str:
    return f"({text})" if prec < outer else text


def _args(args) -> str:
    return ", ".join(_fmt(a, 0) for a in args)


def _as_written(a, b):
    """Operands `a` and `b` of a node that converted both to one type, each without a Cast
    that NumPy's promotion of the two as printed would add anyway."""
    a = _implied(a, b)
    return a, _implied(b, a)


def _implied(operand, other):
    """`operand` without its Cast where `inner op other` (numbers printed as Python literals)
    has the Cast's type anyway."""
    if type(operand).__name__ != "Cast":
        return operand
    printed = [
        (None, x.value) if type(x).__name__ == "Const" else (x.typ, 0) for x in (operand.a, other)
    ]
    (inner, inner_value), (typ, value) = printed
    if inner is None and typ is None:
        return operand
    try:
        common = common_type(inner, typ, inner_value, value)
    except TypeError:
        return operand
    return operand.a if common is operand.typ else operand


def _binop(e, outer):
    a, b = _as_written(e.a, e.b)
    if e.op in ("min", "max"):
        return f"{e.op.capitalize()}({_args((a, b))})"
    prec = _PREC[e.op]
    return _paren(f"{_fmt(a, prec)} {e.op} {_fmt(b, prec + 1)}", prec, outer)


def _condition(e, outer):
    prec = _PREC["cmp"]
    lhs, rhs = _as_written(e.lhs, e.rhs)
    return _paren(f"{_fmt(lhs, prec + 1)} {e.op} {_fmt(rhs, prec + 1)}", prec, outer)


def _logic(e, outer):
    prec = _PREC[e.op]
    word = "&" if e.op == "&&" else "|"
    return _paren(f"{_fmt(e.a, prec)} {word} {_fmt(e.b, prec + 1)}", prec, outer)


def _reference(e, outer):
    read = border_read(e)
    return str(read) if read else f"{e.func.name}({_args(e.args)})"


def _select(e, outer):
    read = border_read(e)
    return str(read) if read else f"Select({_args((e.cond, *_as_written(e.a, e.b)))})"


_FORMS = {
    "Const": lambda e, outer: repr(e.value),
    "Variable": lambda e, outer: e.name,
    "Parameter": lambda e, outer: e.name,
    "Reference": _reference,
    "BinOp": _binop,
    "Neg": lambda e, outer: f"-{_fmt(e.a, 6)}",
    "Call": lambda e, outer: (
        f"{e.fn if e.fn in INTEGER_OPS else e.fn.capitalize()}({_args(e.args)})"
    ),
    "Cast": lambda e, outer: f"Cast({e.typ}, {_fmt(e.a, 0)})",
    "Select": _select,
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
