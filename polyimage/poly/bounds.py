"""Compile-time bounds checking of every affine read and Reduce target, and warnings for reads
of points no Case defines.

Each reference is checked under its guard (see analysis.guarded_references) for every
parameter value the context allows. Non-affine indices are clamped at run time instead.
"""

from __future__ import annotations

import warnings

import islpy as isl
import numpy as np

from ..algebra.evaluate import Evaluator
from ..dsl import expr as E
from ..dsl.constructs import Image
from ..dsl.printer import BorderRead, border_read
from ..errors import BoundsError, UncoveredReadWarning
from ..graph.dag import definition_exprs
from .analysis import Access, PolyAnalysis, analyze


def check_bounds(graph, constraints=()) -> list:
    """Analyze `graph` and check it; see check_analysis."""
    return check_analysis(analyze(graph, constraints))


def check_analysis(analysis: PolyAnalysis, estimates=None) -> list:
    """Raise BoundsError for the first out-of-domain affine access, its counterexample at the
    `estimates` ({parameter name: value}) when the access fails there too; warn (and return
    the messages) for reads of producer points that no Case covers."""
    for access in analysis.accesses:
        _check_access(analysis, access, estimates or {})
    messages = []
    for access in analysis.accesses:
        message = _uncovered_read(analysis, access)
        if message:
            warnings.warn(message, UncoveredReadWarning, stacklevel=3)
            messages.append(message)
    return messages


def check_inlined(analysis: PolyAnalysis, consumers) -> None:
    """Prove the affine indices of `consumers` in bounds again after inlining changed them:
    code generation clamps exactly the indices that are not affine, so every affine one must
    be proven here, on the expression that is compiled. A failure is a compiler bug; the
    message says so and how to work around it."""
    for access in analysis.accesses:
        if access.consumer not in consumers:
            continue
        try:
            _check_access(analysis, access, hint=False)
        except BoundsError as exc:
            raise BoundsError(
                f"internal error, please report it: after inlining, {exc} (compile with "
                "inline=False to work around it)"
            ) from None


def _check_access(analysis, access: Access, estimates=None, hint=True):
    """BoundsError for the first affine index of `access` outside its producer's domain;
    with `hint`, the message says how a user would fix it."""
    space = access.space
    producer = access.ref.func
    for d, arg in enumerate(access.ref.args):
        if not access.affine[d]:
            continue
        index = space.pw_aff(arg)
        iv = producer.intervals[d]
        lo, hi = space.pw_aff(iv.lb), space.pw_aff(iv.ub)
        bad_set = access.guard_set.intersect(index.lt_set(lo).union(index.gt_set(hi)))
        if bad_set.is_empty():
            continue
        var_values, param_values = space.describe_point(_sample(space, bad_set, estimates or {}))
        value, lo_value, hi_value = _values((arg, iv.lb, iv.ub), space, var_values, param_values)
        verb = "writes" if access.writes else "reads"
        read = _written(analysis, access)
        raise BoundsError(
            f"{access.consumer} ({access.label}): {read or access.ref} {verb} {producer.name} "
            f"outside its domain: at {_describe(var_values, param_values)}, index {d} `{arg}` = "
            f"{value} is outside [{iv.lb}, {iv.ub}] = [{lo_value}, {hi_value}]"
            + (_scan_hint(access, d) or (_fixes(access, d, read) if hint else ""))
        )


def _sample(space, bad_set, estimates):
    """A point of `bad_set`, at the parameter values of `estimates` where it has one there
    (a counterexample at the sizes the user runs reads better than one at R=1)."""
    fixed = bad_set
    for pos, p in enumerate(space.params):
        if p.name in estimates and p.typ.is_int:
            fixed = fixed.fix_val(isl.dim_type.param, pos, space.val(int(estimates[p.name])))
    return (bad_set if fixed.is_empty() else fixed).sample_point()


def _written(analysis: PolyAnalysis, access: Access) -> BorderRead | None:
    """The border read (dsl.borders) that `access` is, as written: its reference itself, or
    constant_exterior's Select around it in the consumer's definition."""
    if access.writes:
        return None
    for part in definition_exprs(analysis.graph.stage(access.consumer).func):
        for node in E.walk(part):
            if isinstance(node, E.Select) and _innermost(node) is access.ref:
                read = border_read(node)
                if read:
                    return read
    return border_read(access.ref)


