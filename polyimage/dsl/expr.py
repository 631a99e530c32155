"""Expression trees of the DSL, with NumPy-style typing fixed at construction.

Python numbers are *weak* constants (NEP 50): `Float * 0.5` stays Float, `Int * 0.5` is Double.
NumPy scalars are *strong*, as in NEP 50: `np.float32(0.5)` is a Float constant and
`Float * np.float64(0.5)` is Double. Every node carries `typ`, a ScalarType; weak constants carry
`typ=None` until they meet a typed operand, at which point they are converted to that operand's
type.
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from . import libm
from .printer import format_expr
from .types import Bool, Double, Long, ScalarType, as_type, promote, type_of_dtype

__all__ = [
    "Expr",
    "Const",
    "Symbol",
    "Variable",
    "Parameter",
    "BinOp",
    "Neg",
    "Call",
    "Cast",
    "Select",
    "Condition",
    "Logic",
    "Not",
    "Reference",
    "to_expr",
    "Min",
    "Max",
    "Clamp",
    "Abs",
    "Sqrt",
    "Exp",
    "Log",
    "Pow",
    "Sin",
    "Cos",
    "Floor",
    "Powf",
    "Sqrtf",
    "Expf",
    "Logf",
    "walk",
    "free_symbols",
    "references",
]

CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")
ARITH_OPS = ("+", "-", "*", "/", "//", "%", "min", "max")
MATH_FUNCS = ("sqrt", "exp", "log", "pow", "sin", "cos", "floor", "abs")


class Expr:
    """Base class of every DSL expression; arithmetic operators build new nodes."""

    __slots__ = ("typ",)

    def children(self) -> tuple:
        return ()

    def __bool__(self):
        raise TypeError(
            f"the DSL expression `{self}` has no truth value: use Condition, "
            "Select or Case instead of Python's `if`, `and`, `or` or chained "
            "comparisons, and Min, Max or Clamp instead of Python's `min` and `max`"
        )

    def __int__(self):
        raise TypeError(
            f"the DSL expression `{self}` has no Python value (it is computed when "
            "the pipeline runs), so it cannot be a Python int, a list index or a "
            "range() bound: use Cast(Int, e) to convert it inside the DSL"
        )

    __index__ = __int__

    def __float__(self):
        raise TypeError(
            f"the DSL expression `{self}` has no Python value (it is computed when "
            "the pipeline runs): use Cast(Float, e) to convert it, and the DSL's "
            "Sqrt, Exp, Log, Sin, Cos, Floor instead of the `math` module"
        )

    def __round__(self, ndigits=None):
        raise TypeError(
            f"round() does not apply to the DSL expression `{self}`: use "
            "Floor(e + 0.5) to round to the nearest integer, or Cast(Int, e) to "
            "truncate toward zero"
        )

    def __abs__(self):
        return Abs(self)

    def __pow__(self, other):
        raise TypeError(
            f"`**` is not a DSL operator (in `{self} ** {other}`): use Pow(a, b), "
            "which computes in floating point, or repeated `*`"
        )

    def __rpow__(self, other):
        raise TypeError(
            f"`**` is not a DSL operator (in `{other} ** {self}`): use Pow(a, b), "
            "which computes in floating point, or repeated `*`"
        )

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy ufuncs on expressions: the ones with a DSL counterpart build it."""
        return _apply_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        """NumPy functions on expressions: `numpy.clip` is Clamp, others are refused."""
        return _apply_function(func, args, kwargs)

    def __add__(self, other):
        return BinOp.make("+", self, other)

    def __radd__(self, other):
        return BinOp.make("+", other, self)

    def __sub__(self, other):
        return BinOp.make("-", self, other)

    def __rsub__(self, other):
        return BinOp.make("-", other, self)

    def __mul__(self, other):
        return BinOp.make("*", self, other)

    def __rmul__(self, other):
        return BinOp.make("*", other, self)

    def __truediv__(self, other):
        return BinOp.make("/", self, other)

    def __rtruediv__(self, other):
        return BinOp.make("/", other, self)

    def __floordiv__(self, other):
        return BinOp.make("//", self, other)

    def __rfloordiv__(self, other):
        return BinOp.make("//", other, self)

    def __mod__(self, other):
        return BinOp.make("%", self, other)

    def __rmod__(self, other):
        return BinOp.make("%", other, self)

    def __neg__(self):
        return Neg.make(self)

    def __pos__(self):
        return self

    def __lt__(self, other):
        return Condition(self, "<", other)

    def __le__(self, other):
        return Condition(self, "<=", other)

    def __gt__(self, other):
        return Condition(self, ">", other)

    def __ge__(self, other):
        return Condition(self, ">=", other)

    def __eq__(self, other):
        return Condition(self, "==", other)

    def __ne__(self, other):
        return Condition(self, "!=", other)

    __hash__ = object.__hash__

    def __str__(self):
        return format_expr(self)

    def __repr__(self):
        return f"<{type(self).__name__} {self}>"


