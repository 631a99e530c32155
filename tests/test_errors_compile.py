"""User errors found when a pipeline is built or compiled: each is rejected with the right
exception type and a message naming the culprit; reads outside a domain are BoundsErrors at
compile time; nothing segfaults."""

import re

import numpy as np
import pytest

import polyimage
from polyimage import (
    BoundsError,
    Case,
    Cast,
    Condition,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Op,
    Parameter,
    PipelineError,
    Reduce,
    Reduction,
    Select,
    Short,
    UChar,
    Variable,
)

# -- construction and compile time -------------------------------------------------------------

N = Parameter(Int, "N")
x = Variable(Int, "x")
i = Variable(Int, "i")
j = Variable(Int, "j")
row = Interval(Int, 0, N - 1)


def test_function_without_definition():
    f = Function(([i], [row]), Float, "undefined_f")
    g = Function(([i], [row]), Float, "g")
    g.defn = [f(i) + 1]
    with pytest.raises(PipelineError, match=r"Function undefined_f has no definition"):
        polyimage.compile(g)
    with pytest.raises(PipelineError, match=r"Function undefined_f has no definition"):
        polyimage.interpret(g, N=3)
    with pytest.raises(PipelineError, match=r"Function undefined_f has no definition"):
        polyimage.compile(f)


def test_variable_type_differs_from_interval():
    s = Variable(Short, "s")
    with pytest.raises(
        TypeError,
        match=r"f: Variable s has type Short but its Interval has "
        r"type Int",
    ):
        Function(([s], [row]), Float, "f")


def test_reference_with_wrong_number_of_indices():
    a = Image(Float, "a", [N, N])
    with pytest.raises(
        TypeError,
        match=r"a has 2 dimension\(s\) but is referenced with 1 "
        r"index\(es\) in a\(i\)",
    ):
        a(i)
    with pytest.raises(
        TypeError,
        match=r"a has 2 dimension\(s\) .* 3 index\(es\) in "
        r"a\(i, j, 0\)",
    ):
        a(i, j, 0)


def test_float_index():
    a = Image(Float, "a", [N])
    with pytest.raises(TypeError, match=r"index `1\.5` of a has type Double"):
        a(1.5)
    with pytest.raises(TypeError, match=r"index `[^`]*\bi\b[^`]* / 2\.0` of a has type Double"):
        a(i / 2.0)
    with pytest.raises(TypeError, match=r"index `Cast\(Float, i\)` of a has type Float"):
        a(Cast(Float, i))


def test_cycle():
    f = Function(([i], [row]), Float, "f")
    g = Function(([i], [row]), Float, "g")
    f.defn = [g(i) + 1]
    g.defn = [f(i) * 2]
    with pytest.raises(PipelineError, match=r"cycle: f -> g -> f"):
        polyimage.compile(f)
    with pytest.raises(PipelineError, match=r"cycle: g -> f -> g"):
        polyimage.interpret(g, N=3)


def test_a_self_read_at_a_later_point_is_a_cycle():
    f = Function(([i], [row]), Float, "f")
    f.defn = [Case(i < N - 1, f(i + 1) + 1), 0]
    with pytest.raises(
        PipelineError, match=r"cycle: f reads itself at `f\(i \+ 1\)`, a later point along i"
    ):
        polyimage.compile(f)


def test_two_stages_with_the_same_name():
    a = Function(([i], [row]), Float, "same")
    b = Function(([i], [row]), Float, "same")
    a.defn = [Cast(Float, i)]
    b.defn = [a(i) + 1]
    with pytest.raises(PipelineError, match=r"two different stages are named same"):
        polyimage.compile(b)
    # an Image and a Function sharing a name clash too
    im = Image(Float, "dup", [N])
    fn = Function(([i], [row]), Float, "dup")
    fn.defn = [im(i)]
    with pytest.raises(PipelineError, match=r"two different stages are named dup"):
        polyimage.compile(fn)


def test_two_parameters_with_the_same_name():
    other_n = Parameter(Int, "N")
    a = Image(Float, "a", [N])
    f = Function(([i], [Interval(Int, 0, other_n - 1)]), Float, "f")
    f.defn = [a(i)]
    with pytest.raises(PipelineError, match=r"two different Parameters are named N"):
        polyimage.compile(f)


