"""Halide's operations on the integers of real images: saturating casts, saturating add and
subtract, absolute difference, widening multiply and halving adds. Their type rules and the
nodes they build are here, with their values in NumPy (the interpreter's semantics); the C
helpers are in codegen.cpixel.

Operands take their common type as `+` gives it (weak Python numbers mix as they do there).
On integers, saturating_add and saturating_sub clamp to the type's range, absd is |a - b| in the
unsigned type of the same width, halving_add and rounding_halving_add are (a + b) >> 1 and
(a + b + 1) >> 1 computed without overflow, widening_mul is a * b in the type of twice the
width (built from Cast and `*`). On floats, the saturating operations are plain `+` and `-`
and absd is Abs(a - b); the others take integers only.
"""

from __future__ import annotations

import numpy as np

from .arithmetic import (
    BinOp,
    Call,
    Cast,
    Const,
    check_number,
    computed,
    convert_operand,
    operand_type,
    strong,
    to_expr,
)
from .printer import LazyText
from .types import Bool, ScalarType, as_type, type_of_dtype

__all__ = [
    "saturating_cast",
    "saturating_add",
    "saturating_sub",
    "absd",
    "widening_mul",
    "halving_add",
    "rounding_halving_add",
]


def _operands(fn: str, a, b, floats: str | None = None) -> tuple:
    """The operands of `fn` converted to their common type, and that type. `floats`: for an
    operation on integers only, what to write for floats instead."""
    a, b = to_expr(a), to_expr(b)
    check_number(a, "first argument", fn)
    check_number(b, "second argument", fn)
    typ = operand_type(a, b)
    if not typ.is_int:
        _refuse_float_result(fn, strong(a).typ, strong(b).typ, typ, floats)
    context = LazyText(lambda: f"{fn}({a}, {b})")
    return convert_operand(a, typ, context), convert_operand(b, typ, context), typ


def _refuse_float_result(fn, a: ScalarType, b: ScalarType, typ: ScalarType, floats):
    """Refuse integer operands of types `a` and `b` whose common type `typ` is a float (ULong
    and Long: the integer operation would silently become a float one), and float operands
    where `floats` says what to write instead."""
    if a.is_int and b.is_int:
        raise TypeError(
            f"{fn} takes integers of one type: {a} and {b} have no common integer type "
            f"(`+` makes them a {typ}); Cast one of them to the other's type"
        )
    if floats is not None:
        raise TypeError(f"{fn} takes integers, got {typ} operands; {floats}")


def saturating_add(a, b):
    """a + b clamped to the integer type's range (a plain `+` on floats): on UChar, 200 + 100
    is 255 where `+` wraps to 44.

    Args:
        a: an integer or float expression, or a number that fits the other's type.
        b: another; `a` and `b` are converted to their common type, as `+` converts them.

    Returns:
        An expression of that common type.
    """
    a, b, typ = _operands("saturating_add", a, b)
    return Call("saturating_add", (a, b), typ) if typ.is_int else BinOp.make("+", a, b)


def saturating_sub(a, b):
    """a - b clamped to the integer type's range (a plain `-` on floats): on UChar, 10 - 20
    is 0 where `-` wraps to 246.

    Args:
        a: an integer or float expression, or a number that fits the other's type.
        b: another; `a` and `b` are converted to their common type, as `+` converts them.

    Returns:
        An expression of that common type.
    """
    a, b, typ = _operands("saturating_sub", a, b)
    return Call("saturating_sub", (a, b), typ) if typ.is_int else BinOp.make("-", a, b)


def absd(a, b):
    """|a - b| without overflow: for integers in the unsigned type of the same width (absd of
    two Chars is a UChar), for floats Abs(a - b).

    Args:
        a: an integer or float expression, or a number that fits the other's type.
        b: another; `a` and `b` are converted to their common type, as `+` converts them.

    Returns:
        An expression of the unsigned type of the common type's width, or of the float type.
    """
    a, b, typ = _operands("absd", a, b)
    if not typ.is_int:
        return Call.make("abs", BinOp.make("-", a, b))
    return Call("absd", (a, b), type_of_dtype(f"u{typ.dtype.itemsize}"))


def halving_add(a, b):
    """(a + b) >> 1, rounding down, without overflow (integers only).

    Args:
        a: an integer expression, or a number that fits the other's type.
        b: another; `a` and `b` are converted to their common integer type.

    Returns:
        An expression of that common type.

    Raises:
        TypeError: the operands are floats (write `(a + b) * 0.5`).
    """
    a, b, typ = _operands("halving_add", a, b, "write (a + b) * 0.5 for floats")
    return Call("halving_add", (a, b), typ)


