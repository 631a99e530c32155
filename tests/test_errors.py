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
    Float,
    Function,
    Image,
    Int,
    Interval,
    Parameter,
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
        r"float64; convert it with \.astype\(np\.float32\)",
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
    with pytest.raises(
        TypeError, match=r"image img must be an array \(NumPy, or any CPU array.*got list"
    ):
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
