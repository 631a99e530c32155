"""A first-order recursive (IIR) smoothing filter, y[i] = alpha x[i] + (1 - alpha) y[i - 1], run
down the columns, back up them, along the rows and back: a blur of about 1 / alpha pixels for
a few operations a pixel, whatever alpha. 5 stages, 4 of them scans (docs/dsl.md):

  down   the filter down each column, starting from the first row's value
  up     the filter up each column, on the rows reversed (a scan reads only earlier points)
  right  the filter along each row, reading `up` reversed back
  left   the filter back along each row, on the columns reversed
  out    `left` with its columns reversed back

Each scan starts from its first input value (y[0] = x[0], as if the edge went on forever), so a
constant image stays constant. The input is the photo's luma, (R, C) float32 in [0, 1]; the
output has its shape. Written for issue 52, not from the TOPLAS 2020 paper.
"""

import numpy as np

from polyimage import Case, Float, Function, Image, Int, Interval, Parameter, Variable

from .inputs import fit, to_float

NAME = "recursive_filter"
DESCRIPTION = "the photo's luma blurred by a recursive filter run both ways along both axes"
PAPER_SIZE = {"R": 1536, "C": 2560}
SMALL_SIZE = {"R": 67, "C": 93}
DEFAULTS = {"alpha": 0.1}
PHOTOS = ("astronaut.png",)


def build():
    """(outputs, parameters) of the pipeline."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    alpha = Parameter(Float, "alpha")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R, C])
    box = ([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)])
    keep = 1 - alpha  # the weight of the previous output

    down = Function(box, Float, "down")
    down.defn = [Case(x == 0, img(x, y)), alpha * img(x, y) + keep * down(x - 1, y)]
    up = Function(box, Float, "up")  # row x of `up` is row R - 1 - x of the image
    up.defn = [
        Case(x == 0, down(R - 1, y)),
        alpha * down(R - 1 - x, y) + keep * up(x - 1, y),
    ]
    right = Function(box, Float, "right")
    right.defn = [
        Case(y == 0, up(R - 1 - x, y)),
        alpha * up(R - 1 - x, y) + keep * right(x, y - 1),
    ]
    left = Function(box, Float, "left")  # column y of `left` is column C - 1 - y
    left.defn = [
        Case(y == 0, right(x, C - 1)),
        alpha * right(x, C - 1 - y) + keep * left(x, y - 1),
    ]
    out = Function(box, Float, "out")
    out.defn = [left(x, C - 1 - y)]
    return [out], {"R": R, "C": C, "alpha": alpha}


def prepare(photos, size=None):
    """Inputs from one HWC photo (any dtype): its luma, float32 in [0, 1], cropped or
    mirror-tiled to `size` = {"R": rows, "C": cols} when given."""
    luma = to_float(photos[0], channels=1)
    if size:
        luma = fit(luma, size["R"], size["C"])
    return {"img": np.ascontiguousarray(luma[:, :, 0], dtype=np.float32)}


def scan(x, alpha, axis, reverse=False):
    """The filter along `axis` of a float32 array, towards lower indices when `reverse`,
    computed in float32 in the pipeline's order (a slice at a time)."""
    a = np.float32(alpha)
    keep = np.float32(1) - a
    x = np.moveaxis(x, axis, 0)
    order = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    y = np.empty_like(x)
    previous = None
    for i in order:
        previous = x[i].copy() if previous is None else a * x[i] + keep * previous
        y[i] = previous
    return np.moveaxis(y, 0, axis)


def reference(img, alpha, **_):
    """NumPy version: the four passes, each a loop over the rows or columns of whole slices."""
    out = scan(img, alpha, 0)
    out = scan(out, alpha, 0, reverse=True)
    out = scan(out, alpha, 1)
    return scan(out, alpha, 1, reverse=True)


def to_photo(output):
    """The output as an HW float image for saving."""
    return np.clip(output, 0, 1)
