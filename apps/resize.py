"""Bicubic resampling of an RGB photo by the non-integer factor 3/4 (Halide's apps/resize,
cubic), separably: along the columns (the contiguous dimension), then along the rows.

Output pixel j of an axis is centred at s = (j + 1/2) / scale - 1/2 of the input. The Keys
cubic kernel (a = -1/2) is widened by 1/scale when downsampling, as Halide does, to filter out
what the coarser grid cannot hold: 6 taps at 3/4 (4 when upsampling), from b = ceil(s -
radius) on, each weighted by the kernel at (b + k - s) * scale and normalised by the weights'
sum. Tap indices are clamped into the image (the edge repeated); Halide instead shifts the
first tap so that all of them fall inside, which changes only the pixels near the border.

Everything but the kernel is integer arithmetic: the scale is the fraction P/Q, so that b, the
tap offsets times 2P and the output sizes are affine in the output index and the size
parameters (divisions by constants). A float scale Parameter is not expressible: the output
domain's extent would depend on a float, and indices computed from it are not affine (they
would be clamped at run time). 6 stages: kernel and weights per axis, then the two passes.

The photo is channel-first (3, R, C) float32 in [0, 1]; the output is (3, ceil(R P/Q),
ceil(C P/Q)), clamped to [0, 1] (the cubic overshoots at edges), as Halide's float version.
"""

import math

import numpy as np

from polyimage import (
    Abs,
    Cast,
    Clamp,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Parameter,
    Select,
    Variable,
)

from .inputs import fit, to_float

NAME = "resize"
DESCRIPTION = "the photo resampled to 3/4 of its size with a widened bicubic (Keys) kernel"
PAPER_SIZE = {"R": 2848, "C": 4256}  # the photo apps' size; the output is 2136 x 3192
SMALL_SIZE = {"R": 67, "C": 93}
DEFAULTS = {}
PHOTOS = ("astronaut.png",)
SCALE = (3, 4)  # P/Q: output size over input size
TAPS = 4  # of the cubic kernel, before widening


class Axis:
    """The integer arithmetic of resampling one axis by P/Q, for DSL expressions and NumPy
    integer arrays alike (floor division and `+ - *` behave the same on both)."""

    def __init__(self, scale):
        self.p, self.q = scale
        # the kernel's argument is scaled by kn/kd: P/Q when downsampling, 1 when upsampling
        self.kn, self.kd = (self.p, self.q) if self.p < self.q else (1, 1)
        self.taps = math.ceil(TAPS * self.kd / self.kn)

    def size(self, n):
        """Output points for n input points: ceil(n P/Q)."""
        return (n * self.p + self.q - 1) // self.q

    def begin(self, j):
        """The first tap of output point j: ceil(s - radius), with s - radius =
        ((2j + 1) Q - P) / 2P - 2 kd/kn, as one fraction."""
        numerator = ((2 * j + 1) * self.q - self.p) * self.kn - 4 * self.kd * self.p
        denominator = 2 * self.p * self.kn
        return (numerator + denominator - 1) // denominator

    def offset(self, j, k):
        """(b + k - s) * kn/kd as an integer numerator over `denominator`."""
        return (2 * self.p * (self.begin(j) + k) - (2 * j + 1) * self.q + self.p) * self.kn

    @property
    def denominator(self):
        return 2 * self.p * self.kd


def cubic(t, select, absolute):
    """The Keys cubic (a = -1/2) at t, with `select(cond, a, b)` and `absolute` of the DSL or
    NumPy; Horner forms, the same operations in the same order on both sides."""
    t = absolute(t)
    near = (1.5 * t - 2.5) * t * t + 1.0
    far = ((-0.5 * t + 2.5) * t - 4.0) * t + 2.0
    return select(t < 1.0, near, select(t < 2.0, far, 0.0 * t))


def _fold(terms):
    """terms[0] + terms[1] + ..., in that order."""
    return sum(terms[1:], terms[0])


def build(scale=SCALE):
    """(outputs, parameters) of the pipeline, resampling by `scale` = (P, Q)."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    c, x, y, k = (Variable(Int, n) for n in ("c", "x", "y", "k"))
    img = Image(Float, "img", [3, R, C])
    axis = Axis(scale)
    taps = Interval(Int, 0, axis.taps - 1)
    out_rows, out_cols = Interval(Int, 0, axis.size(R) - 1), Interval(Int, 0, axis.size(C) - 1)

    def weights(name, j, points):
        kernel = Function(([k, j], [taps, points]), Float, f"kernel_{name}")
        argument = Cast(Float, axis.offset(j, k)) / float(axis.denominator)
        kernel.defn = [cubic(argument, Select, Abs)]
        normalised = Function(([k, j], [taps, points]), Float, f"weights_{name}")
        normalised.defn = [kernel(k, j) / _fold([kernel(i, j) for i in range(axis.taps)])]
        return normalised

    weights_cols, weights_rows = weights("cols", y, out_cols), weights("rows", x, out_rows)
    channels = Interval(Int, 0, 2)
    resized_cols = Function(
        ([c, x, y], [channels, Interval(Int, 0, R - 1), out_cols]), Float, "resized_cols"
    )
    resized_cols.defn = [
        _fold(
            [
                weights_cols(i, y) * img(c, x, Clamp(axis.begin(y) + i, 0, C - 1))
                for i in range(axis.taps)
            ]
        )
    ]
    resized = Function(([c, x, y], [channels, out_rows, out_cols]), Float, "resized")
    rows_sum = _fold(
        [
            weights_rows(i, x) * resized_cols(c, Clamp(axis.begin(x) + i, 0, R - 1), y)
            for i in range(axis.taps)
        ]
    )
    resized.defn = [Clamp(rows_sum, 0.0, 1.0)]
    return [resized], {"R": R, "C": C}


def prepare(photos, size=None):
    """Inputs from one HWC photo (any dtype): float32 in [0, 1], channel first, cropped or
    mirror-tiled to `size` = {"R": rows, "C": cols} when given."""
    rgb = to_float(photos[0], channels=3)
    if size:
        rgb = fit(rgb, size["R"], size["C"])
    return {"img": np.ascontiguousarray(rgb.transpose(2, 0, 1))}


def axis_weights(n, scale=SCALE):
    """(tap indices, weights) of resampling n points by `scale`, each (taps, output points):
    NumPy, independently of the DSL."""
    axis = Axis(scale)
    j = np.arange(axis.size(n))[None, :]
    k = np.arange(axis.taps)[:, None]
    argument = axis.offset(j, k).astype(np.float32) / np.float32(axis.denominator)
    kernel = cubic(argument, np.where, np.abs).astype(np.float32)
    total = _fold(list(kernel))
    return np.clip(axis.begin(j) + k, 0, n - 1), kernel / total


def reference(img, scale=SCALE, **_):
    """NumPy version written from the algorithm, independently of the interpreter."""
    index, weight = axis_weights(img.shape[2], scale)
    cols = _fold([weight[i] * img[:, :, index[i]] for i in range(len(weight))])
    index, weight = axis_weights(img.shape[1], scale)
    rows = _fold([weight[i][:, None] * cols[:, index[i], :] for i in range(len(weight))])
    return np.clip(rows, np.float32(0), np.float32(1))


def to_photo(output):
    """The output as an HWC float image for saving."""
    return np.clip(output.transpose(1, 2, 0), 0, 1)
