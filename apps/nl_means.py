"""Non-local means denoising (Halide's apps/nl_means): every pixel becomes a weighted mean of
the pixels in a 7x7 search area around it, each weighted by how alike the 7x7 patches around
the two pixels are. 6 stages:

  d          for every offset (dx, dy) of the search area, the squared colour difference
             between each pixel and the pixel at that offset, summed over the 3 channels
  blur_rows  d summed over 7 rows: the patch distance, first along the rows
  blur_d     then over 7 columns: the sum of d over the 7x7 patch
  w          the weight exp(-blur_d / (sigma^2 * 7^2)) of the offset at each pixel
  nl_sum     channels 0-2: the weighted sums of the colours over the search area; channel 3
             (Halide's alpha channel of ones): the sum of the weights
  nl_means   the weighted mean, channel c / channel 3, clamped to [0, 1]

Halide's defaults are kept: patch size 7, search area 7 (module constants here: they set the
border and the number of terms), sigma 0.12 (a parameter). The weights use exp, not Halide's
fast_exp approximation, in the Halide version too. Offsets (dx, dy) are in the stages' first
two dimensions, so that the column y stays the innermost one.

The input is channel-first (3, R + 12, C + 12) float32 with a 6-pixel border of edge values
(3 for the search area, 3 for the patch), Halide's repeat_edge: the output (3, R, C) is the
whole photo. PAPER_SIZE is Halide's estimate for the app, 1536 x 2560 (W x H). The bench also times
VARIANTS' pipeline with nl_sum a Reduction over the search offsets, as Halide writes it (an
RDom): the same sums in the same order, which auto tiles with the per-offset stages it reads.
"""

import numpy as np

from polyimage import (
    Case,
    Clamp,
    Exp,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Min,
    Op,
    Parameter,
    Reduce,
    Reduction,
    Variable,
)

from .inputs import fit, to_float

