"""The DSL's expression base class and the nodes its operators build (arithmetic, math calls,
casts, conditions), with NumPy-style typing fixed at construction; NumPy's functions on
expressions build the same nodes.

Python numbers are *weak* constants (NEP 50): `Float * 0.5` stays Float, `Int * 0.5` is Double.
NumPy scalars are *strong*, as in NEP 50: `np.float32(0.5)` is a Float constant and
`Float * np.float64(0.5)` is Double. Every node carries `typ`, a ScalarType; weak constants carry
`typ=None` until they meet a typed operand, at which point they are converted to that operand's
type.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, NoReturn, Union

import numpy as np

from .literal_folding import WEAK_MATH, fold
from .printer import LazyText, format_expr
from .refusals import NoPythonValue, numpy_operand, refuse_numpy
from .types import (
    CONDITION_AS_NUMBER,
    Bool,
    Double,
    ScalarType,
    TypeLike,
    arithmetic_type,
    as_type,
    common_type,
    literal_type,
    type_of_dtype,
)

if TYPE_CHECKING:
    from typing_extensions import TypeGuard

CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")
ARITH_OPS = ("+", "-", "*", "/", "//", "%", "min", "max")
MATH_FUNCS = ("sqrt", "exp", "log", "pow", "sin", "cos", "floor", "abs")


class Expr(NoPythonValue):
    """Base class of every DSL expression; arithmetic operators build new nodes (what Python
    operations it refuses is in NoPythonValue)."""

    __slots__ = ("typ",)
    typ: ScalarType  # None only on a weak literal (is_weak)

    def children(self) -> tuple:
        return ()

    def __abs__(self) -> Expr:
        return Call.make("abs", self)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy ufuncs on expressions: the ones with a DSL counterpart build it."""
        return _apply_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        """NumPy functions on expressions: `numpy.clip` is Clamp, others are refused."""
        return _apply_function(func, args, kwargs)

    def __add__(self, other: ExprLike) -> Expr:
        return BinOp.make("+", self, other)

    def __radd__(self, other: ExprLike) -> Expr:
        return BinOp.make("+", other, self)

    def __sub__(self, other: ExprLike) -> Expr:
        return BinOp.make("-", self, other)

    def __rsub__(self, other: ExprLike) -> Expr:
        return BinOp.make("-", other, self)

    def __mul__(self, other: ExprLike) -> Expr:
        return BinOp.make("*", self, other)

    def __rmul__(self, other: ExprLike) -> Expr:
        return BinOp.make("*", other, self)

    def __truediv__(self, other: ExprLike) -> Expr:
        return BinOp.make("/", self, other)

    def __rtruediv__(self, other: ExprLike) -> Expr:
        return BinOp.make("/", other, self)

    def __floordiv__(self, other: ExprLike) -> Expr:
        return BinOp.make("//", self, other)

    def __rfloordiv__(self, other: ExprLike) -> Expr:
        return BinOp.make("//", other, self)

    def __mod__(self, other: ExprLike) -> Expr:
        return BinOp.make("%", self, other)

    def __rmod__(self, other: ExprLike) -> Expr:
        return BinOp.make("%", other, self)

    def __neg__(self) -> Expr:
        return Neg.make(self)

    def __pos__(self) -> Expr:
        return self

    def __lt__(self, other: ExprLike) -> Condition:
        return Condition(self, "<", other)

    def __le__(self, other: ExprLike) -> Condition:
        return Condition(self, "<=", other)

    def __gt__(self, other: ExprLike) -> Condition:
        return Condition(self, ">", other)

    def __ge__(self, other: ExprLike) -> Condition:
        return Condition(self, ">=", other)

    def __eq__(self, other: ExprLike) -> Condition:  # type: ignore[override]  # as NumPy's ==
        return Condition(self, "==", other)

    def __ne__(self, other: ExprLike) -> Condition:  # type: ignore[override]  # as NumPy's !=
        return Condition(self, "!=", other)

    __hash__ = object.__hash__

    def __str__(self):
        return format_expr(self)

    def __repr__(self):
        return f"<{type(self).__name__} {self}>"


# what the DSL takes where it takes a value: an expression, a Python number (a weak literal)
# or a NumPy scalar
ExprLike = Union[Expr, int, float, np.number]


