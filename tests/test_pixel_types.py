"""Half images and stages, and Halide's integer image operations (saturating_cast,
saturating_add and _sub, absd, widening_mul, halving_add, rounding_halving_add): their type
rules, their values at every integer type's limits (compiled = interpreter = Python integers),
Half conversions bit for bit with NumPy's float16 (NaN, infinities, subnormals, overflow),
random sizes under naive and auto with 1 and 2 threads, float16 arrays in and out, exported,
loaded and on Dask, and gcc's vectorization of the helpers."""

import itertools
import json
import re
import warnings

import numpy as np
import pytest
from export_harness import build_harness, run_harness
from helpers import INT_TYPES, ROOT, box, grid, interesting_ints, needs_tool, saturate, signature
from oracle import assert_calls_match, assert_same
from pixel_cases import HALF_SPECIALS, pixel_pipeline

import polyimage
from polyimage import (
    Abs,
    ArgumentTypeError,
    Cast,
    Char,
    Double,
    Float,
    Function,
    Half,
    Image,
    Int,
    Interval,
    Long,
    Min,
    Parameter,
    Reduction,
    Select,
    Short,
    Sqrt,
    UChar,
    UInt,
    ULong,
    UShort,
    Variable,
    absd,
    halving_add,
    rounding_halving_add,
    saturating_add,
    saturating_cast,
    saturating_sub,
    widening_mul,
)
from polyimage.driver.record import graph_text
from polyimage.dsl import expr as E
from polyimage.dsl.types import type_of_dtype
from polyimage.graph import build_graph
from polyimage.tools.vectorization import vectorization

NUMBER_TYPES = INT_TYPES + [Float, Double, Half]
UNSIGNED = {Char: UChar, UChar: UChar, Short: UShort, UShort: UShort}
UNSIGNED.update({Int: UInt, UInt: UInt, Long: ULong, ULong: ULong})
WIDER = {Char: Short, UChar: UShort, Short: Int, UShort: UInt, Int: Long, UInt: ULong}
IGNORE = dict(all="ignore")


def _line(typ, *names):
    """1-D images of `typ` called `names` over [0, n - 1], the variable i and the domain."""
    n, i = Parameter(Int, "n"), Variable(Int, "i")
    return [Image(typ, name, [n]) for name in names], i, ([i], [Interval(Int, 0, n - 1)])


def _stage(dom, typ, name, value):
    f = Function(dom, typ, name)
    f.defn = [value]
    return f


def _bits(halves) -> np.ndarray:
    return np.asarray(halves, np.float16).view(np.uint16)


def assert_same_halves(actual, expected, what):
    """float16 arrays equal bit for bit, except that NaNs need only be NaNs (which operand's
    payload an arithmetic NaN carries is the hardware's choice)."""
    assert actual.dtype == expected.dtype == np.float16, what
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(actual), nan, err_msg=what)
    np.testing.assert_array_equal(_bits(actual)[~nan], _bits(expected)[~nan], err_msg=what)


# -- type rules ----------------------------------------------------------------------------------


def test_half_is_stored_as_half_and_computed_in_float():
    (h, n), i, _ = _line(Half, "h", "n")
    whole = Image(Int, "whole", [4])(i)
    assert type_of_dtype(np.float16) is Half and E.to_expr(np.float16(0.5)).typ is Half
    for e in (h(i) + h(i), h(i) * 0.5, 0.5 * h(i), h(i) + 1, -h(i), Sqrt(h(i)), Abs(h(i))):
        assert e.typ is Float, e
    assert Min(h(i), n(i)).typ is Float and Select(h(i) > 0, h(i), 0).typ is Float
    assert (h(i) + whole).typ is Double  # as Float + Int
    assert Cast(Half, h(i) * 2.0).typ is Half
    assert saturating_add(h(i), h(i)).typ is Float


def test_half_parameters_and_reductions_are_refused():
    with pytest.raises(TypeError, match="Parameter w cannot have type Half: use Float"):
        Parameter(Half, "w")
    i, r = Variable(Int, "i"), Variable(Int, "r")
    with pytest.raises(TypeError, match="cannot have type Half: accumulate in Float"):
        Reduction(([i], [Interval(Int, 0, 3)]), ([r], [Interval(Int, 0, 3)]), Half, "total")


