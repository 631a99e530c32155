"""Harris corner detection (PolyMage's benchmark): 3x3 derivatives Ix, Iy of a grayscale
image, their products Ixx, Iyy, Ixy, 3x3 box sums Sxx, Syy, Sxy, then the determinant and
trace of the structure tensor and the response det - 0.04 * trace^2. 11 stages, as in PolyMage.

The input is the photo's luma, (R+4, C+4) float32 with a 2-pixel border of edge values, so that
the output is the response at every pixel of the R x C photo (as Halide's harris computes it
with repeat_edge). PolyMage's own version takes an (R+2, C+2) image with a 1-pixel border and
computes only its (R-2) x (C-2) interior, leaving zeros around it; the stages and the work per
point are the same.
"""

import numpy as np

from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable

from .inputs import fit, to_float

NAME = "harris"
DESCRIPTION = "corner response map of the photo's luma: corners bright, edges dark, flat mid-grey"
PAPER_SIZE = {"R": 2848, "C": 4256}
SMALL_SIZE = {"R": 67, "C": 93}
DEFAULTS = {}
PHOTOS = ("astronaut.png",)
# hand-picked: one group; tiles of 32 whole rows (long rows keep the prefetchers streaming),
# each walked 8 rows at a time, sliding (every value computed once per tile)
SCHEDULES = {"tuned": "group 0: Ix, Iy, harris [32x4256 then 8x4256]"}
BORDER = 2
K = 0.04
# the Sobel-style derivative along y as (dx, dy, weight), in PolyMage's order; Ix transposes it
DERIVATIVE = (
    (-1, -1, -1.0 / 12),
    (-1, 1, 1.0 / 12),
    (0, -1, -2.0 / 12),
    (0, 1, 2.0 / 12),
    (1, -1, -1.0 / 12),
    (1, 1, 1.0 / 12),
)
BOX = tuple((dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1))


def build():
    """(outputs, parameters) of the pipeline."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 4, C + 4])
    # derivatives and their products: one pixel inside the input; the rest: the R x C photo
    inner = [Interval(Int, 1, R + 2), Interval(Int, 1, C + 2)]
    photo = [Interval(Int, 2, R + 1), Interval(Int, 2, C + 1)]

    def stage(name, domain, value):
        f = Function(([x, y], domain), Float, name)
        f.defn = [value]
        return f

    def box(f):
        return sum((f(x + dx, y + dy) for dx, dy in BOX[1:]), f(x + BOX[0][0], y + BOX[0][1]))

    def derivative(transpose):
        terms = [
            img(x + dy, y + dx) * w if transpose else img(x + dx, y + dy) * w
            for dx, dy, w in DERIVATIVE
        ]
        return sum(terms[1:], terms[0])

    Iy = stage("Iy", inner, derivative(False))
    Ix = stage("Ix", inner, derivative(True))
    Ixx = stage("Ixx", inner, Ix(x, y) * Ix(x, y))
    Iyy = stage("Iyy", inner, Iy(x, y) * Iy(x, y))
    Ixy = stage("Ixy", inner, Ix(x, y) * Iy(x, y))
    Sxx = stage("Sxx", photo, box(Ixx))
    Syy = stage("Syy", photo, box(Iyy))
    Sxy = stage("Sxy", photo, box(Ixy))
    det = stage("det", photo, Sxx(x, y) * Syy(x, y) - Sxy(x, y) * Sxy(x, y))
    trace = stage("trace", photo, Sxx(x, y) + Syy(x, y))
    harris = stage("harris", photo, det(x, y) - K * trace(x, y) * trace(x, y))
    return [harris], {"R": R, "C": C}


def prepare(photos, size=None):
    """Inputs from one HWC photo (any dtype): its luma as float32 in [0, 1], cropped or
    mirror-tiled to `size` = {"R": rows, "C": cols} when given, with a 2-pixel edge border."""
    gray = to_float(photos[0], channels=1)
    if size:
        gray = fit(gray, size["R"], size["C"])
    return {"img": np.pad(gray[:, :, 0], BORDER, mode="edge")}


def reference(img, **_):
    """NumPy version written from the algorithm, independently of the interpreter."""
    rows, cols = img.shape[0] - 2 * BORDER, img.shape[1] - 2 * BORDER

    def shifted(a, lo, n, m, dx, dy):
        """a(x + dx, y + dy) for x in [lo, lo + n), y in [lo, lo + m) (a's origin at 0)."""
        return a[lo + dx : lo + dx + n, lo + dy : lo + dy + m]

    n, m = rows + 2, cols + 2  # the derivative stages cover [1, R+2] x [1, C+2]
    iy = ix = None
    for dx, dy, w in DERIVATIVE:
        w = np.float32(w)
        ty, tx = shifted(img, 1, n, m, dx, dy) * w, shifted(img, 1, n, m, dy, dx) * w
        iy = ty if iy is None else iy + ty
        ix = tx if ix is None else ix + tx
    products = (ix * ix, iy * iy, ix * iy)

    def box(a):  # a covers [1, R+2] x [1, C+2]; the sums cover [2, R+1] x [2, C+1]
        total = None
        for dx, dy in BOX:
            term = a[1 + dx : 1 + dx + rows, 1 + dy : 1 + dy + cols]
            total = term if total is None else total + term
        return total

    sxx, syy, sxy = (box(p) for p in products)
    det = sxx * syy - sxy * sxy
    trace = sxx + syy
    return det - np.float32(K) * trace * trace


def to_photo(output):
    """The response as a grey image: corners (positive) bright, edges (negative) dark, flat
    regions mid-grey; square-root compressed and normalised by a high percentile."""
    response = np.asarray(output, np.float64)
    scale = np.percentile(np.abs(response), 99.5) if response.size else 0.0
    scaled = response / scale if scale > 0 else np.zeros_like(response)
    return np.clip(0.5 + 0.5 * np.sign(scaled) * np.sqrt(np.abs(scaled)), 0.0, 1.0)