def to_expr(value: ExprLike) -> Expr:
    """Turn a Python number into a weak constant and a NumPy scalar into a constant of its own
    type (strong, as NEP 50 has it); pass expressions through."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"a boolean {value!r} cannot be a DSL value; use a Condition")
    if isinstance(value, np.generic) and value.dtype.kind in "iuf":
        try:
            typ = type_of_dtype(value.dtype)
        except TypeError:
            raise TypeError(
                f"the NumPy scalar {value!r} has a dtype ({value.dtype}) polyimage "
                "has no type for; convert it with float() or int()"
            ) from None
        return Const(value.item(), typ)  # type: ignore[arg-type]  # kind "iuf": not complex
    if isinstance(value, numbers.Integral):
        return Const(int(value))
    if isinstance(value, numbers.Real):
        return Const(float(value))
    raise TypeError(f"cannot use {value!r} ({type(value).__name__}) in a DSL expression")


class Const(Expr):
    """A number. `typ=None` marks a weak Python literal whose type comes from context."""

    __slots__ = ("value",)
    value: Any  # an int, or a float for a float type

    def __init__(self, value: int | float, typ: ScalarType | None = None):
        self.typ = typ  # type: ignore[assignment]  # None marks a weak literal
        if typ is None:
            self.value = value
        elif typ.is_float:
            self.value = float(typ.dtype.type(value))
        else:
            self.value = int(value)

    @property
    def is_weak(self) -> bool:
        return self.typ is None


def is_weak(e: Expr) -> TypeGuard[Const]:
    return isinstance(e, Const) and e.typ is None


def weak_kind_type(e: Const) -> ScalarType:
    """The type a weak literal takes on its own (NumPy's defaults: int64 or float64)."""
    return literal_type(e.value)


def strong(e: Expr) -> Expr:
    """A typed version of `e` (weak literals take NumPy's default types)."""
    return Const(e.value, weak_kind_type(e)) if is_weak(e) else e


def convert_weak(e: Expr, typ: ScalarType, context: str) -> Expr:
    """Give weak literal `e` the type `typ`, refusing integer literals that do not fit."""
    if not is_weak(e):
        return e
    if typ.is_int:
        if isinstance(e.value, float):
            raise TypeError(
                f"float literal {e.value!r} cannot take integer type {typ} in `{context}`"
            )
        if not typ.min_value() <= e.value <= typ.max_value():
            raise TypeError(
                f"literal {e.value} does not fit {typ} in `{context}`; Cast the "
                "other operand to a wider type first"
            )
    return Const(e.value, typ)


def operand_type(a: Expr, b: Expr) -> ScalarType:
    """The common type of two operands under NumPy 2 rules with weak Python scalars."""
    return common_type(a.typ, b.typ, _literal(a), _literal(b))


def _literal(e: Expr) -> float:
    return e.value if is_weak(e) else 0


def computed(e: Expr) -> Expr:
    """`e` in the type it is computed in: a Half value widened to Float (types.arithmetic_type),
    a weak literal in its default type."""
    e = strong(e)
    typ = arithmetic_type(e.typ)
    return e if typ is e.typ else Cast(typ, e)


def check_number(e: Expr, what: str, op: str):
    """Refuse a Condition where `op` needs a number (`what` names the operand)."""
    if e.typ is Bool:
        raise TypeError(f"{what} of `{op}` is a Condition; {CONDITION_AS_NUMBER}")


class BinOp(Expr):
    """Arithmetic on two operands of the same type `typ` (operands are converted on build)."""

    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a: Expr, b: Expr, typ: ScalarType):
        self.op, self.a, self.b, self.typ = op, a, b, typ

    def children(self):
        return (self.a, self.b)

    @staticmethod
    def make(op: str, a, b) -> Expr:
        a, b = to_expr(a), to_expr(b)
        check_number(a, "left operand", op)
        check_number(b, "right operand", op)
        if is_weak(a) and is_weak(b) and not (op in "/%" and b.value == 0):
            return Const(fold(op, a.value, b.value))
        typ = operand_type(a, b)
        if op == "/" and typ.is_int:
            op = "//"
        context = LazyText(lambda: f"{a} {op} {b}")
        return BinOp(op, convert_operand(a, typ, context), convert_operand(b, typ, context), typ)


