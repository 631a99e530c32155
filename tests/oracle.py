"""Run a pipeline compiled and interpreted, and compare the two (and a NumPy reference):
bit for bit where the docs promise it (bit_exact), else floats within FLOAT_TOLERANCE."""

import numpy as np

import polyimage

# float32 math functions of NumPy and of libm may differ in the last bit or two; Half values
# are rounded from the same Float on both sides: exact
FLOAT_TOLERANCE = {
    np.dtype(np.float16): (0, 0),
    np.dtype(np.float32): (1e-5, 1e-6),
    np.dtype(np.float64): (1e-12, 1e-14),
}


def assert_same(actual, expected, what="result", exact=False):
    """Bit-exact for integers, and for floating point when `exact` (the sign of zeros
    included; any NaN matches any NaN); otherwise within FLOAT_TOLERANCE (NaNs matching) for
    floating point, and zeros of the same sign (an integer's zero converted to float is +0,
    -x * 0 is -0)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if exact:
        assert_same_bits(actual, expected, what, nan_payloads=False)
        return
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


def assert_same_bits(actual, expected, what="result", nan_payloads=True):
    """The same shape, dtype and bits at every point, the first differing point named with
    both values. Without `nan_payloads` a NaN matches any NaN: the docs promise NaN payloads
    through conversions, not which NaN an operation on NaNs returns."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    bits = np.dtype(f"u{actual.dtype.itemsize}")
    differ = actual.view(bits) != expected.view(bits)
    if actual.dtype.kind == "f" and not nan_payloads:
        differ &= ~(np.isnan(actual) & np.isnan(expected))
    if differ.any():
        first = tuple(int(i) for i in np.argwhere(differ)[0])
        a, e = actual[first], expected[first]
        raise AssertionError(
            f"{what}: {int(differ.sum())} of {differ.size} values differ in their bits, first at "
            f"{first}: {a!r} (0x{int(a.view(bits)):x}) != {e!r} (0x{int(e.view(bits)):x})"
        )


def bit_exact(pipe) -> bool:
    """Whether the docs promise `pipe`'s results equal the interpreter's bit for bit: built
    without multiply-add contraction nor reassociation, and no float Sum or Mul Reduction
    reassociated by chunks (a privatized one, docs/schedules.md)."""
    if pipe.options.contract or pipe.options.reassociate:
        return False
    for name, strategy in pipe.reductions.items():
        func = pipe.stage_graph.stage(name).func
        ops = {case.value.op.name for case in func.cases}
        if strategy.kind == "privatized" and func.typ.is_float and ops & {"Sum", "Mul"}:
            return False
    return True


def as_outputs(result) -> tuple:
    """A pipeline's or the interpreter's result as a tuple of outputs."""
    return result if isinstance(result, tuple) else (result,)


def assert_calls_match(pipe, expected, arguments, what, threads=(1, 2), calls=1, exact=None):
    """Call `pipe` `calls` times with each thread count on `arguments`; every output must be
    the same as in `expected` (the interpreter's result): bit for bit where `exact` (by
    default where bit_exact(pipe)). Returns the number of calls."""
    expected = as_outputs(expected)
    exact = bit_exact(pipe) if exact is None else exact
    for n in threads:
        for _ in range(calls):
            got = as_outputs(pipe(threads=n, **arguments))
            assert len(got) == len(expected), f"{what}: {len(got)} outputs, not {len(expected)}"
            for name, g, e in zip(pipe.graph.outputs, got, expected):
                assert_same(g, e, f"{what}, output {name}, {n} threads", exact)
    return len(threads) * calls


def run_both(outputs, reference=None, threads=None, **arguments):
    """Compile and interpret `outputs`; check they agree (bit for bit where bit_exact), and
    agree with `reference`, a NumPy result or tuple of them, when given (within the
    tolerance). Returns the compiled result."""
    pipe = polyimage.compile(outputs)
    compiled = pipe(threads=threads, **arguments)
    interpreted = polyimage.interpret(outputs, **arguments)
    pairs = zip(compiled, interpreted) if isinstance(compiled, tuple) else [(compiled, interpreted)]
    exact = bit_exact(pipe)
    for i, (c, r) in enumerate(pairs):
        assert_same(c, r, f"compiled vs interpreter, output {i}", exact)
    if reference is not None:
        refs = reference if isinstance(reference, tuple) else (reference,)
        outs = compiled if isinstance(compiled, tuple) else (compiled,)
        for i, (c, r) in enumerate(zip(outs, refs)):
            assert_same(c, np.asarray(r), f"compiled vs NumPy reference, output {i}")
    return compiled
