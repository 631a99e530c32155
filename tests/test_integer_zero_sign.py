"""An integer zero has no sign (docs/dsl.md): a negative float in (-1, 0) truncated to an
integer, carried through any integer operation and converted back to a float (Float, Half or
Double, also by dividing a float by it) is +0.0 compiled as interpreted, whatever the source's
float type (gcc folds `(float)(int)v` into `truncf(v)`, which keeps -0.0, once the helpers
between them are inlined and simplified)."""

import numpy as np
import pytest
from helpers import box, grid

import polyimage
from polyimage import (
    Abs,
    Cast,
    Char,
    Double,
    Float,
    Floor,
    Function,
    Half,
    Image,
    Int,
    Interval,
    Long,
    Max,
    Min,
    Op,
    Parameter,
    Reduce,
    Reduction,
    Schedule,
    Select,
    Short,
    UChar,
    Variable,
    absd,
    halving_add,
    rounding_halving_add,
    saturating_add,
    saturating_cast,
    saturating_sub,
    widening_mul,
)

SOURCES = (Float, Half, Double)
FLOATS = (Float, Half, Double)


def _stored(s, dom):
    """An integer stage holding the truncated value, read back (inlined or stored)."""
    g = Function(dom, Int, f"g_{s.func.name}")
    g.defn = [Cast(Int, s)]
    return g(*dom[0])


# each builds, from a read `s` of a float in (-1, 0), an integer expression whose value is 0
PATHS = {
    "cast": lambda s, dom: Cast(Int, s),
    "cast_to_uchar": lambda s, dom: Cast(UChar, s),
    "cast_to_long": lambda s, dom: Cast(Long, s),
    "integer_casts": lambda s, dom: Cast(Short, Cast(Int, s)),
    "saturating_add": lambda s, dom: saturating_add(Cast(Short, s), 0),
    "saturating_sub": lambda s, dom: saturating_sub(Cast(Char, s), 0),
    "halving_add": lambda s, dom: halving_add(Cast(Int, s), Cast(Int, s)),
    "rounding_halving_add": lambda s, dom: rounding_halving_add(Cast(Int, s), Cast(Int, -s)),
    "absd": lambda s, dom: absd(Cast(Char, s), 0),
    "widening_mul": lambda s, dom: widening_mul(Cast(Char, s), 1),
    "select": lambda s, dom: Select(s < 5.0, Cast(Int, s), 3),
    "min": lambda s, dom: Min(Cast(Int, s), 0),
    "max": lambda s, dom: Max(Cast(Int, s), 0),
    "saturating_cast": lambda s, dom: saturating_cast(Short, Cast(Int, s)),
    "identities": lambda s, dom: (Cast(Int, s) * 1 + 0) // 1,
    "abs_and_floor": lambda s, dom: Floor(Abs(Cast(Int, s))),
    "constant": lambda s, dom: Cast(Int, s.func.typ.dtype.type(-0.3)) + Cast(Int, s) * 0,
    "integer_stage": _stored,
}


def _pipeline(paths):
    """Per path and source type, the integer zero of the path converted to each float type,
    and a float (-97) divided by it, over one dimension."""
    n, x = Parameter(Int, "n"), Variable(Int, "x")
    dom = ([x], [Interval(Int, 0, n - 1)])
    numerator = Image(Float, "num", [n])
    sources = {source: Image(source, f"src_{source}", [n]) for source in SOURCES}
    outputs = []
    for path in paths:
        for source, img in sources.items():
            zero = PATHS[path](img(x), dom)
            assert zero.typ.is_int
            values = [(f"div_{source}", numerator(x) / zero)]
            values += [(f"cast_{source}_{target}", Cast(target, zero)) for target in FLOATS]
            for name, value in values:
                f = Function(dom, value.typ, f"{path}_{name}")
                f.defn = [value]
                outputs.append(f)
    return outputs


def _arguments(shape):
    """Sources of negative values in (-1, 0) (and -0.0), numerators of -97."""
    arguments = {"num": np.full(shape, -97.0, np.float32)}
    for source in SOURCES:
        values = np.resize(np.array([-0.3, -0.7, -0.0, -0.99], source.dtype), shape)
        arguments[f"src_{source}"] = np.ascontiguousarray(values)
    return arguments


def _bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def assert_bit_for_bit(outputs, compiled, interpreted, what):
    """Compiled equals interpreted bit for bit; the interpreter's zeros are +0, its quotients
    -inf."""
    for f, got, want in zip(outputs, compiled, interpreted):
        if "_div_" in f.name:
            assert (want == -np.inf).all(), f.name
        else:
            assert (want == 0).all() and not np.signbit(want).any(), f.name
        np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=f"{what}: {f.name}")