def test_parameter_and_image_with_the_same_name():
    a = Image(Float, "N", [N])
    f = Function(([i], [row]), Float, "f")
    f.defn = [a(i)]
    with pytest.raises(PipelineError, match=r"Image N and a Parameter share the name N"):
        polyimage.compile(f)


def test_image_given_a_definition():
    a = Image(Float, "a", [N])
    with pytest.raises(
        TypeError,
        match=r"Image a is an input and cannot be given a "
        r"definition",
    ):
        a.defn = [Cast(Float, i)]


def test_image_as_output():
    a = Image(Float, "a", [N])
    with pytest.raises(PipelineError, match=r"Image a is an input and cannot be an output"):
        polyimage.compile(a)


def test_variable_not_among_the_function_variables():
    z = Variable(Int, "z")
    f = Function(([i], [row]), Float, "f")
    with pytest.raises(
        ValueError,
        match=r"f: `Cast\(Float, i \+ z\)` uses variable z, which "
        r"is not one of its variables \(i\)",
    ):
        f.defn = [Cast(Float, i + z)]
    with pytest.raises(ValueError, match=r"f: .*uses variable z"):
        f.defn = [Case(z > 0, 1.0), 0.0]
    # a different Variable object with the same name is not the same variable
    other_i = Variable(Int, "i")
    with pytest.raises(
        ValueError,
        match=r"uses variable i \(a different Variable object with "
        r"the same name\)",
    ):
        f.defn = [Cast(Float, other_i)]


def test_python_truth_value_of_a_dsl_expression():
    with pytest.raises(TypeError, match=r"`x < 3` has no truth value"):
        bool(x < 3)
    with pytest.raises(TypeError, match=r"`x < 3` has no truth value"):
        if x < 3:
            pass
    with pytest.raises(TypeError, match=r"`x > 1` has no truth value"):
        (x > 1) and (x < 3)
    with pytest.raises(TypeError, match=r"no truth value"):
        0 < x < 3  # chained comparisons use `and`


def test_integer_literal_that_does_not_fit():
    a = Image(UChar, "a", [N])
    with pytest.raises(TypeError, match=r"literal 300 does not fit UChar in `a\(i\) \+ 300`"):
        a(i) + 300
    with pytest.raises(TypeError, match=r"literal -1 does not fit UChar"):
        Condition(a(i), ">", -1)


def test_reduce_targeting_another_reduction():
    a = Image(Int, "a", [N])
    hist = Reduction(([i], [Interval(Int, 0, 9)]), ([j], [row]), Int, "hist")
    other = Reduction(([i], [Interval(Int, 0, 9)]), ([j], [row]), Int, "other")
    with pytest.raises(ValueError, match=r"hist: Reduce must update hist, not other"):
        hist.defn = [Reduce(other(a(j)), 1, Op.Sum)]


def test_reduction_case_on_a_foreign_variable():
    a = Image(Int, "a", [N])
    k = Variable(Int, "k")
    hist = Reduction(([i], [Interval(Int, 0, 9)]), ([j], [row]), Int, "hist")
    with pytest.raises(ValueError, match=r"hist: `k < 5` uses variable k, which is not one"):
        hist.defn = [Case(k < 5, Reduce(hist(a(j)), 1, Op.Sum)), Reduce(hist(a(j)), 1, Op.Max)]


def test_reduction_defined_without_reduce():
    a = Image(Int, "a", [N])
    hist = Reduction(([i], [Interval(Int, 0, 9)]), ([j], [row]), Int, "hist")
    with pytest.raises(
        TypeError,
        match=r"hist: a Reduction is defined by Reduce\(...\), got "
        r"`a\(j\) \+ 1`",
    ):
        hist.defn = [a(j) + 1]


def test_reduce_defining_a_function():
    f = Function(([i], [row]), Int, "f")
    with pytest.raises(TypeError, match=r"f: Reduce can only define a Reduction"):
        f.defn = [Reduce(f(i), 1, Op.Sum)]


