"""Semantics of types: saturating float -> integer casts, integer wrap-around, and NumPy's
type promotion (and the cast to the Function's own type)."""

import math

import numpy as np
import pytest
from helpers import (
    FLOAT_TYPES,
    IGNORE,
    INT_TYPES,
    box,
    grid,
    interesting_ints,
    saturate,
    wrap,
)
from oracle import assert_same, run_both

from polyimage import (
    Abs,
    Cast,
    Char,
    Double,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Long,
    Parameter,
    Select,
    Short,
    UChar,
    UInt,
    ULong,
    Variable,
)

# -- saturating float -> integer casts -------------------------------------------------------------

CAST_VALUES = [
    math.nan,
    math.inf,
    -math.inf,
    0.0,
    -0.0,
    0.7,
    -0.7,
    0.999,
    -0.999,
    1.5,
    -1.5,
    126.9,
    127.0,
    127.5,
    128.0,
    -127.9,
    -128.0,
    -128.7,
    -129.0,
    254.5,
    255.0,
    255.9,
    256.0,
    -1.0,
    -1.0001,
    32767.0,
    32767.9,
    32768.0,
    -32768.0,
    -32768.5,
    -32769.0,
    65535.0,
    65535.5,
    65536.0,
    2.0**24 + 2,
    2.0**31 - 128,
    2.0**31 - 0.5,
    2.0**31,
    -(2.0**31),
    -(2.0**31) - 0.5,
    -(2.0**31) - 1,
    -(2.0**31) - 256,
    2.0**32 - 1,
    2.0**32,
    2.0**32 + 512,
    2.0**53 + 2,
    2.0**63 - 1024,
    2.0**63,
    -(2.0**63),
    -(2.0**63) - 2048,
    2.0**64 - 2048,
    2.0**64,
    2.0**65,
    1e30,
    -1e30,
    3.4e38,
    -3.4e38,
    1e300,
    -1e300,
    5e-324,
    -5e-324,
    1e-30,
    -1e-30,
]


@pytest.mark.parametrize("dst", INT_TYPES, ids=str)
@pytest.mark.parametrize("src", FLOAT_TYPES, ids=str)
def test_saturating_cast_float_to_int(src, dst):
    N, x = Parameter(Int, "N"), Variable(Int, "x")
    img = Image(src, "img", [N])
    explicit = Function(([x], [Interval(Int, 0, N - 1)]), dst, "explicit")
    explicit.defn = [Cast(dst, img(x))]
    implicit = Function(([x], [Interval(Int, 0, N - 1)]), dst, "implicit")
    implicit.defn = [img(x) * 1]  # the Function's type casts the value
    with np.errstate(**IGNORE):
        values = np.array(CAST_VALUES, src.dtype)
    ref = saturate(values, dst.dtype)
    # spot-check the hand-written reference on the boundaries of int8
    if dst is Char:
        probe = saturate(np.array([127.0, 128.0, -128.0, -129.0, -0.7, math.nan]), np.int8)
        assert probe.tolist() == [127, 127, -128, -128, 0, 0]
    run_both([explicit, implicit], reference=(ref, ref), img=values)


@pytest.mark.parametrize("dst", INT_TYPES, ids=str)
@pytest.mark.parametrize("src", FLOAT_TYPES, ids=str)
def test_a_float_through_an_integer_has_no_negative_zero(src, dst):
    """An integer zero has no sign: -0.7 through any integer type back to float is +0.0, and
    dividing by it gives +inf (gcc folds the pair into trunc(v), which keeps -0.0)."""
    N, x = Parameter(Int, "N"), Variable(Int, "x")
    img = Image(src, "img", [N])
    back = Function(([x], [Interval(Int, 0, N - 1)]), src, "back")
    back.defn = [Cast(src, Cast(dst, img(x)))]
    inverse = Function(([x], [Interval(Int, 0, N - 1)]), src, "inverse")
    inverse.defn = [Cast(src, 1.0) / Cast(dst, img(x))]
    with np.errstate(**IGNORE):
        values = np.array(CAST_VALUES, src.dtype)
        small = np.abs(values) < 1
        zero_back, zero_inverse = run_both([back, inverse], img=values)
    assert (zero_back[small] == 0).all() and not np.signbit(zero_back[small]).any()
    assert (zero_inverse[small] == np.inf).all()


# -- integer wrap-around ---------------------------------------------------------------------------