def convert_operand(e: Expr, typ: ScalarType, context) -> Expr:
    """Convert operand `e` to `typ`: a weak literal takes the type, a typed one gets a Cast."""
    if is_weak(e):
        return convert_weak(e, typ, context)
    return e if e.typ is typ else Cast(typ, e)


class Neg(Expr):
    __slots__ = ("a",)

    def __init__(self, a: Expr):
        self.a, self.typ = a, a.typ

    def children(self):
        return (self.a,)

    @staticmethod
    def make(a) -> Expr:
        a = to_expr(a)
        check_number(a, "operand", "-")
        return Const(-a.value) if is_weak(a) else Neg(computed(a))


class Call(Expr):
    """A math function; results on integer arguments are Double (floor and abs keep the type)."""

    __slots__ = ("fn", "args")

    def __init__(self, fn: str, args: tuple, typ: ScalarType):
        self.fn, self.args, self.typ = fn, args, typ

    def children(self):
        return self.args

    @staticmethod
    def make(fn: str, *operands: ExprLike) -> Expr:
        arity = 2 if fn == "pow" else 1
        if len(operands) != arity:
            raise TypeError(f"{fn.capitalize()} takes {arity} argument(s), got {len(operands)}")
        args = [to_expr(a) for a in operands]
        if all(is_weak(a) for a in args):
            value = WEAK_MATH[fn](*(a.value for a in args))  # type: ignore[attr-defined]  # all weak: Consts
            return Const(value if fn in ("abs", "floor") else float(value))
        for a in args:
            check_number(a, "argument", fn)
        if len(args) == 2:
            typ = operand_type(*args)
            context = LazyText(lambda: f"{fn}({args[0]}, {args[1]})")
            args = [convert_operand(a, typ, context) for a in args]
        else:
            args = [computed(args[0])]
            typ = args[0].typ
        if fn not in ("abs", "floor") and typ.is_int:
            typ = Double
            args = [convert_operand(a, Double, fn) for a in args]
        return Call(fn, tuple(args), typ)


class Cast(Expr):
    """Conversion to `typ`: float to int truncates toward zero, saturates, NaN gives 0; to
    Half rounds to nearest even (beyond the largest Half, 65504, to infinity). Between
    integer types it wraps, as NumPy's `astype` does.

    Args:
        typ: the type to convert to (`Int`, `Float`, `UChar`, ...).
        a: the value to convert: an expression, a number, or a Condition (true is 1,
            false 0; `Select(cond, 1, 0)` says the same).
    """

    __slots__ = ("a",)

    def __init__(self, typ: TypeLike, a: ExprLike):
        self.typ = as_type(typ)
        self.a = strong(to_expr(a))

    def children(self):
        return (self.a,)


class BoolExpr(Expr):
    """Base of conditions: combine with `&`, `|` and `~`."""

    __slots__ = ()

    def __and__(self, other: BoolExpr) -> Logic:
        return Logic("&&", self, other)

    def __or__(self, other: BoolExpr) -> Logic:
        return Logic("||", self, other)

    def __invert__(self) -> Not:
        return Not(self)


class Condition(BoolExpr):
    """`Condition(lhs, op, rhs)` with op in < <= > >= == !=; operands compared in a common type.

    Python's comparisons build the same (`x < 5` is `Condition(x, "<", 5)`); combine
    Conditions with `&` (and), `|` (or) and `~` (not). A Condition is not a number: use it
    in a Case, a Select or a Cast (`Select(cond, 1, 0)`).

    Args:
        lhs: the left operand, an expression or a number.
        op: one of `"<"`, `"<="`, `">"`, `">="`, `"=="`, `"!="`.
        rhs: the right operand; both are converted to their common type, as `+` converts
            them.

    Raises:
        ValueError: `op` is not a comparison.
        TypeError: an operand is not a number (a Condition, say).
    """

    __slots__ = ("lhs", "op", "rhs")

    def __init__(self, lhs: ExprLike, op: str, rhs: ExprLike):
        if op not in CMP_OPS:
            raise ValueError(f"Condition operator must be one of {', '.join(CMP_OPS)}, got {op!r}")
        lhs, rhs = to_expr(lhs), to_expr(rhs)
        check_number(lhs, "left side", op)
        check_number(rhs, "right side", op)
        typ = operand_type(lhs, rhs)
        context = LazyText(lambda: f"{lhs} {op} {rhs}")
        self.lhs, self.op, self.rhs = (
            convert_operand(lhs, typ, context),
            op,
            convert_operand(rhs, typ, context),
        )
        self.typ = Bool

    def children(self):
        return (self.lhs, self.rhs)


