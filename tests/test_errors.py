"""User errors: every one is rejected with the right exception type and a message that names
the culprit (image, parameter, stage, variable or reference as written).

Call-time errors are checked on one small compiled pipeline and, where the call makes sense
there, on the reference interpreter too: both must reject a bad call the same way.
"""

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

# -- the call-time pipeline: a weighted 3x3 blur over [1, R] x [1, C] --------------------------

R = Parameter(Int, "R")
C = Parameter(Int, "C")
W = Parameter(Float, "w")
x = Variable(Int, "x")
y = Variable(Int, "y")
img = Image(Float, "img", [R + 2, C + 2])
blur = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 1, C)]), Float, "blur")
blur.defn = [W * sum(img(x + i, y + j) for i in (-1, 0, 1) for j in (-1, 0, 1)) / 9]

ROWS, COLS = 5, 6


def _image(rows=ROWS + 2, cols=COLS + 2, dtype=np.float32):
    return np.arange(rows * cols, dtype=dtype).reshape(rows, cols)


@pytest.fixture(scope="module")
def pipe():
    return polyimage.compile(blur)


RUNNERS = ["compiled", "interpreted"]


def _run(pipe, which, **kwargs):
    """Call the compiled pipeline, or interpret the same pipeline, with the same arguments."""
    if which == "compiled":
        return pipe(**kwargs)
    return polyimage.interpret(blur, **kwargs)


def test_good_call_works(pipe):
    """The fixture pipeline itself is fine: both runners agree with NumPy."""
    a = _image()
    expected = (
        0.5
        * sum(a[1 + i : 1 + i + ROWS, 1 + j : 1 + j + COLS] for i in (-1, 0, 1) for j in (-1, 0, 1))
        / 9
    )
    for which in RUNNERS:
        np.testing.assert_allclose(_run(pipe, which, img=a, w=0.5), expected, rtol=1e-5)


@pytest.mark.parametrize("which", RUNNERS)
def test_wrong_dtype(pipe, which):
    with pytest.raises(
        TypeError,
        match=r"image img must have dtype float32 \(Float\), got "
        r"float64",
    ):
        _run(pipe, which, img=_image(dtype=np.float64), w=1.0)


@pytest.mark.parametrize("which", RUNNERS)
def test_wrong_rank(pipe, which):
    with pytest.raises(ValueError, match=r"image img must have 2 dimension\(s\).*shape \(7,\)"):
        _run(pipe, which, img=np.zeros(7, np.float32), w=1.0)
    with pytest.raises(ValueError, match=r"image img must have 2 dimension\(s\)"):
        _run(pipe, which, img=np.zeros((7, 8, 3), np.float32), w=1.0)


@pytest.mark.parametrize("which", RUNNERS)
def test_shape_inconsistent_with_given_parameter(pipe, which):
    # R=5 asks for 7 rows; the image has 10
    with pytest.raises(
        ValueError,
        match=r"image img: dimension 0 must have extent R \+ 2 = 7 "
        r"\(R=5\), got shape \(10, 8\)",
    ):
        _run(pipe, which, img=_image(rows=10), R=5, w=1.0)
    with pytest.raises(ValueError, match=r"image img: dimension 1 .*C \+ 2 = 4 \(C=2\)"):
        _run(pipe, which, img=_image(), C=2, w=1.0)


@pytest.mark.parametrize("which", RUNNERS)
def test_missing_image(pipe, which):
    with pytest.raises(
        TypeError,
        match=r"missing input image img \(Float, extents "
        r"\[R \+ 2, C \+ 2\]\)",
    ):
        _run(pipe, which, w=1.0, R=5, C=6)


@pytest.mark.parametrize("which", RUNNERS)
def test_unknown_keyword(pipe, which):
    with pytest.raises(
        TypeError,
        match=r"unknown argument 'image'.*images img.*parameters "
        r"C, R, w",
    ):
        _run(pipe, which, img=_image(), image=_image(), w=1.0)


@pytest.mark.parametrize("which", RUNNERS)
def test_missing_parameter_that_cannot_be_inferred(pipe, which):
    with pytest.raises(TypeError, match=r"missing parameter w\b"):
        _run(pipe, which, img=_image())


@pytest.mark.parametrize("which", RUNNERS)
def test_integer_parameter_given_float(pipe, which):
    with pytest.raises(TypeError, match=r"parameter R is an integer \(Int\), got 5\.0"):
        _run(pipe, which, img=_image(), R=5.0, w=1.0)


@pytest.mark.parametrize("which", RUNNERS)
def test_parameter_given_non_number(pipe, which):
    with pytest.raises(TypeError, match=r"parameter w must be a number, got '1'"):
        _run(pipe, which, img=_image(), w="1")
    with pytest.raises(TypeError, match=r"parameter w must be a number, got True"):
        _run(pipe, which, img=_image(), w=True)


@pytest.mark.parametrize("which", RUNNERS)
def test_parameter_out_of_its_type_range(pipe, which):
    with pytest.raises(ValueError, match=r"parameter R=2147483648 does not fit its type Int"):
        _run(pipe, which, img=_image(), R=2**31, w=1.0)
    with pytest.raises(ValueError, match=r"parameter C=-2147483649 does not fit its type Int"):
        _run(pipe, which, img=_image(), C=-(2**31) - 1, w=1.0)


@pytest.mark.parametrize("which", RUNNERS)
def test_parameter_makes_stage_domain_empty(pipe, which):
    # a 2 x 8 image gives R = 0: blur's rows [1, R] are empty
    with pytest.raises(
        ValueError,
        match=r"R=0 make the domain of blur empty: x in \[1, R\] "
        r"= \[1, 0\]",
    ):
        _run(pipe, which, img=_image(rows=2), w=1.0)


