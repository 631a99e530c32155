"""Compile-time bounds checking of every affine read and Reduce target.

Each reference is checked under its guard: the stage (or reduction) domain, the Cases before
it that did not hold, its own Case condition, and the enclosing Select / `&` / `|` branches.
The check holds for every parameter value allowed by the context (the user's constraints and
non-empty domains, which calls enforce). Non-affine indices are clamped at run time instead.
"""
from __future__ import annotations

import islpy as isl
import numpy as np

from ..dsl import expr as E
from ..dsl.constructs import Reduction
from ..errors import BoundsError, PipelineError
from ..graph.dag import StageGraph
from ..interp.evaluate import Evaluator
from .isl_util import NotAffine, StageSpace


def check_bounds(graph: StageGraph, constraints=()) -> list:
    """Raise BoundsError for the first out-of-domain affine access; returns warnings."""
    ctx = isl.Context()
    params = [p for p in graph.parameters if p.typ.is_int]
    context_set = parameter_context(graph, constraints, ctx, params)
    for stage in graph.computed:
        func = stage.func
        space = StageSpace(ctx, params, func.variables)
        domain_set = _domain(space, func.intervals, func.name).intersect_params(context_set)
        if isinstance(func, Reduction):
            _check_expr(space, func.default, domain_set, func, "its default")
            red_space = StageSpace(ctx, params, func.reduction_variables)
            red_set = _domain(red_space, func.reduction_intervals, func.name)
            _check_cases(red_space, func, red_set.intersect_params(context_set))
        else:
            _check_cases(space, func, domain_set)
    return []


def parameter_context(graph, constraints, ctx, params) -> isl.Set:
    """Parameter values a call may have: every domain non-empty, every affine constraint."""
    space = StageSpace(ctx, params, ())
    context = space.universe_set
    for stage in graph.stages:
        for iv in stage.func.intervals:
            try:
                context = context.intersect(space.pw_aff(iv.lb).le_set(space.pw_aff(iv.ub)))
            except NotAffine:
                continue
    for cond in constraints:
        try:
            context = context.intersect(space.condition_set(cond))
        except NotAffine:
            continue
    return context.params()


def _domain(space, intervals, name) -> isl.Set:
    try:
        return space.box_set(intervals)
    except NotAffine as exc:
        raise PipelineError(f"{name}: interval bounds must be affine in integer Parameters, "
                            f"got `{exc}`") from None


def condition_bounds(space, cond):
    """(under, over): sets of points where `cond` surely holds and where it may hold; exact for
    affine conditions, widened through the parts isl cannot express."""
    try:
        exact = space.condition_set(cond)
        return exact, exact
    except NotAffine:
        pass
    if isinstance(cond, E.Logic):
        (under_a, over_a), (under_b, over_b) = (condition_bounds(space, cond.a),
                                                condition_bounds(space, cond.b))
        if cond.op == "&&":
            return under_a.intersect(under_b), over_a.intersect(over_b)
        return under_a.union(under_b), over_a.union(over_b)
    if isinstance(cond, E.Not):
        under, over = condition_bounds(space, cond.a)
        return over.complement(), under.complement()
    return space.universe_set.subtract(space.universe_set), space.universe_set


def _case_label(func, i: int) -> str:
    cases = func.defn
    if len(cases) == 1 and cases[0].cond is None:
        return "its definition"
    return f"case {i + 1} of {len(cases)}"


def _check_cases(space, func, domain_set):
    remaining = domain_set
    for i, case in enumerate(func.defn):
        label = _case_label(func, i)
        guard = remaining
        if case.cond is not None:
            _check_expr(space, case.cond, remaining, func, label)
            under, over = condition_bounds(space, case.cond)
            guard = remaining.intersect(over)
            remaining = remaining.subtract(under)
        if isinstance(func, Reduction):
            red = case.value
            _check_expr(space, red.value, guard, func, label)
            _check_expr(space, red.target, guard, func, label, writes=True)
        else:
            _check_expr(space, case.value, guard, func, label)


def _check_expr(space, e, guard, func, label, writes=False):
    for ref, ref_guard in guarded_references(space, e, guard):
        _check_reference(space, ref, ref_guard, func, label, writes and ref is e)


def guarded_references(space, e, guard):
    """Yield (reference, guard set) for every Reference in `e`, guards narrowed by Select and
    by the left side of `&` and `|`."""
    if isinstance(e, E.Select):
        yield from guarded_references(space, e.cond, guard)
        under, over = condition_bounds(space, e.cond)
        yield from guarded_references(space, e.a, guard.intersect(over))
        yield from guarded_references(space, e.b, guard.subtract(under))
        return
    if isinstance(e, E.Logic):
        yield from guarded_references(space, e.a, guard)
        under, over = condition_bounds(space, e.a)
        guard = guard.intersect(over) if e.op == "&&" else guard.subtract(under)
        yield from guarded_references(space, e.b, guard)
        return
    if isinstance(e, E.Reference):
        yield e, guard
    for child in e.children():
        yield from guarded_references(space, child, guard)


def _check_reference(space, ref, guard, func, label, writes):
    producer = ref.func
    for d, arg in enumerate(ref.args):
        try:
            index = space.pw_aff(arg)
        except NotAffine:
            continue
        iv = producer.intervals[d]
        lo, hi = space.pw_aff(iv.lb), space.pw_aff(iv.ub)
        bad_set = guard.intersect(index.lt_set(lo).union(index.gt_set(hi)))
        if bad_set.is_empty():
            continue
        var_values, param_values = space.describe_point(bad_set.sample_point())
        value, lo_value, hi_value = _values((arg, iv.lb, iv.ub), space, var_values,
                                            param_values)
        where = ", ".join(f"{k}={v}" for k, v in var_values.items())
        params = ", ".join(f"{k}={v}" for k, v in param_values.items())
        verb = "writes" if writes else "reads"
        raise BoundsError(
            f"{func.name} ({label}): {ref} {verb} {producer.name} outside its domain: at "
            f"{where or 'every point'}" + (f" with {params}" if params else "")
            + f", index {d} `{arg}` = {value} is outside [{iv.lb}, {iv.ub}] = "
            f"[{lo_value}, {hi_value}]")


def _values(exprs, space, var_values, param_values):
    points = {v: np.array([var_values[v.name]], v.typ.dtype) for v in space.variables}
    params = dict(param_values)
    for p in space.params:
        params.setdefault(p.name, 0)
    evaluate = Evaluator({}, {}, params)
    return [int(np.broadcast_to(evaluate(e, points, 1), (1,))[0]) for e in exprs]