@pytest.mark.parametrize("typ", INT_TYPES, ids=str)
def test_integer_operations_keep_or_widen_the_type(typ):
    (a, b), i, _ = _line(typ, "a", "b")
    for op in (saturating_add, saturating_sub, halving_add, rounding_halving_add):
        assert op(a(i), b(i)).typ is typ
        assert op(a(i), 1).typ is op(1, a(i)).typ is typ  # a weak literal takes the type
    assert absd(a(i), b(i)).typ is UNSIGNED[typ]
    if typ in WIDER:
        assert widening_mul(a(i), b(i)).typ is WIDER[typ]
    else:
        with pytest.raises(TypeError, match="no integer type of 128 bits"):
            widening_mul(a(i), b(i))
    with pytest.raises(TypeError, match=f"does not fit {typ}"):
        saturating_add(a(i), int(np.iinfo(typ.dtype).max) + 1)


def test_mixed_operands_take_the_common_type_of_plus():
    (u,), i, _ = _line(UChar, "u")
    (c,), _, _ = _line(Char, "c")
    assert saturating_add(u(i), c(i)).typ is (u(i) + c(i)).typ is Short
    assert absd(u(i), c(i)).typ is UShort
    assert widening_mul(u(i), c(i)).typ is Int


def test_on_floats_saturating_operations_are_plain_and_the_others_refused():
    (f, g), i, _ = _line(Float, "f", "g")
    assert signature(saturating_add(f(i), g(i))) == signature(f(i) + g(i))
    assert signature(saturating_sub(f(i), 0.5)) == signature(f(i) - 0.5)
    assert signature(absd(f(i), g(i))) == signature(Abs(f(i) - g(i)))
    assert absd(f(i), g(i)).typ is Float
    for op in (halving_add, rounding_halving_add, widening_mul):
        with pytest.raises(TypeError, match=f"{op.__name__} takes integers, got Float"):
            op(f(i), g(i))
    with pytest.raises(TypeError, match="is a Condition"):
        saturating_add(f(i) > 0, 1)


def test_integers_without_a_common_integer_type_are_refused_as_such():
    """ULong and Long make a Double under `+`: the integer operations say so, not that they
    got Double operands, and none of them quietly computes in Double."""
    (u,), i, _ = _line(ULong, "u")
    (s,), _, _ = _line(Long, "s")
    integer_ops = (halving_add, rounding_halving_add, widening_mul)
    for op in integer_ops + (saturating_add, saturating_sub, absd):
        for a, b in ((u(i), s(i)), (s(i), u(i))):
            with pytest.raises(TypeError) as refused:
                op(a, b)
            message = str(refused.value)
            assert f"{a.func.typ} and {b.func.typ} have no common integer type" in message
            assert "got Double" not in message and "Cast one of them" in message


def test_saturating_cast_clamps_in_the_source_type_only_where_needed():
    (a,), i, _ = _line(Int, "a")
    (u,), _, _ = _line(UChar, "u")
    (f,), _, _ = _line(Float, "f")
    assert str(saturating_cast(UChar, a(i))) == "Cast(UChar, Min(Max(a(i), 0), 255))"
    assert str(saturating_cast(Int, u(i))) == "Cast(Int, u(i))"  # every UChar fits
    assert str(saturating_cast(Char, u(i))) == "Cast(Char, Min(u(i), 127))"
    assert str(saturating_cast(Int, f(i))) == "Cast(Int, f(i))"  # Cast saturates already
    assert str(saturating_cast(Half, f(i))) == "Cast(Half, Min(Max(f(i), -65504.0), 65504.0))"
    read = u(i)
    assert saturating_cast(UChar, read) is read
    with pytest.raises(TypeError, match="not a Condition"):
        saturating_cast(E.Bool, a(i))


# -- values at the limits -----------------------------------------------------------------------


def _python(fn: str, x: int, y: int, typ) -> int:
    """The operation `fn` on Python integers (exact), then clamped or checked into `typ`."""
    info = np.iinfo(typ.dtype)
    exact = {
        "saturating_add": x + y,
        "saturating_sub": x - y,
        "absd": abs(x - y),
        "halving_add": (x + y) >> 1,
        "rounding_halving_add": (x + y + 1) >> 1,
        "widening_mul": x * y,
    }[fn]
    return min(max(exact, int(info.min)), int(info.max))


