"""C text of DSL expressions with exactly the interpreter's semantics.

Integer arithmetic wraps (the build uses -fwrapv; narrow types are cast back), `//` and `%` are
floor division and Python modulo through helpers that return 0 on division by zero, Min/Max
propagate NaN, float-to-integer casts saturate. Helpers are emitted only when used.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..algebra.affine import is_affine
from ..dsl import expr as E
from ..dsl import libm
from ..dsl.borders import is_index_fold
from ..dsl.types import Float, Half, ScalarType
from .chelpers import SUFFIX
from .ctext import CText, cat, join, used
from .names import PREFIX

_NARROW = {"int8_t", "uint8_t", "int16_t", "uint16_t"}
# data-dependent indices of these types compute a gather's offset in int32 (narrow_gather)
_INT32_INDEX = _NARROW | {"int32_t"}
_FLOAT_FN = {"sqrt", "exp", "log", "sin", "cos", "floor", "pow"}


def c_literal(value, typ: ScalarType) -> str:
    """An exact C literal of `value` in type `typ` (a Half as its bits)."""
    if typ is Half:
        return f"((uint16_t){int(np.float16(value).view(np.uint16))})"
    if typ.is_float:
        suffix = "f" if typ.c_name == "float" else ""
        if math.isnan(value):
            return f"(({typ.c_name})NAN)"
        if math.isinf(value):
            return f"(({typ.c_name}){'-' if value < 0 else ''}INFINITY)"
        text = _shortest_float32(value) if suffix else repr(float(value))
        if not any(ch in text for ch in ".en"):
            text += ".0"
        return f"{text}{suffix}"
    if typ.c_name in ("int32_t", "int64_t") and value == typ.min_value():
        return f"({typ.c_name.upper()[:-2]}_MIN)"
    macro = {"int64_t": "INT64_C", "uint64_t": "UINT64_C", "uint32_t": "UINT32_C"}
    if typ.c_name in macro:
        return f"{macro[typ.c_name]}({value})"
    return str(value) if typ.c_name == "int32_t" else f"(({typ.c_name}){value})"


def _shortest_float32(value) -> str:
    """The shortest decimal that reads back as this float32 (C rounds it correctly)."""
    v = np.float32(value)
    text = np.format_float_positional(v, unique=True, trim="0")
    return text if len(text) <= 16 else np.format_float_scientific(v, unique=True, trim="0")


class Hoisted:
    """What an innermost loop's body computes from its outer variables only: index folds and
    clamps (dsl.borders, Min and Max) are computed once before the loop (gcc does not hoist a
    fold, whose `%` may trap while the loop may not run), and Selects on such conditions blend
    bits (behind a branch gcc sinks the read of a clamped row and makes it a masked load).
    Either way the loop would not vectorize. It names each term in the order it is first
    printed (a naming table, as the symbols' registry is)."""

    def __init__(self, outer_variables):
        self.outer = {id(v) for v in outer_variables}
        self.items: dict = {}  # C text -> (its name, the term as CText)

    def takes(self, e) -> bool:
        return not any(
            isinstance(n, E.Reference) or (isinstance(n, E.Variable) and id(n) not in self.outer)
            for n in E.walk(e)
        )

    def name(self, term: CText) -> CText:
        """The name of `term`, which uses what the term uses."""
        name, _ = self.items.setdefault(term.text, (f"{PREFIX}inv{len(self.items)}", term))
        return CText(name, term.uses)

    def declarations(self) -> list:
        """(name, term) of every term named, in the order they were named."""
        return [(name, term) for name, term in self.items.values()]


def helper(op: str, c_type: str) -> CText:
    """The name of helper function `op` of C type `c_type` (chelpers), using it."""
    return used(f"{PREFIX}{op}_{SUFFIX[c_type]}", ("helper", (op, c_type)))


@dataclass(frozen=True, eq=False)
class CExprPrinter:
    """Prints expressions as CText; `names` maps Symbols to C names, `address(ref, printer)`
    gives a subscript. Its modes are fields, changed by `with_` on a copy: with `eager` (for
    reads known to be in bounds), `&&`, `||` and Selects evaluate both sides (a branch-free
    body the vectorizer blends instead of masking its loads); `chosen` maps clamps (by id) to
    the operand they pick in a loop's interior (codegen.clamps); `narrow` prints gathers'
    indices in int32 (narrow_gather); `hoist` names the terms of an innermost loop's body
    that only its outer variables decide (Hoisted)."""

    names: Any
    address: Callable | None = None
    eager: bool = False
    chosen: Mapping = field(default_factory=dict)
    narrow: bool = False
    hoist: Hoisted | None = None
    # float-to-integer casts converted back to float (castz), by id (held: ids stay unique);
    # a memo shared by the copies
    signless: dict = field(default_factory=dict)

    def with_(self, **modes) -> CExprPrinter:
        """This printer with `modes` changed."""
        return dataclasses.replace(self, **modes)

    def __call__(self, e: E.Expr) -> CText:
        return getattr(self, "_" + type(e).__name__)(e)

    def helper(self, op: str, typ: ScalarType) -> CText:
        return helper(op, typ.c_name)

    def _Const(self, e):
        return CText(c_literal(e.value, e.typ))

    def _Variable(self, e):
        return CText(self.names[e])

    _Parameter = _Variable

    def _BinOp(self, e):
        if id(e) in self.chosen:
            return self(self.chosen[id(e)])
        if e.op in ("min", "max") and e.typ.is_float:
            tree = self._minmax_tree(e)
            if tree is not None:
                return tree
        a, b, c = self(e.a), self(e.b), e.typ.c_name
        shift = _by_power_of_two(e, a)
        if shift is not None:
            return cat(f"(({c})", shift, ")") if c in _NARROW else shift
        if e.op in ("//", "%", "min", "max"):
            op = _DIVMOD.get(e.op, e.op) + ("c" if _by_positive_constant(e) else "")
            return cat(self.helper(op, e.typ), "(", a, ", ", b, ")")
        text = cat("(", a, f" {e.op} ", b, ")")
        return cat(f"(({c})", text, ")") if c in _NARROW else text

    def _Neg(self, e):
        text = cat("(-", self(e.a), ")")
        return cat(f"(({e.typ.c_name})", text, ")") if e.typ.c_name in _NARROW else text

    def _Call(self, e):
        if id(e) in self.chosen:
            return self(self.chosen[id(e)])
        args = join(", ", (self(a) for a in e.args))
        if is_index_fold(e):
            text = cat(self.helper(e.fn, E.Long), "(", args, ")")
            return self.hoist.name(text) if self.hoist and self.hoist.takes(e) else text
        if e.fn == "floor" and e.typ.is_int:
            return args
        if e.fn in E.INTEGER_OPS:
            return cat(self.helper(e.fn, e.args[0].typ), "(", args, ")")
        if e.fn == "abs":
            if e.typ.is_float:
                return cat(f"fabs{'f' if e.typ.c_name == 'float' else ''}(", args, ")")
            if not e.typ.is_signed:
                return args
            return cat(self.helper("abs", e.typ), "(", args, ")")
        if e.fn in libm.OWN:  # in float for a Float result, else in double: see dsl.exp_poly
            typ = Float if e.typ.c_name == "float" else E.Double
            wide = join(", ", (cat(f"({typ.c_name})(", self(a), ")") for a in e.args))
            return cat(f"(({e.typ.c_name})", self.helper(e.fn, typ), "(", wide, "))")
        if e.typ.c_name == "float" and libm.is_libm(e.fn):  # as the interpreter: see dsl.libm
            wide = join(", ", (cat("(double)(", self(a), ")") for a in e.args))
            return cat(f"((float){e.fn}(", wide, "))")
        return cat(f"{e.fn}{'f' if e.typ.c_name == 'float' else ''}(", args, ")")

    def _minmax_tree(self, root):
        """A tree of two or more float Min/Max as plain selects (one `vminps` each), NaN
        where one of its distinct operands is NaN: one unordered compare per two operands
        instead of a compare and a blend per node; the same value as NumPy's minimum and
        maximum at every point (NaN payloads aside). None for a single node."""
        leaves: dict = {}

        def node(e) -> bool:
            return (
                isinstance(e, E.BinOp)
                and e.op in ("min", "max")
                and e.typ == root.typ
                and id(e) not in self.chosen
            )

        def plain(e) -> CText:
            if node(e):
                return cat(self.helper("p" + e.op, e.typ), "(", plain(e.a), ", ", plain(e.b), ")")
            text = self(e)
            return leaves.setdefault(text.text, cat("(", text, ")"))

        if not (node(root.a) or node(root.b)):
            return None
        value = plain(root)
        names = list(leaves.values())
        pairs = [names[k : k + 2] for k in range(0, len(names), 2)]
        nan = join(" | ", (cat("__builtin_isunordered(", p[0], ", ", p[-1], ")") for p in pairs))
        return cat(self.helper("nanor", root.typ), "(", nan, ", ", value, ")")

    def _Cast(self, e):
        src, dst = e.a.typ, e.typ
        if dst.is_float and src.is_int:
            self.signless.update((id(c), c) for c in _truncations(e.a))
        if Half in (src, dst):
            return self._half_cast(e)
        if src.is_float and dst.is_int:
            return cat(self.truncation(e, src), "(", self(e.a), ")")
        return cat(f"(({dst.c_name})", self(e.a), ")")

    def truncation(self, e, src: ScalarType) -> CText:
        """The helper of float-to-integer Cast `e` from `src` (float or double): castz where
        an integer-to-float conversion may see its value (see _truncations)."""
        kind = "castz_" if id(e) in self.signless else "cast_"
        return self.helper(kind + SUFFIX[src.c_name], e.typ)

    def _half_cast(self, e):
        """A conversion to or from Half (its bits) by helpers, exact from Half (to double
        directly, as NumPy does), rounded to nearest even to Half (from double directly, not
        twice through float)."""
        src, dst, a = e.a.typ, e.typ, self(e.a)
        if src is dst:
            return a
        if src is Half:
            value = cat(self.helper("fromhalf", dst if dst.is_float else Float), "(", a, ")")
            return cat(self.truncation(e, Float), "(", value, ")") if dst.is_int else value
        source = src if src.c_name == "double" else Float
        operand = a if src.is_float else cat("(float)(", a, ")")
        return cat(self.helper("tohalf", source), "(", operand, ")")

    def _Select(self, e):
        if self.holds(e.cond):
            return self(e.a)
        parts = (self(e.cond), self(e.a), self(e.b))
        if self.eager:
            branch_free = self.hoist and self.hoist.takes(e.cond) or _reads(e.a, e.b)
            name = self.helper("blend" if branch_free else "select", e.typ)
            return cat(name, "(", join(", ", parts), ")")
        return cat("(", parts[0], " ? ", parts[1], " : ", parts[2], ")")

    def holds(self, cond) -> bool:
        """Whether `cond` is known true in this loop's interior (codegen.clamps)."""
        if isinstance(cond, E.Logic) and cond.op == "&&":
            return self.holds(cond.a) and self.holds(cond.b)
        return self.chosen.get(id(cond)) is True

    def _Condition(self, e):
        if self.holds(e):
            return CText("1")
        return cat("(", self(e.lhs), f" {e.op} ", self(e.rhs), ")")

    def _Logic(self, e):
        op = {"&&": "&", "||": "|"}[e.op] if self.eager else e.op
        return cat("(", self(e.a), f" {op} ", self(e.b), ")")

    def _Not(self, e):
        return cat("(!", self(e.a), ")")

    def _Reference(self, e):
        assert self.address is not None, "a printer of addresses prints references"
        return self.address(e, self)

    def index(self, arg: E.Expr, lb: str, ub: str) -> CText:
        """An index as int64, clamped to [lb, ub] unless it is affine (checked statically)."""
        while id(arg) in self.chosen and is_index_fold(arg):
            arg = self.chosen[id(arg)]
        if is_affine(arg):
            return self.wide(arg)
        if arg.typ.c_name == "uint64_t":
            text = cat(helper("saturate", "uint64_t"), "(", self(arg), ")")
        else:
            text = cat("(int64_t)(", self(arg), ")")
        return cat(helper("clamp", "int64_t"), "(", text, f", {lb}, {ub})")

    def narrow_index(self, arg: E.Expr, lb: str, ub: str) -> CText:
        """The index as int32 where the buffer's bounds fit it (see narrow_gather)."""
        if is_affine(arg):
            return cat("(int32_t)(", self.wide(arg), ")")
        clamp = helper("clamp", "int32_t")
        return cat(clamp, "((int32_t)(", self(arg), f"), (int32_t){lb}, (int32_t){ub})")

    def wide(self, e: E.Expr) -> CText:
        """An affine index in int64 arithmetic over the loops' 64-bit iterators, so that the
        vectorizer sees unit strides (narrow arithmetic wraps under -fwrapv and hides them)."""
        if isinstance(e, E.Const):
            return CText(f"INT64_C({e.value})")
        if isinstance(e, E.Parameter):
            return CText(f"((int64_t){self.names[e]})")
        if isinstance(e, E.Variable):
            return CText(wide_name(self.names[e]))
        if isinstance(e, E.Neg):
            return cat("(-", self.wide(e.a), ")")
        if isinstance(e, E.Cast):
            return self.wide(e.a)
        if id(e) in self.chosen:
            return self.wide(self.chosen[id(e)])
        assert isinstance(e, E.BinOp), e  # an affine index has no other nodes
        a, b = self.wide(e.a), self.wide(e.b)
        if e.op in ("min", "max") and self.hoist and self.hoist.takes(e):
            return self.hoist.name(cat(self.helper(e.op, E.Long), "(", a, ", ", b, ")"))
        if e.op in ("+", "-", "*"):
            return cat("(", a, f" {e.op} ", b, ")")
        shift = _by_power_of_two(e, a)
        if shift is not None:
            return shift
        op = _DIVMOD.get(e.op, e.op) + ("c" if _by_positive_constant(e) else "")
        return cat(self.helper(op, E.Long), "(", a, ", ", b, ")")


def _reads(*exprs) -> bool:
    """Whether any of `exprs` reads a buffer: a select of such values blends their bits, since
    behind a plain select gcc sinks the reads into branches, and a comparison with the select
    becomes a select of comparisons it cannot vectorize (non-maximum suppression)."""
    return any(isinstance(n, E.Reference) for e in exprs for n in E.walk(e))


def narrow_gather(ref) -> bool:
    """Whether Reference `ref` is a gather (an index not affine) whose data-dependent indices
    are integers of at most 32 signed bits: where its buffer holds fewer than 2^31 elements
    within int32 bounds, its offset is then exact in int32, which halves the vector lanes'
    index width (a gather of 16 floats, not 8)."""
    gathered = [a for a in ref.args if not is_affine(a)]
    return bool(gathered) and all(a.typ.c_name in _INT32_INDEX for a in gathered)


_DIVMOD = {"//": "floordiv", "%": "mod"}


def _by_positive_constant(e) -> bool:
    """Whether `e` divides or reduces a signed integer by a positive constant: its helper
    (floordivc, modc) is then branch-free, so gcc hoists an index of outer variables out of
    an inner loop (the branches of the general helper leave it a gather)."""
    return (
        e.op in ("//", "%")
        and e.typ.is_int
        and e.typ.is_signed
        and isinstance(e.b, E.Const)
        and isinstance(e.b.value, int)
        and e.b.value > 0
    )


def _by_power_of_two(e, a: CText):
    """`a // 2**k` as `a >> k` and `a % 2**k` as `a & (2**k - 1)` for signed integers (floor
    division and Python's modulo in two's complement; gcc's >> is arithmetic): no branch, so
    gcc hoists such an index out of an inner loop instead of gathering. None otherwise."""
    b = e.b
    if not (_by_positive_constant(e) and b.value & (b.value - 1) == 0):
        return None
    if e.op == "//":
        return cat("(", a, f" >> {b.value.bit_length() - 1})")
    return cat("(", a, f" & {b.value - 1})")


def wide_name(c_name: str) -> str:
    """The 64-bit loop iterator behind the loop variable `c_name`."""
    return f"{PREFIX}w_{c_name}"


def _truncations(e):
    """The float-to-integer casts whose value integer `e` may be computed from, through any
    integer operations (a read from memory or a float value ends the path): what a conversion
    of `e` to float may be folded with, once gcc has inlined the helpers and simplified what
    lies between (`x + 0`, a saturation that cannot happen, a Select of equal arms)."""
    found, stack = [], [e]
    while stack:
        node = stack.pop()
        if not node.typ.is_int or isinstance(node, E.Reference):
            continue
        if isinstance(node, E.Cast) and node.a.typ.is_float:
            found.append(node)
        else:
            stack.extend(node.children())
    return found
