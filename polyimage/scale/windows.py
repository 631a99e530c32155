"""The window of the inputs that computes one block of the outputs exactly.

A window along an axis is the whole pipeline run with the axis parameter set to `size`, on
inputs cut out at `shift` (in output points; a multiple of the axis alignment, so that every
coarser level and residue moves by whole points). It is exact for a block when every stage
point the block needs, moved by the shift, lies inside the window's domain of that stage:
then each point is computed from the same points as in the whole image, and reads clamped to
a domain's border are clamped alike (a window touches a true border wherever one is read).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..algebra.evaluate import evaluate_scalar
from ..dsl.constructs import Image
from .halo import Axis, SplitError, SplitPlan


@dataclass(frozen=True)
class Window:
    """Along one axis: the shift of the window in output points and the axis parameter's
    value inside it."""

    shift: int
    size: int


def stage_range(func, dim: int, values: dict) -> tuple:
    """(first, last) point of a stage's dimension at parameter `values`."""
    iv = func.intervals[dim]
    return evaluate_scalar(iv.lb, values), evaluate_scalar(iv.ub, values)


def block_window(plan: SplitPlan, axis: Axis, first: int, last: int) -> Window:
    """The smallest window along `axis` that computes output points first..last exactly."""
    graph, values, whole = plan.graph, plan.values, plan.values[axis.param]
    needed = {}
    for name, reach in axis.reaches.items():
        lo, hi = reach.needed(first, last)
        start, end = stage_range(graph.stage(name).func, reach.dim, values)
        needed[name] = (max(lo, start), min(hi, end))
    shift = min(
        (lo - stage_range(graph.stage(name).func, axis.reaches[name].dim, values)[0])
        * axis.reaches[name].ratio
        for name, (lo, _) in needed.items()
    )
    shift = max(0, int(shift // axis.alignment) * axis.alignment)
    for shift in (shift, 0):
        low, high = 1, whole - shift
        if high < 1 or not _fits(plan, axis, needed, shift, high):
            continue
        while low < high:
            middle = (low + high) // 2
            if _fits(plan, axis, needed, shift, middle):
                high = middle
            else:
                low = middle + 1
        return Window(shift, low)
    raise SplitError(f"no window along {axis.param} computes points {first}..{last}")


def _fits(plan, axis, needed, shift: int, size: int) -> bool:
    """Whether the window (shift, size) holds every needed point, lies inside the inputs and
    meets the pipeline's constraints."""
    inside = {**plan.values, axis.param: size}
    if not all(evaluate_scalar(cond, inside) for cond in plan.constraints):
        return False
    for name, (lo, hi) in needed.items():
        func, reach = plan.graph.stage(name).func, axis.reaches[name]
        moved = reach.shift(shift)
        start, end = stage_range(func, reach.dim, inside)
        if end < start or not start <= lo - moved or not hi - moved <= end:
            return False
        if isinstance(func, Image):
            whole_start, whole_end = stage_range(func, reach.dim, plan.values)
            if start + moved < whole_start or end + moved > whole_end:
                return False
    return True


def window_slices(plan: SplitPlan, windows: dict, image) -> tuple:
    """The part of input `image` a window reads: {axis parameter: Window} given."""
    slices = [slice(None)] * len(image.extents)
    for axis in plan.axes:
        reach = axis.reaches.get(image.name)
        if reach is None:
            continue
        window = windows[axis.param]
        start, end = stage_range(image, reach.dim, {**plan.values, axis.param: window.size})
        moved = reach.shift(window.shift)
        slices[reach.dim] = slice(start + moved, end + moved + 1)
    return tuple(slices)


def block_slices(plan: SplitPlan, windows: dict, output: str, block: dict) -> tuple:
    """Where output block {axis parameter: (first, last) output point} lies in the output of
    the window computing it."""
    func = plan.graph.stage(output).func
    slices = [slice(None)] * len(func.intervals)
    for axis in plan.axes:
        dim = axis.output_dims[output]
        window = windows[axis.param]
        start, _ = stage_range(func, dim, {**plan.values, axis.param: window.size})
        first, last = block[axis.param]
        slices[dim] = slice(first - window.shift - start, last - window.shift - start + 1)
    return tuple(slices)
