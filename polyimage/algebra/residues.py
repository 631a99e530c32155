"""Loops over residues. When a definition divides or reduces its innermost variable `v` by
constants (`v // 2`, `(v + 1) // 2`, `v % 2`: up- and downsampling, interleaved colour planes),
writing `v = M*q + r` for a period M and each residue `r` in [0, M) turns every such `//` and
`%` into an expression affine in `q` or a constant. A loop over `q` that computes the M
residues one after another is then unit-stride in its loads, its stores interleave, and Cases
on `v % m` are decided once per residue instead of per point.
"""

from __future__ import annotations

import math

from ..dsl import expr as E
from .evaluate import Evaluator
from .substitute import rebuild, substitute

MAX_PERIOD = 8


def period(exprs, var) -> int:
    """The smallest M <= MAX_PERIOD (a multiple of what each division or remainder of an
    expression of `var` needs: m / gcd(a, m) for `(a*var + b) // m`, so `(24*y + 5) // 18`
    needs 3) for which `at_residue` leaves no `//` or `%` of `var`; 1 when none is needed or
    none works."""
    divisors = {abs(m) for e in exprs for m in _divisors(e, var)}
    if not divisors:
        return 1
    base = math.lcm(*divisors)
    probe = E.Variable(var.typ, f"{var.name}_q")
    for candidate in range(base, MAX_PERIOD + 1, base):
        if all(
            _exact(at_residue(e, var, candidate, r, probe), probe)
            for e in exprs
            for r in range(candidate)
        ):
            return candidate
    return 1


def at_residue(e: E.Expr, var, period_: int, residue: int, q) -> E.Expr:
    """`e` with `var` = period_*q + residue, its divisions and remainders by constants made
    affine in `q` where they divide exactly, and constant parts folded."""
    typ = var.typ
    point = E.BinOp("+", E.BinOp("*", q, E.Const(period_, typ), typ), E.Const(residue, typ), typ)
    return _reduce(substitute(e, {}, {id(var): point}), q)


def decide(cond):
    """True or False for a condition of constants only, else None."""
    if cond is None:
        return True
    if any(isinstance(n, (E.Symbol, E.Reference)) for n in E.walk(cond)):
        return None
    return bool(Evaluator({}, {}, {})(cond, {}, 1))


def _divisors(e, var):
    for node in E.walk(e):
        if (
            isinstance(node, E.BinOp)
            and node.op in ("//", "%")
            and node.typ.is_int
            and isinstance(node.b, E.Const)
            and node.b.value != 0
            and any(n is var for n in E.walk(node.a))
        ):
            m = abs(int(node.b.value))
            split = _linear(node.a, var)
            yield m if split is None else m // math.gcd(split[0], m)


def _exact(e, q) -> bool:
    """No `//` or `%` left whose dividend depends on `q`."""
    return not any(
        isinstance(n, E.BinOp) and n.op in ("//", "%") and any(m is q for m in E.walk(n.a))
        for n in E.walk(e)
    )


def _reduce(e, q):
    children = e.children()
    if not children:
        return e
    new = [_reduce(c, q) for c in children]
    if isinstance(e, E.Reference):
        e = E.Reference(e.func, new)
    elif any(n is not c for n, c in zip(new, children)):
        e = rebuild(e, new)
    if isinstance(e, E.BinOp) and e.typ.is_int:
        return _fold(e, q)
    return e


def _fold(e, q):
    """`(a*q + rest) // m` -> `(a/m)*q + rest // m` and `(a*q + rest) % m` -> `rest % m` when m
    divides a; constant operations computed (Python's // and % are the DSL's)."""
    if (
        isinstance(e.a, E.Const)
        and isinstance(e.b, E.Const)
        and not (e.op in ("//", "%") and e.b.value == 0)
    ):
        value = {
            "+": lambda a, b: a + b,
            "-": lambda a, b: a - b,
            "*": lambda a, b: a * b,
            "//": lambda a, b: a // b,
            "%": lambda a, b: a % b,
            "min": min,
            "max": max,
        }[e.op](e.a.value, e.b.value)
        if e.typ.min_value() <= value <= e.typ.max_value():
            return E.Const(value, e.typ)
        return e
    if e.op not in ("//", "%") or not isinstance(e.b, E.Const) or e.b.value == 0:
        return e
    split = _linear(e.a, q)
    m = e.b.value
    if split is None or split[0] == 0 or split[0] % m:
        return e
    a, rest = split
    rest = rest if rest is not None else E.Const(0, e.typ)
    remainder = _fold(E.BinOp(e.op, rest, e.b, e.typ), q)
    if e.op == "%":
        return remainder
    slope = q if a // m == 1 else E.BinOp("*", q, E.Const(a // m, e.typ), e.typ)
    if isinstance(remainder, E.Const) and remainder.value == 0:
        return slope
    return E.BinOp("+", slope, remainder, e.typ)


def _linear(e, q):
    """(a, rest) with e == a*q + rest (rest None for 0), for sums, differences, negation and
    constant multiples of `q` in e's own type; None otherwise."""
    if e is q:
        return 1, None
    if not any(n is q for n in E.walk(e)):
        return 0, e
    if isinstance(e, E.Neg):
        inner = _linear(e.a, q)
        if inner is None:
            return None
        return -inner[0], None if inner[1] is None else _fold_neg(inner[1])
    if isinstance(e, E.BinOp) and e.op in ("+", "-") and e.a.typ is e.typ and e.b.typ is e.typ:
        left, right = _linear(e.a, q), _linear(e.b, q)
        if left is None or right is None:
            return None
        sign = 1 if e.op == "+" else -1
        rest = _combine(left[1], right[1], e.op, e.typ)
        return left[0] + sign * right[0], rest
    if isinstance(e, E.BinOp) and e.op == "*":
        for const, other in ((e.a, e.b), (e.b, e.a)):
            if isinstance(const, E.Const):
                inner = _linear(other, q)
                if inner is None:
                    return None
                rest = None if inner[1] is None else E.BinOp("*", inner[1], const, e.typ)
                return inner[0] * const.value, rest
    return None


def _fold_neg(e):
    if isinstance(e, E.Const) and e.typ.min_value() <= -e.value <= e.typ.max_value():
        return E.Const(-e.value, e.typ)
    return E.Neg(e)


def _combine(a, b, op, typ):
    """`a op b` for op + or -, where None stands for 0; constants folded."""
    if b is None:
        return a
    if a is None:
        a = E.Const(0, typ)
    return _fold(E.BinOp(op, a, b, typ), None)