def _cast_reference(values, source, target) -> np.ndarray:
    """saturating_cast by hand: clamp with Python integers to the target's range (its finite
    range for floats), then convert."""
    if target.is_int:
        info = np.iinfo(target.dtype)
        return np.array([min(max(v, int(info.min)), int(info.max)) for v in values], target.dtype)
    top = float(np.finfo(target.dtype).max)
    return np.array([min(max(v, -top), top) for v in values], np.float64).astype(target.dtype)


@pytest.mark.parametrize("typ", INT_TYPES, ids=str)
def test_integer_operations_at_the_limits_of_every_type(typ, rng):
    values = interesting_ints(typ.dtype)
    info = np.iinfo(typ.dtype)
    values += [int(v) for v in rng.integers(info.min, info.max, 6, dtype=typ.dtype)]
    pairs = list(itertools.product(values, repeat=2))
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    (a, b), i, dom = _line(typ, "a", "b")
    ops = [saturating_add, saturating_sub, absd, halving_add, rounding_halving_add]
    ops += [widening_mul] if typ in WIDER else []
    stages, expected = [], []
    for op in ops:
        e = op(a(i), b(i))
        stages.append(_stage(dom, e.typ, op.__name__, e))
        expected.append(np.array([_python(op.__name__, x, y, e.typ) for x, y in pairs], e.typ))
    stages.append(_stage(dom, typ, "plus_one", saturating_add(a(i), 1)))
    expected.append(np.array([_python("saturating_add", x, 1, typ) for x in xs], typ.dtype))
    stages.append(_stage(dom, typ, "one_minus", saturating_sub(1, a(i))))
    expected.append(np.array([_python("saturating_sub", 1, x, typ) for x in xs], typ.dtype))
    for target in NUMBER_TYPES:
        stages.append(_stage(dom, target, f"to_{target}", saturating_cast(target, a(i))))
        expected.append(_cast_reference(xs, typ, target))
    arguments = dict(a=np.array(xs, typ.dtype), b=np.array(ys, typ.dtype))
    pipe = polyimage.compile(stages, schedule="naive")
    compiled = pipe(threads=1, **arguments)
    interpreted = polyimage.interpret(stages, **arguments)
    for stage, got, by_interpreter, reference in zip(stages, compiled, interpreted, expected):
        assert_same(got, by_interpreter, f"{stage.name}: compiled vs interpreter")
        assert_same(got, reference, f"{stage.name}: compiled vs Python integers")


# -- Half conversions ------------------------------------------------------------------------------


def test_every_half_round_trips_and_widens_exactly():
    """All 65536 bit patterns (NaN payloads, infinities, subnormals) in a Half image: stored
    unchanged, widened to Float and Double exactly, through Float back to the same bits, and
    to integers as NumPy's float16 values convert (truncated, saturated, NaN to 0)."""
    R, C, x, y = grid()
    h = Image(Half, "h", [R, C])
    dom = ([x, y], box(R, C))
    same = _stage(dom, Half, "same", h(x, y))
    widened = _stage(dom, Float, "widened", h(x, y))
    doubled = _stage(dom, Double, "doubled", Cast(Double, h(x, y)))
    back = _stage(dom, Half, "back", Cast(Float, h(x, y)))
    whole = _stage(dom, Short, "whole", Cast(Short, h(x, y)))
    clamped = _stage(dom, UChar, "clamped", saturating_cast(UChar, h(x, y)))
    outputs = [same, widened, doubled, back, whole, clamped]
    every = np.arange(65536, dtype=np.uint16).reshape(256, 256).view(np.float16)
    pipe = polyimage.compile(outputs, schedule="auto", estimates={"R": 256, "C": 256})
    got = pipe(h=every)
    np.testing.assert_array_equal(_bits(got[0]), _bits(every))
    np.testing.assert_array_equal(got[1].view(np.uint32), every.astype(np.float32).view(np.uint32))
    np.testing.assert_array_equal(got[2].view(np.uint64), every.astype(np.float64).view(np.uint64))
    np.testing.assert_array_equal(_bits(got[3]), _bits(every))
    np.testing.assert_array_equal(got[4], saturate(every.ravel(), np.int16).reshape(256, 256))
    np.testing.assert_array_equal(got[5], saturate(every.ravel(), np.uint8).reshape(256, 256))
    for stage, g, e in zip(outputs, got, polyimage.interpret(outputs, h=every)):
        assert_same(g, e, stage.name)