def _innermost(select):
    """The first branch of the first branch ... of nested Selects."""
    while isinstance(select, E.Select):
        select = select.a
    return select


def _fixes(access: Access, d: int, read: BorderRead | None = None) -> str:
    """How to make such an access valid: what the message suggests; for a read through a border
    that leaves dimension `d` out of its dims, to extend that one too."""
    func, arg = access.ref.func, access.ref.args[d]
    iv = func.intervals[d]
    if access.writes:
        return f"; keep the target index `{arg}` within [{iv.lb}, {iv.ub}], e.g. with Clamp"
    larger = (
        f"declare {func.name} larger (its extent in dimension {d})"
        if isinstance(func, Image)
        else f"extend the domain of {func.name}"
    )
    if read and d not in read.dims:
        wider = read._replace(dims=tuple(sorted((*read.dims, d)))).border
        return (
            f"; to fix it: add dimension {d} to the border's dims= (`{wider}`), shrink the "
            f"domain of {access.consumer} so that it reads only inside, or {larger}"
        )
    return (
        f"; to fix it: read {func.name} through a border mode "
        f"(`repeat_edge({func.name})({', '.join(map(str, access.ref.args))})`, or mirror, "
        f"mirror_interior, wrap, constant_exterior), clamp the index "
        f"(`Clamp({arg}, {iv.lb}, {iv.ub})`), shrink the domain of {access.consumer} so that it "
        f"reads only inside, {larger}, or give a Case for the border points"
    )


def _scan_hint(access: Access, d: int) -> str:
    """For a stage reading itself out of its domain (a scan), how to guard its first points."""
    func = access.ref.func
    if access.writes or func.name != access.consumer:
        return ""
    var = func.variables[d]
    return (
        f"; {func.name} reads its own earlier points (a scan): give its first points along "
        f"{var.name} a Case of their own, e.g. Case({var.name} == {func.intervals[d].lb}, ...)"
    )


def branch_free_stages(analysis: PolyAnalysis) -> frozenset:
    """Stages (not Reductions) whose reads stay inside their producers' domains along every
    affine index at every point of the stage's domain, whatever the Case and Select guards;
    their Cases may be evaluated eagerly and blended without branches (other indices are
    clamped anyway, so a read with one clamped index is still checked along the others)."""
    unsafe = set()
    for access in analysis.accesses:
        consumer = access.consumer
        if consumer not in analysis.domain_sets or consumer in analysis.reduction_sets:
            unsafe.add(consumer)
            continue
        if consumer in unsafe or not any(access.affine):
            continue
        read_set = access.whole_map.intersect_domain(analysis.domain_sets[consumer]).range()
        if not read_set.is_subset(analysis.domain_sets[access.producer]):
            unsafe.add(consumer)
    return frozenset(
        s.name
        for s in analysis.graph.computed
        if s.name not in unsafe and s.name not in analysis.reduction_sets
    )


def _uncovered_read(analysis, access: Access):
    if access.writes:
        return None
    producer = access.producer
    missing_set = access.read_set.subtract(analysis.covered_sets[producer])
    if missing_set.is_empty():
        return None
    point = missing_set.sample_point()
    space = analysis.spaces[producer]
    var_values, param_values = space.describe_point(point)
    where = ", ".join(str(v) for v in var_values.values())
    return (
        f"{access.consumer} ({access.label}) reads {_written(analysis, access) or access.ref}, "
        f"which includes points of {producer} that no Case of {producer} defines (they hold 0), "
        f"e.g. "
        f"{producer}({where})" + (f" with {_params(param_values)}" if param_values else "")
    )


def _params(param_values) -> str:
    return ", ".join(f"{k}={v}" for k, v in param_values.items())


def _describe(var_values, param_values) -> str:
    where = ", ".join(f"{k}={v}" for k, v in var_values.items()) or "every point"
    return where + (f" with {_params(param_values)}" if param_values else "")


def _values(exprs, space, var_values, param_values):
    points = {v: np.array([var_values[v.name]], v.typ.dtype) for v in space.variables}
    params = dict(param_values)
    for p in space.params:
        params.setdefault(p.name, 0)
    evaluate = Evaluator({}, {}, params)
    return [int(np.broadcast_to(evaluate(e, points, 1), (1,))[0]) for e in exprs]
