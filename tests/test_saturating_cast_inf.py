"""saturating_cast from every type to every type: a float destination gets a finite value
(infinities clamped to its largest finite number, NaN kept, -0.0 kept), an integer one the
saturated value; compiled, interpreted and a NumPy reference agree bit for bit."""

import numpy as np
import pytest
from helpers import FLOAT_TYPES, IGNORE, INT_TYPES, interesting_ints, saturate

import polyimage
from polyimage import Function, Half, Image, Int, Interval, Parameter, Variable, saturating_cast

ALL_TYPES = [*INT_TYPES, Half, *FLOAT_TYPES]
FLOAT_DTYPES = (np.float16, np.float32, np.float64)


def _values(source) -> np.ndarray:
    """The limits of `source`, and for a float source infinities, NaN, zeros of both signs and
    the largest finite number of every float type (65520 rounds to a Half's inf)."""
    if source.is_int:
        return np.array(interesting_ints(source.dtype), source.dtype)
    tops = [float(np.finfo(d).max) for d in FLOAT_DTYPES]
    values = [np.inf, -np.inf, np.nan, -0.0, 0.0, 1.5, -2.5, 65520.0]
    values += [v for t in tops for v in (t, -t)]
    with np.errstate(**IGNORE):  # a larger type's top overflows to inf: one more inf
        return np.array(values).astype(source.dtype)


def _reference(values: np.ndarray, target) -> np.ndarray:
    """`values` clamped to the range of `target` (its finite range for a float), converted."""
    if target.is_int and values.dtype.kind == "f":
        return np.array(saturate(values, target.dtype), target.dtype)
    info = np.iinfo(target.dtype) if target.is_int else np.finfo(target.dtype)
    if values.dtype.kind in "iu":
        lo, hi = np.iinfo(values.dtype).min, np.iinfo(values.dtype).max
        low, high = max(int(info.min), int(lo)), min(int(info.max), int(hi))
        return np.clip(values, low, high).astype(target.dtype)
    wide = np.promote_types(np.promote_types(values.dtype, np.float32), target.dtype)
    return np.clip(values.astype(wide), info.min, info.max).astype(target.dtype)


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}")


@pytest.mark.parametrize("source", ALL_TYPES, ids=str)
def test_saturating_cast_of_every_pair_is_finite_and_clamped(source):
    n, i = Parameter(Int, "n"), Variable(Int, "i")
    img = Image(source, "img", [n])
    outputs = []
    for target in ALL_TYPES:
        f = Function(([i], [Interval(Int, 0, n - 1)]), target, f"to_{target}")
        f.defn = [saturating_cast(target, img(i))]
        outputs.append(f)
    values = _values(source)
    compiled = polyimage.compile(outputs, schedule="naive")(img=values)
    interpreted = polyimage.interpret(outputs, img=values)
    for target, got, ref in zip(ALL_TYPES, compiled, interpreted):
        want = _reference(values, target)
        what = f"saturating_cast({target}) of {source} {values.tolist()}"
        assert got.dtype == ref.dtype == want.dtype, what
        np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=f"compiled {what}")
        np.testing.assert_array_equal(_bits(ref), _bits(want), err_msg=f"interpreted {what}")
        if target.is_float:
            assert np.isfinite(want[~np.isnan(values)]).all(), what
