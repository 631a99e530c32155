"""Vectorized NumPy evaluation of DSL expressions over a list of points.

A point set is a dict from Variable to a 1-D coordinate array (all of one length). Select, `&`
and `|` evaluate an operand only on the points where it is needed, exactly as the generated C
does, so a guarded out-of-domain read is never made here either.
"""

from __future__ import annotations

import numpy as np

from ..dsl import expr as E
from ..dsl import image_ops, libm
from ..dsl.borders import INDEX_FOLDS
from ..dsl.types import ScalarType
from ..errors import BoundsError
from .affine import is_affine

_BINARY = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.true_divide,
    "//": np.floor_divide,
    "%": np.remainder,
    "min": np.minimum,
    "max": np.maximum,
}
_COMPARE = {
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
    "==": np.equal,
    "!=": np.not_equal,
}
# the rest: dsl.libm, and the index functions of borders (dsl.borders)
_MATH = {"sqrt": np.sqrt, "floor": np.floor, "abs": np.abs, **INDEX_FOLDS}


def cast_array(values, typ: ScalarType) -> np.ndarray:
    """Convert to `typ`: floats to integers truncate toward zero and saturate, NaN gives 0;
    integers wrap; everything else as NumPy's astype."""
    values = np.asarray(values)
    if not (typ.is_int and values.dtype.kind == "f"):
        return values.astype(typ.dtype)
    info = np.iinfo(typ.dtype)
    truncated = np.trunc(values)
    out = np.zeros(values.shape, typ.dtype)
    high = truncated >= float(info.max) + 1.0
    low = truncated < float(info.min)
    inside = ~(high | low | np.isnan(values))
    out[inside] = truncated[inside].astype(typ.dtype)
    out[high] = info.max
    out[low] = info.min
    return out


def evaluate_scalar(e: E.Expr, params: dict):
    """The value of an expression of Parameters."""
    return Evaluator({}, {}, params)(e, {}, 1).item()


def column(value, count: int) -> np.ndarray:
    """`value` (an array or a scalar) as an array of shape (count,), not copied; a read-only
    view when broadcast. The common case, already a column, skips NumPy's broadcasting."""
    if type(value) is np.ndarray and value.shape == (count,):
        return value
    return np.broadcast_to(value, (count,))


def scalar(evaluate, e) -> int:
    """The integer value of an expression of the parameters only, remembered by an
    Evaluator (the cost model asks for the same bounds thousands of times)."""
    known = getattr(evaluate, "scalars", None)
    if known is None:
        return int(np.asarray(evaluate(e, {}, 1)).reshape(-1)[0])
    hit = known.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    value = int(np.asarray(evaluate(e, {}, 1)).reshape(-1)[0])
    known[id(e)] = (e, value)  # the expression kept: its id stays its own
    return value


def extent(evaluate, iv) -> int:
    """Points of Interval `iv` at the evaluator's parameters (at least 1)."""
    return max(scalar(evaluate, iv.ub) - scalar(evaluate, iv.lb) + 1, 1)


class Evaluator:
    """Evaluates expressions given stage arrays, their domain origins and parameter values."""

    def __init__(self, arrays: dict, origins: dict, params: dict, where: str = ""):
        self.arrays = arrays
        self.origins = origins
        self.params = params
        self.where = where
        self.scalars: dict = {}  # {id(expression): (expression, value)}: see scalar()

    def __call__(self, e: E.Expr, points: dict, count: int) -> np.ndarray:
        with np.errstate(all="ignore"):
            return self._eval(e, points, count)

    def full(self, e: E.Expr, points: dict, count: int) -> np.ndarray:
        """Like calling, but always returns an array of shape (count,)."""
        return column(self(e, points, count), count)

    def _eval(self, e, points, count):
        method = getattr(self, "_" + type(e).__name__)
        return method(e, points, count)

    def _Const(self, e, points, count):
        return np.asarray(e.value, e.typ.dtype)

    def _Variable(self, e, points, count):
        return points[e]

    def _Parameter(self, e, points, count):
        return np.asarray(self.params[e.name], e.typ.dtype)

    def _BinOp(self, e, points, count):
        a = self._eval(e.a, points, count)
        b = self._eval(e.b, points, count)
        return np.asarray(_BINARY[e.op](a, b)).astype(e.typ.dtype, copy=False)

    def _Neg(self, e, points, count):
        return np.negative(self._eval(e.a, points, count))

    def _Call(self, e, points, count):
        args = [self._eval(a, points, count) for a in e.args]
        if e.fn == "floor" and e.typ.is_int:
            return args[0]
        if e.fn in E.INTEGER_OPS:
            return image_ops.apply(e.fn, *args, e.typ)
        if e.fn in libm.OWN:
            return libm.own(e.fn, e.typ.dtype, *args).astype(e.typ.dtype, copy=False)
        if libm.is_libm(e.fn):
            return libm.apply(e.fn, *args).astype(e.typ.dtype, copy=False)
        return np.asarray(_MATH[e.fn](*args)).astype(e.typ.dtype, copy=False)

    def _Cast(self, e, points, count):
        return cast_array(self._eval(e.a, points, count), e.typ)

    def _Condition(self, e, points, count):
        return _COMPARE[e.op](self._eval(e.lhs, points, count), self._eval(e.rhs, points, count))

    def _Not(self, e, points, count):
        return np.logical_not(self._eval(e.a, points, count))

    def _Logic(self, e, points, count):
        first = column(self._eval(e.a, points, count), count)
        need = first if e.op == "&&" else ~first
        result = first.copy()
        if need.any():
            result[need] = self.full(e.b, subset(points, need), int(need.sum()))
        return result

    def _Select(self, e, points, count):
        mask = column(self._eval(e.cond, points, count), count)
        out = np.empty(count, e.typ.dtype)
        for branch, chosen in ((e.a, mask), (e.b, ~mask)):
            if chosen.any():
                out[chosen] = self.full(branch, subset(points, chosen), int(chosen.sum()))
        return out

    def _Reference(self, e, points, count):
        array = self.arrays[e.func.name]
        return array[self.indices(e, points, count)]

    def indices(self, ref: E.Reference, points: dict, count: int) -> tuple:
        """Array indices of `ref` into its producer's storage, clamped or checked."""
        origin = self.origins[ref.func.name]
        shape = self.arrays[ref.func.name].shape
        result = []
        for dim, arg in enumerate(ref.args):
            idx = column(self._eval(arg, points, count), count)
            if idx.dtype == np.uint64:
                idx = np.minimum(idx, np.uint64(np.iinfo(np.int64).max))
            idx = idx.astype(np.int64)
            lo, hi = origin[dim], origin[dim] + shape[dim] - 1
            if not is_affine(arg):
                idx = np.clip(idx, lo, hi)
            elif count and (idx.min() < lo or idx.max() > hi):
                bad = int(idx[(idx < lo) | (idx > hi)][0])
                raise BoundsError(
                    f"{self.where}: {ref} reads index {bad} of dimension {dim} "
                    f"of {ref.func.name}, whose domain there is [{lo}, {hi}]"
                )
            result.append(idx - lo)
        return tuple(result)


def subset(points: dict, mask) -> dict:
    return {var: coords[mask] for var, coords in points.items()}
