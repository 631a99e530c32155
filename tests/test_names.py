"""User names against the generated C: every identifier the emitter writes (loop counters,
helpers, library functions, keywords, macros) used as the name of a stage, a variable and a
parameter still compiles and gives the interpreter's result; names the call itself uses are
rejected at compile time."""

import math
import re

import numpy as np
import pytest
from oracle import run_both

import polyimage
from polyimage import (
    Abs,
    Case,
    Double,
    Float,
    Floor,
    Function,
    Image,
    Int,
    Interval,
    Min,
    Op,
    Parameter,
    Reduce,
    Reduction,
    Select,
    Sqrt,
    UChar,
    Variable,
)
from polyimage.codegen.names import NameRegistry
from polyimage.graph.dag import CALL_KEYWORDS

WORD = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
STAGES_PER_PIPELINE = 8
EXTRA = [
    "p",
    "tile",
    "rg",
    "v",
    "i",
    "j",
    "t",
    "int",
    "restrict",
    "main",
    "free",
    "errno",
    "stdout",
    "stderr",
    "EOF",
    "NULL",
    "NAN",
    "INFINITY",
    "M_PI",
    "PIM_NOINLINE",
    "pim_x",
    "pim_w_x",
    "size_t",
    "uint8_t",
    "int8_t",
    "_x",
    "__y",
    "Py_None",
    "pipeline_chain",
    "omp_get_thread_limit",
    "assert",
    "linux",
    "sqrtf",
]


