"""Expression inlining (TOPLAS 2020, Algorithm 3): StageGraph -> StageGraph.

A producer is substituted into its consumers when (i) its only consumer reads it pointwise (at
the consumer's own point), (ii) it is pointwise itself, or (iii) the references to it never
overlap (each of its points is read once), so inlining adds no redundant work beyond
recomputing pointwise expressions. Every reference to it must also tell consumer points apart
(each consumer variable appears as `a*v + b` in some index): a small table read at fixed indices
by every pixel stays a stage. Live-outs, inputs,
Reductions, scans and producers read through clamped (non-affine) indices are never inlined;
a scan's reads of itself stay reads (of its copy when it changes). The user's Function objects
are left untouched: changed stages are copies.
"""

from __future__ import annotations

import copy
import itertools

from ..algebra.affine import data_dependent, linear_form
from ..algebra.substitute import clamped_indices, substitute
from ..dsl import expr as E
from ..dsl.constructs import Case, Image, Reduce
from ..dsl.reduction import Reduction
from .dag import StageGraph, build_graph, definition_exprs, scan_dimension


def inline_stages(graph: StageGraph, analyze) -> tuple:
    """Inline every eligible producer, repeating until none is left. `analyze(graph, consumers)`
    gives the polyhedral analysis (the accesses of `consumers` at least) used by rule (iii).
    Returns (new graph, [(producer, consumers, rule)])."""
    inlined: list = []
    known: dict = {}  # what build_graph found of each function, for the next step's graph
    while True:
        choice = _next_candidate(graph, analyze)
        if choice is None:
            return graph, inlined
        producer, rule = choice
        consumers = graph.stage(producer).consumers
        graph = _substitute_producer(graph, graph.stage(producer).func, known)
        inlined.append((producer, consumers, rule))


def _next_candidate(graph, analyze):
    for stage in graph.stages:
        func = stage.func
        if (
            isinstance(func, (Image, Reduction))
            or stage.name in graph.outputs
            or not stage.consumers
            or graph.scan(stage.name) is not None
        ):
            continue
        refs = [r for c in stage.consumers for r in graph.reads(c) if r.func is func]
        if any(data_dependent(r) for r in refs):
            continue
        if not all(
            _one_to_one(r, graph.stage(c).func)
            for c in stage.consumers
            for r in graph.reads(c)
            if r.func is func
        ):
            continue
        if is_pointwise(func):
            return stage.name, "pointwise producer"
        if len(stage.consumers) == 1 and _reads_in_place(
            refs, graph.stage(stage.consumers[0]).func
        ):
            return stage.name, "pointwise consumer"
        if _non_overlapping(analyze(graph, stage.consumers), stage.name):
            return stage.name, "non-overlapping reads"
    return None


def _one_to_one(ref, consumer) -> bool:
    """Each consumer variable appears as `a*v + b` in some index, so different consumer points
    read different producer points (a 3x4 matrix read at (c, 0) by every pixel would otherwise be
    recomputed per pixel)."""
    forms = [linear_form(a) for a in ref.args]
    found = {id(f[0]) for f in forms if f is not None and isinstance(f[0], E.Variable)}
    own = consumer.reduction_variables if isinstance(consumer, Reduction) else consumer.variables
    return all(id(v) in found for v in own)


def _reads_in_place(refs, consumer) -> bool:
    """Every reference in `refs` reads at the consumer's own point (each index one of its
    variables), whatever else the consumer reads: inlining then recomputes nothing."""
    if isinstance(consumer, (Image, Reduction)):
        return False
    own = {id(v) for v in consumer.variables}
    return all(isinstance(a, E.Variable) and id(a) in own for r in refs for a in r.args)


def _references(func) -> list:
    return [r for e in definition_exprs(func) for r in E.references(e)]


def is_pointwise(func) -> bool:
    """A Function whose every reference reads its producer at the point's own coordinates
    (each index one of the stage's variables)."""
    if isinstance(func, (Image, Reduction)):
        return False
    own = {id(v) for v in func.variables}
    return all(
        isinstance(a, E.Variable) and id(a) in own for r in _references(func) for a in r.args
    )


def _non_overlapping(analysis, producer: str) -> bool:
    accesses = analysis.accesses_to(producer)
    if not accesses or not all(a.access_map.is_injective() for a in accesses):
        return False
    return all(
        a.read_set.intersect(b.read_set).is_empty() for a, b in itertools.combinations(accesses, 2)
    )


def producer_value(func) -> E.Expr:
    """The value of a Function at its own point as one expression (Cases become Selects)."""
    value: E.Expr = E.Const(0, func.typ)
    for case in reversed(func.cases):
        value = case.value if case.cond is None else E.Select(case.cond, case.value, value)
    return value


def _inliner(producer):
    value = producer_value(producer)

    def inline(args):
        variables = {}
        for var, arg in zip(producer.variables, args):
            variables[id(var)] = arg if arg.typ is var.typ else E.Cast(var.typ, arg)
        return substitute(value, {}, variables)

    return inline


def _substitute_producer(graph: StageGraph, producer, known: dict) -> StageGraph:
    """The graph with `producer` inlined into its consumers (and every stage downstream of a
    changed one re-pointed at its copy); `known` as build_graph takes it."""
    refs = {id(producer): _inliner(producer)}
    replaced, moved = {}, {producer.name}
    for stage in graph.stages:
        func = stage.func
        if func is producer or isinstance(func, Image) or moved.isdisjoint(stage.producers):
            continue
        new = _rewrite(func, refs)
        if new is not func:
            replaced[func.name] = new
            moved.add(func.name)
            refs[id(func)] = (lambda f: lambda args: E.Reference(f, args))(new)
    outputs = [replaced.get(name, graph.stage(name).func) for name in graph.outputs]
    return build_graph(outputs, known)


def _rewrite(func, refs):
    """`func` itself if nothing in its definition changes, else a copy with the new one."""
    clone = copy.copy(func)
    if isinstance(func, Reduction):
        refs = dict(refs)
        refs[id(func)] = lambda args: E.Reference(clone, args)
    changed = False

    def sub(e):
        nonlocal changed
        out = substitute(e, refs, {})
        changed = changed or out is not e
        return out

    cases = []
    for case in func.cases:
        cond = None if case.cond is None else sub(case.cond)
        if isinstance(case.value, Reduce):
            red = case.value
            args = red.target.args
            target = E.Reference(clone, clamped_indices(func, args, [sub(a) for a in args]))
            value = Reduce(target, sub(red.value), red.op)
        else:
            value = sub(case.value)
        cases.append(_case(cond, value))
    if isinstance(func, Reduction):
        clone._default = sub(func.default)
    if not changed:
        return func
    if scan_dimension(func) is not None:
        cases = _repointed(cases, func, clone)
    clone._defn = tuple(cases)
    return clone


def _repointed(cases, func, clone) -> list:
    """`cases` with the reads of `func` by itself (a scan) made reads of `clone`."""
    own = {id(func): lambda args: E.Reference(clone, args)}
    return [
        _case(
            None if case.cond is None else substitute(case.cond, own, {}),
            substitute(case.value, own, {}),
        )
        for case in cases
    ]


def _case(cond, value) -> Case:
    case = object.__new__(Case)
    case.cond, case.value = cond, value
    return case