def to_expr(value) -> Expr:
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
        return Const(value.item(), typ)
    if isinstance(value, numbers.Integral):
        return Const(int(value))
    if isinstance(value, numbers.Real):
        return Const(float(value))
    raise TypeError(f"cannot use {value!r} ({type(value).__name__}) in a DSL expression")


class Const(Expr):
    """A number. `typ=None` marks a weak Python literal whose type comes from context."""

    __slots__ = ("value",)

    def __init__(self, value, typ: ScalarType | None = None):
        self.typ = typ
        if typ is None:
            self.value = value
        elif typ.is_float:
            self.value = float(typ.dtype.type(value))
        else:
            self.value = int(value)

    @property
    def is_weak(self) -> bool:
        return self.typ is None


def is_weak(e: Expr) -> bool:
    return isinstance(e, Const) and e.typ is None


def weak_kind_type(e: Const) -> ScalarType:
    """The type a weak literal takes on its own (NumPy's defaults: int64 or float64)."""
    return Double if isinstance(e.value, float) else Long


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
    if is_weak(a) and is_weak(b):
        return promote(weak_kind_type(a), weak_kind_type(b))
    if is_weak(a):
        a, b = b, a
    if not is_weak(b):
        return promote(a.typ, b.typ)
    if a.typ is Bool:
        raise TypeError("a Condition cannot be used as a number; wrap it in Select or Cast")
    if isinstance(b.value, float) and a.typ.is_int:
        return Double
    return a.typ


class Symbol(Expr):
    """A named scalar: a loop Variable or a pipeline Parameter."""

    __slots__ = ("name",)

    def __init__(self, typ, name: str):
        self.typ = as_type(typ)
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"{type(self).__name__} name must be an identifier, got {name!r}")
        self.name = name


class Variable(Symbol):
    """A dimension variable of a Function (`Variable(Int, "x")`)."""

    __slots__ = ()

    def __init__(self, typ, name: str):
        super().__init__(typ, name)
        if not self.typ.is_int:
            raise TypeError(f"Variable {name} must have an integer type, not {self.typ}")


class Parameter(Symbol):
    """A scalar argument of the pipeline: integer ones size images, float ones are weights."""

    __slots__ = ()


def _check_number(e: Expr, what: str, op: str):
    if e.typ is Bool:
        raise TypeError(f"{what} of `{op}` is a Condition; use Select(cond, 1, 0) for a number")


def _fold(op: str, a, b):
    if op == "/":
        op = "//" if isinstance(a, int) and isinstance(b, int) else "/"
    fns = {
        "+": lambda: a + b,
        "-": lambda: a - b,
        "*": lambda: a * b,
        "/": lambda: a / b,
        "//": lambda: a // b,
        "%": lambda: a % b,
        "min": lambda: a if a < b or a != a else b,
        "max": lambda: a if a > b or a != a else b,
    }  # numpy.minimum/maximum on ties, NaN
    return fns[op]()


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
        _check_number(a, "left operand", op)
        _check_number(b, "right operand", op)
        if is_weak(a) and is_weak(b) and not (op in "/%" and b.value == 0):
            return Const(_fold(op, a.value, b.value))
        typ = operand_type(a, b)
        if op == "/" and typ.is_int:
            op = "//"
        context = _Lazy(lambda: f"{a} {op} {b}")
        return BinOp(op, _as(a, typ, context), _as(b, typ, context), typ)


class _Lazy:
    """Text formatted only when an error message needs it (formatting every operand tree on
    every build would be quadratic)."""

    __slots__ = ("make",)

    def __init__(self, make):
        self.make = make

    def __str__(self):
        return self.make()

    def __format__(self, spec):
        return format(str(self), spec)


def _as(e: Expr, typ: ScalarType, context) -> Expr:
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
        _check_number(a, "operand", "-")
        return Const(-a.value) if is_weak(a) else Neg(a)


