"""Rebuilding expressions with references and variables replaced (inlining, loops over
residues, Selects lifted into Cases)."""

from __future__ import annotations

from ..dsl import expr as E
from .affine import is_affine


def substitute(e: E.Expr, refs: dict, variables: dict) -> E.Expr:
    """Rebuild `e` with references rewritten by `refs` (func id -> callable(args) -> Expr)
    and variables, or any other nodes, replaced by `variables` (node id -> Expr); indices
    made affine by the replacement keep a clamp (clamped_indices)."""
    if id(e) in variables:
        return variables[id(e)]
    children = e.children()
    if not children:
        return e
    new = [substitute(c, refs, variables) for c in children]
    if isinstance(e, E.Reference):
        new = clamped_indices(e.func, children, new)
    if isinstance(e, E.Reference) and id(e.func) in refs:
        return refs[id(e.func)](new)
    if all(n is c for n, c in zip(new, children)):
        return e
    if isinstance(e, E.Reference):
        return E.Reference(e.func, new)
    return rebuild(e, new)


def clamped_indices(func, old, new) -> list:
    """The indices `new` of a read of `func` that replace `old`, with an explicit clamp to
    `func`'s domain around each that was not affine and now is: a non-affine index is clamped
    to the domain (codegen clamps it at run time), an affine one is proven in bounds instead,
    so an index that a substitution makes affine (`Cast(Int, s2(i, j)) // 3` once `s2` is `j`)
    keeps its clamp, which then proves it in bounds."""
    result = list(new)
    for d, (a, b) in enumerate(zip(old, new)):
        if b is not a and not is_affine(a) and is_affine(b):
            interval = func.intervals[d]
            result[d] = E.Clamp(b, interval.lb, interval.ub)
    return result


def rebuild(e, new):
    """A node like `e` with the children `new`."""
    if isinstance(e, E.BinOp):
        return E.BinOp(e.op, new[0], new[1], e.typ)
    if isinstance(e, E.Neg):
        return E.Neg(new[0])
    if isinstance(e, E.Call):
        return E.Call(e.fn, tuple(new), e.typ)
    if isinstance(e, E.Cast):
        return E.Cast(e.typ, new[0])
    if isinstance(e, E.Select):
        return E.Select(*new)
    if isinstance(e, E.Condition):
        return E.Condition(new[0], e.op, new[1])
    if isinstance(e, E.Logic):
        return E.Logic(e.op, *new)
    if isinstance(e, E.Not):
        return E.Not(new[0])
    raise TypeError(f"cannot rebuild {type(e).__name__}")
