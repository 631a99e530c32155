"""Light simplification of integer bound expressions (region and tile bounds).

Folds constants in sums, drops `* 1` and `+ 0`, and flattens Min/Max trees, keeping one term per
distinct base: `Min(a + 1, Min(a - 2, b))` becomes `Min(a - 2, b)`. The result is equal to the
input for every value of its symbols (no overflow assumptions beyond the input's own).
"""

from __future__ import annotations

from ..dsl import expr as E


def simplify(e: E.Expr) -> E.Expr:
    """An equivalent, usually smaller, integer expression."""
    if isinstance(e, E.BinOp) and e.typ.is_int:
        a, b = simplify(e.a), simplify(e.b)
        if e.op in ("+", "-"):
            return _sum(a, b, 1 if e.op == "+" else -1, e.typ)
        if e.op == "*":
            for x, y in ((a, b), (b, a)):
                if _const(x) == 1:
                    return y
        if e.op in ("min", "max"):
            return extremum(e.op, [a, b], e.typ)
        return e if (a is e.a and b is e.b) else E.BinOp(e.op, a, b, e.typ)
    if isinstance(e, E.Select):
        return E.Select(e.cond, simplify(e.a), simplify(e.b))
    return e


def expr_key(e):
    """A hashable key equal for structurally equal expressions (symbols by identity)."""
    if isinstance(e, E.Const):
        return ("const", e.value, e.typ.name)
    if isinstance(e, E.Symbol):
        return ("symbol", id(e))
    if isinstance(e, E.BinOp):
        return ("binop", e.op, e.typ.name, expr_key(e.a), expr_key(e.b))
    if isinstance(e, E.Cast):
        return ("cast", e.typ.name, expr_key(e.a))
    if isinstance(e, E.Neg):
        return ("neg", expr_key(e.a))
    if isinstance(e, E.Select):
        return ("select", expr_key(e.cond), expr_key(e.a), expr_key(e.b))
    if isinstance(e, E.Condition):
        return ("condition", e.op, expr_key(e.lhs), expr_key(e.rhs))
    if isinstance(e, E.Logic):
        return ("logic", e.op, expr_key(e.a), expr_key(e.b))
    if isinstance(e, E.Not):
        return ("not", expr_key(e.a))
    return ("node", id(e))


def _const(e):
    return e.value if isinstance(e, E.Const) and isinstance(e.value, int) else None


def _split(e):
    """(base or None, constant) with e == base + constant."""
    if _const(e) is not None:
        return None, e.value
    if isinstance(e, E.BinOp) and e.op in ("+", "-") and _const(e.b) is not None:
        return e.a, e.b.value if e.op == "+" else -e.b.value
    return e, 0


def _join(base, k, typ):
    if base is None:
        return E.Const(k, typ)
    if k == 0:
        return base
    return base + k if k > 0 else base - (-k)


def _sum(a, b, sign, typ):
    (ba, ka), (bb, kb) = _split(a), _split(b)
    if bb is None:
        return _join(ba, ka + sign * kb, typ)
    if ba is None and sign == 1:
        return _join(bb, ka + kb, typ)
    if ba is None:
        base = E.Const(0, typ) - bb
    else:
        base = ba + bb if sign == 1 else ba - bb
    return _join(base, ka + sign * kb, typ)


def extremum(op: str, terms, typ=None) -> E.Expr:
    """The Min ("min") or Max ("max") of `terms`: nested extrema of the same kind flattened,
    one term per distinct base, combined as a balanced tree (a union of 99 reads stays a few
    levels deep for the recursive evaluators, printers and pickling)."""
    flat, stack = [], list(reversed(terms))
    while stack:
        t = stack.pop()
        if isinstance(t, E.BinOp) and t.op == op:
            stack += [t.b, t.a]
        else:
            flat.append(t)
    typ = typ or flat[0].typ
    pick = min if op == "min" else max
    best, order = {}, []
    for t in flat:
        base, k = _split(t)
        key = None if base is None else expr_key(base)
        if key not in best:
            order.append(key)
            best[key] = (base, k)
        else:
            best[key] = (base, pick(best[key][1], k))
    combine = E.Min if op == "min" else E.Max
    joined = [_join(*best[key], typ) for key in order]
    while len(joined) > 1:
        pairs = range(0, len(joined) - 1, 2)
        joined = [combine(joined[i], joined[i + 1]) for i in pairs] + joined[
            len(joined) - len(joined) % 2 :
        ]
    return joined[0]
