"""How far a pipeline's outputs reach into its stages and inputs, along each image axis.

An axis is a size parameter (R, C) that sizes the outputs; a stage lies on it with one
dimension and `ratio` output points per stage point (2 for a half-size level), both read off
how its extents grow with the parameter. For every read (a Reduction's through the reduction
points that write each of its points), isl bounds where the producer point lies against the
consumer point, in output points; summed along every path of reads from the outputs, these
give each stage's reach. A read whose bounds grow with the image (a Reduction over it, a
data-dependent index), a scan, an output on another grid than its inputs, or a condition on a
point's own position make the pipeline unsplittable: SplitError says which and why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import islpy as isl

from ..algebra.affine import is_affine, linear_form
from ..algebra.evaluate import evaluate_scalar
from ..dsl import expr as E
from ..dsl.constructs import Image
from ..dsl.reduction import Reduction
from ..errors import PipelineError
from ..graph.dag import StageGraph, definition_exprs
from ..poly.analysis import analyze

# size parameters are shifted by this to measure the slope of extents: every small pyramid
# factor divides it, so `(R - 1) // 8 + 1` gives exactly 1/8
SHIFT = 2**12 * 3**2 * 5 * 7
# the reach is compared at two sizes this large to tell bounded reach from reach that grows
LARGE = 2**12


class SplitError(PipelineError):
    """The pipeline cannot be computed chunk by chunk; the message says why."""


@dataclass(frozen=True)
class Reach:
    """Stage points against output points along an axis: the stage's dimension `dim`, `ratio`
    output points per stage point (2 for a half-size level), and bounds low..high, in output
    points, of where a needed stage point y lies against the output point x that needs it:
    y * ratio - x."""

    dim: int
    ratio: Fraction
    low: Fraction
    high: Fraction

    def needed(self, first: int, last: int) -> tuple:
        """The stage points (first, last inclusive) that output points first..last need."""
        return (
            math.ceil((first + self.low) / self.ratio),
            math.floor((last + self.high) / self.ratio),
        )

    def shift(self, translation: int) -> int:
        """A translation of the output grid in this stage's points (a whole number when the
        translation is a multiple of the axis alignment)."""
        moved = Fraction(translation) / self.ratio
        assert moved.denominator == 1, (translation, self.ratio)
        return int(moved)


@dataclass(frozen=True)
class Axis:
    """An axis the work is split along: its size parameter, the dimension of each output on
    it, the reach into every stage with a dimension on it, and the multiple that translations
    of a window must be (the product of the scale factors along the way)."""

    param: str
    output_dims: dict
    reaches: dict
    alignment: int


@dataclass(frozen=True)
class SplitPlan:
    """The axes of a call with parameter `values` (every integer parameter), and the
    constraints every call (every window) must meet."""

    graph: StageGraph
    values: dict
    axes: tuple
    constraints: tuple = ()


def split_plan(graph, constraints, values: dict) -> SplitPlan:
    """The axes of `graph` called with `values`, or a SplitError saying why it cannot be
    computed chunk by chunk."""
    _refuse_scans(graph)
    sizes = _size_params(graph)
    large = {**values, **{p: max(values[p], LARGE) for p in sizes}}
    slopes = {s.name: _slopes(s.func, sizes, large) for s in graph.stages}
    output_axes = _output_axes(graph, slopes)
    _refuse_different_ranges(graph, output_axes, values)
    place = {p: _axis_places(graph, slopes, p, dims) for p, dims in output_axes.items()}
    analysis = analyze(graph, constraints)
    ints = [p.name for p in analysis.params]
    edges = {
        key: _edges(_specialize(analysis, {n: at[n] for n in ints}))
        for key, at in (("call", values), ("large", large), ("larger", _scaled(large, sizes, 2)))
    }
    needed = _needed_stages(graph, edges["call"])
    axes = []
    for param, output_dims in output_axes.items():
        _refuse_position_tests(graph, needed, place[param], param)
        offsets = {key: _offsets(found, place[param]) for key, found in edges.items()}
        for i, (access, consumer, producer, _) in enumerate(edges["call"]):
            big, bigger = offsets["large"][i], offsets["larger"][i]
            if consumer in needed and (big is None or big != bigger or offsets["call"][i] is None):
                raise SplitError(_unbounded_reason(graph, access, consumer, producer, param))
        reaches = _propagate(graph, output_dims, place[param], edges["call"], offsets["call"])
        alignment = 1
        for name, reach in reaches.items():
            func = graph.stage(name).func
            alignment = math.lcm(alignment, reach.ratio.numerator, *_moduli(func, reach))
        axes.append(Axis(param, output_dims, reaches, alignment))
    return SplitPlan(graph, dict(values), tuple(axes), tuple(constraints))


def _axis_places(graph, slopes, param, output_dims) -> dict:
    """{stage: (its dimension along the axis of `param`, output points per stage point)}."""
    first = graph.outputs[0]
    out_slope = slopes[first][param][output_dims[first]]
    place = {}
    for stage in graph.stages:
        dims = [d for d, s in enumerate(slopes[stage.name][param]) if s != 0]
        if len(dims) > 1:
            raise SplitError(f"{stage.name} has several dimensions sized by {param}")
        if dims:
            ratio = out_slope / slopes[stage.name][param][dims[0]]
            if isinstance(stage.func, Image) and ratio != 1:
                raise SplitError(_other_grid(first, stage.name, param, ratio))
            place[stage.name] = (dims[0], ratio)
    return place


def _refuse_scans(graph) -> None:
    """A stage that reads its own earlier points depends on everything before it."""
    for stage in graph.computed:
        for e in definition_exprs(stage.func):
            for node in E.walk(e):
                if isinstance(node, E.Reference) and node.func is stage.func:
                    if not isinstance(stage.func, Reduction):
                        raise SplitError(
                            f"{stage.name} is a scan (it reads its own earlier points), so each "
                            f"point depends on all before it: it cannot be split into chunks"
                        )


def _refuse_position_tests(graph, needed, place, param) -> None:
    """Conditions on a stage's own position along the axis (`x < 5`, `x == R - 1`) would test
    the window's position instead of the image's: refused (residues `x % 2` are aligned)."""
    for stage in graph.computed:
        if stage.name not in needed or stage.name not in place:
            continue
        var = stage.func.variables[place[stage.name][0]]
        for e in definition_exprs(stage.func):
            for node in E.walk(e):
                if isinstance(node, E.Condition) and any(
                    _uses_position(side, var) for side in (node.lhs, node.rhs)
                ):
                    raise SplitError(
                        f"{stage.name} tests its position along {param} ({node}): a window "
                        f"would test its own position instead; the pipeline cannot be split "
                        f"into chunks"
                    )


def _uses_position(e, var) -> bool:
    """Whether `var` appears in `e` outside references' indices and `//`, `%` residues."""
    if e is var:
        return True
    if isinstance(e, E.Reference) or (isinstance(e, E.BinOp) and e.op in ("//", "%", "/")):
        return False
    return any(_uses_position(child, var) for child in e.children())


