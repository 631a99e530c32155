"""The helper functions the generated code calls (codegen.cexpr names them), as C trees:
integer division and modulo as Python's, saturating casts, NaN-propagating Min/Max, index
folds of dsl.borders, bit blends; the pixel helpers are in codegen.cpixel, exp in
codegen.cexp."""

from __future__ import annotations

from ..dsl import libm
from .cexp import exp_functions
from .cpixel import pixel_helper
from .ctext import copy_bits, helper_function
from .ctree import Assign, Block, Declare, If, Return, Seq
from .names import HELPER, PREFIX

SUFFIX = {
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
# the C functions of our own library functions (dsl.libm.OWN)
_OWN = {"exp": exp_functions}


def helper_definitions(helpers) -> Seq:
    """The C functions of `helpers` ((op, C type) each), in their order."""
    return Seq(tuple(f for op, c_type in helpers for f in helper_functions(op, c_type)))


def helper_functions(op: str, c_type: str) -> tuple:
    """The C functions (ctree.Function) of one helper: itself, after any it calls."""
    s = SUFFIX[c_type]
    name = f"{PREFIX}{op}_{s}"
    pixel = pixel_helper(op, c_type, name)
    if pixel is not None:
        return (pixel,)
    if op in libm.OWN:
        return _OWN[op](name, c_type, HELPER)
    return (_helper(op, c_type, name),)


def _helper(op: str, c: str, name: str):
    two = (f"{c} a", f"{c} b")
    if op.startswith(("cast_", "castz_")):
        kind, _, src = op.partition("_")
        return _cast(src, c, name, signless=kind == "castz")
    if op == "saturate":
        value = "v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v"
        return helper_function("int64_t", name, (f"{c} v",), Return(value))
    if op == "clamp":
        clamped = Return("v < lo ? lo : (v > hi ? hi : v)")
        return helper_function(c, name, (f"{c} v", f"{c} lo", f"{c} hi"), clamped)
    if op in ("min", "max"):  # as numpy.minimum/maximum: NaN from either side, ties give b
        cmp = "<" if op == "min" else ">"
        if c not in ("float", "double"):
            return helper_function(c, name, two, Return(f"(a {cmp} b) ? a : b"))
        # the plain select, then a's NaN: gcc vectorizes this form under -fno-trapping-math
        # (a blend and an unordered compare), not `(a < b || a != a) ? a : b`
        select = Declare(c, (("m", f"(a {cmp} b) ? a : b"),))
        return helper_function(c, name, two, select, Return("(a != a) ? a : m"))
    if op in ("pmin", "pmax"):  # the plain select of _minmax_tree: no NaN handling
        cmp = "<" if op == "pmin" else ">"
        return helper_function(c, name, two, Return(f"(a {cmp} b) ? a : b"))
    if op == "nanor":
        return helper_function(c, name, ("int c", f"{c} v"), Return(f"c ? ({c})NAN : v"))
    if op in _INDEX_FOLDS:
        params = ("int64_t i", "int64_t lo", "int64_t hi")
        return helper_function(c, name, params, *_EXTENT, *_INDEX_FOLDS[op])
    if op == "blend":  # a select of bits: no branch for gcc to sink a read into
        bits = f"uint{int(SUFFIX[c][1:])}_t"
        return helper_function(
            c,
            name,
            ("int c", f"{c} a", f"{c} b"),
            Declare(bits, (("x", None), ("y", None), ("m", f"({bits})-(c != 0)"))),
            copy_bits("x", "a"),
            copy_bits("y", "b"),
            Assign("x", f"(x & m) | (y & ({bits})~m)"),
            Declare(c, (("r", None),)),
            copy_bits("r", "x"),
            Return("r"),
        )
    if op == "select":
        return helper_function(c, name, ("int c", f"{c} a", f"{c} b"), Return("c ? a : b"))
    if op == "abs":
        return helper_function(c, name, (f"{c} a",), Return(f"({c})(a < 0 ? -a : a)"))
    if c in ("float", "double"):
        return helper_function(c, name, two, *_float_divmod(op, c))
    return helper_function(c, name, two, *_int_divmod(op, c))


# dsl.borders' index functions: the same arithmetic as their NumPy, in int64 straight-line
# (the ternaries become selects), so gcc hoists a fold of an outer variable
_EXTENT = (Declare("int64_t", (("n", "hi - lo + 1"),)), Assign("n", "n > 1 ? n : 1"))
_INDEX_FOLDS = {
    "mirror_index": (
        Declare("int64_t", (("p", "2 * n"), ("t", "(i - lo) % p"))),
        Assign("t", "t < 0 ? t + p : t"),
        Return("lo + (t < n ? t : p - 1 - t)"),
    ),
    "reflect_index": (
        Declare("int64_t", (("p", "n > 1 ? 2 * n - 2 : 1"), ("t", "(i - lo) % p"))),
        Assign("t", "t < 0 ? t + p : t"),
        Return("lo + (t < n ? t : p - t)"),
    ),
    "wrap_index": (
        Declare("int64_t", (("t", "(i - lo) % n"),)),
        Return("lo + (t < 0 ? t + n : t)"),
    ),
}


def _int_divmod(op: str, c: str) -> tuple:
    """The statements of an integer division or modulo as Python's (0 for a divisor of 0)."""
    if op == "floordivc":  # b > 0
        return (Return(f"({c})(a / b - (a % b < 0))"),)
    if op == "modc":
        return (Declare(c, (("r", f"({c})(a % b)"),)), Return(f"r < 0 ? ({c})(r + b) : r"))
    if c in _EXACT_QUOTIENT:
        return _float_quotient(op, c)
    if c.startswith("u"):
        return (Return(f"b == 0 ? 0 : ({c})(a {'/' if op == 'floordiv' else '%'} b)"),)
    if op == "floordiv":
        return (
            If("b == 0", Return("0")),
            If("b == -1", Return(f"({c})(-a)")),
            Declare(c, (("q", f"({c})(a / b)"),)),
            If("(a % b != 0) && ((a < 0) != (b < 0))", Assign("q", "1", "-=")),
            Return("q"),
        )
    return (
        If("b == 0 || b == -1", Return("0")),
        Declare(c, (("r", f"({c})(a % b)"),)),
        If("r != 0 && ((r < 0) != (b < 0))", Assign("r", f"({c})(r + b)")),
        Return("r"),
    )


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


def _float_quotient(op: str, c: str) -> tuple:
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
        numerator = f"b == 0 ? 0 :{minus} a"
    else:
        numerator = f"{special} ? 0 : a"
    quotient = (
        Declare(c, (("n", numerator),)),
        Declare(c, (("d", f"{special} ? 1 : b"),)),
        Declare(c, (("q", f"({c}){floor}(({f})n / ({f})d)"),)),
    )
    if op == "floordiv":
        return (*quotient, Return("q"))
    return (*quotient, Return(f"({c})(({u})n - ({u})d * ({u})q)"))


def _float_divmod(op: str, c: str) -> tuple:
    """The statements of a floating division or modulo as Python's."""
    f = "f" if c == "float" else ""
    remainder = Declare(c, (("m", f"fmod{f}(a, b)"),))
    if op == "mod":
        return (
            remainder,
            If("b == 0", Return("m")),
            If(
                "m != 0",
                Block((If("(b < 0) != (m < 0)", Assign("m", "b", "+=")),)),
                Assign("m", f"copysign{f}(0, b)"),
            ),
            Return("m"),
        )
    rounded = Block((Assign("q", f"floor{f}(d)"), If(f"d - q > 0.5{f}", Assign("q", "1", "+="))))
    return (
        If("b == 0", Return("a / b")),
        remainder,
        Declare(c, (("d", "(a - m) / b"),)),
        If("m != 0 && ((b < 0) != (m < 0))", Assign("d", "1", "-=")),
        Declare(c, (("q", None),)),
        If("d != 0", rounded, Assign("q", f"copysign{f}(0, a / b)")),
        Return("q"),
    )


def _cast(src_suffix: str, c: str, name: str, signless=False):
    """A saturating float-to-integer cast. `signless` (castz, for a cast converted back to
    float): the value is truncated and added to +0 first, since gcc (12 at least) rewrites
    `(float)(int)v` as `truncf(v)` under -fno-trapping-math, which keeps the sign of -0.3's
    zero; the sum's zero is +0. (Two more operations: kept where the fold can happen.)
    Branch-free in bits: the conversion of the value where it is in range (of 0 for NaN and
    out of range), then its limits blended in by masks. Written with `?:`, constants on one
    side, gcc threaded a path where a table read at the result reads a constant address,
    which became a masked load it could not vectorize (local_laplacian's remapping)."""
    src = {v: k for k, v in SUFFIX.items()}[src_suffix]
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
    outside = f"({raw})0 - ({raw})((v >= {high}) | (v {cmp_low} {low}) | (v != v))"
    limits = f"(({u}){max_value} & hi) | (({u}){low_value} & lo)"
    return helper_function(
        c,
        name,
        (f"{src} v",),
        Declare(
            u,
            (("hi", f"({u})0 - ({u})(v >= {high})"), ("lo", f"({u})0 - ({u})(v {cmp_low} {low})")),
        ),
        Declare(raw, (("out", outside), ("x", None))),
        copy_bits("x", "v"),
        Assign("x", "~out", "&="),
        Declare(src, (("w", None),)),
        copy_bits("w", "x"),
        Declare(u, (("r", f"({u})({c}){value}"),)),
        Return(f"({c})((r & ~(hi | lo)) | {limits})"),
    )
