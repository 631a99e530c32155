"""Multiscale interpolation (Halide's apps/interpolate, PolyMage's interpolate benchmark): fill
the transparent parts of an RGBA image smoothly from the opaque parts.

1. Premultiply: downsampled[0] = (r*a, g*a, b*a, a).
2. 10 pyramid levels: downsampled[l] from downsampled[l-1] with the [1 2 1]/4 kernel read at
   2*i-1, 2*i, 2*i+1, first along the columns (Halide's downx: Halide's x is our y, the
   contiguous dimension), then along the rows.
3. From the coarsest level back up: interpolated[9] = downsampled[9]; for l = 8 .. 0,
   upsampledx[l] = (interpolated[l+1] at j/2 + at (j+1)/2) / 2 along the columns, upsampled[l]
   the same along the rows, and interpolated[l] = downsampled[l] + (1 - alpha_l) * upsampled[l]
   with alpha_l = downsampled[l](3).
4. Normalize: output = interpolated[0](c) / interpolated[0](3) for the colour channels.

Stages: 47 = 1 premultiply + 9 x 2 downsampling + 9 x 3 upsampling/interpolation + 1 normalize.
Halide's generator has 49 Funcs (the paper's count): the same ones plus its repeat_edge input
wrapper (here: clamped reads) and interpolated[9], a copy of downsampled[9] (here: read directly).

Boundaries: level l has ceil(R / 2**l) x ceil(C / 2**l) points (domain 0 .. (R-1) // 2**l), so
odd sizes work and the coarse levels of small images shrink to 1 x 1 instead of vanishing; every
read of another level clamps its index into that level's domain (Min/Max, repeat the edge). At
level 1 that is exactly Halide's repeat_edge of the input; Halide's coarser levels read past
their nominal edges (it clamps once more at level 4), so results differ from Halide's only
within a few coarse pixels of the image border.

Input: img (4, R, C) float32 in [0, 1], channel first, the 4th channel alpha. prepare() takes
the photo's own alpha when it has one, else makes a pattern of square holes (alpha 0). Output:
(3, R, C), the colour where alpha is 1 and the holes filled from the surroundings.
"""

import numpy as np

from polyimage import Float, Function, Image, Int, Interval, Max, Min, Parameter, Select, Variable

from .inputs import fit, to_float

NAME = "interpolate"
DESCRIPTION = "square holes cut on purpose in the photo, filled in from their surroundings"
PAPER_SIZE = {"R": 2560, "C": 1536}
SMALL_SIZE = {"R": 67, "C": 93}
DEFAULTS = {}
PHOTOS = ("chelsea.png",)
LEVELS = 10