@pytest.mark.parametrize("which", RUNNERS)
def test_image_not_a_numpy_array(pipe, which):
    with pytest.raises(TypeError, match=r"image img must be a NumPy array, got list"):
        _run(pipe, which, img=_image().tolist(), w=1.0)


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2"])
def test_bad_threads(pipe, threads):
    with pytest.raises(
        ValueError,
        match=r"threads must be an integer from 1 to \d+, got " + re.escape(repr(threads)),
    ):
        pipe(img=_image(), w=1.0, threads=threads)


def test_good_threads_and_out(pipe):
    out = np.full((ROWS, COLS), np.nan, np.float32)
    result = pipe(img=_image(), w=1.0, threads=np.int64(2), out=out)
    assert result is out
    np.testing.assert_allclose(out, pipe(img=_image(), w=1.0, threads=1), rtol=1e-6)


def test_out_wrong_dtype(pipe):
    with pytest.raises(
        ValueError,
        match=r"out for blur must be a float32 array of shape "
        r"\(5, 6\), got float64 \(5, 6\)",
    ):
        pipe(img=_image(), w=1.0, out=np.empty((ROWS, COLS), np.float64))


def test_out_wrong_shape(pipe):
    with pytest.raises(
        ValueError,
        match=r"out for blur must be a float32 array of shape "
        r"\(5, 6\), got float32 \(7, 8\)",
    ):
        pipe(img=_image(), w=1.0, out=np.empty((ROWS + 2, COLS + 2), np.float32))


def test_out_wrong_count(pipe):
    with pytest.raises(ValueError, match=r"out= must hold 1 array\(s\) \(blur\), got 2"):
        pipe(img=_image(), w=1.0, out=[np.empty((ROWS, COLS), np.float32)] * 2)


def test_out_not_an_array(pipe):
    with pytest.raises(ValueError, match=r"out for blur must be a float32 array.*got list"):
        pipe(img=_image(), w=1.0, out=[np.zeros((ROWS, COLS), np.float32).tolist()])


def test_out_non_contiguous(pipe):
    strided = np.empty((ROWS, 2 * COLS), np.float32)[:, ::2]
    with pytest.raises(ValueError, match=r"out for blur must be C-contiguous"):
        pipe(img=_image(), w=1.0, out=strided)


def test_out_read_only(pipe):
    out = np.empty((ROWS, COLS), np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match=r"out for blur must be C-contiguous and writeable"):
        pipe(img=_image(), w=1.0, out=out)


def test_out_overlapping_an_input(pipe):
    memory = np.zeros((ROWS + 2) * (COLS + 2), np.float32)
    a = memory.reshape(ROWS + 2, COLS + 2)
    out = memory[COLS + 2 : COLS + 2 + ROWS * COLS].reshape(ROWS, COLS)
    with pytest.raises(ValueError, match=r"out for blur overlaps img"):
        pipe(img=a, w=1.0, out=out)


@pytest.fixture(scope="module")
def two_outputs():
    """f(x) = 2 * a(R - 1 - x) and g(x) = a(x) + 1, both the shape of their input a."""
    a = Image(Float, "a", [R])
    f = Function(([x], [Interval(Int, 0, R - 1)]), Float, "f")
    f.defn = [a(R - 1 - x) * 2]
    g = Function(([x], [Interval(Int, 0, R - 1)]), Float, "g")
    g.defn = [a(x) + 1]
    return polyimage.compile([f, g])


def test_two_outputs_with_out(two_outputs):
    data = np.arange(6, dtype=np.float32)
    outs = [np.empty(6, np.float32), np.empty(6, np.float32)]
    result = two_outputs(a=data, out=outs)
    assert result[0] is outs[0] and result[1] is outs[1]
    np.testing.assert_array_equal(outs[0], 2 * data[::-1])
    np.testing.assert_array_equal(outs[1], data + 1)
    with pytest.raises(ValueError, match=r"out= must hold 2 array\(s\) \(f, g\), got 1"):
        two_outputs(a=data, out=outs[0])


def test_out_is_the_input_array_itself(two_outputs):
    """The very input array given as an output overlaps it as much as anything can."""
    data = np.arange(6, dtype=np.float32)
    with pytest.raises(ValueError, match=r"out for f overlaps a"):
        two_outputs(a=data, out=[data, np.empty(6, np.float32)])
    np.testing.assert_array_equal(data, np.arange(6, dtype=np.float32))


def test_out_same_array_for_two_outputs(two_outputs):
    data = np.arange(6, dtype=np.float32)
    shared = np.empty(6, np.float32)
    with pytest.raises(ValueError, match=r"out for f overlaps g"):
        two_outputs(a=data, out=[shared, shared])


def test_out_overlapping_another_output(two_outputs):
    data = np.arange(6, dtype=np.float32)
    memory = np.empty(9, np.float32)
    with pytest.raises(ValueError, match=r"out for f overlaps g"):
        two_outputs(a=data, out=[memory[:6], memory[3:]])


@pytest.fixture(scope="module")
def constrained_pipe():
    return polyimage.compile(blur, constraints=[R >= 8])


def test_violated_constraint(constrained_pipe):
    with pytest.raises(ValueError, match=r"R=5 violate the constraint R >= 8"):
        constrained_pipe(img=_image(), w=1.0)
    with pytest.raises(ValueError, match=r"R=5 violate the constraint R >= 8"):
        polyimage.interpret(blur, constraints=[R >= 8], img=_image(), w=1.0)
    # satisfied: runs
    assert constrained_pipe(img=_image(rows=10), w=1.0).shape == (8, COLS)


# -- construction and compile time -------------------------------------------------------------

N = Parameter(Int, "N")
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
