"""Arithmetic and math on weak literals (two Python numbers), folded as NumPy computes them,
for the expression builders that meet two of them."""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

from . import libm


def fold(op: str, a, b):
    """`a op b` of two Python numbers (`/` of two integers is `//`)."""
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


# math functions on Python numbers (sqrt of a negative is NaN, as in NumPy)
WEAK_MATH: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "sqrt": lambda a: math.sqrt(a) if a >= 0 else math.nan,
    "floor": math.floor,
    **{fn: functools.partial(libm.scalar, fn) for fn in libm.FUNCTIONS},
}
