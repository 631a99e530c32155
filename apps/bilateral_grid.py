"""Bilateral grid (Halide's apps/bilateral_grid; PolyMage's benchmark): edge-preserving
smoothing of a grayscale image. 7 stages, as Halide's Funcs:

  clamped       the input with its values clamped to [0, 1]
  grid          a Reduction over the pixels into a 3-D grid of 8x8-pixel cells (sigma_s = 8) and
                range bins of width r_sigma: channel 0 accumulates the values, channel 1 the
                weights (counts); the bin is Cast(Int, value / r_sigma + 0.5), data dependent
  blurz, blurx, blury   the 5-tap [1 4 6 4 1] blurs of the grid along z, x and y (unnormalised)
  interpolated  trilinear slicing at each pixel: x and y by the position within the 8-pixel
                cell, z between floor(value / r_sigma) and the bin above it
  filtered      the output, value channel / weight channel

Grid cells follow Halide: cell k collects pixels [8k - 4, 8k + 3] (image coordinates clamped to
the image, as Halide's repeat_edge does), and the cells -2 .. (R-1)/8 + 3 that the blurs and
slicing need are stored at k + 2. The range bins are fixed at compile time for the default
r_sigma = 0.1: bins z = -2 .. 13 (stored at z + 2) hold values 0 .. 1 / r_sigma = 10 plus the
blur's and slicing's margins. With a smaller r_sigma the bins above are clamped into the top
ones (data-dependent indices are clamped to the grid), a larger one just uses fewer bins.

The grid and its blurs are laid out (c, z, x, y), the image column y innermost; the
reduction visits (channel, pixel row, pixel column) in that order. The input is (R, C)
float32 (values outside [0, 1] are clamped, as in Halide); the output is (R, C).
"""

import numpy as np

from polyimage import (
    Cast,
    Clamp,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Op,
    Parameter,
    Reduce,
    Reduction,
    Select,
    Variable,
)

from .inputs import fit, to_float

NAME = "bilateral_grid"
DESCRIPTION = "the grey photo smoothed by a bilateral filter: flat areas smooth, edges kept sharp"
PAPER_SIZE = {"R": 2560, "C": 1536}
SMALL_SIZE = {"R": 67, "C": 93}
DEFAULTS = {"r_sigma": 0.1}
PHOTOS = ("camera.png",)
S_SIGMA = 8  # grid cell size in pixels (part of the algorithm, not a parameter)
Z_BINS = 10  # value bins 0 .. 1 / r_sigma for the default r_sigma
PAD = 2  # grid cells and bins stored beyond the image's for the 5-tap blurs


def build():
    """(outputs, parameters) of the pipeline."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    r_sigma = Parameter(Float, "r_sigma")
    c, z, x, y = (Variable(Int, n) for n in ("c", "z", "x", "y"))
    ch, u, v = (Variable(Int, n) for n in ("ch", "u", "v"))
    img = Image(Float, "img", [R, C])
    s, half = S_SIGMA, S_SIGMA // 2
    rows, cols = Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)
    channels = Interval(Int, 0, 1)
    # stored cell g = k + PAD for cells k = -PAD .. (R-1)/s + 1 + PAD; z likewise
    last_x, last_y = (R - 1) / s + 1 + 2 * PAD, (C - 1) / s + 1 + 2 * PAD
    last_z = Z_BINS + 1 + 2 * PAD
    zs = Interval(Int, PAD, last_z - PAD)

    clamped = Function(([x, y], [rows, cols]), Float, "clamped")
    clamped.defn = [Clamp(img(x, y), 0.0, 1.0)]

    # u, v: the pixel position + the offset of cell 0's first pixel, s * PAD + half
    offset = s * PAD + half
    grid = Reduction(
        (
            [c, z, x, y],
            [
                channels,
                Interval(Int, 0, last_z),
                Interval(Int, 0, last_x),
                Interval(Int, 0, last_y),
            ],
        ),
        (
            [ch, u, v],
            [channels, Interval(Int, 0, s * last_x + s - 1), Interval(Int, 0, s * last_y + s - 1)],
        ),
        Float,
        "grid",
    )
    value = clamped(Clamp(u - offset, 0, R - 1), Clamp(v - offset, 0, C - 1))
    zbin = Cast(Int, value / r_sigma + 0.5) + PAD
    grid.defn = [Reduce(grid(ch, zbin, u / s, v / s), Select(ch == 0, value, 1.0), Op.Sum)]

    def blur(f, name, domain, shift):
        out = Function(([c, z, x, y], domain), Float, name)
        taps = [
            f(*(a + (i - 2) if d and i != 2 else a for a, d in zip((c, z, x, y), shift)))
            for i in range(5)
        ]
        out.defn = [taps[0] + taps[1] * 4 + taps[2] * 6 + taps[3] * 4 + taps[4]]
        return out

    all_x, all_y = Interval(Int, 0, last_x), Interval(Int, 0, last_y)
    in_x, in_y = Interval(Int, PAD, last_x - PAD), Interval(Int, PAD, last_y - PAD)
    blurz = blur(grid, "blurz", [channels, zs, all_x, all_y], (0, 1, 0, 0))
    blurx = blur(blurz, "blurx", [channels, zs, in_x, all_y], (0, 0, 1, 0))
    blury = blur(blurx, "blury", [channels, zs, in_x, in_y], (0, 0, 0, 1))

    val = clamped(x, y)
    zv = val / r_sigma
    zi = Cast(Int, zv)  # floor: zv >= 0
    zf = zv - Cast(Float, zi)
    xf = Cast(Float, x % s) / s
    yf = Cast(Float, y % s) / s
    xi, yi = x / s + PAD, y / s + PAD

    def lerp(a, b, w):
        return a * (1 - w) + b * w

    def corner(dz, dx, dy):
        return blury(c, zi + PAD + dz, xi + dx, yi + dy)

    def plane(dz):
        return lerp(
            lerp(corner(dz, 0, 0), corner(dz, 1, 0), xf),
            lerp(corner(dz, 0, 1), corner(dz, 1, 1), xf),
            yf,
        )

    interpolated = Function(([c, x, y], [channels, rows, cols]), Float, "interpolated")
    interpolated.defn = [lerp(plane(0), plane(1), zf)]

    filtered = Function(([x, y], [rows, cols]), Float, "filtered")
    filtered.defn = [interpolated(0, x, y) / interpolated(1, x, y)]
    return [filtered], {"R": R, "C": C, "r_sigma": r_sigma}


def prepare(photos, size=None):
    """Inputs from one photo (any dtype): its luma as float32 in [0, 1], cropped or
    mirror-tiled to `size` = {"R": rows, "C": cols} when given."""
    gray = to_float(photos[0], channels=1)
    if size:
        gray = fit(gray, size["R"], size["C"])
    return {"img": np.ascontiguousarray(gray[:, :, 0])}


def _to_int(a):
    """float -> int32 as the DSL's Cast: truncate toward zero, saturate, NaN -> 0."""
    info = np.iinfo(np.int32)
    a = np.nan_to_num(np.trunc(a), nan=0.0, posinf=info.max, neginf=info.min)
    return np.clip(a, info.min, info.max).astype(np.int32)


