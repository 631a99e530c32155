"""Expression trees of the DSL: the nodes that Python's operators build and their NumPy-style
typing live in dsl.arithmetic (and are read from here too); here are the named scalars
(Variable, Parameter), Select, references to stages, Min, Max, Clamp and the math functions,
and walks over a tree."""

from __future__ import annotations

import itertools
from typing import Callable, Iterator, Protocol, Sequence

from .arithmetic import (  # noqa: F401  (the nodes and their typing are read from here too)
    ARITH_OPS,
    CMP_OPS,
    MATH_FUNCS,
    BinOp,
    BoolExpr,
    Call,
    Cast,
    Condition,
    Const,
    Expr,
    ExprLike,
    Logic,
    Neg,
    Not,
    check_number,
    convert_operand,
    convert_weak,
    is_weak,
    operand_type,
    strong,
    to_expr,
    weak_kind_type,
)
from .printer import INTEGER_OPS, LazyText, format_expr  # noqa: F401
from .refusals import refuse_index
from .types import (  # noqa: F401  (E.Long and the other types are read from here too)
    Bool,
    Double,
    Half,
    Long,
    ScalarType,
    TypeLike,
    as_type,
    promote,
    type_of_dtype,
)

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


_DECLARATIONS = itertools.count()  # Parameters numbered as created


class Symbol(Expr):
    """A named scalar: a loop Variable or a pipeline Parameter."""

    __slots__ = ("name",)

    def __init__(self, typ: TypeLike, name: str):
        self.typ = as_type(typ)
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"{type(self).__name__} name must be an identifier, got {name!r}")
        self.name = name


class Variable(Symbol):
    """A dimension variable of a Function (`Variable(Int, "x")`): a stage's definition is
    an expression of its variables, and a Reduction's reduction domain is made of them.

    Args:
        typ: an integer type, the type of the Interval it is paired with (`Int` as a rule).
        name: its name in printed expressions and messages, a Python identifier.

    Raises:
        TypeError: `typ` is not an integer type.
        ValueError: `name` is not an identifier.
    """

    __slots__ = ()

    def __init__(self, typ: TypeLike, name: str):
        super().__init__(typ, name)
        if not self.typ.is_int:
            raise TypeError(f"Variable {name} must have an integer type, not {self.typ}")


class Parameter(Symbol):
    """A scalar argument of the pipeline: integer ones size images, float ones are weights.

    A call takes it by name (`pipe(img=array, weight=2.0)`); a size that an input's shape
    gives is read off that shape and may be left out.

    Args:
        typ: its type: an integer type for a size (`Int`), a float type for a weight.
        name: the argument's name in a call, a Python identifier.

    Raises:
        TypeError: `typ` is Half (use Float).
        ValueError: `name` is not an identifier.
    """

    __slots__ = ("declared",)

    def __init__(self, typ: TypeLike, name: str) -> None:
        super().__init__(typ, name)
        self.declared = next(_DECLARATIONS)  # an exported entry takes Parameters in this order
        if self.typ is Half:
            raise TypeError(f"Parameter {name} cannot have type Half: use Float")


class Select(Expr):
    """`cond ? a : b`; only the chosen operand is evaluated, so a read that would leave a
    producer's domain is legal on the side not taken. `Select(cond, 1, 0)` is a condition
    as a number (see the DSL page, "Conditions as numbers").

    Args:
        cond: a Condition (`x < 5`, combined with `&`, `|` and `~`).
        a: the value where `cond` holds.
        b: the value elsewhere; `a` and `b` are converted to their common type, as `+`
            converts them.

    Raises:
        TypeError: `cond` is not a Condition, or `a` or `b` is not a number.
    """

    __slots__ = ("cond", "a", "b")

    def __init__(self, cond: BoolExpr, a: ExprLike, b: ExprLike):
        if not isinstance(cond, (Condition, Logic, Not)):
            raise TypeError(f"Select needs a Condition as its first argument, got `{cond}`")
        a, b = to_expr(a), to_expr(b)
        check_number(a, "second argument", "Select")
        check_number(b, "third argument", "Select")
        self.typ = operand_type(a, b)
        context = LazyText(lambda: f"Select({cond}, {a}, {b})")
        self.cond, self.a, self.b = (
            cond,
            convert_operand(a, self.typ, context),
            convert_operand(b, self.typ, context),
        )

    def children(self) -> tuple:
        return (self.cond, self.a, self.b)


