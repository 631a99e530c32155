"""C sources of the helper functions the generated code calls (codegen.cexpr names them):
integer division and modulo as Python's, saturating casts, NaN-propagating Min/Max, index
folds of dsl.borders, bit blends; the pixel helpers are in codegen.cpixel."""

from __future__ import annotations

from ..dsl import libm
from .cpixel import pixel_helper_source
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


def helper_source(op: str, c_type: str) -> str:
    """C source of one helper function."""
    s = SUFFIX[c_type]
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
    head = f"{HELPER} {c} {PREFIX}{op}_{SUFFIX[c]}({c} a, {c} b)"
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
    head = f"{HELPER} {c} {PREFIX}{op}_{SUFFIX[c]}({c} a, {c} b)"
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


def _cast_source(src_suffix: str, c: str, signless=False) -> str:
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
    return (
        f"{HELPER} {c} {PREFIX}{'castz' if signless else 'cast'}_{src_suffix}_{SUFFIX[c]}"
        f"({src} v) {{ "
        f"{u} hi = ({u})0 - ({u})(v >= {high}), lo = ({u})0 - ({u})(v {cmp_low} {low}); "
        f"{raw} out = ({raw})0 - ({raw})((v >= {high}) | (v {cmp_low} {low}) | (v != v)), x; "
        f"__builtin_memcpy(&x, &v, sizeof x); x &= ~out; {src} w; "
        f"__builtin_memcpy(&w, &x, sizeof w); {u} r = ({u})({c}){value}; "
        f"return ({c})((r & ~(hi | lo)) | (({u}){max_value} & hi) | (({u}){low_value} & lo)); }}"
    )