def test_non_affine_interval_bounds():
    M = Parameter(Int, "M")
    f = Function(([i], [Interval(Int, 0, N * M)]), Float, "f")
    f.defn = [Cast(Float, i)]
    with pytest.raises(
        PipelineError,
        match=r"f: interval bounds must be affine in integer "
        r"Parameters, got `N \* M`",
    ):
        polyimage.compile(f)


def test_unknown_schedule():
    f = Function(([i], [row]), Float, "f")
    f.defn = [Cast(Float, i)]
    with pytest.raises(
        ValueError,
        match=r"unknown schedule .fastest.; give a Schedule, its "
        r"text, or one of: naive",
    ):
        polyimage.compile(f, schedule="fastest")


def test_estimates_naming_an_unknown_parameter():
    f = Function(([i], [row]), Float, "f")
    f.defn = [Cast(Float, i)]
    with pytest.raises(
        PipelineError,
        match=r"estimates names 'Q', which is not a parameter of "
        r"the pipeline \(N\)",
    ):
        polyimage.compile(f, estimates={Parameter(Int, "Q"): 100})
    with pytest.raises(PipelineError, match=r"estimates names 'rows'"):
        polyimage.compile(f, estimates={"rows": 100})


def test_constraint_naming_an_unknown_parameter():
    f = Function(([i], [row]), Float, "f")
    f.defn = [Cast(Float, i)]
    with pytest.raises(PipelineError, match=r"constraint `Q >= 2` names 'Q'"):
        polyimage.compile(f, constraints=[Parameter(Int, "Q") >= 2])


# -- BoundsError at compile time ---------------------------------------------------------------


def _bounds_point(message):
    """The concrete point and parameter values a BoundsError message reports."""
    m = re.search(r"at (\w+)=(-?\d+) with N=(-?\d+)", message)
    assert m, f"no concrete point with parameter values in: {message}"
    return int(m.group(2)), int(m.group(3))


def test_off_by_one_read_past_the_end():
    a = Image(Float, "img", [N])
    f = Function(([i], [row]), Float, "f")
    f.defn = [Case(i < 1, a(i)), Case(i >= 1, a(i + 2))]
    with pytest.raises(
        BoundsError,
        match=r"f \(case 2 of 2\): img\(i \+ 2\) reads img outside "
        r"its domain",
    ) as info:
        polyimage.compile(f)
    message = str(info.value)
    assert re.search(r"index 0 `i \+ 2` = -?\d+ is outside \[0, N - 1\]", message), message
    point, n = _bounds_point(message)
    assert 1 <= point <= n - 1 and point + 2 > n - 1, message
    with pytest.raises(BoundsError, match=r"f \(case 2 of 2\): img\(i \+ 2\)"):
        polyimage.interpret(f, img=np.zeros(4, np.float32))


def test_a_bounds_error_names_a_point_at_the_estimates_and_the_fixes():
    a = Image(Float, "img", [N])
    f = Function(([i], [row]), Float, "f")
    f.defn = [a(i + 1)]
    with pytest.raises(BoundsError) as info:
        polyimage.compile(f, estimates={N: 512})
    message = str(info.value)
    assert _bounds_point(message) == (511, 512), message
    fixes = ("`Clamp(i + 1, 0, N - 1)`", "shrink the domain of f", "declare img larger", "a Case")
    assert all(fix in message for fix in fixes), message
    # a read that fails only below the estimates: the point shown is where it fails
    g = Function(([i], [Interval(Int, 0, 9)]), Float, "g")
    g.defn = [a(i)]
    with pytest.raises(BoundsError) as info:
        polyimage.compile(g, estimates={N: 512})
    point, n = _bounds_point(str(info.value))
    assert n < 10 and point > n - 1, str(info.value)