def build():
    """(outputs, parameters) of the pipeline."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    c, x, y = Variable(Int, "c"), Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [4, R, C])
    rgba, rgb = Interval(Int, 0, 3), Interval(Int, 0, 2)
    # last index of level l along rows and columns: level l has ceil(R / 2**l) rows
    last_r = [R - 1] + [(R - 1) // (1 << l) for l in range(1, LEVELS)]
    last_c = [C - 1] + [(C - 1) // (1 << l) for l in range(1, LEVELS)]

    def stage(name, rows_level, cols_level, channels=rgba):
        return Function(
            (
                [c, x, y],
                [
                    channels,
                    Interval(Int, 0, last_r[rows_level]),
                    Interval(Int, 0, last_c[cols_level]),
                ],
            ),
            Float,
            name,
        )

    # Halide's x is the column, our y: downx_l and upsampledx_l filter along y, as in Halide
    downsampled = [stage("downsampled_0", 0, 0)]
    downsampled[0].defn = [Select(c < 3, img(c, x, y) * img(3, x, y), img(3, x, y))]
    for l in range(1, LEVELS):
        prev, lr, lc = downsampled[l - 1], last_r[l - 1], last_c[l - 1]
        downx = stage(f"downx_{l}", l - 1, l)
        downx.defn = [
            (
                prev(c, x, Max(2 * y - 1, 0))
                + 2.0 * prev(c, x, 2 * y)
                + prev(c, x, Min(2 * y + 1, lc))
            )
            * 0.25
        ]
        down = stage(f"downsampled_{l}", l, l)
        down.defn = [
            (
                downx(c, Max(2 * x - 1, 0), y)
                + 2.0 * downx(c, 2 * x, y)
                + downx(c, Min(2 * x + 1, lr), y)
            )
            * 0.25
        ]
        downsampled.append(down)

    interpolated = downsampled[LEVELS - 1]
    for l in range(LEVELS - 2, -1, -1):
        prev, lr, lc = interpolated, last_r[l + 1], last_c[l + 1]
        upx = stage(f"upsampledx_{l}", l + 1, l)
        upx.defn = [(prev(c, x, y / 2) + prev(c, x, Min((y + 1) / 2, lc))) / 2.0]
        up = stage(f"upsampled_{l}", l, l)
        up.defn = [(upx(c, x / 2, y) + upx(c, Min((x + 1) / 2, lr), y)) / 2.0]
        interpolated = stage(f"interpolated_{l}", l, l)
        alpha = 1.0 - downsampled[l](3, x, y)
        interpolated.defn = [downsampled[l](c, x, y) + alpha * up(c, x, y)]

    normalize = stage("normalize", 0, 0, rgb)
    normalize.defn = [interpolated(c, x, y) / interpolated(3, x, y)]
    return [normalize], {"R": R, "C": C}


def holes(rows, cols):
    """Alpha with square holes: the image cut into square cells (about 6 across the shorter
    side), alpha 0 in the middle half of each cell, 1 elsewhere."""
    cell = max(8, min(rows, cols) // 6)

    def middle(n):
        pos = np.arange(n) % cell
        return (pos >= cell // 4) & (pos < cell - cell // 4)

    return (~(middle(rows)[:, None] & middle(cols)[None, :])).astype(np.float32)


def prepare(photos, size=None):
    """The RGBA input from one HWC photo (any dtype): float32 in [0, 1], channel first, cropped
    or mirror-tiled to `size` when given. Alpha is the photo's own when it has one (grey+alpha
    or RGBA), else the pattern of holes() with the colour under the holes set to 0 (it is never
    used: the pipeline premultiplies)."""
    photo = np.asarray(photos[0])
    has_alpha = photo.ndim == 3 and photo.shape[2] in (2, 4)
    pixels = to_float(photo[:, :, :-1] if has_alpha else photo, channels=3)
    if has_alpha:
        pixels = np.concatenate([pixels, to_float(photo[:, :, -1:], channels=1)], axis=2)
    if size:
        pixels = fit(pixels, size["R"], size["C"])
    if not has_alpha:
        alpha = holes(*pixels.shape[:2])[:, :, None]
        pixels = np.concatenate([pixels * alpha, alpha], axis=2)
    return {"img": np.ascontiguousarray(pixels.transpose(2, 0, 1), dtype=np.float32)}


# NumPy reference, written from the algorithm description


def _down(a, axis):
    """[1 2 1]/4 at 2*i-1, 2*i, 2*i+1 along `axis`, indices clamped."""
    n = a.shape[axis]
    centre = 2 * np.arange((n + 1) // 2)
    left, mid, right = (np.take(a, np.clip(centre + k, 0, n - 1), axis=axis) for k in (-1, 0, 1))
    return (left + np.float32(2) * mid + right) * np.float32(0.25)


def _up(a, axis, n):
    """Length n along `axis`: the mean of a at i/2 and (i+1)/2, indices clamped."""
    i = np.arange(n)
    hi = np.minimum((i + 1) // 2, a.shape[axis] - 1)
    return (np.take(a, i // 2, axis=axis) + np.take(a, hi, axis=axis)) / np.float32(2)


def reference(img, **_):
    """NumPy version written from the algorithm, independently of the interpreter."""
    alpha = img[3]
    downsampled = [np.concatenate([img[:3] * alpha, alpha[None]], axis=0)]
    for _ in range(1, LEVELS):
        downsampled.append(_down(_down(downsampled[-1], 2), 1))
    interpolated = downsampled[-1]
    for l in range(LEVELS - 2, -1, -1):
        d = downsampled[l]
        up = _up(_up(interpolated, 2, d.shape[2]), 1, d.shape[1])
        interpolated = d + (np.float32(1) - d[3]) * up
    return interpolated[:3] / interpolated[3]


def to_photo(output):
    """The output as an HWC float image for saving."""
    return np.clip(np.nan_to_num(output.transpose(1, 2, 0)), 0, 1)