class Call(Expr):
    """A math function; results on integer arguments are Double (floor and abs keep the type)."""

    __slots__ = ("fn", "args")

    def __init__(self, fn: str, args: tuple, typ: ScalarType):
        self.fn, self.args, self.typ = fn, args, typ

    def children(self):
        return self.args

    @staticmethod
    def make(fn: str, *args) -> Expr:
        arity = 2 if fn == "pow" else 1
        if len(args) != arity:
            raise TypeError(f"{fn.capitalize()} takes {arity} argument(s), got {len(args)}")
        args = [to_expr(a) for a in args]
        if all(is_weak(a) for a in args):
            value = _WEAK_MATH[fn](*(a.value for a in args))
            return Const(value if fn in ("abs", "floor") else float(value))
        for a in args:
            _check_number(a, "argument", fn)
        if len(args) == 2:
            typ = operand_type(*args)
            context = _Lazy(lambda: f"{fn}({args[0]}, {args[1]})")
            args = [_as(a, typ, context) for a in args]
        else:
            args = [strong(args[0])]
            typ = args[0].typ
        if fn not in ("abs", "floor") and typ.is_int:
            typ = Double
            args = [_as(a, Double, fn) for a in args]
        return Call(fn, tuple(args), typ)


_WEAK_MATH = {
    "abs": abs,
    "sqrt": lambda a: math.sqrt(a) if a >= 0 else math.nan,
    "floor": math.floor,
    **{fn: functools.partial(libm.scalar, fn) for fn in libm.FUNCTIONS},
}


class Cast(Expr):
    """Conversion to `typ`: float to int truncates toward zero, saturates, NaN gives 0."""

    __slots__ = ("a",)

    def __init__(self, typ, a):
        self.typ = as_type(typ)
        self.a = strong(to_expr(a))

    def children(self):
        return (self.a,)


class Select(Expr):
    """`cond ? a : b`; only the chosen operand is evaluated."""

    __slots__ = ("cond", "a", "b")

    def __init__(self, cond, a, b):
        if not isinstance(cond, (Condition, Logic, Not)):
            raise TypeError(f"Select needs a Condition as its first argument, got `{cond}`")
        a, b = to_expr(a), to_expr(b)
        _check_number(a, "second argument", "Select")
        _check_number(b, "third argument", "Select")
        self.typ = operand_type(a, b)
        context = _Lazy(lambda: f"Select({cond}, {a}, {b})")
        self.cond, self.a, self.b = cond, _as(a, self.typ, context), _as(b, self.typ, context)

    def children(self):
        return (self.cond, self.a, self.b)


class BoolExpr(Expr):
    """Base of conditions: combine with `&`, `|` and `~`."""

    __slots__ = ()

    def __and__(self, other):
        return Logic("&&", self, other)

    def __or__(self, other):
        return Logic("||", self, other)

    def __invert__(self):
        return Not(self)


class Condition(BoolExpr):
    """`Condition(lhs, op, rhs)` with op in < <= > >= == !=; operands compared in a common type."""

    __slots__ = ("lhs", "op", "rhs")

    def __init__(self, lhs, op: str, rhs):
        if op not in CMP_OPS:
            raise ValueError(f"Condition operator must be one of {', '.join(CMP_OPS)}, got {op!r}")
        lhs, rhs = to_expr(lhs), to_expr(rhs)
        _check_number(lhs, "left side", op)
        _check_number(rhs, "right side", op)
        typ = operand_type(lhs, rhs)
        context = _Lazy(lambda: f"{lhs} {op} {rhs}")
        self.lhs, self.op, self.rhs = _as(lhs, typ, context), op, _as(rhs, typ, context)
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


class Reference(Expr):
    """`f(i, j)`: the value of stage `f` at a point; indices must be integer expressions."""

    __slots__ = ("func", "args")

    def __init__(self, func, args):
        self.func = func
        args = tuple(strong(to_expr(a)) for a in args)
        if len(args) != func.ndim:
            raise TypeError(
                f"{func.name} has {func.ndim} dimension(s) but is referenced with "
                f"{len(args)} index(es) in {func.name}({', '.join(map(str, args))})"
            )
        for a in args:
            if not a.typ.is_int:
                raise TypeError(
                    f"index `{a}` of {func.name} has type {a.typ}; indices must be "
                    "integers (use Cast(Int, ...))"
                )
        self.args = args
        self.typ = func.typ

    def children(self):
        return self.args


