"""Run a pipeline compiled and interpreted, and compare the two (and a NumPy reference)."""

import numpy as np

import polyimage

# float32 math functions of NumPy and of libm may differ in the last bit or two; Half values
# are rounded from the same Float on both sides: exact
FLOAT_TOLERANCE = {
    np.dtype(np.float16): (0, 0),
    np.dtype(np.float32): (1e-5, 1e-6),
    np.dtype(np.float64): (1e-12, 1e-14),
}


def assert_same(actual, expected, what="result"):
    """Bit-exact for integers; within FLOAT_TOLERANCE (NaNs matching) for floating point, and
    zeros of the same sign (an integer's zero converted to float is +0, -x * 0 is -0)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    if actual.dtype.kind == "f":
        rtol, atol = FLOAT_TOLERANCE[actual.dtype]
        np.testing.assert_allclose(
            actual, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=what
        )
        zeros = (actual == 0) & (expected == 0)
        flipped = zeros & (np.signbit(actual) != np.signbit(expected))
        assert not flipped.any(), (
            f"{what}: {int(flipped.sum())} zeros of the other sign, first at "
            f"{tuple(int(i) for i in np.argwhere(flipped)[0])} "
            f"({actual[flipped][0]} != {expected[flipped][0]})"
        )
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


def as_outputs(result) -> tuple:
    """A pipeline's or the interpreter's result as a tuple of outputs."""
    return result if isinstance(result, tuple) else (result,)


def assert_calls_match(pipe, expected, arguments, what, threads=(1, 2), calls=1):
    """Call `pipe` `calls` times with each thread count on `arguments`; every output must be
    the same as in `expected` (the interpreter's result). Returns the number of calls."""
    expected = as_outputs(expected)
    for n in threads:
        for _ in range(calls):
            got = as_outputs(pipe(threads=n, **arguments))
            assert len(got) == len(expected), f"{what}: {len(got)} outputs, not {len(expected)}"
            for name, g, e in zip(pipe.graph.outputs, got, expected):
                assert_same(g, e, f"{what}, output {name}, {n} threads")
    return len(threads) * calls


def run_both(outputs, reference=None, threads=None, **arguments):
    """Compile and interpret `outputs`; check they agree (and agree with `reference`, a
    NumPy result or tuple of them, when given). Returns the compiled result."""
    pipe = polyimage.compile(outputs)
    compiled = pipe(threads=threads, **arguments)
    interpreted = polyimage.interpret(outputs, **arguments)
    pairs = zip(compiled, interpreted) if isinstance(compiled, tuple) else [(compiled, interpreted)]
    for i, (c, r) in enumerate(pairs):
        assert_same(c, r, f"compiled vs interpreter, output {i}")
    if reference is not None:
        refs = reference if isinstance(reference, tuple) else (reference,)
        outs = compiled if isinstance(compiled, tuple) else (compiled,)
        for i, (c, r) in enumerate(zip(outs, refs)):
            assert_same(c, np.asarray(r), f"compiled vs NumPy reference, output {i}")
    return compiled
