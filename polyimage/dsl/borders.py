"""Border modes: a stage or Image read at any integer point, its own value inside its domain and
a rule outside (the edge repeated, a mirror, a wrap, a constant), so a filter's output can have
its input's shape with no padding.

A border is not a stage: each read of one becomes a read of the source at a folded index
(`Clamp`, or an index function `mirror_index`, `reflect_index`, `wrap_index` whose value is
always in the domain), or a `Select` of the source and the constant. The compiler splits the
innermost loop where the folds pick the index itself (codegen.clamps), so the interior reads
the source as written, with no clamp or select."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .arithmetic import (
    Call,
    Cast,
    Condition,
    Const,
    Expr,
    ExprLike,
    Logic,
    convert_weak,
    is_weak,
    strong,
    to_expr,
)
from .constructs import Function
from .expr import Clamp, Reference, Select
from .printer import FOLDS
from .refusals import refuse_index
from .types import Long, ScalarType

__all__ = [
    "Border",
    "repeat_edge",
    "mirror",
    "mirror_interior",
    "wrap",
    "constant_exterior",
    "INDEX_FOLDS",
    "fold_index",
    "is_index_fold",
]


def _extent(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.maximum(np.asarray(hi, np.int64) - lo + 1, 1)


def _mirror(i: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The edge pixel repeated: `c b a | a b c | c b a` (NumPy's pad mode "symmetric")."""
    n = _extent(lo, hi)
    t = np.mod(np.asarray(i, np.int64) - lo, 2 * n)
    return lo + np.where(t < n, t, 2 * n - 1 - t)


