"""Local Laplacian filter (Paris, Hasinoff and Kautz; the Halide and PolyMage benchmark):
edge-aware detail enhancement of a colour photo.

The gray image is remapped once per intensity level k = 0..K-1 (K = 8) through a lookup table
`remap(i) = alpha/(K-1) * f * exp(-f*f/2)`, f = i/256, indexed by the data
(`clamp(int(gray*(K-1)*256), 0, (K-1)*256) - 256*k`), plus `beta*(gray - k/(K-1)) + k/(K-1)`.
Each of the K processed images gets a Gaussian pyramid ([1 3 3 1]/8 downsampling, J = 8 pyramid
levels as in Halide) and a Laplacian pyramid (bilinear upsampling, Halide's
`0.25*f(x/2 - 1 + 2*(x%2)) + 0.75*f(x/2)`). At every pyramid level the output Laplacian
coefficient interpolates between the two processed pyramids selected by the input's Gaussian
pyramid value (`level = g*(K-1)`, `li = clamp(int(level), 0, K-2)`, a data-dependent index into
the K dimension). Collapsing the output pyramid gives the new gray image, and colour is put back
as `out_gray * (rgb + 0.01) / (gray + 0.01)`, clamped to [0, 1].

Input: float32 RGB in [0, 1], channel-first (3, R, C) (Halide reads uint16 and divides by
65535); output: float32 (3, R, C) in [0, 1]. Any size R, C >= 1 works: pyramid level j has the
domain [0, (R-1)/2**j] x [0, (C-1)/2**j] (never empty) and every stencil read is clamped to the
level's edge (Halide instead extends the input with repeat_edge and computes its pyramids on
whatever larger region is needed).

Stages: 82 with J = 8, laid out as PolyMage's own specification of this benchmark: remap LUT,
gray, the K-level processed image, 2 per downsampling (x then y) for the processed and input
pyramids (2 * 2 * 7), 3 per Laplacian level (upsample x, upsample y, difference: 3 * 7), 8 output
Laplacian levels, 3 per collapse step (3 * 7) and the colour output. Halide has 88 Funcs for the
same algorithm: it adds the input boundary and uint16->float stages, the uint16 output cast and
identity copies for the top Laplacian level, the top of the output pyramid and level 0 of the
input pyramid, which here are the same stages as their sources. The ~99 of the paper counts
stages differently; the computation is the same.
"""

import numpy as np

from polyimage import (
    Cast,
    Clamp,
    Exp,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Max,
    Min,
    Parameter,
    Variable,
)

from .inputs import fit, to_float

NAME = "local_laplacian"
DESCRIPTION = "the photo with local contrast and fine detail boosted, without halos at edges"
PAPER_SIZE = {"R": 2560, "C": 1536}
SMALL_SIZE = {"R": 67, "C": 93}
DEFAULTS = {"alpha": 1.0, "beta": 1.0}
PHOTOS = ("chelsea.png",)
K = 8  # intensity levels (part of the algorithm)
J = 8  # pyramid levels (Halide's default)
EPS = 0.01
GRAY_WEIGHTS = (0.299, 0.587, 0.114)


