"""3x3 median filter of an RGB photo, per channel, with min/max only (no sort, no branches).

Each pixel's 3x3 neighbourhood is three columns of three. Sorting every vertical triple once
(lo <= mid <= hi, stages col_lo, col_mid, col_hi) lets neighbouring pixels share that work; the
median of the nine values is then the median of three values: the largest of the three column
minima, the median of the three column medians and the smallest of the three column maxima.
4 stages.

The photo is channel-first (3, R+2, C+2) float32 with a 1-pixel border of edge values, so that
the output (3, R, C) is the median at every pixel of the photo, the border pixels' windows
repeating the edge.
"""

import numpy as np

from polyimage import Float, Function, Image, Int, Interval, Max, Min, Parameter, Variable

from .inputs import fit, to_float

NAME = "median_filter"
DESCRIPTION = "the photo with a 3x3 median per channel: speckle noise gone, edges kept"
# the photo apps' size (the paper's Table 1 has no median filter)
PAPER_SIZE = {"R": 2848, "C": 4256}
SMALL_SIZE = {"R": 67, "C": 93}
DEFAULTS = {}
PHOTOS = ("astronaut.png",)
BORDER = 1


def median3(a, b, c, low=Min, high=Max):
    """The median of three values with min and max (DSL expressions, or arrays given
    np.minimum, np.maximum): max(min(a, b), min(max(a, b), c))."""
    return high(low(a, b), low(high(a, b), c))


def build():
    """(outputs, parameters) of the pipeline."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    c, x, y = Variable(Int, "c"), Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [3, R + 2, C + 2])
    channels = Interval(Int, 0, 2)
    # the column sorts run over every column of the padded input, one row inside it
    column_domain = [channels, Interval(Int, 1, R), Interval(Int, 0, C + 1)]

    def stage(name, domain, value):
        f = Function(([c, x, y], domain), Float, name)
        f.defn = [value]
        return f

    up, centre, down = img(c, x - 1, y), img(c, x, y), img(c, x + 1, y)
    col_lo = stage("col_lo", column_domain, Min(Min(up, centre), down))
    col_mid = stage("col_mid", column_domain, median3(up, centre, down))
    col_hi = stage("col_hi", column_domain, Max(Max(up, centre), down))

    def across(f, combine):
        return combine(f(c, x, y - 1), f(c, x, y), f(c, x, y + 1))

    lows = across(col_lo, lambda a, b, d: Max(Max(a, b), d))
    mids = across(col_mid, median3)
    highs = across(col_hi, lambda a, b, d: Min(Min(a, b), d))
    median = stage(
        "median", [channels, Interval(Int, 1, R), Interval(Int, 1, C)], median3(lows, mids, highs)
    )
    return [median], {"R": R, "C": C}


def prepare(photos, size=None):
    """Inputs from one HWC photo (any dtype): float32 in [0, 1], channel first, cropped or
    mirror-tiled to `size` = {"R": rows, "C": cols} when given, with a 1-pixel edge border."""
    rgb = to_float(photos[0], channels=3)
    if size:
        rgb = fit(rgb, size["R"], size["C"])
    chw = np.ascontiguousarray(rgb.transpose(2, 0, 1))
    return {"img": np.pad(chw, ((0, 0), (BORDER, BORDER), (BORDER, BORDER)), mode="edge")}


def reference(img, **_):
    """NumPy version: the middle of the nine sorted neighbours of each pixel (np.sort, not the
    min/max network), a channel at a time to bound the memory of the nine shifted copies."""
    rows, cols = img.shape[1] - 2 * BORDER, img.shape[2] - 2 * BORDER

    def median(channel):
        windows = [channel[dx : dx + rows, dy : dy + cols] for dx in range(3) for dy in range(3)]
        return np.sort(np.stack(windows), axis=0)[4]

    return np.stack([median(channel) for channel in img])


def to_photo(output):
    """The output as an HWC float image for saving."""
    return np.clip(output.transpose(1, 2, 0), 0, 1)