def rounding_halving_add(a, b):
    """(a + b + 1) >> 1, the average rounded up, without overflow (integers only).

    Args:
        a: an integer expression, or a number that fits the other's type.
        b: another; `a` and `b` are converted to their common integer type.

    Returns:
        An expression of that common type.

    Raises:
        TypeError: the operands are floats (write `(a + b) * 0.5`).
    """
    a, b, typ = _operands("rounding_halving_add", a, b, "write (a + b) * 0.5 for floats")
    return Call("rounding_halving_add", (a, b), typ)


def widening_mul(a, b):
    """a * b in the integer type of twice the width (signed if the operands' type is), which
    holds every product: UChar * UChar is a UShort, Int * Int a Long.

    Args:
        a: an integer expression, or a number that fits the other's type.
        b: another; `a` and `b` are converted to their common integer type.

    Returns:
        An expression of the type twice as wide.

    Raises:
        TypeError: the operands are floats, or 64-bit integers (no type is twice as wide).
    """
    a, b, typ = _operands("widening_mul", a, b, "Cast(Double, a) * b is exact for Floats")
    if typ.bits == 64:
        raise TypeError(f"widening_mul of {typ} operands: there is no integer type of 128 bits")
    wide = type_of_dtype(f"{typ.dtype.kind}{typ.dtype.itemsize * 2}")
    return BinOp.make("*", Cast(wide, a), Cast(wide, b))


def saturating_cast(typ, e):
    """`e` converted to `typ`, first clamped to the range of `typ`: integers to its limits,
    floats to its finite range (an infinity to its largest finite number, even where `typ` is
    as wide or wider; NaN stays NaN, and becomes 0 in an integer type, as Cast does). From a
    float to an integer type this is Cast, which saturates already.

    Args:
        typ: the type to convert to (`UChar` to bring a widened sum back to 8 bits).
        e: the value to convert, an expression or a number.

    Returns:
        An expression of type `typ`.

    Raises:
        TypeError: `typ` is not a number type, or `e` is not a number.
    """
    typ = as_type(typ)
    if typ is Bool:
        raise TypeError("saturating_cast converts to a number type, not a Condition")
    e = strong(to_expr(e))
    check_number(e, "argument", "saturating_cast")
    source = computed(e).typ
    if typ.is_int and source.is_float:
        return Cast(typ, e)
    low, high = _finite_range(typ)
    if source.is_int:
        low = int(low) if low > source.min_value() else None
        high = int(high) if high < source.max_value() else None
    else:  # always clamped (infinities too), in the wider of the two types
        e = computed(e)
        if typ.bits > source.bits:
            e, source = Cast(typ, e), typ
    if low is not None:
        e = BinOp.make("max", e, Const(low, source))
    if high is not None:
        e = BinOp.make("min", e, Const(high, source))
    return e if e.typ is typ else Cast(typ, e)


def _finite_range(typ: ScalarType) -> tuple:
    info = np.iinfo(typ.dtype) if typ.is_int else np.finfo(typ.dtype)
    return (int(info.min), int(info.max)) if typ.is_int else (float(info.min), float(info.max))


# -- values (the interpreter's semantics) -------------------------------------------------------


def apply(fn: str, a, b, typ: ScalarType) -> np.ndarray:
    """The integer operation `fn` on arrays `a` and `b` of one integer type; `typ`: the
    result's."""
    a, b = np.asarray(a), np.asarray(b)
    if fn == "absd":
        u = typ.dtype
        return np.where(a > b, a.astype(u) - b.astype(u), b.astype(u) - a.astype(u))
    if fn == "halving_add":
        return (a & b) + ((a ^ b) >> 1)
    if fn == "rounding_halving_add":
        return (a | b) - ((a ^ b) >> 1)
    return _saturating(fn == "saturating_add", a, b, typ)


def _saturating(add: bool, a, b, typ: ScalarType) -> np.ndarray:
    """Up to 32 bits: the exact result in int64, clipped. In 64 bits: the wrapped result,
    replaced by the limit it passed where it overflowed."""
    low, high = _finite_range(typ)
    if typ.bits < 64:
        wide = a.astype(np.int64)
        return np.clip(wide + b if add else wide - b, low, high).astype(typ.dtype)
    s = a + b if add else a - b
    if typ.dtype.kind == "u":
        return np.where(s < a if add else a < b, high if add else 0, s).astype(typ.dtype)
    overflow = ((a ^ s) & (b ^ s) if add else (a ^ b) & (a ^ s)) < 0
    return np.where(overflow, np.where(a < 0, low, high), s).astype(typ.dtype)
