"""C text of DSL expressions with exactly the interpreter's semantics.

Integer arithmetic wraps (the build uses -fwrapv; narrow types are cast back), `//` and `%` are
floor division and Python modulo through helpers that return 0 on division by zero, Min/Max
propagate NaN, float-to-integer casts saturate. Helpers are emitted only when used.
"""

from __future__ import annotations

import math

import numpy as np

from ..algebra.affine import is_affine
from ..dsl import expr as E
from ..dsl import libm
from ..dsl.borders import is_index_fold
from ..dsl.types import Float, Half, ScalarType
from .cpixel import pixel_helper_source
from .names import HELPER, PREFIX

_NARROW = {"int8_t", "uint8_t", "int16_t", "uint16_t"}
# data-dependent indices of these types compute a gather's offset in int32 (narrow_gather)
_INT32_INDEX = _NARROW | {"int32_t"}
_FLOAT_FN = {"sqrt", "exp", "log", "sin", "cos", "floor", "pow"}
_SUFFIX = {
    "int8_t": "i8",
    "uint8_t": "u8",
    "int16_t": "i16",
    "uint16_t": "u16",
    "int32_t": "i32",
    "uint32_t": "u32",
    "int64_t": "i64",
    "uint64_t": "u64",
    "float": "f32",
    "double": "f64",
}


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
    Either way the loop would not vectorize."""

    def __init__(self, outer_variables):
        self.outer = {id(v) for v in outer_variables}
        self.items = {}  # C text -> its name

    def takes(self, e) -> bool:
        return not any(
            isinstance(n, E.Reference) or (isinstance(n, E.Variable) and id(n) not in self.outer)
            for n in E.walk(e)
        )

    def name(self, text: str) -> str:
        return self.items.setdefault(text, f"{PREFIX}inv{len(self.items)}")


class CExprPrinter:
    """Prints expressions; `names` maps Symbols to C names, `address(ref)` gives a subscript.
    With `eager` set (for reads known to be in bounds), `&&`, `||` and Selects evaluate both
    sides: a branch-free body the vectorizer blends instead of masking its loads. `chosen`
    maps clamps (by id) to the operand they pick in a loop's interior (codegen.clamps)."""

    def __init__(self, names, address, helpers: set):
        self.names = names
        self.address = address
        self.helpers = helpers
        self.eager = False
        self.chosen: dict = {}
        self.narrow = False
        # float-to-integer casts converted back to float (castz), by id (held: ids stay unique)
        self.signless: dict = {}
        self.hoist: Hoisted | None = None  # while printing an innermost loop's body

    def __call__(self, e: E.Expr) -> str:
        return getattr(self, "_" + type(e).__name__)(e)

    def helper(self, op: str, typ: ScalarType) -> str:
        name = f"{PREFIX}{op}_{_SUFFIX[typ.c_name]}"
        self.helpers.add((op, typ.c_name))
        return name

    def _Const(self, e):
        return c_literal(e.value, e.typ)

    def _Variable(self, e):
        return self.names[e]

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
            return f"(({c}){shift})" if c in _NARROW else shift
        if e.op in ("//", "%", "min", "max"):
            op = _DIVMOD.get(e.op, e.op) + ("c" if _by_positive_constant(e) else "")
            return f"{self.helper(op, e.typ)}({a}, {b})"
        text = f"({a} {e.op} {b})"
        return f"(({c}){text})" if c in _NARROW else text

    def _Neg(self, e):
        text = f"(-{self(e.a)})"
        return f"(({e.typ.c_name}){text})" if e.typ.c_name in _NARROW else text

    def _Call(self, e):
        if id(e) in self.chosen:
            return self(self.chosen[id(e)])
        args = ", ".join(self(a) for a in e.args)
        if is_index_fold(e):
            text = f"{self.helper(e.fn, E.Long)}({args})"
            return self.hoist.name(text) if self.hoist and self.hoist.takes(e) else text
        if e.fn == "floor" and e.typ.is_int:
            return args
        if e.fn in E.INTEGER_OPS:
            return f"{self.helper(e.fn, e.args[0].typ)}({args})"
        if e.fn == "abs":
            if e.typ.is_float:
                return f"fabs{'f' if e.typ.c_name == 'float' else ''}({args})"
            return args if not e.typ.is_signed else f"{self.helper('abs', e.typ)}({args})"
        if e.fn in libm.OWN:  # in float for a Float result, else in double: see dsl.exp_poly
            typ = Float if e.typ.c_name == "float" else E.Double
            wide = ", ".join(f"({typ.c_name})({self(a)})" for a in e.args)
            return f"(({e.typ.c_name}){self.helper(e.fn, typ)}({wide}))"
        if e.typ.c_name == "float" and libm.is_libm(e.fn):  # as the interpreter: see dsl.libm
            wide = ", ".join(f"(double)({self(a)})" for a in e.args)
            return f"((float){e.fn}({wide}))"
        return f"{e.fn}{'f' if e.typ.c_name == 'float' else ''}({args})"

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

        def plain(e):
            if node(e):
                return f"{self.helper('p' + e.op, e.typ)}({plain(e.a)}, {plain(e.b)})"
            text = self(e)
            return leaves.setdefault(text, f"({text})")

        if not (node(root.a) or node(root.b)):
            return None
        value = plain(root)
        names = list(leaves.values())
        pairs = [names[k : k + 2] for k in range(0, len(names), 2)]
        nan = " | ".join(f"__builtin_isunordered({p[0]}, {p[-1]})" for p in pairs)
        return f"{self.helper('nanor', root.typ)}({nan}, {value})"

    def _Cast(self, e):
        src, dst = e.a.typ, e.typ
        if dst.is_float and src.is_int:
            self.signless.update((id(c), c) for c in _truncations(e.a))
        if Half in (src, dst):
            return self._half_cast(e)
        if src.is_float and dst.is_int:
            return f"{self.truncation(e, src)}({self(e.a)})"
        return f"(({dst.c_name}){self(e.a)})"

    def truncation(self, e, src: ScalarType) -> str:
        """The helper of float-to-integer Cast `e` from `src` (float or double): castz where
        an integer-to-float conversion may see its value (see _truncations)."""
        kind = "castz_" if id(e) in self.signless else "cast_"
        return self.helper(kind + _SUFFIX[src.c_name], e.typ)

    def _half_cast(self, e):
        """A conversion to or from Half (its bits) by helpers, exact from Half (to double
        directly, as NumPy does), rounded to nearest even to Half (from double directly, not
        twice through float)."""
        src, dst, a = e.a.typ, e.typ, self(e.a)
        if src is dst:
            return a
        if src is Half:
            value = f"{self.helper('fromhalf', dst if dst.is_float else Float)}({a})"
            return f"{self.truncation(e, Float)}({value})" if dst.is_int else value
        wide = src.c_name == "double"
        source = src if wide else Float
        return f"{self.helper('tohalf', source)}({a if src.is_float else f'(float)({a})'})"

    def _Select(self, e):
        if self.holds(e.cond):
            return self(e.a)
        if self.eager and (self.hoist and self.hoist.takes(e.cond) or _reads(e.a, e.b)):
            return f"{self.helper('blend', e.typ)}({self(e.cond)}, {self(e.a)}, {self(e.b)})"
        if self.eager:
            return f"{self.helper('select', e.typ)}({self(e.cond)}, {self(e.a)}, {self(e.b)})"
        return f"({self(e.cond)} ? {self(e.a)} : {self(e.b)})"

    def holds(self, cond) -> bool:
        """Whether `cond` is known true in this loop's interior (codegen.clamps)."""
        if isinstance(cond, E.Logic) and cond.op == "&&":
            return self.holds(cond.a) and self.holds(cond.b)
        return self.chosen.get(id(cond)) is True

    def _Condition(self, e):
        if self.holds(e):
            return "1"
        return f"({self(e.lhs)} {e.op} {self(e.rhs)})"

    def _Logic(self, e):
        op = {"&&": "&", "||": "|"}[e.op] if self.eager else e.op
        return f"({self(e.a)} {op} {self(e.b)})"

    def _Not(self, e):
        return f"(!{self(e.a)})"

    def _Reference(self, e):
        return self.address(e, self)

    def index(self, arg: E.Expr, lb: str, ub: str) -> str:
        """An index as int64, clamped to [lb, ub] unless it is affine (checked statically)."""
        while id(arg) in self.chosen and is_index_fold(arg):
            arg = self.chosen[id(arg)]
        if is_affine(arg):
            return self.wide(arg)
        text = f"(int64_t)({self(arg)})"
        if arg.typ.c_name == "uint64_t":
            self.helpers.add(("saturate", "uint64_t"))
            text = f"{PREFIX}saturate_u64({self(arg)})"
        self.helpers.add(("clamp", "int64_t"))
        return f"{PREFIX}clamp_i64({text}, {lb}, {ub})"

    def narrow_index(self, arg: E.Expr, lb: str, ub: str) -> str:
        """The index as int32 where the buffer's bounds fit it (see narrow_gather)."""
        if is_affine(arg):
            return f"(int32_t)({self.wide(arg)})"
        self.helpers.add(("clamp", "int32_t"))
        return f"{PREFIX}clamp_i32((int32_t)({self(arg)}), (int32_t){lb}, (int32_t){ub})"

    def wide(self, e: E.Expr) -> str:
        """An affine index in int64 arithmetic over the loops' 64-bit iterators, so that the
        vectorizer sees unit strides (narrow arithmetic wraps under -fwrapv and hides them)."""
        if isinstance(e, E.Const):
            return f"INT64_C({e.value})"
        if isinstance(e, E.Parameter):
            return f"((int64_t){self.names[e]})"
        if isinstance(e, E.Variable):
            return wide_name(self.names[e])
        if isinstance(e, E.Neg):
            return f"(-{self.wide(e.a)})"
        if isinstance(e, E.Cast):
            return self.wide(e.a)
        if id(e) in self.chosen:
            return self.wide(self.chosen[id(e)])
        assert isinstance(e, E.BinOp), e  # an affine index has no other nodes
        a, b = self.wide(e.a), self.wide(e.b)
        if e.op in ("min", "max") and self.hoist and self.hoist.takes(e):
            return self.hoist.name(f"{self.helper(e.op, E.Long)}({a}, {b})")
        if e.op in ("+", "-", "*"):
            return f"({a} {e.op} {b})"
        shift = _by_power_of_two(e, a)
        if shift is not None:
            return shift
        op = _DIVMOD.get(e.op, e.op) + ("c" if _by_positive_constant(e) else "")
        return f"{self.helper(op, E.Long)}({a}, {b})"


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