def _template(names):
    """A chain of stencils over rows `r` and per-stage columns, with Cases on the column, a
    Select, Min and Sqrt, weighted by per-stage Float parameters; the names fill every role."""
    img_name, rows_name, cols_name, row_var = names[:4]
    rest = names[4:]
    R, C = Parameter(Int, rows_name), Parameter(Int, cols_name)
    r = Variable(Int, row_var)
    img = Image(Float, img_name, [R, C])
    prev = img
    for k in range(len(rest) // 3):
        stage_name, col_name, weight_name = rest[3 * k : 3 * k + 3]
        c, w = Variable(Int, col_name), Parameter(Float, weight_name)
        f = Function(
            ([r, c], [Interval(Int, k + 1, R - 2 - k), Interval(Int, k + 1, C - 2 - k)]),
            Float,
            stage_name,
        )
        p = prev
        blur = (p(r - 1, c) + p(r + 1, c) + p(r, c - 1) + p(r, c + 1)) * w
        f.defn = [
            Case(c < k + 4, Min(blur, p(r, c))),
            Select(r > k + 2, Sqrt(blur * blur + 1), blur),
        ]
        prev = f
    return prev


def _generated_identifiers() -> list:
    """Every word in the C of a pipeline under naive, auto and a two-level tiled schedule,
    and of a histogram Reduction."""
    chain = _template([f"n{k}" for k in range(4 + 3 * 3)])
    words = set()
    for schedule in ("naive", "auto", "group 0: n4, n7, n10 [8x16 then 4x8]"):
        pipe = polyimage.compile([chain], schedule=schedule, build=False)  # the C, not built
        words |= set(WORD.findall(pipe.c_source))
    hist = polyimage.compile([_histogram("hist", "img", "N", "b", "k")], build=False)
    words |= set(WORD.findall(hist.c_source))
    return sorted(words - set(CALL_KEYWORDS))


def _histogram(name, img_name, size_name, bin_var, red_var):
    N = Parameter(Int, size_name)
    b, k = Variable(Int, bin_var), Variable(Int, red_var)
    img = Image(UChar, img_name, [N])
    hist = Reduction(([b], [Interval(Int, 0, 15)]), ([k], [Interval(Int, 0, N - 1)]), Int, name)
    hist.defn = [Reduce(hist(img(k) // 16), 1, Op.Sum)]
    return hist


def _check_chain(names, schedule, rng):
    out = _template(names)
    pipe = polyimage.compile([out], schedule=schedule, estimates={names[1]: 40, names[2]: 40})
    args = {names[0]: rng.random((31, 37)).astype(np.float32)}
    for k in range(4, len(names), 3):
        args[names[k + 2]] = 0.25 + 0.01 * k
    np.testing.assert_allclose(pipe(**args), polyimage.interpret([out], **args), rtol=1e-5)


@pytest.fixture(scope="module")
def identifiers():
    words = _generated_identifiers()
    assert {"pim_nthreads", "omp_get_max_threads", "int64_t"} <= set(words)
    return sorted(set(words) | set(EXTRA))


@pytest.mark.parametrize("rotation", [0, 1])
def test_every_generated_identifier_as_a_user_name(identifiers, rotation):
    """Two rotations move each name through two of the roles (stage, variable, parameter,
    image)."""
    rng = np.random.default_rng(rotation)
    per = 4 + 3 * STAGES_PER_PIPELINE
    names = identifiers[rotation:] + identifiers[:rotation]
    for start in range(0, len(names), per):
        chunk = names[start : start + per]
        if len(chunk) < per:
            chunk += [f"pad{k}" for k in range(per - len(chunk))]
        schedule = "naive" if (start // per + rotation) % 2 else "auto"
        _check_chain(chunk, schedule, rng)


def test_reduction_with_generated_names():
    rng = np.random.default_rng(7)
    data = rng.integers(0, 256, 50).astype(np.uint8)
    for names in (
        ("p", "tile", "t", "i", "j"),
        ("int", "errno", "EOF", "free", "main"),
        ("pim_nthreads", "pim_fail", "NULL", "pim_s", "pim_case"),
    ):
        hist = _histogram(*names)
        got = polyimage.compile([hist])(**{names[1]: data})
        np.testing.assert_array_equal(got, polyimage.interpret([hist], **{names[1]: data}))
        assert got.sum() == 50


def test_parameter_named_p_is_not_shadowed():
    """A Parameter named `p` once met `const int64_t p` in the code that cuts loops at Case
    boundaries, and the pipeline returned zeros."""
    N, p = Parameter(Int, "N"), Parameter(Float, "p")
    x = Variable(Int, "x")
    a = Image(Float, "a", [N])
    f = Function(([x], [Interval(Int, 0, N - 1)]), Float, "f")
    f.defn = [Case(x < 3, a(x) * p), a(x) + p]
    g = Function(([x], [Interval(Int, 0, N - 1)]), Float, "g")
    g.defn = [f(x) * 2]
    data = np.arange(10, dtype=np.float32)
    for schedule in ("naive", "auto"):
        got = polyimage.compile([g], schedule=schedule, inline=False)(a=data, p=5.0)
        np.testing.assert_array_equal(got, polyimage.interpret([g], a=data, p=5.0))
        assert got[0] == 0.0 and got[5] == 20.0


@pytest.mark.parametrize("name", ["fabs", "sqrt", "free", "int64_t", "INFINITY", "out_lb0"])
def test_stage_names_that_the_generated_c_also_uses(name):
    """Any identifier is a valid stage name; the C names must not collide with libm functions,
    stdint types, macros or the buffer bounds (<stage>_lb<d>) the generated code uses."""
    N, x = Parameter(Int, "N"), Variable(Int, "x")
    img = Image(Double, "img", [N])
    mid = Function(([x], [Interval(Int, 0, N - 1)]), Double, name)
    mid.defn = [Abs(img(x))]
    out = Function(([x], [Interval(Int, 0, N - 1)]), Double, "out")
    out.defn = [Select(mid(x) > 1, Sqrt(mid(x)) + Floor(mid(x)), mid(x) * math.inf)]
    a = np.array([-4.0, 0.5, 2.25])
    run_both(out, reference=np.array([6.0, math.inf, 3.5]), img=a)


@pytest.mark.parametrize("keyword", CALL_KEYWORDS)
@pytest.mark.parametrize("kind", ["Image", "Parameter"])
def test_call_keywords_are_rejected_at_compile_time(keyword, kind):
    N, x = Parameter(Int, "N"), Variable(Int, "x")
    if kind == "Image":
        a = Image(Float, keyword, [N])
        f = Function(([x], [Interval(Int, 0, N - 1)]), Float, "f")
        f.defn = [a(x)]
    else:
        a, w = Image(Float, "a", [N]), Parameter(Float, keyword)
        f = Function(([x], [Interval(Int, 0, N - 1)]), Float, "f")
        f.defn = [a(x) * w]
    with pytest.raises(polyimage.PipelineError, match=f"{kind} {keyword} .*rename it"):
        polyimage.compile([f])
    with pytest.raises(polyimage.PipelineError, match=f"{kind} {keyword}"):
        polyimage.interpret([f], N=3)


def test_registry_names_are_unique_and_safe():
    registry = NameRegistry()
    wanted = ["int", "int_", "pim_x", "vpim_x", "_x", "v_x", "EOF", "EOF_", "R", "café", "caf_"]
    given = [registry.name(object(), w) for w in wanted]
    assert len(set(given)) == len(given)
    assert given[:3] == ["int_", "int__1", "vpim_x"]
    assert given[8] == "R"  # single capitals (R, C) stay as written
    assert all(not g.startswith(("pim_", "_")) for g in given)