def _size_params(graph) -> list:
    """Parameters that size an input image (read off its shape)."""
    found = []
    for img in graph.images:
        for extent in img.extents:
            form = linear_form(extent)
            if form is not None and form[0].name not in found:
                found.append(form[0].name)
    return found


def _scaled(values: dict, sizes, factor: int) -> dict:
    return {**values, **{p: factor * values[p] for p in sizes}}


def _extents(func, values: dict) -> list:
    return [
        evaluate_scalar(iv.ub, values) - evaluate_scalar(iv.lb, values) + 1 for iv in func.intervals
    ]


def _slopes(func, sizes, values: dict) -> dict:
    """{size parameter: the growth of each dimension's extent per unit of it}."""
    base = _extents(func, values)
    return {
        p: tuple(
            Fraction(b - a, SHIFT)
            for a, b in zip(base, _extents(func, {**values, p: values[p] + SHIFT}))
        )
        for p in sizes
    }


def _output_axes(graph, slopes) -> dict:
    """{size parameter: {output: its dimension along it}}; refuses outputs sized by two
    parameters in one dimension, or on different grids from each other."""
    axes: dict = {}
    for name in graph.outputs:
        for d, per_param in enumerate(zip(*slopes[name].values())):
            params = [p for p, s in zip(slopes[name], per_param) if s != 0]
            if len(params) > 1:
                raise SplitError(f"dimension {d} of {name} is sized by {' and '.join(params)}")
            if params:
                axes.setdefault(params[0], {})[name] = d
    first = graph.outputs[0]
    for param, dims in axes.items():
        if len(dims) != len(graph.outputs):
            raise SplitError(f"outputs {', '.join(graph.outputs)} do not all run along {param}")
        for name, d in dims.items():
            ratio = slopes[first][param][dims[first]] / slopes[name][param][d]
            if ratio != 1:
                raise SplitError(_other_grid(first, name, param, ratio))
    if not axes:
        raise SplitError(f"no output dimension grows with the input ({', '.join(graph.outputs)})")
    return axes


