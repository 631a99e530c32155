"""Channels computed together: a stage whose first dimension has a few constant points
(channels first, or the offsets of a search window) and whose definition reads some stage at
indices that do not depend on that dimension (weights the channels share, the pixel every
offset is compared with) computes those points in one innermost loop, one
statement per point with its Case decided. A sum becomes an accumulator per point, updated
term by term across the points: the same additions in the same order, so results are
unchanged, while a shared read is loaded once for every channel and the points' chains of
additions overlap instead of waiting on each other. Either such a jammed nest or one whose
innermost dimension has a few constant points (whole_innermost) is a tile's copy beside the
general nest (specialized_nest)."""

from __future__ import annotations

from dataclasses import dataclass

from ..algebra.intervals import constant_bounds
from ..algebra.residues import decide, period
from ..algebra.substitute import substitute
from ..dsl import expr as E
from ..dsl.reduction import Reduction
from .cexpr import wide_name
from .clamps import interior
from .ctext import assign, cat, declare
from .ctree import Block, If, Seq
from .names import PREFIX

# 8 accumulators and a few shared reads fit AVX2's 16 vector registers; non-local means' 7
# offsets per row then load the centre pixel once for all 7 (its distances ran 6% faster)
JAM_MAX_POINTS = 8
_SUMMED = ("float", "double")


@dataclass(frozen=True)
class Jam:
    """The first dimension's constant bounds and, per point, the value of its Case."""

    lo: int
    hi: int
    values: tuple


def jam_plan(func) -> Jam | None:
    """How `func` computes its first dimension's points together, or None where it does not:
    not a Reduction, at least two dimensions, a first dimension of 2 to JAM_MAX_POINTS
    constant points on each of which one Case is decided, float or double values of the
    stage's own type, a read whose indices do not involve that dimension, and values that
    need no version of the innermost loop (blocks of residues, clamps peeled off: the
    jammed loop is a plain one)."""
    if isinstance(func, Reduction) or func.ndim < 2 or func.typ.c_name not in _SUMMED:
        return None
    bounds = constant_bounds(func.intervals[0])
    if bounds is None or not 2 <= bounds[1] - bounds[0] + 1 <= JAM_MAX_POINTS:
        return None
    lo, hi = bounds
    var = func.variables[0]
    if not _shares_a_read(func, var):
        return None
    values = []
    for point in range(lo, hi + 1):
        value = _value_at(func, var, E.Const(point, var.typ))
        if value is None or value.typ.c_name != func.typ.c_name:
            return None
        values.append(value)
    innermost = func.variables[-1]
    if period(values, innermost) != 1 or interior(values, innermost) is not None:
        return None
    return Jam(lo, hi, tuple(values))


def _shares_a_read(func, var) -> bool:
    return any(
        not any(node is var for arg in ref.args for node in E.walk(arg))
        for case in func.cases
        for ref in E.references(case.value)
    )


def _value_at(func, var, point):
    """The value of the Case `func` computes where `var` is `point`, if decided there."""
    for case in func.cases:
        cond = None if case.cond is None else substitute(case.cond, {}, {id(var): point})
        verdict = decide(cond)
        if verdict is None:
            return None
        if verdict:
            return substitute(case.value, {}, {id(var): point})
    return None


def sum_terms(e) -> list:
    """The terms of `e` in the order a left-deep chain of additions of one C type adds them
    (`e` alone if it is not such a sum; an addition converting an operand stays one term)."""
    typ, terms = e.typ.c_name, []
    while (
        isinstance(e, E.BinOp) and e.op == "+" and e.a.typ.c_name == typ and e.b.typ.c_name == typ
    ):
        terms.append(e.b)
        e = e.a
    terms.append(e)
    return terms[::-1]


def jammed_nest(emitter, func, jam: Jam, bounds):
    """The loops over every dimension but the first (`bounds` for all), the innermost
    computing each of the first dimension's points: accumulators updated term by term in
    turn, then stored."""
    c_type = func.typ.c_name

    def body(printer):
        eager = printer.with_(eager=func.name in emitter.branch_free)
        chains = [sum_terms(value) for value in jam.values]
        accumulators = [f"{PREFIX}acc{k}" for k in range(len(chains))]
        nodes = []
        for n in range(max(len(chain) for chain in chains)):
            for acc, chain in zip(accumulators, chains):
                if n >= len(chain):
                    continue
                term = eager(chain[n])
                if n == 0:
                    nodes.append(declare(c_type, [(acc, term)], const=False))
                else:
                    nodes.append(assign(acc, cat(f"({acc} + ", term, ")")))
        rest = [wide_name(emitter.names[v]) for v in func.variables[1:]]
        for point, acc in zip(range(jam.lo, jam.hi + 1), accumulators):
            nodes.append(emitter.store(func, acc, [f"INT64_C({point})", *rest]))
        return Seq(tuple(nodes))

    return emitter._loops(
        func.variables[1:], func.name, parallel=False, body=body, bounds=bounds[1:], simd=True
    )


def specialized_nest(emitter, funcs, box, jam):
    """The nest over `box`, and a copy for tiles that span a dimension of a few constant
    points: the first one, computed together (`jam`, codegen.jam), or else the head's
    innermost (contiguous) one (channels last), with its bounds as constants: gcc then
    knows the trip count (a 16-point channel loop becomes one vector op, not a loop with
    a prologue and a remainder)."""
    if jam is not None:
        condition = f"{box[0][0]} == ({jam.lo}) && {box[0][1]} == ({jam.hi})"
        jammed = jammed_nest(emitter, funcs[0], jam, box)
        return If(condition, Block((jammed,)), Block((emitter.nest(funcs, box),)))
    whole = whole_innermost(funcs[0])
    if whole is None:
        return emitter.nest(funcs, box)
    lo, hi = whole
    fixed = box[:-1] + [(f"({lo})", f"({hi})")]
    condition = f"{box[-1][0]} == ({lo}) && {box[-1][1]} == ({hi})"
    return If(condition, Block((emitter.nest(funcs, fixed),)), Block((emitter.nest(funcs, box),)))


WHOLE_MAX_POINTS = 64


def whole_innermost(func) -> tuple | None:
    """(lo, hi) of `func`'s last domain dimension if its bounds are constants and it has at
    most WHOLE_MAX_POINTS points, else None."""
    bounds = constant_bounds(func.intervals[-1]) if func.intervals else None
    if bounds is not None and 0 < bounds[1] - bounds[0] + 1 <= WHOLE_MAX_POINTS:
        return bounds
    return None