def _by_power_of_two(e, a: str):
    """`a // 2**k` as `a >> k` and `a % 2**k` as `a & (2**k - 1)` for signed integers (floor
    division and Python's modulo in two's complement; gcc's >> is arithmetic): no branch, so
    gcc hoists such an index out of an inner loop instead of gathering. None otherwise."""
    b = e.b
    if not (_by_positive_constant(e) and b.value & (b.value - 1) == 0):
        return None
    if e.op == "//":
        return f"({a} >> {b.value.bit_length() - 1})"
    return f"({a} & {b.value - 1})"


def wide_name(c_name: str) -> str:
    """The 64-bit loop iterator behind the loop variable `c_name`."""
    return f"{PREFIX}w_{c_name}"


def helper_source(op: str, c_type: str) -> str:
    """C source of one helper function."""
    s = _SUFFIX[c_type]
    pixel = pixel_helper_source(op, c_type, s)
    if pixel is not None:
        return pixel
    head = f"{HELPER} {c_type} {PREFIX}{op}_{s}"
    if op in libm.OWN:
        return libm.OWN[op].c_source(f"{PREFIX}{op}_{s}", c_type, HELPER)
    if op.startswith(("cast_", "castz_")):
        kind, _, src = op.partition("_")
        return _cast_source(src, c_type, signless=kind == "castz")
    if op == "saturate":
        return (
            f"{HELPER} int64_t {PREFIX}saturate_{s}({c_type} v) "
            "{ return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v; }"
        )
    if op == "clamp":
        return (
            f"{head}({c_type} v, {c_type} lo, {c_type} hi) "
            "{ return v < lo ? lo : (v > hi ? hi : v); }"
        )
    if op in ("min", "max"):  # as numpy.minimum/maximum: NaN from either side, ties give b
        cmp = "<" if op == "min" else ">"
        if c_type not in ("float", "double"):
            return f"{head}({c_type} a, {c_type} b) {{ return (a {cmp} b) ? a : b; }}"
        # the plain select, then a's NaN: gcc vectorizes this form under -fno-trapping-math
        # (a blend and an unordered compare), not `(a < b || a != a) ? a : b`
        return (
            f"{head}({c_type} a, {c_type} b) "
            f"{{ {c_type} m = (a {cmp} b) ? a : b; return (a != a) ? a : m; }}"
        )
    if op in ("pmin", "pmax"):  # the plain select of _minmax_tree: no NaN handling
        cmp = "<" if op == "pmin" else ">"
        return f"{head}({c_type} a, {c_type} b) {{ return (a {cmp} b) ? a : b; }}"
    if op == "nanor":
        return f"{head}(int c, {c_type} v) {{ return c ? ({c_type})NAN : v; }}"
    if op in INDEX_FOLD_SOURCES:
        return f"{head}(int64_t i, int64_t lo, int64_t hi) {{ {INDEX_FOLD_SOURCES[op]} }}"
    if op == "blend":  # a select of bits: no branch for gcc to sink a read into
        bits = f"uint{int(s[1:])}_t"
        return (
            f"{head}(int c, {c_type} a, {c_type} b) {{ {bits} x, y, m = ({bits})-(c != 0); "
            f"__builtin_memcpy(&x, &a, sizeof x); __builtin_memcpy(&y, &b, sizeof y); "
            f"x = (x & m) | (y & ({bits})~m); {c_type} r; __builtin_memcpy(&r, &x, sizeof r); "
            "return r; }"
        )
    if op == "select":
        return f"{head}(int c, {c_type} a, {c_type} b) {{ return c ? a : b; }}"
    if op == "abs":
        return f"{head}({c_type} a) {{ return ({c_type})(a < 0 ? -a : a); }}"
    if c_type in ("float", "double"):
        return _float_divmod_source(op, c_type)
    return _int_divmod_source(op, c_type)


