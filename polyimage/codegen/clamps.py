"""The interior of an innermost loop, where every clamp picks its moving operand (the loop
partitioning of "Tensor instruction generation optimization fused with loop partitioning",
applied to Min and Max instead of Cases).

A border clamp such as `f(Min(2*v + 1, last))` makes the read a gather: the vectorizer cannot
see a stride through Min. An integer Min or Max with exactly one operand moving with the loop
variable `v`, that operand linear in `v` (once the clamps inside it are resolved the same way)
and the other affine and free of `v`, picks the moving operand on a half-line of `v`. On the
intersection of those half-lines every such clamp can be replaced by its moving operand: the
same values, computed with affine, strided indices. The loop then runs as head, interior and
tail, the head and tail computing the expressions as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..algebra.affine import is_affine
from ..algebra.intervals import as_long
from ..algebra.simplify import expr_key, simplify
from ..dsl import expr as E
from ..dsl.borders import is_index_fold
from .split import NotLinear, is_clamp, linear, mentions


@dataclass(frozen=True)
class Interior:
    """chosen: {id(clamp node): the operand it picks in the interior}; lows and highs: Long
    expressions free of `v` bounding the interior (v >= each low, v <= each high)."""

    chosen: dict
    lows: tuple
    highs: tuple


def interior(exprs, v):
    """The Interior of the loop over `v` computing `exprs`, or None when no clamp qualifies."""
    chosen, lows, highs = {}, [], []
    decided = {}

    def pick(node):
        key = id(node)
        if key not in decided:
            decided[key] = None
            decided[key] = _decide(node, v, pick, lows, highs)
        return decided[key]

    for e in exprs:
        for node in E.walk(e):
            if is_clamp(node) and pick(node) is not None:
                chosen[id(node)] = decided[id(node)]
    if not chosen:
        return None
    lows, highs = _distinct(lows), _distinct(highs)
    for e in exprs:
        for node in E.walk(e):
            if isinstance(node, E.Condition) and _implied(node, v, pick, lows, highs):
                chosen[id(node)] = True
    return Interior(chosen, lows, highs)


def merged(interiors):
    """One Interior of several loops' (their clamps all replaced on the intersection of their
    interiors), or None when none has any."""
    found = [i for i in interiors if i is not None]
    if not found:
        return None
    return Interior(
        {k: v for i in found for k, v in i.chosen.items()},
        _distinct(e for i in found for e in i.lows),
        _distinct(e for i in found for e in i.highs),
    )


def _distinct(bounds) -> tuple:
    """`bounds` simplified, each once, in first-seen order."""
    seen: dict = {}
    for e in bounds:
        e = simplify(e)
        seen.setdefault(expr_key(e), e)
    return tuple(seen.values())


def _implied(cond, v, pick, lows, highs) -> bool:
    """Whether integer comparison `cond` holds on the interior: it bounds v by one of the
    interior's own bounds (`lo <= i` beside a clamp `Max(i, lo)`: a border's Select)."""
    if cond.op not in ("<", "<=", ">", ">=") or not (cond.lhs.typ.is_int and cond.rhs.typ.is_int):
        return False
    small, large = (cond.lhs, cond.rhs) if cond.op in ("<", "<=") else (cond.rhs, cond.lhs)
    if cond.op in ("<", ">"):
        large = as_long(large) - 1
    # small <= large: a Min picking `small` where it holds, or a Max picking `large`
    found_lows: list = []
    found_highs: list = []
    for node in (E.BinOp("min", small, large, E.Long), E.BinOp("max", large, small, E.Long)):
        moving = mentions(node.a, v) and not mentions(node.b, v)
        if moving and _decide(node, v, pick, found_lows, found_highs) is not None:
            keys = {expr_key(b) for b in (lows if found_lows else highs)}
            bound = simplify((found_lows or found_highs)[0])
            return expr_key(bound) in keys
    return False


def _decide(node, v, pick, lows, highs):
    """The moving operand of clamp `node`, after adding the half-line where it is chosen to
    `lows` or `highs`; None when the clamp does not qualify."""
    if is_index_fold(node):
        return _decide_fold(node, v, pick, lows, highs)
    moving_a, moving_b = mentions(node.a, v), mentions(node.b, v)
    if moving_a == moving_b:
        return None
    moving, fixed = (node.a, node.b) if moving_a else (node.b, node.a)
    if not is_affine(fixed):
        return None
    try:
        a, rest = linear(moving, v, pick)
    except NotLinear:
        return None
    if a == 0:
        return None
    # Min picks the moving operand where a*v + rest <= fixed, Max where a*v + rest >= fixed
    if node.op == "min":
        t = as_long(fixed) - as_long(rest)
    else:
        a, t = -a, as_long(rest) - as_long(fixed)
    if a > 0:
        highs.append(t // a)
    else:
        lows.append(0 - ((0 - t) // a))
    return moving


def _decide_fold(node, v, pick, lows, highs):
    """A border's index function picks its index `i` where lo <= i <= hi (dsl.borders)."""
    index, lo, hi = node.args
    if mentions(lo, v) or mentions(hi, v) or not (is_affine(lo) and is_affine(hi)):
        return None
    try:
        a, rest = linear(index, v, pick)
    except NotLinear:
        return None
    if a == 0:
        return None
    low_t, high_t = as_long(lo) - as_long(rest), as_long(hi) - as_long(rest)
    if a < 0:
        a, low_t, high_t = -a, 0 - high_t, 0 - low_t
    lows.append(0 - ((0 - low_t) // a))
    highs.append(high_t // a)
    return index