def test_an_integer_zero_from_a_negative_float_has_no_sign_naively():
    """Every path at once, a loop nest a stage (one build)."""
    outputs = _pipeline([path for path in PATHS if path != "integer_stage"])
    arguments = _arguments((37,))
    naive = polyimage.compile(outputs, schedule="naive")
    assert_bit_for_bit(outputs, naive(**arguments), interpreted(outputs, arguments), "naive")


@pytest.mark.parametrize("path", [path for path in PATHS if path != "integer_stage"])
def test_an_integer_zero_from_a_negative_float_has_no_sign_tiled(path):
    """Each path in one tiled group (a pipeline a path: gcc takes far longer over one tiled
    function of every path than over one per path)."""
    outputs = _pipeline([path])
    arguments = _arguments((37,))
    tiled = tiled_whole(outputs, inline=True)
    assert_bit_for_bit(outputs, tiled(**arguments), interpreted(outputs, arguments), "tiled")


def test_an_integer_zero_stored_and_read_back_has_no_sign():
    """The integer stage of `integer_stage` kept in memory (not inlined), alone or tiled with
    its readers."""
    check_naive_and_tiled(_pipeline(["integer_stage"]), inline=False)


def interpreted(outputs, arguments):
    return polyimage.interpret(outputs, **arguments)


def tiled_whole(outputs, inline):
    """The pipeline with every stage in one group tiled by 8."""
    stages = polyimage.compile(outputs, schedule="naive", inline=inline, build=False)
    names = ", ".join(s.name for s in stages.stage_graph.computed)
    return polyimage.compile(
        outputs, schedule=Schedule.parse(f"group 0: {names} [8]"), inline=inline
    )


def check_naive_and_tiled(outputs, inline):
    arguments = _arguments((37,))
    want = interpreted(outputs, arguments)
    naive = polyimage.compile(outputs, schedule="naive", inline=inline)
    tiled = tiled_whole(outputs, inline)
    assert_bit_for_bit(outputs, naive(**arguments), want, "naive")
    assert_bit_for_bit(outputs, tiled(**arguments), want, str(tiled.schedule))


@pytest.mark.parametrize("source", SOURCES, ids=str)
def test_an_integer_zero_has_no_sign_in_jammed_channels(source):
    """Channels computed together (codegen.jam) divide by a shared integer zero."""
    R, C, x, y = grid()
    c = Variable(Int, "c")
    numerator = Image(Float, "num", [3, R, C])
    img = Image(source, f"src_{source}", [R, C])
    out = Function(([c, x, y], [Interval(Int, 0, 2), *box(R, C)]), Float, f"num_div_{source}")
    zero = saturating_add(Cast(Short, img(x, y)), 0)
    out.defn = [numerator(c, x, y) / zero + Cast(Float, Cast(Int, img(x, y)))]
    pipe = polyimage.compile([out], schedule=Schedule.parse(f"group 0: {out.name} [3x4x16]"))
    assert "PIM_IN_ORDER void" in pipe.c_source  # the jammed copy
    arguments = {"num": np.full((3, 5, 37), -97.0, np.float32)}
    arguments[img.name] = _arguments((5, 37))[img.name]
    compiled, interpreted = pipe(**arguments), polyimage.interpret([out], **arguments)
    assert_bit_for_bit([out], [compiled], [interpreted], "jammed")


def test_an_integer_zero_has_no_sign_in_a_reduction():
    """A Max reduction (its default -inf) of integer zeros converted to float is +0."""
    R, C, x, y = grid()
    r = Variable(Int, "r")
    outputs = []
    for source in SOURCES:
        img = Image(source, f"src_{source}", [R, C])
        cast = Reduction(
            ([x], [Interval(Int, 0, R - 1)]),
            ([r], [Interval(Int, 0, C - 1)]),
            Float,
            f"cast_{source}",
        )
        cast.defn = [Reduce(cast(x), Cast(Float, halving_add(Cast(Int, img(x, r)), 0)), Op.Max)]
        cast.default = -np.inf
        outputs.append(cast)
    arguments = _arguments((3, 37))
    arguments.pop("num")
    compiled = polyimage.compile(outputs, schedule="naive")(**arguments)
    assert_bit_for_bit(outputs, compiled, polyimage.interpret(outputs, **arguments), "reduction")