def test_a_read_past_an_edge_offers_the_border_modes_first():
    """Reading an image or a stage just past its edge: the fixes start with the border modes
    of docs/dsl.md, the read as written through repeat_edge, before Clamp and the others."""
    a = Image(Float, "img", [N])
    g = Function(([i], [row]), Float, "g")
    g.defn = [a(i) * 2]
    modes = "or mirror, mirror_interior, wrap, constant_exterior)"
    for producer, index, first in (
        (a, i - 1, f"read img through a border mode (`repeat_edge(img)(i - 1)`, {modes}"),
        (g, i + 1, f"read g through a border mode (`repeat_edge(g)(i + 1)`, {modes}"),
    ):
        f = Function(([i], [row]), Float, "f")
        f.defn = [producer(index)]
        with pytest.raises(BoundsError) as info:
            polyimage.compile(f, build=False)
        fixes = str(info.value).split("; to fix it: ", 1)[1]
        assert fixes.startswith(first) and "`Clamp(" in fixes, fixes


def test_off_by_one_read_at_the_start():
    a = Image(Float, "img", [N])
    f = Function(([i], [row]), Float, "f")
    f.defn = [a(i - 1) + a(i)]
    with pytest.raises(
        BoundsError,
        match=r"f \(its definition\): img\(i - 1\) reads img "
        r"outside its domain",
    ) as info:
        polyimage.compile(f)
    point, n = _bounds_point(str(info.value))
    assert point == 0 and n >= 1, str(info.value)


def test_downsampling_read_one_past_the_end():
    a = Image(Float, "img", [2 * N + 1])
    down = Function(([i], [Interval(Int, 0, N)]), Float, "down")
    down.defn = [a(2 * i) + a(2 * i + 1)]
    with pytest.raises(
        BoundsError,
        match=r"down \(its definition\): img\(2 \* i \+ 1\) reads "
        r"img outside its domain",
    ) as info:
        polyimage.compile(down)
    message = str(info.value)
    point, n = _bounds_point(message)
    assert point == n and 2 * point + 1 == 2 * n + 1, message
    assert re.search(r"= \[0, %d\]" % (2 * n), message), message


def test_reduce_target_out_of_range():
    a = Image(Int, "img", [N])
    hist = Reduction(([i], [Interval(Int, 0, 9)]), ([j], [row]), Int, "hist")
    hist.defn = [Reduce(hist(j), a(j), Op.Sum)]
    with pytest.raises(
        BoundsError,
        match=r"hist \(its definition\): hist\(j\) writes hist "
        r"outside its domain",
    ) as info:
        polyimage.compile(hist)
    point, n = _bounds_point(str(info.value))
    assert 0 <= point <= n - 1 and point > 9, str(info.value)


def test_data_dependent_reduce_target_is_not_a_bounds_error():
    a = Image(Int, "img", [N])
    hist = Reduction(([i], [Interval(Int, 0, 3)]), ([j], [row]), Int, "hist")
    hist.defn = [Reduce(hist(a(j)), 1, Op.Sum)]
    data = np.array([0, 1, 1, 3, 3, 3, -7, 99], np.int32)
    result = polyimage.compile(hist)(img=data)
    np.testing.assert_array_equal(result, polyimage.interpret(hist, img=data))
    assert result.sum() == len(data)


def test_read_of_a_stage_past_its_domain():
    a = Image(Float, "img", [N])
    f = Function(([i], [Interval(Int, 1, N - 1)]), Float, "f")
    f.defn = [a(i)]
    g = Function(([i], [row]), Float, "g")
    g.defn = [f(i) * 2]
    with pytest.raises(
        BoundsError,
        match=r"g \(its definition\): f\(i\) reads f outside its "
        r"domain.* is outside \[1, N - 1\]",
    ):
        polyimage.compile(g)


def _guarded_check(func, data):
    pipe = polyimage.compile(func)
    result = pipe(img=data)
    np.testing.assert_array_equal(result, polyimage.interpret(func, img=data))
    return result


def test_guarded_read_in_case_compiles():
    a = Image(Float, "img", [N])
    f = Function(([i], [row]), Float, "f")
    f.defn = [Case(i >= 1, a(i - 1)), Case(i < 1, a(i))]
    data = np.arange(1, 6, dtype=np.float32)
    np.testing.assert_array_equal(_guarded_check(f, data), [1, 1, 2, 3, 4])