def _rounding_inputs(rng) -> np.ndarray:
    """Floats around every Half: each Half, the midpoints to its neighbours (ties, which round
    to even) and one float either side of them; the overflow edge (65504, 65519.99, 65520),
    float subnormals, NaNs with payloads, and random floats across the Half's exponents."""
    halves = np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)
    mids = (halves[:-1] + halves[1:]) / 2
    mid_floats = mids.astype(np.float32)
    near = np.concatenate([np.nextafter(mid_floats, -np.inf), np.nextafter(mid_floats, np.inf)])
    edge = np.array([65504.0, 65519.99, 65520.0, 65536.0, 1e6, 3.4e38, 1e-45, 2.9802322e-08])
    nans = np.array([0x7F800001, 0xFFC00001, 0x7FBFFFFF, 0x7FC02000], np.uint32).view(np.float32)
    spread = rng.uniform(-1, 1, 20000) * np.exp2(rng.uniform(-26, 17, 20000))
    values = np.concatenate([halves, mids, near, edge, spread, [np.inf, 0.0]])
    values = np.concatenate([values, -values]).astype(np.float32)
    return np.concatenate([values, nans])


def test_floats_doubles_and_integers_round_to_half_as_numpy(rng):
    """A Half stage rounds a Float, a Double (directly: a double just off a tie does not round
    twice) and an integer to nearest even, overflowing to infinity, as NumPy's astype does."""
    floats = _rounding_inputs(rng)
    with np.errstate(**IGNORE):
        doubles = floats.astype(np.float64)
    doubles[: len(doubles) // 2] *= 1 + 2.0**-40  # just off the ties, where float would round
    ints = rng.integers(-70000, 70000, len(floats)).astype(np.int32)
    ints[:8] = [2049, 2051, 65519, 65520, -65520, 2**31 - 1, -(2**31), 0]
    n, i = Parameter(Int, "n"), Variable(Int, "i")
    f, d, k = Image(Float, "f", [n]), Image(Double, "d", [n]), Image(Int, "k", [n])
    dom = ([i], [Interval(Int, 0, n - 1)])
    outputs = [
        _stage(dom, Half, "from_float", f(i)),
        _stage(dom, Half, "from_double", Cast(Half, d(i))),
        _stage(dom, Half, "from_int", k(i)),
    ]
    arguments = dict(f=floats, d=doubles, k=ints)
    got = polyimage.compile(outputs, schedule="naive")(threads=2, **arguments)
    interpreted = polyimage.interpret(outputs, **arguments)
    with np.errstate(**IGNORE):
        expected = [floats.astype(np.float16), doubles.astype(np.float16), ints.astype(np.float16)]
    for stage, g, by_interpreter, reference in zip(outputs, got, interpreted, expected):
        np.testing.assert_array_equal(_bits(g), _bits(reference), err_msg=stage.name)
        np.testing.assert_array_equal(_bits(g), _bits(by_interpreter), err_msg=stage.name)


def test_half_arithmetic_is_float_arithmetic_rounded_once_when_stored(rng):
    (p, q), i, dom = _line(Half, "p", "q")
    fused = _stage(dom, Half, "fused", p(i) * q(i) + p(i))
    ratio = _stage(dom, Float, "ratio", p(i) / q(i))
    capped = _stage(dom, Half, "capped", saturating_cast(Half, p(i) * 1000.0))
    pv = np.concatenate([HALF_SPECIALS, rng.normal(0, 200, 500)]).astype(np.float16)
    qv = np.concatenate([HALF_SPECIALS[::-1], rng.normal(0, 200, 500)]).astype(np.float16)
    arguments, outputs = dict(p=pv, q=qv), [fused, ratio, capped]
    got = polyimage.compile(outputs, schedule="naive")(**arguments)
    a, b = pv.astype(np.float32), qv.astype(np.float32)
    with np.errstate(**IGNORE):
        expected = (a * b + a).astype(np.float16)
        np.testing.assert_array_equal(got[1], a / b)
        top = np.float32(65504)
        assert_same_halves(got[2], np.clip(a * 1000, -top, top).astype(np.float16), "capped")
    assert_same_halves(got[0], expected, "fused")
    assert np.isinf(expected).any() and not np.isinf(got[2]).any()
    for stage, g, e in zip(outputs, got, polyimage.interpret(outputs, **arguments)):
        assert_same(g, e, stage.name)


# -- whole pipelines ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pixels():
    """(outputs, arguments(rng, rows, cols)) of tests/pixel_cases.py."""
    return pixel_pipeline()


@pytest.mark.parametrize("schedule", ["naive", "auto"])
def test_every_operation_matches_the_interpreter_on_random_sizes(pixels, schedule, rng):
    outputs, make = pixels
    pipe = polyimage.compile(outputs, schedule=schedule, estimates={"R": 96, "C": 96})
    sizes = [(1, 1), (1, 7)] + [tuple(int(v) for v in rng.integers(2, 90, 2)) for _ in range(3)]
    for rows, cols in sizes:
        arguments = make(rng, rows, cols)
        expected = polyimage.interpret(outputs, **arguments)
        assert_calls_match(pipe, expected, arguments, f"{schedule}, {rows}x{cols}")


def _scaled():
    """A Half image scaled into a Half stage, with a stencil (for Dask's halo)."""
    R, C, x, y = grid()
    h = Image(Half, "h", [R, C])
    out = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 1, C - 2)]), Half, "scaled")
    out.defn = [h(x, y - 1) * 0.25 + h(x, y + 1) * 2.0]
    return out


