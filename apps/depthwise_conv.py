"""A depthwise-separable convolution layer (Halide's apps/depthwise_separable_conv, float32):
a 3x3 convolution of each input channel on its own, then a pointwise (1x1) convolution mixing
the CI channels into CO output channels, plus a bias, then ReLU. 3 stages:

  depthwise  the 9 taps of each channel's 3x3 filter, summed row by row
  pointwise  a Reduction over the input channels rc (in order) of weight(d, rc) * depthwise(rc)
  output     max(pointwise + bias(d), 0)

The layout is Halide's: channels innermost, the activation (N, R+2, C+2, CI) with a 1-pixel
border of zeros (the layer's "same" padding, Halide's zero boundary), the depthwise filter
(3, 3, CI), the pointwise filter (CI, CO), the output (N, R, C, CO). CI = 32 and CO = 16 are
fixed, as in Halide's benchmark (MobileNet v2's second layer, one output channel per input
channel in the depthwise step). The input is not a photo: prepare() draws a seeded
pseudo-random activation and weights.
"""

import math

import numpy as np

from polyimage import (
    Float,
    Function,
    Image,
    Int,
    Interval,
    Max,
    Op,
    Parameter,
    Reduce,
    Reduction,
    Variable,
)

NAME = "depthwise_conv"
DESCRIPTION = "a depthwise-separable conv layer on random data: its 16 output channels tiled 4x4"
# Halide's benchmark sizes: batch N = 4 of 112 x 112 points (its app sets no other)
PAPER_SIZE = {"N": 4, "R": 112, "C": 112}
SMALL_SIZE = {"N": 2, "R": 13, "C": 19}
DEFAULTS = {}
PHOTOS = ()
CI, CO = 32, 16
TAPS = tuple((dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1))
BORDER = 1
SEED = 38


def build():
    """(outputs, parameters) of the pipeline."""
    N, R, C = Parameter(Int, "N"), Parameter(Int, "R"), Parameter(Int, "C")
    n, x, y, ch = (Variable(Int, v) for v in ("n", "x", "y", "ch"))
    rn, rx, ry, rc, rd = (Variable(Int, v) for v in ("rn", "rx", "ry", "rc", "rd"))
    img = Image(Float, "img", [N, R + 2, C + 2, CI])
    depthwise_filter = Image(Float, "depthwise_filter", [3, 3, CI])
    pointwise_filter = Image(Float, "pointwise_filter", [CI, CO])
    bias = Image(Float, "bias", [CO])
    batch, rows, cols = Interval(Int, 0, N - 1), Interval(Int, 1, R), Interval(Int, 1, C)
    inputs, outputs = Interval(Int, 0, CI - 1), Interval(Int, 0, CO - 1)

    depthwise = Function(([n, x, y, ch], [batch, rows, cols, inputs]), Float, "depthwise")
    terms = [depthwise_filter(dx + 1, dy + 1, ch) * img(n, x + dx, y + dy, ch) for dx, dy in TAPS]
    depthwise.defn = [sum(terms[1:], terms[0])]
    # the input channel rc runs outside the output channel rd: every cell sums rc in order
    pointwise = Reduction(
        ([n, x, y, ch], [batch, rows, cols, outputs]),
        ([rn, rx, ry, rc, rd], [batch, rows, cols, inputs, outputs]),
        Float,
        "pointwise",
    )
    pointwise.defn = [
        Reduce(
            pointwise(rn, rx, ry, rd),
            pointwise_filter(rc, rd) * depthwise(rn, rx, ry, rc),
            Op.Sum,
        )
    ]
    output = Function(([n, x, y, ch], [batch, rows, cols, outputs]), Float, "output")
    output.defn = [Max(pointwise(n, x, y, ch) + bias(ch), 0.0)]
    return [output], {"N": N, "R": R, "C": C}


def prepare(photos=(), size=None):
    """A seeded pseudo-random activation in [0, 1) (as after an earlier ReLU) of `size`
    (PAPER_SIZE when not given) with its zero border, and the layer's weights; `photos` is
    not used."""
    size = size or PAPER_SIZE
    rng = np.random.default_rng(SEED)
    activation = rng.random((size["N"], size["R"], size["C"], CI), dtype=np.float32)
    pad = ((0, 0), (BORDER, BORDER), (BORDER, BORDER), (0, 0))
    return {
        "img": np.pad(activation, pad),
        "depthwise_filter": (rng.standard_normal((3, 3, CI)) / 3).astype(np.float32),
        "pointwise_filter": (rng.standard_normal((CI, CO)) / math.sqrt(CI)).astype(np.float32),
        "bias": (rng.standard_normal(CO) * 0.1).astype(np.float32),
    }


def reference(img, depthwise_filter, pointwise_filter, bias, **_):
    """NumPy version written from the algorithm, independently of the interpreter."""
    rows, cols = img.shape[1] - 2 * BORDER, img.shape[2] - 2 * BORDER
    terms = [
        depthwise_filter[dx + 1, dy + 1] * img[:, 1 + dx : 1 + dx + rows, 1 + dy : 1 + dy + cols]
        for dx, dy in TAPS
    ]
    depthwise = sum(terms[1:], terms[0])
    total = np.zeros(depthwise.shape[:3] + (CO,), np.float32)
    for rc in range(CI):
        total = total + pointwise_filter[rc] * depthwise[..., rc : rc + 1]
    return np.maximum(total + bias, np.float32(0))


def to_photo(output):
    """The first batch item's output channels as grey tiles of a square-ish grid, scaled
    together (a high percentile white)."""
    maps = np.asarray(output[0], np.float64).transpose(2, 0, 1)
    count, rows, cols = maps.shape
    across = math.ceil(math.sqrt(count))
    down = math.ceil(count / across)
    grid = np.zeros((down * rows, across * cols))
    for i, tile in enumerate(maps):
        r, c = divmod(i, across)
        grid[r * rows : (r + 1) * rows, c * cols : (c + 1) * cols] = tile
    scale = np.percentile(grid, 99.5) if grid.size else 0.0
    return np.clip(grid / scale, 0, 1) if scale > 0 else np.zeros_like(grid)