def _reflect(i: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The edge pixel once: `d c b | a b c d | c b a` (NumPy's pad mode "reflect")."""
    n = _extent(lo, hi)
    period = np.maximum(2 * n - 2, 1)
    t = np.mod(np.asarray(i, np.int64) - lo, period)
    return lo + np.where(t < n, t, period - t)


def _wrap(i: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The domain repeated: `b c | a b c | a b` (NumPy's pad mode "wrap")."""
    return lo + np.mod(np.asarray(i, np.int64) - lo, _extent(lo, hi))


# index functions (i, lo, hi) -> a point of [lo, hi], in NumPy (the interpreter's semantics);
# codegen.cexpr prints the same arithmetic in C
INDEX_FOLDS = {"mirror_index": _mirror, "reflect_index": _reflect, "wrap_index": _wrap}


def is_index_fold(e: object) -> bool:
    """Whether `e` is an index function of a border (its value always lies in [lo, hi])."""
    return isinstance(e, Call) and e.fn in INDEX_FOLDS


class Border:
    """`source` (an Image or a stage) extended to every integer point: reading `b(i, j)` gives
    the source's value where (i, j) lies in its domain and `mode`'s value elsewhere. Only the
    dimensions in `dims` (all by default) are extended; the others are read as written and
    checked as usual. Made by `repeat_edge`, `mirror`, `mirror_interior`, `wrap` and
    `constant_exterior`; a Border is read like a stage, `b(x - 1, y)`, and is not one.

    Args:
        source: the Image or stage to extend.
        mode: "repeat_edge", "mirror", "mirror_interior", "wrap" or "constant_exterior".
        value: the value outside, for "constant_exterior".
        dims: the dimensions to extend (all by default).
    """

    def __init__(
        self,
        source: Function,
        mode: str,
        value: ExprLike | None = None,
        dims: Sequence[int] | None = None,
    ) -> None:
        if not isinstance(source, Function):
            raise TypeError(
                f"{mode} needs an Image or a stage (Function, Reduction) to extend, got {source!r}"
            )
        dims = tuple(range(source.ndim)) if dims is None else tuple(dims)
        bad = [d for d in dims if not (isinstance(d, int) and 0 <= d < source.ndim)]
        if bad:
            raise ValueError(
                f"{mode}({source.name}): dims must be dimensions of {source.name} "
                f"(0 to {source.ndim - 1}), got {bad[0]!r}"
            )
        self.source, self.mode, self.dims = source, mode, dims
        self.value = None if value is None else _constant(source, value)

    @property
    def name(self) -> str:
        return f"{self.mode}({self.source.name})"

    @property
    def ndim(self) -> int:
        return self.source.ndim

    @property
    def typ(self) -> ScalarType:
        return self.source.typ

    def __repr__(self) -> str:
        return f"<Border {self.name}>"

    def __call__(self, *indices: ExprLike) -> Expr:
        if len(indices) != self.ndim:
            raise TypeError(
                f"{self.name} has {self.ndim} dimension(s) but is referenced with "
                f"{len(indices)} index(es)"
            )
        points = [to_expr(i) for i in indices]
        for i in map(strong, points):
            if not i.typ.is_int:
                refuse_index(i, self.name, f"{self.name}({', '.join(map(str, points))})")
        bounds = {d: (iv.lb, iv.ub) for d, iv in enumerate(self.source.intervals)}
        if self.mode == "constant_exterior":
            return self._constant_read(points, bounds)
        folded = [
            fold_index(self.mode, i, *bounds[d]) if d in self.dims else i
            for d, i in enumerate(points)
        ]
        return Reference(self.source, folded)

    def _constant_read(self, indices: list, bounds: dict) -> Expr:
        """The source at the clamped point where every index is inside, else the value: one
        Select per extended dimension, the last dimension's innermost."""
        clamped = [Clamp(i, *bounds[d]) if d in self.dims else i for d, i in enumerate(indices)]
        result: Expr = Reference(self.source, clamped)
        assert self.value is not None
        for d in reversed(self.dims):
            lo, hi = bounds[d]
            inside = Logic("&&", Condition(lo, "<=", indices[d]), Condition(indices[d], "<=", hi))
            result = Select(inside, result, self.value)
        return result


FOLD_MODES = {mode: fn for fn, mode in FOLDS.items()}


def fold_index(mode: str, index: ExprLike, lo: ExprLike, hi: ExprLike) -> Expr:
    """`index` folded into [lo, hi] as border `mode` does ("repeat_edge" or a FOLD_MODES key)."""
    if mode == "repeat_edge":
        return Clamp(index, lo, hi)
    return Call(FOLD_MODES[mode], tuple(_long(e) for e in (index, lo, hi)), Long)


def _long(e: ExprLike) -> Expr:
    e = strong(to_expr(e))
    return e if e.typ is Long else Cast(Long, e)


def _constant(source: Function, value: ExprLike) -> Expr:
    """`value` as the source's type: a number (Python's or NumPy's) must fit it, an expression
    is cast."""
    e = to_expr(value)
    if isinstance(e, Const):
        _check_fits(e.value, source.typ, f"constant_exterior({source.name}, {e})")
    if is_weak(e):
        return convert_weak(e, source.typ, f"constant_exterior({source.name}, {e})")
    return e if e.typ is source.typ else Cast(source.typ, e)


def _check_fits(value: float, typ: ScalarType, shown: str) -> None:
    """Refuse a number that `typ` cannot hold: an integer out of its range, or a finite number
    that would round to infinity (inf and nan given as such are kept)."""
    if typ.is_int:
        if typ.min_value() <= value <= typ.max_value():
            return
        span = f"whose values are {typ.min_value()} to {typ.max_value()}"
    else:
        with np.errstate(over="ignore"):
            try:
                if not math.isfinite(value) or math.isfinite(typ.dtype.type(value)):
                    return
            except OverflowError:  # an int beyond any float
                pass
        top = f"{float(np.finfo(typ.dtype).max):.8g}"
        span = f"whose finite values are -{top} to {top} (inf and nan may be given as such)"
    raise TypeError(f"`{shown}`: {value!r} does not fit {typ}, {span}")


def repeat_edge(source: Function, dims: Sequence[int] | None = None) -> Border:
    """`source` extended by its edge values (NumPy's pad mode "edge"): `a a [a b c] c c`.

    Args:
        source: the Image or stage to extend.
        dims: the dimensions to extend, by position (all by default); a read past another
            dimension is refused as for the source itself.

    Returns:
        A Border, read like the source at any integer point: `b(x - 1, y)`.
    """
    return Border(source, "repeat_edge", dims=dims)


def mirror(source: Function, dims: Sequence[int] | None = None) -> Border:
    """`source` mirrored at its edges, the edge pixel repeated (NumPy's "symmetric"):
    `b a [a b c] c b`.

    Args:
        source: the Image or stage to extend.
        dims: the dimensions to extend, by position (all by default); a read past another
            dimension is refused as for the source itself.

    Returns:
        A Border, read like the source at any integer point: `b(x - 1, y)`.
    """
    return Border(source, "mirror", dims=dims)


def mirror_interior(source: Function, dims: Sequence[int] | None = None) -> Border:
    """`source` mirrored about its edge pixels, which appear once (NumPy's "reflect"):
    `c b [a b c] b a`.

    Args:
        source: the Image or stage to extend.
        dims: the dimensions to extend, by position (all by default); a read past another
            dimension is refused as for the source itself.

    Returns:
        A Border, read like the source at any integer point: `b(x - 1, y)`.
    """
    return Border(source, "mirror_interior", dims=dims)


def wrap(source: Function, dims: Sequence[int] | None = None) -> Border:
    """`source` repeated periodically (NumPy's pad mode "wrap"): `b c [a b c] a b`.

    Args:
        source: the Image or stage to extend.
        dims: the dimensions to extend, by position (all by default); a read past another
            dimension is refused as for the source itself.

    Returns:
        A Border, read like the source at any integer point: `b(x - 1, y)`.
    """
    return Border(source, "wrap", dims=dims)


def constant_exterior(
    source: Function, value: ExprLike, dims: Sequence[int] | None = None
) -> Border:
    """`source` extended by `value`, converted to its type (NumPy's pad mode "constant").

    Args:
        source: the Image or stage to extend.
        value: the value outside the domain: a number, which must fit the source's type
            (`inf` and `nan` given as such are kept), or an expression, which is cast.
        dims: the dimensions to extend, by position (all by default).

    Returns:
        A Border, read like the source at any integer point.

    Raises:
        TypeError: a number that does not fit the source's type.
    """
    return Border(source, "constant_exterior", value=value, dims=dims)
