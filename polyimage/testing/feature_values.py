"""The values of a random feature pipeline computed apart from the interpreter, by NumPy's own
semantics and Python's integers: the integer operations exactly at their type's limits, Cast
and saturating_cast, Half through NumPy's float16 conversions, border reads through np.pad's
modes, and Reductions applied one point at a time in the order of their reduction variables;
with the input data they draw (type limits, Half's specials, NaNs with payloads)."""

from __future__ import annotations

from typing import Any

import numpy as np

# each border mode's np.pad mode
PAD_MODES: dict[str, Any] = {
    "repeat_edge": "edge",
    "mirror": "symmetric",
    "mirror_interior": "reflect",
    "wrap": "wrap",
    "constant_exterior": "constant",
}
INTEGER_DTYPES = tuple(
    np.dtype(t)
    for t in (np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)
)
# NaNs of both signs with payloads, a signaling one, infinities, zeros of both signs,
# subnormals, the largest finite Half, and values next to Half's overflow to infinity
HALF_BITS = (0x7E00, 0xFE00, 0x7E5A, 0x7C01, 0x7C00, 0xFC00, 0x0000, 0x8000, 0x0001, 0x83FF)
HALF_VALUES = (65504.0, -65504.0, 65519.0, 1.0, -0.5, 6.1e-5, 2048.0, 3.0)
FLOAT_VALUES = (0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -3e38, 65519.996, 65520.0, 7e4, 0.5)
UFUNCS = {"Sum": np.add, "Mul": np.multiply, "Min": np.minimum, "Max": np.maximum}


def limits(dtype) -> tuple:
    """The smallest and largest values of an integer dtype, as Python ints."""
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _typed(ints, dtype) -> np.ndarray:
    return np.asarray(ints, dtype=object).astype(np.dtype(dtype))


def wrapped(ints, dtype) -> np.ndarray:
    """Python integers (an object array) reduced modulo 2**bits into `dtype`."""
    lo, hi = limits(dtype)
    return _typed((np.asarray(ints, dtype=object) - lo) % (hi - lo + 1) + lo, dtype)


def clipped(ints, dtype) -> np.ndarray:
    """Python integers clamped to the range of `dtype`."""
    lo, hi = limits(dtype)
    return _typed(np.minimum(np.maximum(np.asarray(ints, dtype=object), lo), hi), dtype)


def _floor_divide(a, b):
    return a // b if b else 0


def _remainder(a, b):
    return a % b if b else 0


_DIVIDE = np.frompyfunc(_floor_divide, 2, 1)
_REMAIN = np.frompyfunc(_remainder, 2, 1)