class Stage(Protocol):
    """What a Reference reads (a Function or an Image of dsl.constructs, a Reduction of
    dsl.reduction), as the expression nodes see it: those import this module, not the other
    way."""

    name: str
    typ: ScalarType
    variables: tuple  # of Variable, one per dimension
    intervals: tuple  # of dsl.constructs.Interval, one per dimension

    @property
    def ndim(self) -> int: ...


class Reference(Expr):
    """`f(i, j)`: the value of stage `f` at a point; indices must be integer expressions."""

    __slots__ = ("func", "args")

    def __init__(self, func: Stage, indices: Sequence[ExprLike]):
        self.func = func
        args = tuple(strong(to_expr(a)) for a in indices)
        if len(args) != func.ndim:
            raise TypeError(
                f"{func.name} has {func.ndim} dimension(s) but is referenced with "
                f"{len(args)} index(es) in {func.name}({', '.join(map(str, args))})"
            )
        for a in args:
            if not a.typ.is_int:
                refuse_index(a, func.name, f"{func.name}({', '.join(map(str, args))})")
        self.args = args
        self.typ = func.typ

    def children(self) -> tuple:
        return self.args


def Min(a: ExprLike, b: ExprLike) -> Expr:
    """The smaller of two values (NaN if either is NaN, as numpy.minimum).

    Args:
        a: a value (an expression or a number).
        b: another; on a tie the result is `b` (`Min(0.0, -0.0)` is `-0.0`).

    Returns:
        An expression of the two operands' common type.
    """
    return BinOp.make("min", a, b)


def Max(a: ExprLike, b: ExprLike) -> Expr:
    """The larger of two values (NaN if either is NaN, as numpy.maximum).

    Args:
        a: a value (an expression or a number).
        b: another; on a tie the result is `b`.

    Returns:
        An expression of the two operands' common type.
    """
    return BinOp.make("max", a, b)


def Clamp(e: ExprLike, lo: ExprLike, hi: ExprLike) -> Expr:
    """`Min(Max(e, lo), hi)`: in an index, `Clamp(x + 1, 0, R - 1)` repeats the edge and
    stays affine, so the compiler still proves the read in bounds.

    Args:
        e: the value to clamp.
        lo: the smallest value kept.
        hi: the largest value kept.

    Returns:
        An expression of the operands' common type.
    """
    return Min(Max(e, lo), hi)


def _math(fn: str, doc: str) -> Callable[..., Expr]:
    def build(*args: ExprLike) -> Expr:
        return Call.make(fn, *args)

    build.__name__ = fn.capitalize()
    build.__doc__ = doc
    return build


Abs: Callable[[ExprLike], Expr] = _math(
    "abs", "Absolute value (keeps the type; integers wrap as in NumPy)."
)
Sqrt: Callable[[ExprLike], Expr] = _math("sqrt", "Square root.")
Exp: Callable[[ExprLike], Expr] = _math("exp", "e to the power of the argument.")
Log: Callable[[ExprLike], Expr] = _math("log", "Natural logarithm.")
Sin: Callable[[ExprLike], Expr] = _math("sin", "Sine.")
Cos: Callable[[ExprLike], Expr] = _math("cos", "Cosine.")
Floor: Callable[[ExprLike], Expr] = _math(
    "floor", "Round toward minus infinity (identity on integers)."
)
Pow: Callable[[ExprLike, ExprLike], Expr] = _math("pow", "`a` to the power `b`, in floating point.")

# PolyMage's spellings of the float versions; the type follows the arguments here
Powf, Sqrtf, Expf, Logf = Pow, Sqrt, Exp, Log


def walk(e: Expr) -> Iterator[Expr]:
    """Yield every node of `e`, parents before children."""
    stack = [e]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children()))


def free_symbols(e: Expr, kind: type = Symbol) -> list:
    """Symbols of class `kind` used in `e`, in first-use order, without duplicates."""
    seen: dict = {}
    for node in walk(e):
        if isinstance(node, kind):
            seen.setdefault(id(node), node)
    return list(seen.values())


def references(e: Expr) -> list[Reference]:
    """References in `e`, in first-use order."""
    return [node for node in walk(e) if isinstance(node, Reference)]