@pytest.mark.parametrize("typ", INT_TYPES, ids=str)
def test_integer_wraparound(typ):
    N, x = Parameter(Int, "N"), Variable(Int, "x")
    a_img, b_img = Image(typ, "a", [N]), Image(typ, "b", [N])
    outs = []
    exprs = [
        ("add", a_img(x) + b_img(x)),
        ("sub", a_img(x) - b_img(x)),
        ("mul", a_img(x) * b_img(x)),
        ("neg", -a_img(x)),
        ("absval", Abs(a_img(x))),
        ("sq_plus", a_img(x) * a_img(x) + 1),
    ]
    for name, e in exprs:
        assert e.typ is typ
        f = Function(([x], [Interval(Int, 0, N - 1)]), typ, name)
        f.defn = [e]
        outs.append(f)
    # wrapped intermediates must stay wrapped when they are compared or widened, not only
    # when they are stored
    flags = Function(([x], [Interval(Int, 0, N - 1)]), Int, "flags")
    flags.defn = [
        Select(a_img(x) + b_img(x) < a_img(x), 1, 0)
        + Select(
            a_img(x) * b_img(x) == Cast(typ, Cast(Double, a_img(x)) * Cast(Double, b_img(x))), 2, 0
        )
        + Select(-a_img(x) > b_img(x), 4, 0)
    ]
    wide = Function(([x], [Interval(Int, 0, N - 1)]), Double, "wide")
    wide.defn = [Cast(Double, a_img(x) - b_img(x)) + Cast(Double, -b_img(x))]
    outs += [flags, wide]
    vals = interesting_ints(typ.dtype)
    pairs = [(p, q) for p in vals for q in vals]
    a = np.array([p for p, _ in pairs], typ.dtype)
    b = np.array([q for _, q in pairs], typ.dtype)
    refs = tuple(
        np.array(col, typ.dtype)
        for col in zip(
            *[
                (
                    wrap(p + q, typ.dtype),
                    wrap(p - q, typ.dtype),
                    wrap(p * q, typ.dtype),
                    wrap(-p, typ.dtype),
                    wrap(abs(p), typ.dtype),
                    wrap(p * p + 1, typ.dtype),
                )
                for p, q in pairs
            ]
        )
    )
    add, sub, mul, neg = (r.astype(object) for r in refs[:4])
    with np.errstate(**IGNORE):
        exact = saturate(a.astype(np.float64) * b.astype(np.float64), typ.dtype).astype(object)
    flag_ref = np.array(
        [
            int(s < int(p)) + 2 * int(m == e) + 4 * int(n > int(q))
            for p, q, s, m, n, e in zip(a, b, add, mul, neg, exact)
        ],
        np.int32,
    )
    wide_ref = sub.astype(np.float64) + np.array([wrap(-int(q), typ.dtype) for q in b], np.float64)
    refs = refs + (flag_ref, wide_ref)
    with np.errstate(**IGNORE):  # numpy agrees with the Python-integer reference
        assert_same(a + b, refs[0])
        assert_same(a * b, refs[2])
        assert_same(np.abs(a), refs[4])
    if typ.is_signed:
        m = int(np.iinfo(typ.dtype).min)
        assert refs[3][a.tolist().index(m)] == m and refs[4][a.tolist().index(m)] == m
    run_both(outs, reference=refs, a=a, b=b)


def test_wraparound_named_cases():
    """Classic overflows, each with its expected value written out."""
    N, x = Parameter(Int, "N"), Variable(Int, "x")
    u8 = Image(UChar, "u8", [N])
    i8 = Image(Char, "i8", [N])
    i32 = Image(Int, "i32", [N])
    dom = [Interval(Int, 0, N - 1)]
    specs = [
        ("u8sum", UChar, u8(x) + u8(x)),
        ("i8mul", Char, i8(x) * i8(x)),
        ("i32sum", Int, i32(x) + 2147483647),
        ("i32neg", Int, -i32(x)),
        ("i32abs", Int, Abs(i32(x))),
        ("i32mul", Int, i32(x) * 65536),
    ]
    outs = []
    for name, typ, e in specs:
        f = Function(([x], dom), typ, name)
        f.defn = [e]
        outs.append(f)
    u8v = np.array([200, 255, 128, 0], np.uint8)
    i8v = np.array([100, -128, 12, 11], np.int8)
    i32v = np.array([1, -2147483648, 2147483647, 65537], np.int32)
    refs = (
        np.array([144, 254, 0, 0], np.uint8),
        np.array([16, 0, -112, 121], np.int8),
        np.array([-2147483648, -1, -2, -2147418112], np.int32),
        np.array([-1, -2147483648, -2147483647, -65537], np.int32),
        np.array([1, -2147483648, 2147483647, 65537], np.int32),
        np.array([65536, 0, -65536, 65536], np.int32),
    )
    run_both(outs, reference=refs, u8=u8v, i8=i8v, i32=i32v)