def test_float16_arrays_go_in_and_come_out(rng):
    pipe = polyimage.compile([_scaled()], estimates={"R": 64, "C": 64})
    h = rng.normal(0, 1e4, (9, 14)).astype(np.float16)
    result = pipe(h=h)
    assert result.dtype == np.float16 and result.shape == (9, 12)
    with np.errstate(**IGNORE):
        wide = h.astype(np.float32)
        expected = (wide[:, :-2] * np.float32(0.25) + wide[:, 2:] * np.float32(2)).astype(
            np.float16
        )
    assert_same_halves(result, expected, "scaled")
    out = np.empty((9, 12), np.float16)
    assert pipe(h=h, out=out) is out
    np.testing.assert_array_equal(_bits(out), _bits(result))
    with pytest.raises(ArgumentTypeError, match=r"must have dtype float16 \(Half\)"):
        pipe(h=h.astype(np.float32))


def test_half_pipelines_split_on_dask(rng):
    da = pytest.importorskip("dask.array")
    import polyimage.dask as pdask

    pipe = polyimage.compile([_scaled()], estimates={"R": 64, "C": 64})
    h = rng.normal(0, 100, (23, 31)).astype(np.float16)
    blocks = pdask.apply(pipe, h=da.from_array(h, chunks=(7, 9))).compute(scheduler="threads")
    assert blocks.dtype == np.float16
    np.testing.assert_array_equal(_bits(blocks), _bits(pipe(h=h)))


def _export_runs(folder, program, outputs, make, rng, tmp_path, runner=(), loaded=None):
    """The harness of an export (and, given, its `loaded` library) on 1 x 1 and 11 x 6
    images, against the interpreter."""
    manifest = json.loads((folder / "manifest.json").read_text())
    for rows, cols in [(1, 1), (11, 6)]:
        arguments = make(rng, rows, cols)
        expected = polyimage.interpret(outputs, **arguments)
        shapes = [(rows, cols)] * len(outputs)
        status, message, got = run_harness(
            program, manifest, 2, {"R": rows, "C": cols}, arguments, shapes, tmp_path, runner
        )
        assert status == 0, message
        for stage, g, e in zip(outputs, got, expected):
            assert_same(g, e, f"C program, {stage.name}, {rows}x{cols}")
        for stage, g, e in zip(outputs, loaded(**arguments) if loaded else (), expected):
            assert_same(g, e, f"loaded, {stage.name}, {rows}x{cols}")


def test_an_export_and_its_loaded_library_take_half_and_8_bit_images(pixels, rng, tmp_path):
    """The C library's buffers of Half are uint16_t (its bits): a C program and
    `polyimage.load` give the interpreter's results."""
    outputs, make = pixels
    pipe = polyimage.compile(outputs, estimates={"R": 64, "C": 64}, name="pixels")
    pipe.export(tmp_path / "lib")
    header = (tmp_path / "lib" / "pixels.h").read_text()
    assert "uint16_t[R, C] (Half: IEEE binary16 bits)" in header
    program = build_harness(tmp_path / "lib", tmp_path / "run")
    loaded = polyimage.load(tmp_path / "lib")
    _export_runs(tmp_path / "lib", program, outputs, make, rng, tmp_path, loaded=loaded)


