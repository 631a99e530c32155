"""A 3x3 convolution layer in NCHW, float32: every output channel sums the 3x3 taps of all CI
input channels, then adds its bias and goes through ReLU. 2 stages:

  conv  a Reduction over (ci, dx, dy), in that order, of weight(co, ci, dx, dy) *
        img(n, ci, x + dx, y + dy): 288 multiply-adds per output value
  relu  max(conv + bias(co), 0)

The activation is (N, CI, R+2, C+2) with a 1-pixel border of zeros (the layer's "same"
padding), the weights (CO, CI, 3, 3) as PyTorch stores them, the bias (CO), the output (N, CO,
R, C). CI = CO = 32 are fixed; the bench's size is a batch of 4 at 112 x 112. The inputs are
not photos: prepare() draws a seeded pseudo-random activation and weights. The same layer in
NHWC is the app conv_nhwc. Written for issue 52, not from the TOPLAS 2020 paper.
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

from . import depthwise_conv

NAME = "conv_nchw"
DESCRIPTION = "a 3x3 conv layer (+ bias, ReLU) in NCHW on random data: 32 channels tiled"
PAPER_SIZE = {"N": 4, "R": 112, "C": 112}
SMALL_SIZE = {"N": 2, "R": 11, "C": 17}
DEFAULTS = {}
PHOTOS = ()
CI, CO = 32, 32
TAPS = 3
BORDER = 1
SEED = 52


def build():
    """(outputs, parameters) of the pipeline."""
    N, R, C = Parameter(Int, "N"), Parameter(Int, "R"), Parameter(Int, "C")
    n, co, x, y, ci, dx, dy = (Variable(Int, v) for v in ("n", "co", "x", "y", "ci", "dx", "dy"))
    img = Image(Float, "img", [N, CI, R + 2 * BORDER, C + 2 * BORDER])
    weight = Image(Float, "weight", [CO, CI, TAPS, TAPS])
    bias = Image(Float, "bias", [CO])
    domain = [
        Interval(Int, 0, N - 1),
        Interval(Int, 0, CO - 1),
        Interval(Int, 0, R - 1),
        Interval(Int, 0, C - 1),
    ]
    taps = Interval(Int, 0, TAPS - 1)
    # n, co, x, y join the reduction domain before (ci, dx, dy): each cell sums ci, dx, dy in order
    conv = Reduction(
        ([n, co, x, y], domain),
        ([ci, dx, dy], [Interval(Int, 0, CI - 1), taps, taps]),
        Float,
        "conv",
    )
    conv.defn = [
        Reduce(conv(n, co, x, y), weight(co, ci, dx, dy) * img(n, ci, x + dx, y + dy), Op.Sum)
    ]
    relu = Function(([n, co, x, y], domain), Float, "relu")
    relu.defn = [Max(conv(n, co, x, y) + bias(co), 0.0)]
    return [relu], {"N": N, "R": R, "C": C}


def layer(size=None):
    """The layer's arrays in NCHW: a seeded pseudo-random activation in [0, 1) (as after an
    earlier ReLU) of `size` (PAPER_SIZE when not given) with its zero border, the weights
    (He-scaled normal) and the bias."""
    size = size or PAPER_SIZE
    rng = np.random.default_rng(SEED)
    activation = rng.random((size["N"], CI, size["R"], size["C"]), dtype=np.float32)
    pad = ((0, 0), (0, 0), (BORDER, BORDER), (BORDER, BORDER))
    scale = math.sqrt(2 / (CI * TAPS * TAPS))
    return {
        "img": np.pad(activation, pad),
        "weight": (rng.standard_normal((CO, CI, TAPS, TAPS)) * scale).astype(np.float32),
        "bias": (rng.standard_normal(CO) * 0.1).astype(np.float32),
    }


def prepare(photos=(), size=None):
    """The inputs (layer()); `photos` is not used."""
    return layer(size)


def reference(img, weight, bias, **_):
    """NumPy version: the 288 shifted slices of the activation weighted and added in the
    pipeline's order (ci, dx, dy) in float32, then the bias and ReLU."""
    batch, _, rows, cols = img.shape
    rows, cols = rows - 2 * BORDER, cols - 2 * BORDER
    total = np.zeros((batch, CO, rows, cols), np.float32)
    for ci in range(CI):
        for dx in range(TAPS):
            for dy in range(TAPS):
                tap = img[:, ci : ci + 1, dx : dx + rows, dy : dy + cols]
                total += weight[:, ci, dx, dy][None, :, None, None] * tap
    return np.maximum(total + bias[None, :, None, None], np.float32(0))


def to_photo(output):
    """The first batch item's output channels as grey tiles of a square grid, scaled together
    (a high percentile white), as depthwise_conv shows its own."""
    return depthwise_conv.to_photo(np.moveaxis(np.asarray(output), 1, -1))
