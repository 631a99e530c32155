"""C helpers of the Half type's conversions and of the integer image operations (saturating
add and subtract, absolute difference, halving adds), as the interpreter computes them.

Every helper is branch-free (selects of values computed on both sides) so that gcc vectorizes
the loops that call it; none needs `_Float16`, so Half works with every C compiler: a Half
value is its IEEE binary16 bits in a `uint16_t`, converted to float where it is computed with.
The conversions round to nearest even and treat NaN as NumPy does (its payload's top bits kept,
a payload that would vanish becomes 1, the sign kept).
"""

from __future__ import annotations

from ..dsl.expr import INTEGER_OPS
from .ctext import helper_function
from .ctree import Assign, Declare, Return


def pixel_helper(op: str, c_type: str, name: str):
    """The C function (ctree.Function) of helper `op` on `c_type` named `name`, or None when
    `op` is none of this module's."""
    if op == "fromhalf":
        return _from_half(name, c_type)
    if op == "tohalf":
        return _to_half(name, c_type)
    if op in INTEGER_OPS:
        return _INT_HELPERS[op](name, c_type)
    return None


def _bits_union(c: str, u: str, *names) -> Declare:
    """`union { c f; u u; } names...;`: a value and its bits."""
    return Declare(f"union {{ {c} f; {u} u; }}", tuple((n, None) for n in names))


# per C type: its bits' type, the shift from a half's mantissa, the exponent's rebias for
# infinity and NaN and for finite numbers, 2^-24, and the shift from a half's sign
_FROM_HALF = {
    "float": ("uint32_t", 13, "0x70000000u", "0x38000000u", "0x1p-24f", 16),
    "double": (
        "uint64_t",
        42,
        "UINT64_C(0x7e00000000000000)",
        "UINT64_C(0x3f00000000000000)",
        "0x1p-24",
        48,
    ),
}


def _from_half(name: str, c: str):
    """Exact, straight from the bits (as NumPy, keeping a NaN's payload, even to double):
    normal numbers, infinities and NaN by rebiasing the exponent, subnormals as their integer
    multiple of 2^-24 (a product, exact)."""
    u, shift, special, finite, unit, sign = _FROM_HALF[c]
    return helper_function(
        c,
        name,
        ("uint16_t h",),
        _bits_union(c, u, "sub", "out"),
        Declare("uint32_t", (("em", "h & 0x7fffu"),)),
        Declare(u, (("normal", f"(({u})em << {shift}) + (em >= 0x7c00u ? {special} : {finite})"),)),
        Assign("sub.f", f"({c})(int32_t)em * {unit}"),
        Assign("out.u", f"(em < 0x400u ? sub.u : normal) | (({u})(h & 0x8000u) << {sign})"),
        Return("out.f"),
    )


# per C type: its bits' type, the shift to a half's mantissa, the mantissa mask, then the
# bits of infinity, of 65520 (rounds to a half's infinity), of 2^-14 (the smallest normal
# half) and of 2^-15 (the exponent's rebias), half an ulp less one, the sign's shift, and a
# power of two whose ulp is 2^-24 with its bits
_HALF_CONSTANTS = {
    "float": (
        "uint32_t",
        13,
        "0x7fffffu",
        "0x7f800000u",
        "0x477ff000u",
        "0x38800000u",
        "0x38000000u",
        "0xfffu",
        16,
        "0.5f",
        "0x3f000000u",
    ),
    "double": (
        "uint64_t",
        42,
        "UINT64_C(0xfffffffffffff)",
        "UINT64_C(0x7ff0000000000000)",
        "UINT64_C(0x40effe0000000000)",
        "UINT64_C(0x3f10000000000000)",
        "UINT64_C(0x3f00000000000000)",
        "UINT64_C(0x1ffffffffff)",
        48,
        "0x1p28",
        "UINT64_C(0x41b0000000000000)",
    ),
}


