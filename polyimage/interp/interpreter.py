"""The reference interpreter: evaluates a pipeline stage by stage with NumPy.

It defines the semantics every compiled schedule must reproduce, so it stays simple: each stage
is evaluated over all points of its box, Case by Case, in topological order; a scan (a stage
reading its own earlier points) one slice at a time along its scan dimension.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..algebra.evaluate import Evaluator, subset
from ..dsl.constructs import Image
from ..dsl.reduction import Reduction
from ..graph.arguments import bind_arguments
from ..graph.dag import build_graph, scan_dimension
from ..poly.bounds import check_bounds

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..dsl.constructs import Function
    from ..dsl.expr import BoolExpr

__all__ = ["interpret"]


def interpret(
    outputs: Function | Sequence[Function],
    constraints: Sequence[BoolExpr] = (),
    **arguments: ArrayLike,
) -> Any:
    """Evaluate `outputs` on the given images and parameters with NumPy: the reference every
    compiled schedule must match, slow but with nothing to build.

    Args:
        outputs: the output Functions (one, or a list), as for `compile`.
        constraints: Conditions on Parameters that the call satisfies, as for `compile`:
            the reads are checked in bounds under them.
        **arguments: each input image and Parameter by name, as in a compiled pipeline's
            call.

    Returns:
        An array, or a tuple of arrays in the order of `outputs` when there are several.

    Raises:
        BoundsError: a read may leave its producer's domain, as in `compile`.
        ArgumentError: a missing or wrong argument, as in a call.
    """
    graph = build_graph(outputs)
    check_bounds(graph, constraints)
    binding = bind_arguments(graph, arguments, constraints)
    arrays = dict(binding.arrays)
    for stage in graph.stages:
        func = stage.func
        if isinstance(func, Image):
            continue
        evaluator = Evaluator(arrays, binding.origins, binding.params, where=func.name)
        origin, shape = binding.origins[func.name], binding.shapes[func.name]
        points = box_points(func.variables, origin, shape)
        scan = scan_dimension(func)
        if isinstance(func, Reduction):
            arrays[func.name] = _reduce(func, evaluator, points, binding)
        elif scan is not None:
            arrays[func.name] = _scan(func, evaluator, origin, shape, scan)
        else:
            arrays[func.name] = _evaluate_cases(func, evaluator, points).reshape(shape)
    results = tuple(arrays[name] for name in graph.outputs)
    return results[0] if len(results) == 1 else results


def box_points(variables, origin, shape) -> dict:
    """Every point of a box, in row-major order, as one coordinate array per variable."""
    grids = np.indices(shape, dtype=np.int64).reshape(len(shape), -1)
    return {var: (grids[d] + origin[d]).astype(var.typ.dtype) for d, var in enumerate(variables)}


def _case_masks(cases, evaluator, points):
    """For each Case, the points (as indices) where it is the first whose condition holds."""
    count = len(next(iter(points.values()))) if points else 1
    pending = np.arange(count)
    for case in cases:
        if not len(pending):
            break
        if case.cond is None:
            yield case, pending
            return
        holds = evaluator.full(case.cond, subset(points, pending), len(pending))
        yield case, pending[holds]
        pending = pending[~holds]


def _evaluate_cases(func, evaluator, points):
    count = len(next(iter(points.values())))
    out = np.zeros(count, func.typ.dtype)
    for case, chosen in _case_masks(func.cases, evaluator, points):
        out[chosen] = evaluator.full(case.value, subset(points, chosen), len(chosen))
    return out


def _scan(func, evaluator, origin, shape, dim):
    """Evaluate `func` one slice at a time along `dim`, in increasing order (vectorized over
    the other dimensions), so its reads of its own earlier slices see their final values."""
    out = np.zeros(shape, func.typ.dtype)
    evaluator.arrays[func.name] = out
    slice_shape = shape[:dim] + (1,) + shape[dim + 1 :]
    for k in range(shape[dim]):
        slice_origin = origin[:dim] + (origin[dim] + k,) + origin[dim + 1 :]
        points = box_points(func.variables, slice_origin, slice_shape)
        index = (slice(None),) * dim + (slice(k, k + 1),)
        out[index] = _evaluate_cases(func, evaluator, points).reshape(slice_shape)
    return out


_UFUNCS = {"Sum": np.add, "Mul": np.multiply, "Min": np.minimum, "Max": np.maximum}


def _reduce(func, evaluator, points, binding):
    """Start from the default, then at every reduction point, in the order of the reduction
    domain, apply the update of every Case whose condition holds, in the order of the Cases
    (as the serial C loop does)."""
    shape = binding.shapes[func.name]
    out = evaluator.full(func.default, points, int(np.prod(shape))).copy()
    evaluator.arrays[func.name] = out.reshape(shape)
    red_origin, red_shape = [], []
    for iv in func.reduction_intervals:
        lb, ub = evaluator(iv.lb, {}, 1).item(), evaluator(iv.ub, {}, 1).item()
        red_origin.append(lb)
        red_shape.append(max(ub - lb + 1, 0))
    red_points = box_points(func.reduction_variables, red_origin, red_shape)
    total = int(np.prod(red_shape))
    order, targets, values = [], [], []
    everywhere = np.arange(total)
    for k, case in enumerate(func.cases):
        if case.cond is None:
            chosen = everywhere
        else:
            chosen = everywhere[evaluator.full(case.cond, red_points, total)]
        sub = subset(red_points, chosen)
        idx = evaluator.indices(case.value.target, sub, len(chosen))
        order.append(chosen * len(func.cases) + k)
        targets.append(np.ravel_multi_index(idx, shape) if idx else np.zeros(len(chosen), np.int64))
        values.append(evaluator.full(case.value.value, sub, len(chosen)))
    if not order:
        return out.reshape(shape)
    order = np.concatenate(order)
    ranked = np.argsort(order, kind="stable")
    targets = np.concatenate(targets)[ranked]
    values = np.concatenate(values).astype(func.typ.dtype)[ranked]
    op_names = np.array([case.value.op.name for case in func.cases])[
        order[ranked] % len(func.cases)
    ]
    starts = np.flatnonzero(np.r_[True, op_names[1:] != op_names[:-1]]) if len(ranked) else []
    bounds = list(starts) + [len(ranked)]
    with np.errstate(all="ignore"):
        for a, b in zip(bounds[:-1], bounds[1:]):
            _UFUNCS[op_names[a]].at(out, targets[a:b], values[a:b])
    return out.reshape(shape)