def test_guarded_read_in_select_compiles():
    a = Image(Float, "img", [N])
    f = Function(([i], [row]), Float, "f")
    f.defn = [Select(i > 0, a(i - 1), -1.0)]
    data = np.arange(1, 6, dtype=np.float32)
    np.testing.assert_array_equal(_guarded_check(f, data), [-1, 1, 2, 3, 4])


def test_guarded_read_right_of_and_compiles():
    a = Image(Float, "img", [N])
    f = Function(([i], [row]), Int, "f")
    f.defn = [Select((i > 0) & (a(i - 1) > 0), 1, 0)]
    data = np.array([5, -1, 2, 0, 3], np.float32)
    np.testing.assert_array_equal(_guarded_check(f, data), [0, 1, 0, 1, 0])


def test_unguarded_and_is_still_checked():
    """The left side of `&` guards only its right side: a read on the left is checked."""
    a = Image(Float, "img", [N])
    f = Function(([i], [row]), Int, "f")
    f.defn = [Select((a(i - 1) > 0) & (i > 0), 1, 0)]
    with pytest.raises(BoundsError, match=r"f \(its definition\): img\(i - 1\)"):
        polyimage.compile(f)


def test_constraints_make_a_fixed_index_read_compile():
    a = Image(Float, "img", [N])
    f = Function(([i], [row]), Float, "f")
    f.defn = [a(i) + a(9)]
    with pytest.raises(
        BoundsError,
        match=r"f \(its definition\): img\(9\) reads img outside "
        r"its domain",
    ):
        polyimage.compile(f)
    with pytest.raises(BoundsError, match=r"img\(9\)"):
        polyimage.compile(f, constraints=[N >= 9])
    pipe = polyimage.compile(f, constraints=[N >= 10])
    data = np.arange(12, dtype=np.float32)
    np.testing.assert_array_equal(pipe(img=data), data + 9)
    with pytest.raises(ValueError, match=r"N=5 violate the constraint N >= 10"):
        pipe(img=data[:5])


# -- nothing segfaults -------------------------------------------------------------------------


def test_lookup_table_indexed_by_arbitrary_data_is_clamped():
    lut = Image(UChar, "lut", [256])
    data = Image(Int, "data", [N])
    mapped = Function(([i], [row]), UChar, "mapped")
    mapped.defn = [lut(data(i))]
    shifted = Function(([i], [row]), UChar, "shifted")
    shifted.defn = [lut(data(i) + 1)]  # INT_MAX + 1 wraps to INT_MIN in Int arithmetic
    k = Variable(Int, "k")
    offset_lut = Function(([k], [Interval(Int, 10, 265)]), UChar, "offset_lut")
    offset_lut.defn = [lut(k - 10)]
    offset = Function(([i], [row]), UChar, "offset")
    offset.defn = [offset_lut(data(i))]  # clamped to the stage's own domain [10, 265]
    info = np.iinfo(np.int32)
    values = np.array(
        [info.min, info.min + 1, -1000, -1, 0, 1, 128, 254, 255, 256, 1000, info.max - 1, info.max],
        np.int32,
    )
    table = np.arange(256, dtype=np.uint8)[::-1].copy()
    outputs = [mapped, shifted, offset]
    pipe = polyimage.compile(outputs)
    got = pipe(lut=table, data=values)
    np.testing.assert_array_equal(got[0], table[np.clip(values, 0, 255)])
    wrapped = (values.astype(np.int64) + 1 + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(got[1], table[np.clip(wrapped, 0, 255)])
    np.testing.assert_array_equal(got[2], table[np.clip(values, 10, 265) - 10])
    for c, r in zip(got, polyimage.interpret(outputs, lut=table, data=values)):
        np.testing.assert_array_equal(c, r)
    # several threads, random data over the whole int32 range
    rng = np.random.default_rng(7)
    big = rng.integers(info.min, info.max, size=100_000, dtype=np.int32, endpoint=True)
    got = pipe(lut=table, data=big, threads=4)
    np.testing.assert_array_equal(got[0], table[np.clip(big, 0, 255)])
    np.testing.assert_array_equal(got[2], table[np.clip(big, 10, 265) - 10])
