"""Scalar types of the DSL and their NumPy/C counterparts; the promotion rules live here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = [
    "ScalarType",
    "Int",
    "UInt",
    "Short",
    "UShort",
    "Char",
    "UChar",
    "Long",
    "ULong",
    "Float",
    "Double",
    "Half",
    "Bool",
    "ALL_TYPES",
    "type_of_dtype",
    "promote",
    "arithmetic_type",
]


class ScalarType:
    """A DSL scalar type: wraps a NumPy dtype and knows its C spelling."""

    __slots__ = ("name", "dtype", "c_name")

    def __init__(self, name: str, dtype: DTypeLike, c_name: str):
        self.name = name
        self.dtype: np.dtype = np.dtype(dtype)
        self.c_name = c_name

    @property
    def is_float(self) -> bool:
        return self.dtype.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.dtype.kind in "iu"

    @property
    def is_signed(self) -> bool:
        return self.dtype.kind in "if"

    @property
    def bits(self) -> int:
        return self.dtype.itemsize * 8

    def min_value(self) -> int | float:
        return np.iinfo(self.dtype).min if self.is_int else -np.inf

    def max_value(self) -> int | float:
        return np.iinfo(self.dtype).max if self.is_int else np.inf

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple:
        return (type_of_dtype, (self.dtype.str,)) if self is not Bool else (_bool_type, ())


Int = ScalarType("Int", np.int32, "int32_t")
UInt = ScalarType("UInt", np.uint32, "uint32_t")
Short = ScalarType("Short", np.int16, "int16_t")
UShort = ScalarType("UShort", np.uint16, "uint16_t")
Char = ScalarType("Char", np.int8, "int8_t")
UChar = ScalarType("UChar", np.uint8, "uint8_t")
Long = ScalarType("Long", np.int64, "int64_t")
ULong = ScalarType("ULong", np.uint64, "uint64_t")
Float = ScalarType("Float", np.float32, "float")
Double = ScalarType("Double", np.float64, "double")
# IEEE binary16: stored as its bits (C sees uint16_t), computed with as Float (arithmetic_type)
Half = ScalarType("Half", np.float16, "uint16_t")
Bool = ScalarType("Bool", np.bool_, "int")

ALL_TYPES = (Int, UInt, Short, UShort, Char, UChar, Long, ULong, Float, Double, Half)
_BY_DTYPE = {t.dtype: t for t in ALL_TYPES}
# the C array type of each dtype, as cffi takes buffers (compiled and loaded pipelines)
C_ARRAYS = {t.dtype: f"{t.c_name}[]" for t in ALL_TYPES}


def _bool_type() -> ScalarType:
    return Bool


def type_of_dtype(dtype: DTypeLike) -> ScalarType:
    """The DSL type of a NumPy dtype (TypeError for dtypes the DSL has no type for)."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return Bool
    try:
        return _BY_DTYPE[dt]
    except KeyError:
        raise TypeError(f"polyimage has no scalar type for dtype {dt}") from None


# a DSL type, or what NumPy takes as a dtype (np.float32, "uint8")
TypeLike = Union[ScalarType, "DTypeLike"]


def as_type(typ: TypeLike) -> ScalarType:
    """Accept a ScalarType or anything NumPy understands as a dtype."""
    if isinstance(typ, ScalarType):
        return typ
    try:
        return type_of_dtype(typ)
    except TypeError:
        raise TypeError(f"expected a polyimage type such as Int or Float, got {typ!r}") from None


CONDITION_AS_NUMBER = (
    'write Select(cond, 1, 0) for its value as a number (docs/dsl.md, "Conditions as numbers")'
)


def arithmetic_type(typ: ScalarType) -> ScalarType:
    """The type values of `typ` are computed in: Half is a storage type, computed in Float."""
    return Float if typ is Half else typ


def promote(a: ScalarType, b: ScalarType) -> ScalarType:
    """Type of a binary operation on two typed operands: NumPy's result_type, with Half
    operands computed in Float (`Half + Half` is Float, `Half + Int` is Double)."""
    if a is Bool or b is Bool:
        raise TypeError(f"a Condition is not a number; {CONDITION_AS_NUMBER}")
    return _BY_DTYPE[np.result_type(arithmetic_type(a).dtype, arithmetic_type(b).dtype)]


def literal_type(value: int | float) -> ScalarType:
    """The type a weak Python literal takes on its own (NumPy's defaults: int64 or float64)."""
    return Double if isinstance(value, float) else Long


def common_type(
    a: ScalarType | None, b: ScalarType | None, a_value: float = 0, b_value: float = 0
) -> ScalarType:
    """The common type of two operands under NumPy 2 rules with weak Python scalars: a type
    of None is a weak literal, of value `a_value` or `b_value`."""
    if a is None and b is None:
        return promote(literal_type(a_value), literal_type(b_value))
    if a is None:
        a, b, a_value, b_value = b, a, b_value, a_value
    assert a is not None
    if b is not None:
        return promote(a, b)
    if a is Bool:
        raise TypeError(f"a Condition is not a number; {CONDITION_AS_NUMBER}")
    if isinstance(b_value, float) and a.is_int:
        return Double
    return arithmetic_type(a)