NAME = "nl_means"
DESCRIPTION = "the photo denoised by non-local means: each pixel a mean of pixels with like patches"
PAPER_SIZE = {"R": 2560, "C": 1536}
SMALL_SIZE = {"R": 37, "C": 53}
DEFAULTS = {"sigma": 0.12}
PHOTOS = ("chelsea.png",)
PATCH = 7
SEARCH = 7
BORDER = SEARCH // 2 + PATCH // 2
# search offsets (dx, dy) in the order the weighted sums add them: rows outer, columns inner
OFFSETS = tuple(
    (dx, dy)
    for dx in range(-(SEARCH // 2), SEARCH // 2 + 1)
    for dy in range(-(SEARCH // 2), SEARCH // 2 + 1)
)
PATCH_TAPS = tuple(range(-(PATCH // 2), PATCH // 2 + 1))


def _sum(terms):
    """The terms added left to right."""
    terms = list(terms)
    return sum(terms[1:], terms[0])


def build(reduction=False):
    """(outputs, parameters) of the pipeline; with `reduction`, nl_sum is a Reduction over the
    search offsets (Halide's RDom), the same sums in the same order."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    sigma = Parameter(Float, "sigma")
    c, dx, dy, x, y = (Variable(Int, n) for n in ("c", "dx", "dy", "x", "y"))
    img = Image(Float, "img", [3, R + 2 * BORDER, C + 2 * BORDER])
    half_search, half_patch = SEARCH // 2, PATCH // 2
    offsets = [Interval(Int, -half_search, half_search)] * 2
    rows = Interval(Int, BORDER, R + BORDER - 1)
    cols = Interval(Int, BORDER, C + BORDER - 1)
    wide_rows = Interval(Int, BORDER - half_patch, R + BORDER - 1 + half_patch)
    wide_cols = Interval(Int, BORDER - half_patch, C + BORDER - 1 + half_patch)

    def stage(name, variables, domain, value):
        f = Function((variables, domain), Float, name)
        f.defn = value if isinstance(value, list) else [value]
        return f

    def squared_difference(ch):
        diff = img(ch, x, y) - img(ch, x + dx, y + dy)
        return diff * diff

    d = stage(
        "d",
        [dx, dy, x, y],
        [*offsets, wide_rows, wide_cols],
        _sum(squared_difference(ch) for ch in range(3)),
    )
    blur_rows = stage(
        "blur_rows",
        [dx, dy, x, y],
        [*offsets, rows, wide_cols],
        _sum(d(dx, dy, x + k, y) for k in PATCH_TAPS),
    )
    blur_d = stage(
        "blur_d",
        [dx, dy, x, y],
        [*offsets, rows, cols],
        _sum(blur_rows(dx, dy, x, y + k) for k in PATCH_TAPS),
    )
    inv_sigma_sq = -1.0 / (sigma * sigma * PATCH * PATCH)
    w = stage("w", [dx, dy, x, y], [*offsets, rows, cols], Exp(blur_d(dx, dy, x, y) * inv_sigma_sq))
    channels = Interval(Int, 0, 3)
    if reduction:
        nl_sum = _offset_sums(w, img, c, x, y, channels, rows, cols, offsets)
    else:
        nl_sum = stage(
            "nl_sum",
            [c, x, y],
            [channels, rows, cols],
            [
                Case(c == 3, _sum(w(i, j, x, y) for i, j in OFFSETS)),
                _sum(w(i, j, x, y) * img(c, x + i, y + j) for i, j in OFFSETS),
            ],
        )
    nl_means = stage(
        "nl_means",
        [c, x, y],
        [Interval(Int, 0, 2), rows, cols],
        Clamp(nl_sum(c, x, y) / nl_sum(3, x, y), 0.0, 1.0),
    )
    return [nl_means], {"R": R, "C": C, "sigma": sigma}


def _offset_sums(w, img, c, x, y, channels, rows, cols, offsets):
    """nl_sum as a Reduction: every pixel (u, v), offset (i, j) in order and channel ch adds
    its weighted colour (ch < 3) or its weight (ch = 3) to nl_sum(ch, u, v), from 0."""
    u, v, i, j, ch = (Variable(Int, n) for n in ("u", "v", "i", "j", "ch"))
    nl_sum = Reduction(
        ([c, x, y], [channels, rows, cols]),
        ([u, v, i, j, ch], [rows, cols, *offsets, channels]),
        Float,
        "nl_sum",
    )
    weight = w(i, j, u, v)
    nl_sum.defn = [
        Case(ch == 3, Reduce(nl_sum(ch, u, v), weight, Op.Sum)),
        Case(ch < 3, Reduce(nl_sum(ch, u, v), weight * img(Min(ch, 2), u + i, v + j), Op.Sum)),
    ]
    return nl_sum


def build_reduction():
    """The pipeline with nl_sum a Reduction (build(reduction=True))."""
    return build(reduction=True)


# other pipelines the bench times beside this one: {label: (build, arguments from the app's
# inputs)}
VARIANTS = {"nl_sum a Reduction": (build_reduction, lambda inputs: {**inputs, **DEFAULTS})}


def prepare(photos, size=None):
    """Inputs from one HWC photo (any dtype): float32 RGB in [0, 1], channel first, cropped or
    mirror-tiled to `size` = {"R": rows, "C": cols} when given, with a 6-pixel edge border."""
    rgb = to_float(photos[0], channels=3)
    if size:
        rgb = fit(rgb, size["R"], size["C"])
    chw = np.ascontiguousarray(rgb.transpose(2, 0, 1))
    return {"img": np.pad(chw, ((0, 0), (BORDER, BORDER), (BORDER, BORDER)), mode="edge")}


def reference(img, sigma, **_):
    """NumPy version written from the algorithm, independently of the interpreter: one
    offset at a time, the sums in the pipeline's order."""
    rows, cols = img.shape[1] - 2 * BORDER, img.shape[2] - 2 * BORDER
    half_patch = PATCH // 2
    sigma = np.float32(sigma)
    inv_sigma_sq = np.float32(-1) / (sigma * sigma * np.float32(PATCH) * np.float32(PATCH))
    lo = BORDER - half_patch  # the first row and column of d
    n, m = rows + 2 * half_patch, cols + 2 * half_patch
    centre = img[:, lo : lo + n, lo : lo + m]
    colour_sums, weight_sum = None, None
    for dx, dy in OFFSETS:
        moved = img[:, lo + dx : lo + dx + n, lo + dy : lo + dy + m]
        diff = centre - moved
        squared = diff * diff
        d = squared[0] + squared[1] + squared[2]
        blur_rows = _sum(d[half_patch + k : half_patch + k + rows] for k in PATCH_TAPS)
        blur_d = _sum(blur_rows[:, half_patch + k : half_patch + k + cols] for k in PATCH_TAPS)
        w = np.exp((blur_d * inv_sigma_sq).astype(np.float64)).astype(np.float32)
        pixels = img[:, BORDER + dx : BORDER + dx + rows, BORDER + dy : BORDER + dy + cols]
        colour_sums = w * pixels if colour_sums is None else colour_sums + w * pixels
        weight_sum = w if weight_sum is None else weight_sum + w
    return np.clip(colour_sums / weight_sum, np.float32(0), np.float32(1))


def to_photo(output):
    """The output as an HWC float image for saving."""
    return np.clip(output.transpose(1, 2, 0), 0, 1)