def test_an_export_cross_compiled_for_arm_runs_under_qemu(pixels, rng, tmp_path, monkeypatch):
    """No x86 instruction in the helpers: the same results from aarch64 code."""
    needs_tool("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu")
    needs_tool("qemu-aarch64", "qemu-user")
    monkeypatch.setenv("CC", "aarch64-linux-gnu-gcc")
    outputs, make = pixels
    pipe = polyimage.compile(
        outputs, estimates={"R": 64, "C": 64}, name="pixels", march="armv8-a", build=False
    )
    pipe.export(tmp_path / "arm")
    program = build_harness(
        tmp_path / "arm", tmp_path / "run", "aarch64-linux-gnu-gcc", ["-static"]
    )
    _export_runs(tmp_path / "arm", program, outputs, make, rng, tmp_path, ["qemu-aarch64"])


@pytest.mark.parametrize("schedule", ["naive", "auto"])
def test_clang_builds_every_operation(clang, pixels, schedule, rng):
    outputs, make = pixels
    pipe = polyimage.compile(outputs, schedule=schedule, estimates={"R": 64, "C": 64})
    assert pipe.build_info.compiler == "clang"
    arguments = make(rng, 13, 17)
    expected = polyimage.interpret(outputs, **arguments)
    assert_calls_match(pipe, expected, arguments, f"clang, {schedule}")


def test_each_operation_has_its_own_c_and_compile_key():
    """Operations with the same operands, and Half next to UShort (both uint16_t in C), give
    different C and different compile records."""
    sources, texts = set(), set()
    ops = [saturating_add, saturating_sub, absd, halving_add, rounding_halving_add]
    for typ, op in [(UChar, op) for op in ops] + [(Half, saturating_add), (UShort, absd)]:
        (a, b), i, dom = _line(typ, "a", "b")
        e = op(a(i), b(i))
        out = _stage(dom, e.typ, "out", e)
        sources.add(polyimage.compile([out], schedule="naive").c_source)
        texts.add(graph_text(build_graph([out])))
    assert len(sources) == len(texts) == len(ops) + 2


def test_gcc_vectorizes_saturating_add_on_uchar_and_a_half_stage():
    R, C, x, y = grid()
    a, b, h = Image(UChar, "a", [R, C]), Image(UChar, "b", [R, C]), Image(Half, "h", [R, C])
    dom = ([x, y], box(R, C))
    summed = _stage(dom, UChar, "summed", saturating_add(a(x, y), b(x, y)))
    halved = _stage(dom, Half, "halved", h(x, y) * 0.5 + Cast(Float, summed(x, y)))
    pipe = polyimage.compile(
        [summed, halved], schedule="naive", inline=False, estimates={"R": 1000, "C": 1000}
    )
    verdicts = {v.stages: v for v in vectorization(pipe)}
    for stage in ("summed", "halved"):
        assert verdicts[(stage,)].vectorized, verdicts[(stage,)].detail


def test_the_dsl_pages_examples_print_what_they_say(capsys):
    """The 8-bit and Half examples of docs/dsl.md: every `# printed` comment is printed."""
    text = (ROOT / "docs" / "dsl.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    eight_bit = next(b for b in blocks if "saturating_add(a(x, y)" in b)
    half = next(b for b in blocks if "doubled.defn" in b)
    namespace = {}
    for block in (eight_bit, half):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            exec(compile(block, "docs/dsl.md", "exec"), namespace)
    printed = capsys.readouterr().out.split()
    said = re.findall(r"^# (.*)$", eight_bit, re.M)
    said.append(re.search(r"print\(out.dtype, out\[0\]\)\s+# (.*)", half).group(1))
    assert printed == " ".join(said).split()


def test_photos_load_as_float16_and_float16_saves(tmp_path):
    """load_image(dtype=np.float16) scales in float32 and rounds once: a 16-bit PNG's 65535 is
    1.0, not infinity."""
    from polyimage.io import load_image, save_image

    deep = np.array([[0, 1, 32768, 65535]], np.uint16)
    save_image(tmp_path / "deep.png", deep)
    halves = load_image(tmp_path / "deep.png", dtype=np.float16)
    expected = (deep.astype(np.float32) / np.float32(65535)).astype(np.float16)
    np.testing.assert_array_equal(_bits(halves), _bits(expected))
    assert halves[0, -1] == 1.0
    save_image(tmp_path / "half.png", halves, bits=16)
    rescaled = np.rint(halves.astype(np.float32) * np.float32(65535)).astype(np.uint16)
    np.testing.assert_array_equal(load_image(tmp_path / "half.png"), rescaled)
    assert rescaled[0, -1] == 65535