class Logic(BoolExpr):
    """`a && b` or `a || b`; the right side is evaluated only where it decides the result."""

    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a, b):
        for side in (a, b):
            if not isinstance(side, BoolExpr):
                raise TypeError(f"`&` and `|` combine Conditions, got `{side}`")
        self.op, self.a, self.b, self.typ = op, a, b, Bool

    def children(self):
        return (self.a, self.b)


class Not(BoolExpr):
    __slots__ = ("a",)

    def __init__(self, a):
        if not isinstance(a, BoolExpr):
            raise TypeError(f"`~` negates a Condition, got `{a}`")
        self.a, self.typ = a, Bool

    def children(self):
        return (self.a,)


# -- NumPy functions on expressions ------------------------------------------------------------


def _binary(op: str):
    """The builder of `a op b`."""
    return lambda a, b: BinOp.make(op, a, b)


def _call(fn: str):
    """The builder of the math function `fn` (as Abs, Sqrt, ... build it)."""
    return lambda *args: Call.make(fn, *args)


def _comparison(op: str):
    """The builder of the Condition `a op b`."""
    return lambda a, b: Condition(a, op, b)


_UFUNCS = {
    np.add: _binary("+"),
    np.subtract: _binary("-"),
    np.multiply: _binary("*"),
    np.true_divide: _binary("/"),
    np.floor_divide: _binary("//"),
    np.remainder: _binary("%"),
    np.negative: Neg.make,
    np.positive: to_expr,
    np.less: _comparison("<"),
    np.less_equal: _comparison("<="),
    np.greater: _comparison(">"),
    np.greater_equal: _comparison(">="),
    np.equal: _comparison("=="),
    np.not_equal: _comparison("!="),
    np.minimum: _binary("min"),
    np.maximum: _binary("max"),
    np.absolute: _call("abs"),
    np.sqrt: _call("sqrt"),
    np.exp: _call("exp"),
    np.log: _call("log"),
    np.sin: _call("sin"),
    np.cos: _call("cos"),
    np.floor: _call("floor"),
    np.power: _call("pow"),
}


def _refuse(name: str, operands) -> NoReturn:
    """Refuse numpy.`name`, showing the first expression among `operands`."""
    refuse_numpy(name, next((v for v in operands if isinstance(v, Expr)), None))


def _apply_ufunc(ufunc, method: str, inputs: tuple, kwargs: dict):
    """`ufunc(*inputs)` as a DSL expression (np.minimum is Min, np.sqrt is Sqrt, ...)."""
    name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    build = _UFUNCS.get(ufunc)
    if build is None or method != "__call__":
        _refuse(name, (*inputs, *kwargs.values()))
    if kwargs:
        raise TypeError(
            f"numpy.{name} on DSL expressions takes no keyword arguments, got {', '.join(kwargs)}"
        )
    return build(*(numpy_operand(v, name) for v in inputs))


def _apply_function(func, args: tuple, kwargs: dict):
    """NumPy's array functions on expressions: numpy.clip is Clamp, the others are refused."""
    if func is not np.clip:
        _refuse(func.__name__, (*args, *kwargs.values()))
    extra = dict(kwargs)
    lo = extra.pop("a_min", extra.pop("min", args[1] if len(args) > 1 else None))
    hi = extra.pop("a_max", extra.pop("max", args[2] if len(args) > 2 else None))
    if len(args) > 3 or extra:
        raise TypeError("numpy.clip on a DSL expression takes (e, lo, hi) only; it is Clamp")
    if lo is None and hi is None:
        raise TypeError("numpy.clip needs a lower or an upper bound")
    e = to_expr(numpy_operand(args[0], "clip"))
    if lo is not None:
        e = BinOp.make("max", e, numpy_operand(lo, "clip"))
    if hi is not None:
        e = BinOp.make("min", e, numpy_operand(hi, "clip"))
    return e
