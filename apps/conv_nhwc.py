"""The 3x3 convolution layer of conv_nchw (+ bias, ReLU, float32) in NHWC, channels innermost
as TensorFlow and most CPU inference libraries store them. 2 stages:

  conv  a Reduction over (dx, dy, ci), in that order, of weight(dx, dy, ci, co) *
        img(n, x + dx, y + dy, ci): 288 multiply-adds per output value
  relu  max(conv + bias(co), 0)

The activation is (N, R+2, C+2, CI) with a 1-pixel border of zeros, the weights (3, 3, CI, CO)
(HWIO), the bias (CO), the output (N, R, C, CO): the contiguous dimension is the channel, not
the column. The arrays are conv_nchw's, transposed: both apps compute the same layer, each
summing in the order natural to its layout. Written for issue 52, not from the TOPLAS 2020
paper.
"""

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

from . import conv_nchw, depthwise_conv
from .conv_nchw import BORDER, CI, CO, TAPS

NAME = "conv_nhwc"
DESCRIPTION = "the conv layer of conv_nchw in NHWC, channels innermost: 32 channels tiled"
PAPER_SIZE = conv_nchw.PAPER_SIZE
SMALL_SIZE = conv_nchw.SMALL_SIZE
DEFAULTS = {}
PHOTOS = ()


def build():
    """(outputs, parameters) of the pipeline."""
    N, R, C = Parameter(Int, "N"), Parameter(Int, "R"), Parameter(Int, "C")
    n, x, y, co, dx, dy, ci = (Variable(Int, v) for v in ("n", "x", "y", "co", "dx", "dy", "ci"))
    img = Image(Float, "img", [N, R + 2 * BORDER, C + 2 * BORDER, CI])
    weight = Image(Float, "weight", [TAPS, TAPS, CI, CO])
    bias = Image(Float, "bias", [CO])
    domain = [
        Interval(Int, 0, N - 1),
        Interval(Int, 0, R - 1),
        Interval(Int, 0, C - 1),
        Interval(Int, 0, CO - 1),
    ]
    taps = Interval(Int, 0, TAPS - 1)
    # n, x, y, co join the reduction domain before (dx, dy, ci): each cell sums them in order
    conv = Reduction(
        ([n, x, y, co], domain),
        ([dx, dy, ci], [taps, taps, Interval(Int, 0, CI - 1)]),
        Float,
        "conv",
    )
    conv.defn = [
        Reduce(conv(n, x, y, co), weight(dx, dy, ci, co) * img(n, x + dx, y + dy, ci), Op.Sum)
    ]
    relu = Function(([n, x, y, co], domain), Float, "relu")
    relu.defn = [Max(conv(n, x, y, co) + bias(co), 0.0)]
    return [relu], {"N": N, "R": R, "C": C}


def prepare(photos=(), size=None):
    """conv_nchw's arrays of `size` (PAPER_SIZE when not given) in NHWC and HWIO; `photos` is
    not used."""
    nchw = conv_nchw.layer(size)
    return {
        "img": np.ascontiguousarray(nchw["img"].transpose(0, 2, 3, 1)),
        "weight": np.ascontiguousarray(nchw["weight"].transpose(2, 3, 1, 0)),
        "bias": nchw["bias"],
    }


def reference(img, weight, bias, **_):
    """NumPy version: the 288 shifted slices of the activation weighted and added in the
    pipeline's order (dx, dy, ci) in float32, then the bias and ReLU."""
    batch, rows, cols, _ = img.shape
    rows, cols = rows - 2 * BORDER, cols - 2 * BORDER
    total = np.zeros((batch, rows, cols, CO), np.float32)
    for dx in range(TAPS):
        for dy in range(TAPS):
            for ci in range(CI):
                total += weight[dx, dy, ci] * img[:, dx : dx + rows, dy : dy + cols, ci : ci + 1]
    return np.maximum(total + bias, np.float32(0))


def to_photo(output):
    """The first batch item's output channels as grey tiles of a square grid, scaled together,
    as conv_nchw shows them."""
    return depthwise_conv.to_photo(output)
