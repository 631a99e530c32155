"""Where the Case chosen at a point can change along the innermost loop (the loop partitioning
of "Tensor instruction generation optimization fused with loop partitioning", for the cases
that matter in image pipelines: borders, halves, parities of outer variables).

A condition qualifies when each of its comparisons is either free of the innermost variable
`v` (constant along the loop) or an integer comparison affine in `v` with an affine rest; its
truth can then change only at `ceil(t/a)` and `floor(t/a) + 1` for the comparison `a*v == t`.
Between consecutive breakpoints the chosen Case is constant, so the loop is cut into segments,
the Case is picked once per segment, and each segment runs a loop that computes that Case only.
Arithmetic is exact (as in the bounds check), which assumes the comparison's own operands do
not overflow their type.

A Select whose condition reads no data and is constant along the loop (`c == 0` of a channel
Case inlined into a consumer) or qualifies as a Case's (a read guarded by `y >= 1`) is lifted
into Cases the same way, so each segment computes its own arm rather than every arm and a
blend, or a branch around a read that may lie out of bounds (`lifted_cases`).
"""

from __future__ import annotations

from typing import NamedTuple

from ..algebra.affine import is_affine
from ..algebra.intervals import as_long
from ..algebra.substitute import substitute
from ..dsl import expr as E
from ..dsl.borders import is_index_fold

MAX_COEFFICIENT = 1 << 10
MAX_BREAKPOINTS = 16
# lifting Selects stops at this many Cases (each is a loop of its own)
MAX_LIFTED_CASES = 4


class NotLinear(Exception):
    pass


class LiftedCase(NamedTuple):
    """A Case made by lifting a Select: `cond` (None: otherwise) and `value`."""

    cond: object
    value: object


def case_breakpoints(cases, v):
    """Breakpoints (Long DSL expressions without `v`) where the Case chosen along `v` may
    change, or None when the Cases do not qualify or there is nothing to split."""
    conditions = [case.cond for case in cases if case.cond is not None]
    if not conditions:
        return None
    points = []
    try:
        for cond in conditions:
            points += _condition_breakpoints(cond, v)
    except NotLinear:
        return None
    return points if len(points) <= MAX_BREAKPOINTS else None


def mentions(e, v) -> bool:
    return any(node is v for node in E.walk(e))


def _condition_breakpoints(cond, v) -> list:
    if not mentions(cond, v):
        return []
    if isinstance(cond, E.Logic):
        return _condition_breakpoints(cond.a, v) + _condition_breakpoints(cond.b, v)
    if isinstance(cond, E.Not):
        return _condition_breakpoints(cond.a, v)
    if not isinstance(cond, E.Condition) or not (cond.lhs.typ.is_int and cond.rhs.typ.is_int):
        raise NotLinear(str(cond))
    a_left, rest_left = linear(cond.lhs, v)
    a_right, rest_right = linear(cond.rhs, v)
    a = a_left - a_right
    if a == 0:
        return []
    if abs(a) > MAX_COEFFICIENT:
        raise NotLinear(str(cond))
    t = as_long(rest_right) - as_long(rest_left)
    return [0 - ((0 - t) // a), t // a + 1]


def is_clamp(node) -> bool:
    """An integer Min or Max, or a border's index fold: what codegen.clamps may resolve."""
    return (
        isinstance(node, E.BinOp) and node.op in ("min", "max") and node.typ.is_int
    ) or is_index_fold(node)


def linear(e, v, pick=None):
    """(a, rest) with e == a*v + rest, rest affine and free of v; `pick(node)` gives the
    operand an integer Min or Max moving with v stands for (codegen.clamps), if any."""
    if not mentions(e, v):
        if not is_affine(e):
            raise NotLinear(str(e))
        return 0, e
    if e is v:
        return 1, E.Const(0, E.Long)
    if pick is not None and is_clamp(e):
        operand = pick(e)
        if operand is None:
            raise NotLinear(str(e))
        return linear(operand, v, pick)
    if isinstance(e, E.Neg):
        a, rest = linear(e.a, v, pick)
        return -a, 0 - as_long(rest)
    if isinstance(e, E.Cast) and is_affine(e):
        return linear(e.a, v, pick)
    if isinstance(e, E.BinOp) and e.op in ("+", "-"):
        (a1, r1), (a2, r2) = linear(e.a, v, pick), linear(e.b, v, pick)
        return (
            (a1 + a2, as_long(r1) + as_long(r2))
            if e.op == "+"
            else (a1 - a2, as_long(r1) - as_long(r2))
        )
    if isinstance(e, E.BinOp) and e.op == "*":
        for const, other in ((e.a, e.b), (e.b, e.a)):
            if isinstance(const, E.Const) and isinstance(const.value, int):
                a, rest = linear(other, v, pick)
                return a * const.value, as_long(rest) * const.value
    raise NotLinear(str(e))


def lifted_cases(cases, v):
    """`cases` with every Select whose condition reads no data and is free of `v` or linear in
    it lifted into Cases of their own (up to MAX_LIFTED_CASES), or None when there is none to
    lift."""
    lifted = list(cases)
    while len(lifted) < MAX_LIFTED_CASES:
        found = next(
            (
                (k, node)
                for k, case in enumerate(lifted)
                if isinstance(case.value, E.Expr)
                for node in E.walk(case.value)
                if isinstance(node, E.Select) and _liftable(node.cond, v)
            ),
            None,
        )
        if found is None:
            break
        k, select = found
        cond, value = lifted[k].cond, lifted[k].value
        chosen = select.cond if cond is None else E.Logic("&&", cond, select.cond)
        lifted[k : k + 1] = [
            LiftedCase(chosen, substitute(value, {}, {id(select): select.a})),
            LiftedCase(cond, substitute(value, {}, {id(select): select.b})),
        ]
    return None if len(lifted) == len(cases) else lifted


def _liftable(cond, v) -> bool:
    """Whether a Select on `cond` may become Cases: it reads no data, and is constant along
    the loop or changes where codegen.split can cut it (a read guarded by `v >= 1`)."""
    if any(isinstance(node, E.Reference) for node in E.walk(cond)):
        return False
    try:
        _condition_breakpoints(cond, v)
    except NotLinear:
        return False
    return True