def reference(img, r_sigma, **_):
    """NumPy version written from the algorithm, independently of the interpreter. The grid is
    accumulated with np.add.at in the pixels' row-major order, the order of the reduction."""
    r_sigma = np.float32(r_sigma)
    s, half = S_SIGMA, S_SIGMA // 2
    rows, cols = img.shape
    cells_x, cells_y = (rows - 1) // s + 2 + 2 * PAD, (cols - 1) // s + 2 + 2 * PAD
    nz = Z_BINS + 2 + 2 * PAD
    clamped = np.clip(img, np.float32(0), np.float32(1))

    # every pixel position of every stored cell, clamped into the image
    px = np.clip(np.arange(s * cells_x) - (s * PAD + half), 0, rows - 1)
    py = np.clip(np.arange(s * cells_y) - (s * PAD + half), 0, cols - 1)
    value = clamped[px[:, None], py[None, :]]
    zbin = np.clip(_to_int(value / r_sigma + np.float32(0.5)) + PAD, 0, nz - 1)
    gx = np.broadcast_to((np.arange(s * cells_x) // s)[:, None], value.shape)
    gy = np.broadcast_to((np.arange(s * cells_y) // s)[None, :], value.shape)
    grid = np.zeros((2, nz, cells_x, cells_y), np.float32)
    index = (zbin.ravel(), gx.ravel(), gy.ravel())
    np.add.at(grid[0], index, value.ravel())
    np.add.at(grid[1], index, np.float32(1))

    def blur(a, axis):
        n = a.shape[axis] - 4
        t = [np.take(a, np.arange(i, i + n), axis=axis) for i in range(5)]
        return t[0] + t[1] * np.float32(4) + t[2] * np.float32(6) + t[3] * np.float32(4) + t[4]

    blurred = blur(blur(blur(grid, 1), 2), 3)  # z, x, y: bins 2.., cells 2.. of the grid

    zv = clamped / r_sigma
    zi = _to_int(zv)
    zf = zv - zi.astype(np.float32)
    x, y = np.arange(rows)[:, None], np.arange(cols)[None, :]
    xf = (x % s).astype(np.float32) / np.float32(s)
    yf = (y % s).astype(np.float32) / np.float32(s)
    xi, yi = x // s, y // s  # blurred's origin is at stored cell PAD

    def lerp(a, b, w):
        return a * (np.float32(1) - w) + b * w

    def interpolate(ch):
        b = blurred[ch]

        def corner(dz, dx, dy):
            return b[np.clip(zi + dz, 0, b.shape[0] - 1), xi + dx, yi + dy]

        def plane(dz):
            return lerp(
                lerp(corner(dz, 0, 0), corner(dz, 1, 0), xf),
                lerp(corner(dz, 0, 1), corner(dz, 1, 1), xf),
                yf,
            )

        return lerp(plane(0), plane(1), zf)

    return interpolate(0) / interpolate(1)


def to_photo(output):
    """The output as an HW float image for saving."""
    return np.clip(np.nan_to_num(output), 0, 1)