# the C of dsl.borders' index functions: the same arithmetic as their NumPy, in int64
# straight-line (the ternaries become selects), so gcc hoists a fold of an outer variable
_EXTENT = "int64_t n = hi - lo + 1; n = n > 1 ? n : 1;"
INDEX_FOLD_SOURCES = {
    "mirror_index": _EXTENT
    + " int64_t p = 2 * n, t = (i - lo) % p; t = t < 0 ? t + p : t;"
    + " return lo + (t < n ? t : p - 1 - t);",
    "reflect_index": _EXTENT
    + " int64_t p = n > 1 ? 2 * n - 2 : 1, t = (i - lo) % p; t = t < 0 ? t + p : t;"
    + " return lo + (t < n ? t : p - t);",
    "wrap_index": _EXTENT + " int64_t t = (i - lo) % n; return lo + (t < 0 ? t + n : t);",
}


def _int_divmod_source(op: str, c: str) -> str:
    head = f"{HELPER} {c} {PREFIX}{op}_{_SUFFIX[c]}({c} a, {c} b)"
    if op == "floordivc":  # b > 0
        return f"{head} {{ return ({c})(a / b - (a % b < 0)); }}"
    if op == "modc":
        return f"{head} {{ {c} r = ({c})(a % b); return r < 0 ? ({c})(r + b) : r; }}"
    if c in _EXACT_QUOTIENT:
        return _float_quotient_source(op, c, head)
    if c.startswith("u"):
        body = f"return b == 0 ? 0 : ({c})(a {'/' if op == 'floordiv' else '%'} b);"
    elif op == "floordiv":
        body = (
            f"if (b == 0) return 0; if (b == -1) return ({c})(-a); "
            f"{c} q = ({c})(a / b); if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1; "
            "return q;"
        )
    else:
        body = (
            f"if (b == 0 || b == -1) return 0; {c} r = ({c})(a % b); "
            f"if (r != 0 && ((r < 0) != (b < 0))) r = ({c})(r + b); return r;"
        )
    return f"{head} {{ {body} }}"


