"""Polyhedral view of a stage graph: domains, Case pieces, guards and access maps.

analyze(graph, constraints) -> PolyAnalysis. Every later question (bounds, footprints, inlining,
cost) is asked of this object. Each stage lives in the isl space `[params] -> { name[i0, ...] }`;
a Reduction's reduction domain lives in `name__red[...]`.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..algebra.affine import is_affine
from ..dsl import expr as E
from ..dsl.constructs import Image
from ..dsl.reduction import Reduction
from ..errors import PipelineError
from ..graph.dag import StageGraph
from .isl_util import NotAffine, StageSpace

REDUCTION_SUFFIX = "__red"


@dataclass(frozen=True)
class Access:
    """One reference as written, with the points where it is evaluated and what it touches."""

    consumer: str
    label: str
    ref: E.Reference
    space: StageSpace
    guard_set: isl.Set
    access_map: isl.Map
    affine: tuple
    whole_map: isl.Map  # the access at every point, before the guard
    writes: bool = False

    @property
    def producer(self) -> str:
        return self.ref.func.name

    @property
    def read_set(self) -> isl.Set:
        """Producer points this reference touches (over-approximated along clamped indices)."""
        return self.access_map.intersect_domain(self.guard_set).range()


@dataclass
class PolyAnalysis:
    """Domains and accesses of every stage, over one isl context."""

    graph: StageGraph
    ctx: isl.Context
    params: tuple
    context_set: isl.Set
    spaces: dict
    domain_sets: dict
    reduction_sets: dict
    covered_sets: dict
    accesses: list

    def accesses_of(self, consumer: str) -> list:
        return [a for a in self.accesses if a.consumer == consumer]

    def accesses_to(self, producer: str) -> list:
        return [a for a in self.accesses if a.producer == producer and not a.writes]


def analyze(graph: StageGraph, constraints=(), consumers=None) -> PolyAnalysis:
    """Build the polyhedral representation of `graph` under the user's constraints; with
    `consumers` (stage names), the domains and accesses of those stages only."""
    ctx = isl.Context()
    params = tuple(p for p in graph.parameters if p.typ.is_int)
    context_set = parameter_context(graph, constraints, ctx, params)
    spaces, domains, reductions, covered, accesses = {}, {}, {}, {}, []
    for stage in graph.stages:
        func = stage.func
        space = StageSpace(ctx, params, func.variables, func.name)
        spaces[func.name] = space
        if consumers is None or func.name in consumers:
            domain_set = _box(space, func.intervals, func.name)
            domains[func.name] = domain_set.intersect_params(context_set)
    for stage in graph.stages:
        func = stage.func
        if func.name not in domains:
            continue
        if isinstance(func, Image):
            covered[func.name] = domains[func.name]
            continue
        if isinstance(func, Reduction):
            covered[func.name] = domains[func.name]
            accesses += _expr_accesses(
                spaces,
                func.name,
                spaces[func.name],
                func.default,
                domains[func.name],
                "its default",
            )
            red_space = StageSpace(
                ctx, params, func.reduction_variables, func.name + REDUCTION_SUFFIX
            )
            red_set = _box(red_space, func.reduction_intervals, func.name)
            reductions[func.name] = red_set.intersect_params(context_set)
            accesses += _case_accesses(spaces, func, red_space, reductions[func.name])
        else:
            covered[func.name] = _covered(spaces[func.name], func, domains[func.name])
            accesses += _case_accesses(spaces, func, spaces[func.name], domains[func.name])
    return PolyAnalysis(
        graph, ctx, params, context_set, spaces, domains, reductions, covered, accesses
    )


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


def _box(space, intervals, name) -> isl.Set:
    try:
        return space.box_set(intervals)
    except NotAffine as exc:
        raise PipelineError(
            f"{name}: interval bounds must be affine in integer Parameters, got `{exc}`"
        ) from None


def condition_bounds(space, cond):
    """(under, over): sets of points where `cond` surely holds and where it may hold; exact for
    affine conditions, widened through the parts isl cannot express."""
    try:
        exact = space.condition_set(cond)
        return exact, exact
    except NotAffine:
        pass
    if isinstance(cond, E.Logic):
        (under_a, over_a), (under_b, over_b) = (
            condition_bounds(space, cond.a),
            condition_bounds(space, cond.b),
        )
        if cond.op == "&&":
            return under_a.intersect(under_b), over_a.intersect(over_b)
        return under_a.union(under_b), over_a.union(over_b)
    if isinstance(cond, E.Not):
        under, over = condition_bounds(space, cond.a)
        return over.complement(), under.complement()
    return space.universe_set.subtract(space.universe_set), space.universe_set


def case_label(func, i: int) -> str:
    cases = func.cases
    if len(cases) == 1 and cases[0].cond is None:
        return "its definition"
    return f"case {i + 1} of {len(cases)}"


def case_guards(space, func, domain_set):
    """(case index, label, guard set) per Case: the points where it is the first that holds
    (over-approximated where conditions are not affine)."""
    remaining = domain_set
    for i, case in enumerate(func.cases):
        if case.cond is None:
            yield i, case_label(func, i), remaining, remaining
            return
        under, over = condition_bounds(space, case.cond)
        yield i, case_label(func, i), remaining, remaining.intersect(over)
        remaining = remaining.subtract(under)


def _covered(space, func, domain_set) -> isl.Set:
    """Points some Case may define (the rest hold 0)."""
    covered = domain_set.subtract(domain_set)
    for _, _, _, guard in case_guards(space, func, domain_set):
        covered = covered.union(guard)
    return covered.coalesce()


def _case_accesses(spaces, func, space, domain_set) -> list:
    accesses = []
    for i, label, before, guard in case_guards(space, func, domain_set):
        case = func.cases[i]
        if case.cond is not None:
            accesses += _expr_accesses(spaces, func.name, space, case.cond, before, label)
        if isinstance(func, Reduction):
            red = case.value
            accesses += _expr_accesses(spaces, func.name, space, red.value, guard, label)
            accesses += _expr_accesses(
                spaces, func.name, space, red.target, guard, label, writes=True
            )
        else:
            accesses += _expr_accesses(spaces, func.name, space, case.value, guard, label)
    return accesses


def _expr_accesses(spaces, consumer, space, e, guard, label, writes=False) -> list:
    result = []
    for ref, ref_guard in guarded_references(space, e, guard):
        producer = spaces[ref.func.name]
        access_map = space.access_map(ref, producer, ref.func.intervals)
        affine = tuple(is_affine(a) for a in ref.args)
        result.append(
            Access(
                consumer,
                label,
                ref,
                space,
                ref_guard,
                access_map.intersect_domain(ref_guard),
                affine,
                access_map,
                writes and ref is e,
            )
        )
    return result


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