def _refuse_different_ranges(graph, output_axes, values) -> None:
    """Outputs must cover the same points along every axis (a block is one range of them)."""
    for param, dims in output_axes.items():
        ranges = {
            (evaluate_scalar(iv.lb, values), evaluate_scalar(iv.ub, values))
            for iv in (graph.stage(name).func.intervals[d] for name, d in dims.items())
        }
        if len(ranges) > 1:
            raise SplitError(f"outputs {', '.join(dims)} cover different ranges along {param}")


def _other_grid(output, other, param, ratio) -> str:
    return (
        f"{output} and {other} are on different grids along {param} ({ratio} points of one per "
        f"point of the other): chunks of one do not map to chunks of the other; compute the "
        f"output on its own grid, or split the pipeline there"
    )


def _specialize(analysis, values: dict):
    """The domains and access maps with every integer parameter fixed to `values`."""
    fixed = analysis.context_set
    for i, p in enumerate(analysis.params):
        value = isl.Val.int_from_si(analysis.ctx, int(values[p.name]))
        fixed = fixed.fix_val(isl.dim_type.param, i, value)
    return _Fixed(
        analysis.graph,
        {k: v.intersect_params(fixed) for k, v in analysis.domain_sets.items()},
        [(a, a.access_map.intersect_params(fixed)) for a in analysis.accesses],
    )


@dataclass(frozen=True)
class _Fixed:
    graph: StageGraph
    domain_sets: dict
    accesses: list


def _edges(fixed: _Fixed) -> list:
    """(access, consumer, producer, map consumer point -> producer points) of every read; a
    Reduction's reads go through the reduction points that write each of its points."""
    found = []
    for stage in fixed.graph.computed:
        name = stage.name
        accesses = [(a, m) for a, m in fixed.accesses if a.consumer == name]
        writers = None
        for a, m in accesses:
            if a.writes:
                writers = m.reverse() if writers is None else writers.union(m.reverse())
        for a, access_map in accesses:
            if a.writes or a.producer == name:
                continue
            if a.space.name != name:
                assert writers is not None  # a Reduction's reads go through its writes
                access_map = writers.apply_range(access_map)
            found.append((a, name, a.producer, access_map))
    return found