def _to_half(name: str, c: str):
    """Round to nearest even, in the integer bits for normal results (add half an ulp less one,
    plus the kept mantissa's last bit, then shift), in floating point for subnormal ones (adding
    a power of two whose ulp is 2^-24 rounds the value to the subnormals' grid)."""
    u, shift, sig, top, inf, low, rebias, half_ulp, sign, magic, magic_bits = _HALF_CONSTANTS[c]
    normal = f"(uint32_t)((a - {rebias} + {half_ulp} + ((a >> {shift}) & 1u)) >> {shift})"
    rounded = (
        f"a > {top} ? nan + (nan == 0x7c00u) : (a >= {inf} ? 0x7c00u : "
        f"(a >= {low} ? normal : (uint32_t)(sub.u - {magic_bits})))"
    )
    return helper_function(
        "uint16_t",
        name,
        (f"{c} v",),
        _bits_union(c, u, "x", "sub"),
        Assign("x.f", "v"),
        Declare(u, (("a", f"x.u & ~((({u})1) << {sign + 15})"),)),
        Assign("sub.u", "a"),
        Assign("sub.f", f"sub.f + {magic}"),
        Declare("uint32_t", (("nan", f"0x7c00u | (uint32_t)((a & {sig}) >> {shift})"),)),
        Declare("uint32_t", (("normal", normal),)),
        Declare("uint32_t", (("h", rounded),)),
        Return(f"(uint16_t)(h | (uint32_t)((x.u >> {sign}) & 0x8000u))"),
    )


def _unsigned(c: str) -> str:
    return c if c.startswith("u") else "u" + c


def _limits(c: str) -> tuple:
    bits = "".join(ch for ch in c if ch.isdigit())
    if c.startswith("u"):
        return "0", f"UINT{bits}_MAX"
    return f"INT{bits}_MIN", f"INT{bits}_MAX"


def _saturating(op: str):
    """Unsigned: the wrapped sum is below an operand exactly when it overflowed (a difference
    saturates at 0). Signed: the wrapped result overflowed when its sign differs from what the
    operands' signs imply; it then saturates toward the first operand's sign."""

    def helper(name: str, c: str):
        u, (low, high) = _unsigned(c), _limits(c)
        body: tuple
        if c.startswith("u"):
            if op == "add":
                body = (Declare(c, (("s", f"({c})(a + b)"),)), Return(f"s < a ? {high} : s"))
            else:
                body = (Return(f"a > b ? ({c})(a - b) : 0"),)
        else:
            sign = "(a ^ s) & (b ^ s)" if op == "add" else "(a ^ b) & (a ^ s)"
            wrapped = f"({c})(({u})a {'+' if op == 'add' else '-'} ({u})b)"
            body = (
                Declare(c, (("s", wrapped),)),
                Return(f"({sign}) < 0 ? ({c})(a < 0 ? {low} : {high}) : s"),
            )
        return helper_function(c, name, (f"{c} a", f"{c} b"), *body)

    return helper


def _absd(name: str, c: str):
    """The larger less the smaller, in the unsigned type of the width (never overflows)."""
    u = _unsigned(c)
    difference = f"a > b ? ({u})(({u})a - ({u})b) : ({u})(({u})b - ({u})a)"
    return helper_function(u, name, (f"{c} a", f"{c} b"), Return(difference))


def _halving(rounding: bool):
    """(a + b) >> 1 and (a + b + 1) >> 1 without a wider type: a + b is 2(a & b) + (a ^ b)."""

    def helper(name: str, c: str):
        value = "(a | b) - ((a ^ b) >> 1)" if rounding else "(a & b) + ((a ^ b) >> 1)"
        return helper_function(c, name, (f"{c} a", f"{c} b"), Return(f"({c})({value})"))

    return helper


_INT_HELPERS = {
    "saturating_add": _saturating("add"),
    "saturating_sub": _saturating("sub"),
    "absd": _absd,
    "halving_add": _halving(False),
    "rounding_halving_add": _halving(True),
}