# integer types whose quotients a floating type computes exactly (|a| < 2^24 in float, 2^53 in
# double), and that type: the floor of the rounded quotient is the exact one, since the rounding
# error stays under 1/|b|, the distance from a quotient that is not an integer to the next one
_EXACT_QUOTIENT = {
    "int8_t": "float",
    "uint8_t": "float",
    "int16_t": "float",
    "uint16_t": "float",
    "int32_t": "double",
    "uint32_t": "double",
}


def _float_quotient_source(op: str, c: str, head: str) -> str:
    """Floor division and Python's modulo of an integer type of 32 bits or less, through the
    floating type that divides it exactly: no branch (the divisor is made 1 where it is 0,
    or -1 whose quotient -a may overflow), so the loop vectorizes (x86 has no vector integer
    division). As the general helper: 0 for a divisor of 0, -a wrapped for -1."""
    f = _EXACT_QUOTIENT[c]
    floor = "floorf" if f == "float" else "floor"
    u = "uint32_t"  # wraps (narrow types would promote to int)
    special = "b == 0" if c.startswith("u") else "b == 0 || b == -1"
    if op == "floordiv":
        minus = "" if c.startswith("u") else f" b == -1 ? ({c})(({u})0 - ({u})a) :"
        numerator = f"{c} n = b == 0 ? 0 :{minus} a;"
    else:
        numerator = f"{c} n = {special} ? 0 : a;"
    quotient = f"{numerator} {c} d = {special} ? 1 : b; {c} q = ({c}){floor}(({f})n / ({f})d);"
    if op == "floordiv":
        return f"{head} {{ {quotient} return q; }}"
    return f"{head} {{ {quotient} return ({c})(({u})n - ({u})d * ({u})q); }}"