def integer_op(fn: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`fn` (an integer operation of dsl.image_ops, or + - * // % wrapping) on arrays of one
    integer dtype, computed exactly with Python integers and then saturated, narrowed or
    wrapped into the result's dtype as the DSL documents."""
    dtype = a.dtype
    x, y = a.astype(object), b.astype(object)
    unsigned = np.dtype(f"u{dtype.itemsize}")
    exact = {
        "saturating_add": lambda: clipped(x + y, dtype),
        "saturating_sub": lambda: clipped(x - y, dtype),
        "absd": lambda: _typed(np.abs(x - y), unsigned),
        "halving_add": lambda: _typed((x + y) >> 1, dtype),
        "rounding_halving_add": lambda: _typed((x + y + 1) >> 1, dtype),
        "widening_mul": lambda: _typed(x * y, f"{dtype.kind}{dtype.itemsize * 2}"),
        "+": lambda: wrapped(x + y, dtype),
        "-": lambda: wrapped(x - y, dtype),
        "*": lambda: wrapped(x * y, dtype),
        "//": lambda: wrapped(_DIVIDE(x, y), dtype),
        "%": lambda: wrapped(_REMAIN(x, y), dtype),
    }
    return exact[fn]()


def _to_integer(value: float, lo: int, hi: int) -> int:
    if value != value:
        return 0
    if value <= lo:
        return lo
    return hi if value >= hi else int(value)


_TO_INTEGER = np.frompyfunc(_to_integer, 3, 1)


def cast(values: np.ndarray, dtype) -> np.ndarray:
    """Cast: integers wrap, floats to integers truncate toward zero and saturate (NaN gives
    0), to floating point NumPy's own conversion (one rounding, from the source type)."""
    values, dtype = np.asarray(values), np.dtype(dtype)
    with np.errstate(all="ignore"):
        if dtype.kind == "f":
            return values.astype(dtype)
        if values.dtype.kind == "f":
            return _typed(_TO_INTEGER(values.astype(np.float64), *limits(dtype)), dtype)
    return wrapped(values.astype(object), dtype)


def saturating_cast(values: np.ndarray, dtype) -> np.ndarray:
    """saturating_cast: clamped to `dtype`'s range (floats to its finite range, infinities
    too, in the wider of the two types; NaN kept), then Cast."""
    values, dtype = np.asarray(values), np.dtype(dtype)
    if dtype.kind in "iu":
        return cast(values, dtype) if values.dtype.kind == "f" else clipped(values, dtype)
    top = float(np.finfo(dtype).max)
    if values.dtype.kind == "f":
        wide = max(values.dtype, dtype, key=lambda t: t.itemsize)
        values = values.astype(wide)
        return np.clip(values, wide.type(-top), wide.type(top)).astype(dtype)
    return cast(_typed(np.clip(values.astype(object), -int(top), int(top)), values.dtype), dtype)


def arithmetic(values: np.ndarray) -> np.ndarray:
    """Values as the DSL computes with them: Half widened to float32, others as they are."""
    return values.astype(np.float32) if values.dtype == np.float16 else values


def padded_read(values, lows, coords, mode=None, dims=(), constant=0) -> np.ndarray:
    """`values`, a box whose first point is `lows`, read at the integer points `coords` (one
    array per dimension, broadcasting): directly, or through np.pad's form of the border
    `mode` along `dims`, wide enough for every point read."""
    widths = []
    for d, (c, lo) in enumerate(zip(coords, lows)):
        hi = lo + values.shape[d] - 1
        inside = d not in dims or mode is None
        widths.append((0, 0) if inside else (max(lo - int(c.min()), 0), max(int(c.max()) - hi, 0)))
    if mode is not None:
        extra = {"constant_values": constant} if mode == "constant_exterior" else {}
        values = np.pad(values, widths, mode=PAD_MODES[mode], **extra)
    return values[tuple(c - lo + w[0] for c, lo, w in zip(coords, lows, widths))]


def reduced(start: np.ndarray, updates: list) -> np.ndarray:
    """A Reduction's values: `start` (its default at every cell), then at each reduction
    point in order, every update (op, applies, cells, values) that applies there, in the order
    of the updates: flat arrays over the reduction points in their order."""
    out = start.copy()
    count = len(updates[0][1]) if updates else 0
    with np.errstate(all="ignore"):
        for n in range(count):
            for op, applies, cells, values in updates:
                if applies[n]:
                    cell = tuple(int(c[n]) for c in cells)
                    out[cell] = UFUNCS[op](out[cell], values[n])
    return out


def draw_values(np_rng, dtype, shape) -> np.ndarray:
    """An input array of `dtype`: integers over their whole range with the limits and the
    numbers next to them and to zero mixed in; Half and Float values mostly of moderate size,
    with their specials (HALF_BITS, HALF_VALUES, FLOAT_VALUES) mixed in."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        lo, hi = limits(dtype)
        data = np_rng.integers(lo, hi, size=shape, dtype=dtype, endpoint=True)
        specials = np.array([v for v in (lo, lo + 1, -1, 0, 1, 2, 7, hi - 1, hi) if lo <= v], dtype)
    elif dtype == np.float16:
        data = np_rng.normal(0, 300, shape).astype(np.float16)
        bits = np.array(HALF_BITS, np.uint16).view(np.float16)
        specials = np.concatenate([bits, np.array(HALF_VALUES, np.float16)])
    else:
        data = np_rng.normal(0, 100, shape).astype(np.float32)
        specials = np.array(FLOAT_VALUES, np.float32)
    picks = np_rng.random(shape) < 0.35
    data[picks] = np_rng.choice(specials, int(picks.sum()))
    return data
