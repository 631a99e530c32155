"""PolyMage's Stencil: a weighted sum of a stage's neighbours, given as a nested-list kernel."""

from __future__ import annotations

import numbers
from typing import Sequence

import numpy as np

from . import expr as E
from .constructs import Function


def Stencil(
    func: Function,
    indices: Sequence[E.ExprLike],
    kernel: Sequence | np.ndarray,
    origin: Sequence[int] | None = None,
) -> E.Expr:
    """PolyMage's weighted sum of neighbours: the sum over positions k of the nested-list
    `kernel` (rows over the first index) of `kernel[k] * func(indices[d] + k[d] - origin[d])`.

    `origin` is the kernel position that weighs `func(*indices)`; by default `(n - 1) // 2` for a
    dimension of n entries (the centre of an odd size, as in PolyMage). Zero weights are
    skipped; the arithmetic is the DSL's (in `func`'s type with Python-number weights, so Cast
    small integer inputs in a stage of their own first if the sum may overflow).

    Args:
        func: the stage or Image whose neighbours are summed.
        indices: the point the kernel is centred on, one index per dimension (`[x, y]`).
        kernel: the weights, a nested list (or a NumPy array) with one level per dimension.
        origin: the kernel position that weighs `func(*indices)`.

    Returns:
        The weighted sum, an expression.

    Raises:
        TypeError: `func` is not a stage or an Image, or a weight is not a number.
        ValueError: the number of indices, the kernel's depth or the origin does not match
            `func`'s dimensions.
    """
    if not isinstance(func, Function):
        raise TypeError(f"Stencil needs a Function or Image first, got {func!r}")
    indices = list(indices)
    if len(indices) != func.ndim:
        raise ValueError(
            f"Stencil of {func.name}: {func.name} has {func.ndim} dimension(s) "
            f"but {len(indices)} index(es) were given"
        )
    shape, weights = _kernel_weights(kernel, len(indices), func.name)
    if origin is None:
        origin = [(n - 1) // 2 for n in shape]
    origin = list(origin)
    if len(origin) != len(shape) or not all(
        isinstance(o, numbers.Integral) and not isinstance(o, bool) for o in origin
    ):
        raise ValueError(
            f"Stencil of {func.name}: origin must be {len(shape)} integer(s), got {origin}"
        )
    total: E.Expr | None = None
    for position, weight in weights:
        if weight == 0:
            continue
        term: E.Expr = func(*(_offset(i, k - o) for i, k, o in zip(indices, position, origin)))
        if not (type(weight) is int and weight == 1):
            term = term * weight
        total = term if total is None else total + term
    return E.to_expr(0) if total is None else total


def _offset(index: E.ExprLike, delta: int) -> E.ExprLike:
    """`index + delta`, written `index - |delta|` when delta is negative."""
    if delta == 0:
        return index
    return index + delta if delta > 0 else index - (-delta)


def _kernel_weights(kernel: Sequence | np.ndarray, rank: int, name: str) -> tuple[list, list]:
    """The shape of a regular nested-list kernel of `rank` levels, and its (position, weight)
    entries in row-major order."""
    if isinstance(kernel, np.ndarray):
        kernel = kernel.tolist()
    shape: list[int] = []
    level = kernel
    while isinstance(level, (list, tuple)):
        if not level:
            raise ValueError(f"Stencil of {name}: the kernel has an empty row")
        shape.append(len(level))
        level = level[0]
    if len(shape) != rank:
        raise ValueError(
            f"Stencil of {name}: the kernel nests {len(shape)} level(s) of lists "
            f"but {name} is indexed with {rank} index(es)"
        )
    weights: list = []

    def visit(node: object, position: tuple[int, ...]) -> None:
        depth = len(position)
        if depth == rank:
            if isinstance(node, (list, tuple)):
                raise ValueError(
                    f"Stencil of {name}: the kernel is ragged: entry "
                    f"{list(position)} is a list, expected a number"
                )
            if isinstance(node, bool) or not isinstance(node, numbers.Real):
                raise TypeError(
                    f"Stencil of {name}: kernel entry {list(position)} is {node!r}, not a number"
                )
            weights.append((position, node))
            return
        if not isinstance(node, (list, tuple)):
            raise ValueError(
                f"Stencil of {name}: the kernel is ragged: entry {list(position)} "
                f"is {node!r}, expected a list of {shape[depth]}"
            )
        if len(node) != shape[depth]:
            raise ValueError(
                f"Stencil of {name}: the kernel is ragged: row {list(position)} "
                f"has {len(node)} entries, expected {shape[depth]}"
            )
        for k, child in enumerate(node):
            visit(child, position + (k,))

    visit(kernel, ())
    return shape, weights
