"""Non-maximum suppression of a Canny edge detector: Sobel gradients `gx` (along the columns)
and `gy` (along the rows), the L1 magnitude `mag`, then `edges`, which keeps the magnitude
where it is not smaller than its two neighbours across the edge (horizontal, vertical or one
of the diagonals, chosen by comparing the gradients) and thresholds it to 0, 128 (weak) or 255
(strong) as UChar. 4 stages, neighbours chosen by Selects.

The input is the photo's luma, (R, C) float32 in [0, 1], its edge repeated by the pipeline;
`mag` is read through `repeat_edge` too. Written from a user's report, not from the TOPLAS 2020
paper.
"""

import numpy as np

from polyimage import Abs, Cast, Float, Function, Image, Int, Parameter, Select, UChar, repeat_edge

from .inputs import fit, to_float

NAME = "canny_nms"
DESCRIPTION = "edges of the photo's luma, thinned to one pixel: strong 255, weak 128"
PAPER_SIZE = {"R": 1536, "C": 2560}
SMALL_SIZE = {"R": 67, "C": 93}
DEFAULTS = {"low": 0.3, "high": 0.8}
PHOTOS = ("astronaut.png",)
# (row, column) offsets of the two neighbours compared across an edge of each direction
ACROSS = {
    "horizontal": ((0, -1), (0, 1)),  # the gradient along the columns: an edge down the rows
    "vertical": ((-1, 0), (1, 0)),
    "rising": ((-1, -1), (1, 1)),  # gx and gy of one sign
    "falling": ((-1, 1), (1, -1)),
}


def build():
    """(outputs, parameters) of the pipeline."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    low, high = Parameter(Float, "low"), Parameter(Float, "high")
    img = Image(Float, "img", [R, C])
    e = repeat_edge(img)
    gx = Function.like(img, Float, "gx")
    x, y = gx.variables
    gx.defn = [
        (e(x - 1, y + 1) + 2 * e(x, y + 1) + e(x + 1, y + 1))
        - (e(x - 1, y - 1) + 2 * e(x, y - 1) + e(x + 1, y - 1))
    ]
    gy = Function.like(img, Float, "gy")
    gy.defn = [
        (e(x + 1, y - 1) + 2 * e(x + 1, y) + e(x + 1, y + 1))
        - (e(x - 1, y - 1) + 2 * e(x - 1, y) + e(x - 1, y + 1))
    ]
    mag = Function.like(img, Float, "mag")
    mag.defn = [Abs(gx(x, y)) + Abs(gy(x, y))]
    m = repeat_edge(mag)

    def neighbour(k):
        (a, b), (c, d), (f, g), (h, i) = (ACROSS[n][k] for n in ACROSS)
        return Select(
            horizontal,
            m(x + a, y + b),
            Select(vertical, m(x + c, y + d), Select(rising, m(x + f, y + g), m(x + h, y + i))),
        )

    ax, ay = Abs(gx(x, y)), Abs(gy(x, y))
    horizontal, vertical = ax > 2 * ay, ay > 2 * ax
    rising = ((gx(x, y) > 0) & (gy(x, y) > 0)) | ((gx(x, y) < 0) & (gy(x, y) < 0))
    kept = Select((mag(x, y) >= neighbour(0)) & (mag(x, y) >= neighbour(1)), mag(x, y), 0.0)
    edges = Function.like(img, UChar, "edges")
    edges.defn = [
        Select(kept > high, Cast(UChar, 255), Select(kept > low, Cast(UChar, 128), Cast(UChar, 0)))
    ]
    return [edges], {"R": R, "C": C, "low": low, "high": high}


def prepare(photos, size=None):
    """Inputs from one HWC photo (any dtype): its luma, float32 in [0, 1], cropped or
    mirror-tiled to `size` = {"R": rows, "C": cols} when given."""
    luma = to_float(photos[0], channels=1)
    if size:
        luma = fit(luma, size["R"], size["C"])
    return {"img": np.ascontiguousarray(luma[:, :, 0], dtype=np.float32)}


def reference(img, low, high, **_):
    """NumPy version: the gradients of the edge-padded image, each pixel's two neighbours
    across its edge picked with boolean masks."""
    rows, cols = img.shape
    p = np.pad(img, 1, mode="edge")

    def at(dr, dc, a=p, border=1):
        return a[border + dr : border + dr + rows, border + dc : border + dc + cols]

    gx = (at(-1, 1) + 2 * at(0, 1) + at(1, 1)) - (at(-1, -1) + 2 * at(0, -1) + at(1, -1))
    gy = (at(1, -1) + 2 * at(1, 0) + at(1, 1)) - (at(-1, -1) + 2 * at(-1, 0) + at(-1, 1))
    mag = np.abs(gx) + np.abs(gy)
    padded_mag = np.pad(mag, 1, mode="edge")
    horizontal = np.abs(gx) > 2 * np.abs(gy)
    vertical = ~horizontal & (np.abs(gy) > 2 * np.abs(gx))
    rising = ~horizontal & ~vertical & (((gx > 0) & (gy > 0)) | ((gx < 0) & (gy < 0)))
    falling = ~horizontal & ~vertical & ~rising
    kept = mag.copy()
    for mask, name in (
        (horizontal, "horizontal"),
        (vertical, "vertical"),
        (rising, "rising"),
        (falling, "falling"),
    ):
        for dr, dc in ACROSS[name]:
            smaller = mag < at(dr, dc, padded_mag)
            kept[mask & smaller] = 0
    out = np.where(kept > high, 255, np.where(kept > low, 128, 0))
    return out.astype(np.uint8)


def to_photo(output):
    """The output as an HW uint8 image for saving."""
    return output
