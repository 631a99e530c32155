"""What DSL expressions refuse, and the spelling the DSL has instead: Python's truth values,
conversions to numbers, round() and `**` on an expression, and NumPy functions with no DSL
counterpart. Apart from the expression classes, so that those keep to what they build."""

from __future__ import annotations

from typing import NoReturn

import numpy as np


class NoPythonValue:
    """Python operations that need a value an expression only has when the pipeline runs,
    refused with the DSL's way of saying it (a base of every expression)."""

    __slots__ = ()

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


DSL_OFFER = (
    "the DSL has + - * / // %, comparisons, Min, Max, Clamp, Abs, Sqrt, Exp, Log, Pow, "
    "Sin, Cos, Floor, Cast and Select"
)


ROUND_HINT = "use Floor(e + 0.5) to round to the nearest integer, or Cast(Int, e) to truncate"

HINTS = {
    "rint": ROUND_HINT,
    "round": ROUND_HINT,
    "around": ROUND_HINT,
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


def refuse_numpy(name: str, shown) -> NoReturn:
    """Refuse numpy.`name` on the expression `shown`, with a hint at the DSL's spelling."""
    hint = HINTS.get(name.rsplit(".", 1)[-1])
    raise TypeError(
        f"numpy.{name} does not apply to the DSL expression `{shown}`"
        + (f": {hint}" if hint else "")
        + f"; {DSL_OFFER}"
    )


def numpy_operand(value, name: str):
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


def refuse_index(index, reader: str, read) -> NoReturn:
    """Refuse the index `index` of a read of `reader` (a stage, an Image or a border) that is not
    an integer; `read` is the whole read as written, which the message quotes."""
    raise TypeError(
        f"index `{index}` of {reader} has type {index.typ} in `{read}`; indices must be "
        "integers (use Cast(Int, ...))"
    )
