"""A pipeline with every computed stage's domain moved by a constant: the same values at
shifted coordinates, for tests that a schedule does not depend on where domains start."""

from __future__ import annotations

from polyimage import Function, Interval, Reduction
from polyimage.algebra.affine import data_dependent
from polyimage.algebra.simplify import simplify
from polyimage.algebra.substitute import substitute
from polyimage.dsl import expr as E
from polyimage.dsl.cases import Always, Case, Reduce
from polyimage.dsl.constructs import Image
from polyimage.graph.dag import build_graph, definition_exprs


def shifted_pipeline(outputs, offset: int) -> list:
    """`outputs` rebuilt with every Function and Reduction over its domain (and a Reduction
    over its reduction domain) moved by `offset` along every dimension: a point `p` of a
    stage becomes `p + offset` and its reads follow. Images stay as they are, and so do
    stages read or reduced into at a data-dependent index (a lookup table's or a
    histogram's bins), whose indices would gain an addition. The outputs hold the same
    values, moved outputs over a domain starting `offset` later."""
    graph = build_graph(outputs)
    kept = {
        id(ref.func)
        for stage in graph.stages
        for e in definition_exprs(stage.func)
        for ref in E.walk(e)
        if isinstance(ref, E.Reference) and data_dependent(ref)
    }
    kept |= {
        id(stage.func)
        for stage in graph.stages
        if isinstance(stage.func, Reduction)
        and any(data_dependent(case.value.target) for case in stage.func.cases)
    }
    moved: dict
    offsets: dict
    moved, offsets = {}, {}

    def read(func):
        shift = offsets[id(func)]
        return lambda args: E.Reference(moved[id(func)], [simplify(a + shift) for a in args])

    for stage in graph.stages:
        func = stage.func
        if isinstance(func, Image):
            continue
        offsets[id(func)] = shift = 0 if id(func) in kept else offset
        refs = {id(s.func): read(s.func) for s in graph.stages if id(s.func) in moved}
        refs[id(func)] = read(func)
        new: Function
        if isinstance(func, Reduction):
            new = Reduction(
                (func.variables, _moved(func.intervals, shift)),
                (func.reduction_variables, _moved(func.reduction_intervals, shift)),
                func.typ,
                func.name,
            )
            own = func.reduction_variables
        else:
            new = Function((func.variables, _moved(func.intervals, shift)), func.typ, func.name)
            own = func.variables
        moved[id(func)] = new
        variables = {id(v): v - shift for v in own}

        def rewrite(e, refs=refs, variables=variables):
            return simplify(substitute(E.to_expr(e), refs, variables))

        new.defn = [_rewritten(case, rewrite) for case in func.cases]
        if isinstance(new, Reduction):
            new.default = substitute(func.default, {}, {id(v): v - shift for v in func.variables})
    return [moved[id(f)] if id(f) in moved else f for f in outputs]


def _moved(intervals, shift: int) -> list:
    return [Interval(iv.typ, simplify(iv.lb + shift), simplify(iv.ub + shift)) for iv in intervals]


def _rewritten(case, rewrite):
    value = case.value
    if isinstance(value, Reduce):
        value = Reduce(rewrite(value.target), rewrite(value.value), value.op)
    else:
        value = rewrite(value)
    if isinstance(case, Always):
        return value
    return Case(rewrite(case.cond), value)