# -- type promotion --------------------------------------------------------------------------------


def test_type_promotion():
    R, C, x, y = grid()
    f = Image(Float, "f", [R, C])
    i = Image(Int, "i", [R, C])
    u8 = Image(UChar, "u8", [R, C])
    s = Image(Short, "s", [R, C])
    ui = Image(UInt, "ui", [R, C])
    c8 = Image(Char, "c8", [R, C])
    l64 = Image(Long, "l64", [R, C])
    ul = Image(ULong, "ul", [R, C])
    exprs = [
        ("f_half", f(x, y) * 0.5, Float),
        ("i_half", i(x, y) * 0.5, Double),
        ("u8_inc", u8(x, y) + 1, UChar),
        ("s_plus_i", s(x, y) + i(x, y), Int),
        ("ui_plus_i", ui(x, y) + i(x, y), Long),
        ("i_plus_f", i(x, y) + f(x, y), Double),
        ("i_div", i(x, y) / 2, Int),
        ("f_div", f(x, y) / 2, Float),
        ("c_plus_u8", c8(x, y) + u8(x, y), Short),
        ("l_plus_ul", l64(x, y) + ul(x, y), Double),
        ("s_half", s(x, y) * 0.5, Double),
        ("u8_times_f", u8(x, y) * f(x, y), Float),
    ]
    outs = []
    for name, e, typ in exprs:
        assert e.typ is typ, f"{name}: {e.typ} != {typ}"
        out = Function(([x, y], box(R, C)), e.typ, name)
        out.defn = [e]
        outs.append(out)
    # the Function's own type casts the final value
    to_u8 = Function(([x, y], box(R, C)), UChar, "to_u8")
    to_u8.defn = [i(x, y)]  # Int -> UChar wraps
    to_short = Function(([x, y], box(R, C)), Short, "to_short")
    to_short.defn = [f(x, y) * 1000]  # Float -> Short saturates
    to_int = Function(([x, y], box(R, C)), Int, "to_int")
    to_int.defn = [ui(x, y) + i(x, y)]  # Long -> Int wraps
    to_float = Function(([x, y], box(R, C)), Float, "to_float")
    to_float.defn = [i(x, y) + 0]  # Int -> Float rounds
    outs += [to_u8, to_short, to_int, to_float]

    shape = (3, 5)
    fv = np.array([0.1, -2.5, 1e6, np.nan, -1e9] * 3, np.float32).reshape(shape)
    iv = np.array([300, -1, 2**24 + 1, -(2**31), 2**31 - 1] * 3, np.int32).reshape(shape)
    u8v = np.array([255, 0, 1, 254, 128] * 3, np.uint8).reshape(shape)
    sv = np.array([-32768, 32767, 5, -5, 0] * 3, np.int16).reshape(shape)
    uiv = np.array([2**32 - 1, 0, 7, 2**31, 1] * 3, np.uint32).reshape(shape)
    c8v = np.array([-128, 127, -1, 0, 5] * 3, np.int8).reshape(shape)
    l64v = np.array([-(2**63), 2**63 - 1, -1, 0, 3] * 3, np.int64).reshape(shape)
    ulv = np.array([2**64 - 1, 0, 1, 2**63, 7] * 3, np.uint64).reshape(shape)
    refs = [
        fv * 0.5,
        iv * 0.5,
        u8v + 1,
        sv + iv,
        uiv + iv,
        iv + fv,
        iv // 2,
        fv / 2,
        c8v + u8v,
        l64v + ulv,
        sv * 0.5,
        u8v * fv,
    ]
    for (name, _, typ), r in zip(exprs, refs):
        assert r.dtype == typ.dtype, f"numpy disagrees on {name}: {r.dtype}"
    assert (refs[2] == np.array([0, 1, 2, 255, 129] * 3).reshape(shape)).all()
    refs += [
        iv.astype(np.uint8),
        saturate((fv * np.float32(1000)).ravel(), np.int16).reshape(shape),
        (uiv.astype(np.int64) + iv).astype(np.int32),
        iv.astype(np.float32),
    ]
    assert refs[-4].ravel()[:2].tolist() == [44, 255]
    got = run_both(
        outs, reference=tuple(refs), f=fv, i=iv, u8=u8v, s=sv, ui=uiv, c8=c8v, l64=l64v, ul=ulv
    )
    for g, o in zip(got, outs):
        assert g.dtype == o.typ.dtype