def build():
    """(outputs, parameters) of the pipeline."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    alpha, beta = Parameter(Float, "alpha"), Parameter(Float, "beta")
    c, k, x, y, i = (Variable(Int, n) for n in ("c", "k", "x", "y", "i"))
    img = Image(Float, "img", [3, R, C])
    levels = Interval(Int, 0, K - 1)
    # last row / column of pyramid level j (level 0 is the image)
    rmax = [R - 1] + [(R - 1) / 2**j for j in range(1, J)]
    cmax = [C - 1] + [(C - 1) / 2**j for j in range(1, J)]

    def rows(j):
        return Interval(Int, 0, rmax[j])

    def cols(j):
        return Interval(Int, 0, cmax[j])

    def stage(lead, j_rows, j_cols, name):
        """A Float stage over (k, x, y) when lead (the K dimension) is given, else (x, y)."""
        variables, intervals = ([k], [levels]) if lead else ([], [])
        return Function((variables + [x, y], intervals + [rows(j_rows), cols(j_cols)]), Float, name)

    def downsample(f, j, lead, name):
        """Level j from level j-1 with the [1 3 3 1]/8 kernel, x then y, clamped at the edges."""
        pre = [k] if lead else []
        rlast, clast = rmax[j - 1], cmax[j - 1]
        downx = stage(lead, j, j - 1, f"{name}_downx{j}")
        downx.defn = [
            (
                f(*pre, Max(2 * x - 1, 0), y)
                + 3.0 * (f(*pre, 2 * x, y) + f(*pre, Min(2 * x + 1, rlast), y))
                + f(*pre, Min(2 * x + 2, rlast), y)
            )
            / 8.0
        ]
        downy = stage(lead, j, j, f"{name}{j}")
        downy.defn = [
            (
                downx(*pre, x, Max(2 * y - 1, 0))
                + 3.0 * (downx(*pre, x, 2 * y) + downx(*pre, x, Min(2 * y + 1, clast)))
                + downx(*pre, x, Min(2 * y + 2, clast))
            )
            / 8.0
        ]
        return downy

    def upsample(f, j, lead, name):
        """Level j from level j+1 by bilinear interpolation (x then y): returns the stage of
        the x pass and the expression of the y pass at (k,) x, y."""
        pre = [k] if lead else []
        upx = stage(lead, j, j + 1, f"{name}_upx{j}")
        upx.defn = [
            0.25 * f(*pre, Clamp(x / 2 - 1 + 2 * (x % 2), 0, rmax[j + 1]), y)
            + 0.75 * f(*pre, x / 2, y)
        ]
        upy = stage(lead, j, j, f"{name}_upy{j}")
        upy.defn = [
            0.25 * upx(*pre, x, Clamp(y / 2 - 1 + 2 * (y % 2), 0, cmax[j + 1]))
            + 0.75 * upx(*pre, x, y / 2)
        ]
        return upy

    # the remapping function as a lookup table, 256 entries per intensity level
    remap = Function(([i], [Interval(Int, -(K - 1) * 256, (K - 1) * 256)]), Float, "remap")
    fx = Cast(Float, i) / 256.0
    remap.defn = [alpha / (K - 1) * fx * Exp(-fx * fx / 2.0)]

    gray = stage(False, 0, 0, "gray")
    gray.defn = [
        GRAY_WEIGHTS[0] * img(0, x, y)
        + GRAY_WEIGHTS[1] * img(1, x, y)
        + GRAY_WEIGHTS[2] * img(2, x, y)
    ]

    # the K processed images and their Gaussian pyramids
    level = Cast(Float, k) * (1.0 / (K - 1))
    idx = Clamp(Cast(Int, gray(x, y) * float(K - 1) * 256.0), 0, (K - 1) * 256)
    g_pyramid = [stage(True, 0, 0, "gpyr0")]
    g_pyramid[0].defn = [beta * (gray(x, y) - level) + level + remap(idx - 256 * k)]
    for j in range(1, J):
        g_pyramid.append(downsample(g_pyramid[j - 1], j, True, "gpyr"))

    # their Laplacian pyramids
    l_pyramid = [None] * J
    l_pyramid[J - 1] = g_pyramid[J - 1]
    for j in range(J - 2, -1, -1):
        up = upsample(g_pyramid[j + 1], j, True, "gpyr")
        l_pyramid[j] = stage(True, j, j, f"lpyr{j}")
        l_pyramid[j].defn = [g_pyramid[j](k, x, y) - up(k, x, y)]

    # the Gaussian pyramid of the input gray image
    in_pyramid = [gray]
    for j in range(1, J):
        in_pyramid.append(downsample(in_pyramid[j - 1], j, False, "ingpyr"))

    # the output Laplacian pyramid: interpolate between the two processed pyramids that
    # bracket the input's value (a data-dependent index into the K dimension)
    out_l_pyramid = []
    for j in range(J):
        lev = in_pyramid[j](x, y) * float(K - 1)
        li = Clamp(Cast(Int, lev), 0, K - 2)
        lf = lev - Cast(Float, li)
        out = stage(False, j, j, f"outlpyr{j}")
        out.defn = [(1.0 - lf) * l_pyramid[j](li, x, y) + lf * l_pyramid[j](li + 1, x, y)]
        out_l_pyramid.append(out)

    # collapse it
    out_g_pyramid = [None] * J
    out_g_pyramid[J - 1] = out_l_pyramid[J - 1]
    for j in range(J - 2, -1, -1):
        up = upsample(out_g_pyramid[j + 1], j, False, "outgpyr")
        out_g_pyramid[j] = stage(False, j, j, f"outgpyr{j}")
        out_g_pyramid[j].defn = [up(x, y) + out_l_pyramid[j](x, y)]

    # reintroduce colour
    colour = Function(([c, x, y], [Interval(Int, 0, 2), rows(0), cols(0)]), Float, "colour")
    colour.defn = [
        Clamp(out_g_pyramid[0](x, y) * (img(c, x, y) + EPS) / (gray(x, y) + EPS), 0.0, 1.0)
    ]
    return [colour], {"R": R, "C": C, "alpha": alpha, "beta": beta}


def prepare(photos, size=None):
    """Inputs from one HWC photo (any dtype): float32 RGB in [0, 1], channel first, cropped or
    mirror-tiled to `size` = {"R": rows, "C": cols} when given."""
    rgb = to_float(photos[0], channels=3)
    if size:
        rgb = fit(rgb, size["R"], size["C"])
    return {"img": np.ascontiguousarray(rgb.transpose(2, 0, 1))}


# ---------------------------------------------------------------------------------------------
# NumPy reference, written from the algorithm description (float32 throughout)

F = np.float32


def _down(a, axis):
    """[1 3 3 1]/8 at 2*i-1 .. 2*i+2 along `axis`, indices clamped; output length ceil(n/2)."""
    n = a.shape[axis]
    i = np.arange((n - 1) // 2 + 1)
    take = [np.take(a, np.clip(2 * i + d, 0, n - 1), axis=axis) for d in (-1, 0, 1, 2)]
    return (take[0] + F(3) * (take[1] + take[2]) + take[3]) / F(8)


def _up(a, axis, n):
    """Bilinear upsampling to length n along `axis`: 0.25*a[i//2 - 1 + 2*(i%2)] + 0.75*a[i//2],
    the first index clamped."""
    i = np.arange(n)
    far = np.clip(i // 2 - 1 + 2 * (i % 2), 0, a.shape[axis] - 1)
    return F(0.25) * np.take(a, far, axis=axis) + F(0.75) * np.take(a, i // 2, axis=axis)


def _pyramid_down(a):
    return _down(_down(a, -2), -1)


def _pyramid_up(a, shape):
    return _up(_up(a, -2, shape[-2]), -1, shape[-1])


def reference(img, alpha, beta, **_):
    """NumPy version written from the algorithm, independently of the interpreter."""
    alpha, beta = F(alpha), F(beta)
    i = np.arange(-(K - 1) * 256, (K - 1) * 256 + 1)
    fx = i.astype(F) / F(256)
    remap = alpha / F(K - 1) * fx * np.exp(-fx * fx / F(2))

    w = [F(v) for v in GRAY_WEIGHTS]
    gray = w[0] * img[0] + w[1] * img[1] + w[2] * img[2]

    level = (np.arange(K).astype(F) * F(1 / (K - 1)))[:, None, None]
    idx = np.clip((gray * F(K - 1) * F(256)).astype(np.int64), 0, (K - 1) * 256)
    lut_index = idx[None] - 256 * np.arange(K)[:, None, None]
    g0 = beta * (gray[None] - level) + level + remap[lut_index + (K - 1) * 256]

    g_pyramid = [g0]
    in_pyramid = [gray]
    for _ in range(1, J):
        g_pyramid.append(_pyramid_down(g_pyramid[-1]))
        in_pyramid.append(_pyramid_down(in_pyramid[-1]))
    l_pyramid = [
        g_pyramid[j] - _pyramid_up(g_pyramid[j + 1], g_pyramid[j].shape) for j in range(J - 1)
    ] + [g_pyramid[J - 1]]

    out_l = []
    for j in range(J):
        lev = in_pyramid[j] * F(K - 1)
        li = np.clip(lev.astype(np.int64), 0, K - 2)
        lf = lev - li.astype(F)
        lo = np.take_along_axis(l_pyramid[j], li[None], axis=0)[0]
        hi = np.take_along_axis(l_pyramid[j], li[None] + 1, axis=0)[0]
        out_l.append((F(1) - lf) * lo + lf * hi)

    out = out_l[J - 1]
    for j in range(J - 2, -1, -1):
        out = _pyramid_up(out, out_l[j].shape) + out_l[j]

    eps = F(EPS)
    return np.clip(out[None] * (img + eps) / (gray[None] + eps), F(0), F(1))


def to_photo(output):
    """The output as an HWC float image for saving."""
    return np.clip(output.transpose(1, 2, 0), 0, 1)