def _float_divmod_source(op: str, c: str) -> str:
    f = "f" if c == "float" else ""
    head = f"{HELPER} {c} {PREFIX}{op}_{_SUFFIX[c]}({c} a, {c} b)"
    if op == "mod":
        body = (
            f"{c} m = fmod{f}(a, b); if (b == 0) return m; "
            "if (m != 0) { if ((b < 0) != (m < 0)) m += b; } "
            f"else m = copysign{f}(0, b); return m;"
        )
    else:
        body = (
            f"if (b == 0) return a / b; {c} m = fmod{f}(a, b); {c} d = (a - m) / b; "
            "if (m != 0 && ((b < 0) != (m < 0))) d -= 1; "
            f"{c} q; if (d != 0) {{ q = floor{f}(d); if (d - q > 0.5{f}) q += 1; }} "
            f"else q = copysign{f}(0, a / b); return q;"
        )
    return f"{head} {{ {body} }}"


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


def _cast_source(src_suffix: str, c: str, signless=False) -> str:
    """A saturating float-to-integer cast. `signless` (castz, for a cast converted back to
    float): the value is truncated and added to +0 first, since gcc (12 at least) rewrites
    `(float)(int)v` as `truncf(v)` under -fno-trapping-math, which keeps the sign of -0.3's
    zero; the sum's zero is +0. (Two more operations: kept where the fold can happen.)
    Branch-free in bits: the conversion of the value where it is in range (of 0 for NaN and
    out of range), then its limits blended in by masks. Written with `?:`, constants on one
    side, gcc threaded a path where a table read at the result reads a constant address,
    which became a masked load it could not vectorize (local_laplacian's remapping)."""
    src = {v: k for k, v in _SUFFIX.items()}[src_suffix]
    bits = int("".join(ch for ch in c if ch.isdigit()))
    f = "f" if src == "float" else ""
    if c.startswith("u"):
        high, low, low_value = f"{float(2**bits).hex()}{f}", f"-0x1p+0{f}", "0"
        cmp_low = "<="
    else:
        high, low = f"{float(2 ** (bits - 1)).hex()}{f}", f"-{float(2 ** (bits - 1)).hex()}{f}"
        low_value, cmp_low = f"({c})({low})", "<"
    value = f"(trunc{f}(w) + 0.0{f})" if signless else "w"
    max_value = f"({c})" + (f"UINT{bits}_MAX" if c.startswith("u") else f"INT{bits}_MAX")
    raw = "uint32_t" if src == "float" else "uint64_t"
    u = "uint64_t" if bits == 64 else "uint32_t"
    return (
        f"{HELPER} {c} {PREFIX}{'castz' if signless else 'cast'}_{src_suffix}_{_SUFFIX[c]}"
        f"({src} v) {{ "
        f"{u} hi = ({u})0 - ({u})(v >= {high}), lo = ({u})0 - ({u})(v {cmp_low} {low}); "
        f"{raw} out = ({raw})0 - ({raw})((v >= {high}) | (v {cmp_low} {low}) | (v != v)), x; "
        f"__builtin_memcpy(&x, &v, sizeof x); x &= ~out; {src} w; "
        f"__builtin_memcpy(&w, &x, sizeof w); {u} r = ({u})({c}){value}; "
        f"return ({c})((r & ~(hi | lo)) | (({u}){max_value} & hi) | (({u}){low_value} & lo)); }}"
    )