def Min(a, b) -> Expr:
    """The smaller of two values (NaN if either is NaN, as numpy.minimum)."""
    return BinOp.make("min", a, b)


def Max(a, b) -> Expr:
    """The larger of two values (NaN if either is NaN, as numpy.maximum)."""
    return BinOp.make("max", a, b)


def Clamp(e, lo, hi) -> Expr:
    """`Min(Max(e, lo), hi)`."""
    return Min(Max(e, lo), hi)


def _math(fn, doc):
    def build(*args):
        return Call.make(fn, *args)

    build.__name__ = fn.capitalize()
    build.__doc__ = doc
    return build


Abs = _math("abs", "Absolute value (keeps the type; integers wrap as in NumPy).")
Sqrt = _math("sqrt", "Square root.")
Exp = _math("exp", "e to the power of the argument.")
Log = _math("log", "Natural logarithm.")
Sin = _math("sin", "Sine.")
Cos = _math("cos", "Cosine.")
Floor = _math("floor", "Round toward minus infinity (identity on integers).")
Pow = _math("pow", "`a` to the power `b`, in floating point.")

# PolyMage's spellings of the float versions; the type follows the arguments here
Powf, Sqrtf, Expf, Logf = Pow, Sqrt, Exp, Log


def walk(e: Expr):
    """Yield every node of `e`, parents before children."""
    stack = [e]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children()))


def free_symbols(e: Expr, kind=Symbol) -> list:
    """Symbols of class `kind` used in `e`, in first-use order, without duplicates."""
    seen = {}
    for node in walk(e):
        if isinstance(node, kind):
            seen.setdefault(id(node), node)
    return list(seen.values())


def references(e: Expr) -> list:
    """References in `e`, in first-use order."""
    return [node for node in walk(e) if isinstance(node, Reference)]


# -- NumPy functions on expressions ------------------------------------------------------------

_DSL_OFFER = (
    "the DSL has + - * / // %, comparisons, Min, Max, Clamp, Abs, Sqrt, Exp, Log, Pow, "
    "Sin, Cos, Floor, Cast and Select"
)


def _binary(op: str):
    return lambda a, b: BinOp.make(op, a, b)


def _comparison(op: str):
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
    np.minimum: Min,
    np.maximum: Max,
    np.absolute: Abs,
    np.sqrt: Sqrt,
    np.exp: Exp,
    np.log: Log,
    np.sin: Sin,
    np.cos: Cos,
    np.floor: Floor,
    np.power: Pow,
}

_ROUND_HINT = "use Floor(e + 0.5) to round to the nearest integer, or Cast(Int, e) to truncate"

_HINTS = {
    "rint": _ROUND_HINT,
    "round": _ROUND_HINT,
    "around": _ROUND_HINT,
    "trunc": "Cast(Int, e) truncates toward zero",
    "ceil": "use -Floor(-e)",
    "square": "use e * e",
    "fabs": "use Abs",
    "fmod": "use %, which takes the divisor's sign",
    "fmin": "use Min, which gives NaN if either operand is NaN",
    "fmax": "use Max, which gives NaN if either operand is NaN",
    "tan": "use Sin(e) / Cos(e)",
    "exp2": "use Pow(2.0, e)",
    "log2": "use Log(e) / Log(2.0)",
    "log10": "use Log(e) / Log(10.0)",
    "where": "use Select(cond, a, b)",
}


def _refuse(name: str, operands):
    shown = next((v for v in operands if isinstance(v, Expr)), None)
    hint = _HINTS.get(name.rsplit(".", 1)[-1])
    raise TypeError(
        f"numpy.{name} does not apply to the DSL expression `{shown}`"
        + (f": {hint}" if hint else "")
        + f"; {_DSL_OFFER}"
    )


def _numpy_operand(value, name: str):
    """A scalar operand of a NumPy call (0-d arrays unwrapped); arrays are refused."""
    if isinstance(value, np.ndarray):
        if value.ndim:
            raise TypeError(
                f"numpy.{name}: a NumPy array of shape {value.shape} cannot be "
                "combined with a DSL expression, which stands for one value per "
                "point; index the array (arr[i] * e) or loop in Python"
            )
        value = value[()]
    return value


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
    return build(*(_numpy_operand(v, name) for v in inputs))


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
    e = to_expr(_numpy_operand(args[0], "clip"))
    if lo is not None:
        e = Max(e, _numpy_operand(lo, "clip"))
    if hi is not None:
        e = Min(e, _numpy_operand(hi, "clip"))
    return e
