"""A 15x15 box filter through a summed-area table (integral image): two scans build the table,
then every output pixel is its window's sum from four lookups, whatever the window's size.
3 stages:

  rows  the running sum along each row of the edge-repeated image (a scan along y)
  sat   the running sum of `rows` down the columns (a scan along x): the table, whose point
        (i, j) holds the sum of the padded image above and left of it, as cv2.integral's
  box   the window's sum sat(x+W, y+W) - sat(x, y+W) - sat(x+W, y) + sat(x, y), divided by
        the window's area and rounded

The input is the photo's 8-bit luma, (R, C) uint8, its edge repeated by the pipeline; the
tables are Int, so every sum is exact (and stays so where the table's corners wrap around past
2^31 on a huge photo: integer arithmetic wraps, and a window's sum fits); the output is the
rounded mean, (R, C) uint8. Written for issue 52, not from the TOPLAS 2020 paper.
"""

import numpy as np

from polyimage import (
    Case,
    Cast,
    Function,
    Image,
    Int,
    Interval,
    Parameter,
    UChar,
    Variable,
    repeat_edge,
)

from .inputs import fit, to_float

NAME = "integral_box"
DESCRIPTION = "the photo's luma under a 15x15 mean, from a summed-area table and 4 lookups"
PAPER_SIZE = {"R": 1536, "C": 2560}
SMALL_SIZE = {"R": 67, "C": 93}
DEFAULTS = {}
PHOTOS = ("astronaut.png",)
RADIUS = 7
WIDTH = 2 * RADIUS + 1  # of the window
AREA = WIDTH * WIDTH


def build():
    """(outputs, parameters) of the pipeline."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(UChar, "img", [R, C])
    edge = repeat_edge(img)
    # the padded image has R + 2 RADIUS rows; the table one more row and column, of zeros
    padded_rows, table_rows = Interval(Int, 0, R + 2 * RADIUS - 1), Interval(Int, 0, R + 2 * RADIUS)
    table_cols = Interval(Int, 0, C + 2 * RADIUS)

    rows = Function(([x, y], [padded_rows, table_cols]), Int, "rows")
    rows.defn = [
        Case(y == 0, 0),
        rows(x, y - 1) + Cast(Int, edge(x - RADIUS, y - 1 - RADIUS)),
    ]
    sat = Function(([x, y], [table_rows, table_cols]), Int, "sat")
    sat.defn = [Case(x == 0, 0), sat(x - 1, y) + rows(x - 1, y)]

    box = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), UChar, "box")
    total = sat(x + WIDTH, y + WIDTH) - sat(x, y + WIDTH) - sat(x + WIDTH, y) + sat(x, y)
    box.defn = [Cast(UChar, (total + AREA // 2) / AREA)]
    return [box], {"R": R, "C": C}


def prepare(photos, size=None):
    """Inputs from one HWC photo (any dtype): its luma as uint8, cropped or mirror-tiled to
    `size` = {"R": rows, "C": cols} when given."""
    luma = to_float(photos[0], channels=1)
    if size:
        luma = fit(luma, size["R"], size["C"])
    return {"img": np.rint(luma[:, :, 0] * 255).astype(np.uint8)}


def window_sums(table, rows, cols):
    """The (rows, cols) window sums of WIDTH x WIDTH windows from a summed-area table with its
    zero first row and column (the four lookups, as NumPy slices)."""
    w = WIDTH
    return (
        table[w : w + rows, w : w + cols]
        - table[:rows, w : w + cols]
        - table[w : w + rows, :cols]
        + table[:rows, :cols]
    )


def rounded_mean(sums):
    """Window sums to their rounded means, uint8 (sums are never negative)."""
    return ((sums + AREA // 2) // AREA).astype(np.uint8)


def reference(img, **_):
    """NumPy version: the edge-padded image's window sums added up directly, shift by shift
    along each axis in int64, independently of any table."""
    rows, cols = img.shape
    padded = np.pad(img.astype(np.int64), RADIUS, mode="edge")
    across = sum(padded[:, d : d + cols] for d in range(WIDTH))
    sums = sum(across[d : d + rows] for d in range(WIDTH))
    return rounded_mean(sums)


def to_photo(output):
    """The output as an HW uint8 image for saving."""
    return output