def _offsets(edges: list, place: dict) -> list:
    """Per edge, bounds (in output points) of where the producer point lies against the
    consumer point along the axis: (low, high) Fractions; None when the consumer has no
    dimension along the axis but the producer has, or the bounds are infinite."""
    found: list[tuple[Fraction, Fraction] | None] = []
    for _, consumer, producer, access_map in edges:
        if producer not in place:
            found.append((Fraction(0), Fraction(0)))
            continue
        if consumer not in place or access_map.is_empty():
            found.append(None if consumer not in place else (Fraction(0), Fraction(0)))
            continue
        (dim_c, ratio_c), (dim_p, ratio_p) = place[consumer], place[producer]
        scale = math.lcm(ratio_c.denominator, ratio_p.denominator)
        pairs = access_map.wrap().flatten()
        space = isl.LocalSpace.from_space(pairs.get_space())
        ctx, n_in = pairs.get_ctx(), access_map.dim(isl.dim_type.in_)
        z = isl.Aff.var_on_domain(space, isl.dim_type.set, n_in + dim_p)
        y = isl.Aff.var_on_domain(space, isl.dim_type.set, dim_c)
        diff = z.scale_val(isl.Val.int_from_si(ctx, int(ratio_p * scale))).sub(
            y.scale_val(isl.Val.int_from_si(ctx, int(ratio_c * scale)))
        )
        lo, hi = pairs.min_val(diff), pairs.max_val(diff)
        if not (lo.is_int() and hi.is_int()):
            found.append(None)
            continue
        found.append((Fraction(int(lo.to_python()), scale), Fraction(int(hi.to_python()), scale)))
    return found


def _needed_stages(graph, edges: list) -> set:
    """Stages the outputs read, directly or not."""
    needed = set(graph.outputs)
    for stage in reversed(graph.stages):
        if stage.name in needed:
            needed |= {producer for _, consumer, producer, _ in edges if consumer == stage.name}
    return needed


def _propagate(graph, output_dims, place, edges, offsets) -> dict:
    """{stage: Reach}: the reach of the outputs, summed along every path of reads."""
    bounds = {name: (Fraction(0), Fraction(0)) for name in output_dims}
    for stage in reversed(graph.stages):
        if stage.name not in bounds:
            continue
        low, high = bounds[stage.name]
        for (_, consumer, producer, _), offset in zip(edges, offsets):
            if consumer != stage.name or producer not in place:
                continue
            lo, hi = low + offset[0], high + offset[1]
            if producer in bounds:
                lo, hi = min(lo, bounds[producer][0]), max(hi, bounds[producer][1])
            bounds[producer] = (lo, hi)
    return {name: Reach(place[name][0], place[name][1], *b) for name, b in bounds.items()}


def _moduli(func, reach: Reach) -> list:
    """Alignments that `x // k` and `x % k` of the stage's variable along the axis need (so that
    a translated window sees every residue where the whole image does)."""
    if isinstance(func, Image):
        return []
    var = func.variables[reach.dim]
    found = []
    for e in definition_exprs(func):
        for node in E.walk(e):
            if (
                isinstance(node, E.BinOp)
                and node.op in ("//", "%", "/")
                and node.typ.is_int
                and isinstance(node.b, E.Const)
                and any(v is var for v in E.free_symbols(node.a, E.Variable))
                and not E.free_symbols(node.a, E.Reference)
            ):
                k = abs(int(node.b.value))
                found.append((k * reach.ratio).numerator)
    return found


def _unbounded_reason(graph, access, consumer: str, producer: str, param: str) -> str:
    """Why `consumer`'s reads of `producer` reach further as the image grows."""
    func = graph.stage(consumer).func
    if isinstance(func, Reduction) and any(
        param in {p.name for p in E.free_symbols(b, E.Parameter)}
        for iv in func.reduction_intervals
        for b in (iv.lb, iv.ub)
    ):
        return (
            f"{consumer} is a Reduction over the whole image (its reduction domain grows with "
            f"{param}), so its points depend on points of {producer} arbitrarily far away: the "
            f"pipeline cannot be split into chunks"
        )
    if not all(is_affine(a) for a in access.ref.args):
        return (
            f"{consumer} reads {access.ref} at a data-dependent index, which may reach anywhere "
            f"in {producer}: the pipeline cannot be split into chunks"
        )
    return (
        f"{consumer} reads {producer} further away along {param} as the image grows: the "
        f"pipeline cannot be split into chunks"
    )
