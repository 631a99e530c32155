"""Pyramid blending (PolyMage's pyramid_blending benchmark): blend two colour photos along a
seam given by a mask, band by band (Burt and Adelson).

1. Gaussian pyramids of both images and of the mask, 4 levels: each level is the previous one
   filtered with the separable [1 4 6 4 1]/16 kernel and decimated by 2, first along x (rows),
   then along y (columns), reading 2*x-2 .. 2*x+2.
2. Laplacian pyramids of both images: level l minus the next level upsampled (the matching
   expand filter: even x = ([1 6 1]/8 at x/2-1, x/2, x/2+1), odd x = ([4 4]/8 at x/2, x/2+1),
   again x first, then y); the coarsest level is the Gaussian level itself.
3. Each Laplacian level blended with the mask's Gaussian level: lap1 * m + lap2 * (1 - m).
4. Collapse: from the coarsest blended level, upsample and add the next finer blended level.

Stages: 40. 18 for the Gaussian pyramids (3 levels x 3 images x {x, y}), 12 for the upsampled
Gaussian levels of the two images (3 levels x 2 images x {x, y}), 4 blends and 6 for the
collapse (3 levels x {x, y}). This is the stage graph PolyMage builds from its specification
(its graph.dot for this app): the point-wise Laplacian difference is part of the blend stage
and the collapse's addition part of its y-upsampling stage, as PolyMage inlines them (its
specification writes them as 9 separate point-wise functions, 49 in all; the paper reports 44).

Boundaries: level l has ceil(R / 2**l) x ceil(C / 2**l) points (domain 0 .. (R-1) // 2**l, so
odd sizes and levels that shrink to one pixel work), and every read of a coarser or finer level
clamps its index into that level's domain with Min/Max (repeat the edge), where PolyMage pads
each level with a ghost zone of zeros instead. Images are channel-first (3, R, C), float32 in
[0, 1]; the mask is (R, C) with 1 selecting img1, 0 img2; the output is (3, R, C).
"""

import numpy as np

from polyimage import Float, Function, Image, Int, Interval, Max, Min, Parameter, Select, Variable

from .inputs import fit, to_float

NAME = "pyramid_blend"
DESCRIPTION = "the first photo on the left, the second on the right, blended across a soft seam"
PAPER_SIZE = {"R": 2160, "C": 3840}
SMALL_SIZE = {"R": 67, "C": 93}
DEFAULTS = {}
PHOTOS = ("astronaut.png", "coffee.png")
LEVELS = 4


def build():
    """(outputs, parameters) of the pipeline."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    c, x, y = Variable(Int, "c"), Variable(Int, "x"), Variable(Int, "y")
    img1 = Image(Float, "img1", [3, R, C])
    img2 = Image(Float, "img2", [3, R, C])
    mask = Image(Float, "mask", [R, C])
    channels = Interval(Int, 0, 2)
    # last index of level l along rows and columns: level l has ceil(R / 2**l) rows
    last_r = [R - 1] + [(R - 1) // (1 << l) for l in range(1, LEVELS)]
    last_c = [C - 1] + [(C - 1) // (1 << l) for l in range(1, LEVELS)]

    def stage(name, colour, rows_level, cols_level):
        dims = (
            [x, y],
            [Interval(Int, 0, last_r[rows_level]), Interval(Int, 0, last_c[cols_level])],
        )
        if colour:
            dims = ([c] + dims[0], [channels] + dims[1])
        return Function(dims, Float, name)

    def at(f, colour, i, j):
        return f(c, i, j) if colour else f(i, j)

    def down_taps(i, last):
        """The 5 indices 2*i-2 .. 2*i+2 of the finer level, clamped to 0 .. last."""
        return [
            Max(2 * i - 2, 0),
            Max(2 * i - 1, 0),
            2 * i,
            Min(2 * i + 1, last),
            Min(2 * i + 2, last),
        ]

    def down5(v):
        return (v[0] + v[1] * 4.0 + v[2] * 6.0 + v[3] * 4.0 + v[4]) * 0.0625

    def pyr_down(f, l, colour, name):
        """Level l of a Gaussian pyramid from level l-1 (f): along x, then along y."""
        downx = stage(f"Dx_{l}_{name}", colour, l, l - 1)
        downx.defn = [down5([at(f, colour, i, y) for i in down_taps(x, last_r[l - 1])])]
        downy = stage(f"Dy_{l}_{name}", colour, l, l)
        downy.defn = [down5([at(downx, colour, x, j) for j in down_taps(y, last_c[l - 1])])]
        return downy

    def up_expr(value, i, last):
        """Expand to index i of the finer level from the coarser one (value(index)), whose
        last index is `last`: weights [1 6 1]/8 for even i, [4 4]/8 for odd i."""
        half = i / 2
        even = (value(Max(half - 1, 0)) + value(half) * 6.0 + value(Min(half + 1, last))) * 0.125
        odd = (value(half) * 4.0 + value(Min(half + 1, last)) * 4.0) * 0.125
        return Select(i % 2 == 0, even, odd)

    def up_x(f, l, name):
        """Level l+1 (f) upsampled along x to level l's rows (columns stay at level l+1)."""
        upx = stage(f"Ux_{l}_{name}", True, l, l + 1)
        upx.defn = [up_expr(lambda i: f(c, i, y), x, last_r[l + 1])]
        return upx

    def up_y_expr(upx, l):
        return up_expr(lambda j: upx(c, x, j), y, last_c[l + 1])

    # 1. Gaussian pyramids
    gauss1, gauss2, gmask = [img1], [img2], [mask]
    for l in range(1, LEVELS):
        gauss1.append(pyr_down(gauss1[-1], l, True, "img1"))
        gauss2.append(pyr_down(gauss2[-1], l, True, "img2"))
        gmask.append(pyr_down(gmask[-1], l, False, "mask"))

    # 2. + 3. Laplacian levels (Gaussian minus upsampled next level), blended with the mask
    blended = []
    for l in range(LEVELS - 1):
        ups = []
        for gauss, name in ((gauss1, "img1"), (gauss2, "img2")):
            upy = stage(f"Uy_{l}_{name}", True, l, l)
            upy.defn = [up_y_expr(up_x(gauss[l + 1], l, name), l)]
            ups.append(upy)
        res = stage(f"Res_{l}", True, l, l)
        m = gmask[l](x, y)
        res.defn = [
            (gauss1[l](c, x, y) - ups[0](c, x, y)) * m
            + (gauss2[l](c, x, y) - ups[1](c, x, y)) * (1 - m)
        ]
        blended.append(res)
    top = LEVELS - 1
    res = stage(f"Res_{top}", True, top, top)
    m = gmask[top](x, y)
    res.defn = [gauss1[top](c, x, y) * m + gauss2[top](c, x, y) * (1 - m)]
    blended.append(res)

    # 4. Collapse: upsample from the coarsest level and add the blended Laplacian level
    out = blended[top]
    for l in range(top - 1, -1, -1):
        name = "blend" if l == 0 else f"Col_{l}"
        colx = up_x(out, l, "coll")
        col = stage(name, True, l, l)
        col.defn = [up_y_expr(colx, l) + blended[l](c, x, y)]
        out = col
    return [out], {"R": R, "C": C}


def seam_mask(rows, cols):
    """A left/right split: 1 (first photo) left of the middle column, 0 right of it, with a
    smoothstep ramp a few percent of the width wide."""
    width = max(cols / 32, 1.0)
    t = np.clip((np.arange(cols) - (cols - 1) / 2) / width + 0.5, 0, 1)
    ramp = (1 - t * t * (3 - 2 * t)).astype(np.float32)
    return np.ascontiguousarray(np.broadcast_to(ramp, (rows, cols)))


def prepare(photos, size=None):
    """Inputs from two HWC photos (any dtype): both float32 in [0, 1], channel first, cropped or
    mirror-tiled to `size` (the first photo's size when None), and a synthesised seam mask."""
    first = to_float(photos[0], channels=3)
    rows, cols = (size["R"], size["C"]) if size else first.shape[:2]
    imgs = [
        np.ascontiguousarray(fit(to_float(p, channels=3), rows, cols).transpose(2, 0, 1))
        for p in photos[:2]
    ]
    return {"img1": imgs[0], "img2": imgs[1], "mask": seam_mask(rows, cols)}


# NumPy reference, written from the algorithm description


def _down(a, axis):
    """[1 4 6 4 1]/16 filter and decimation by 2 along `axis`, indices clamped."""
    n = a.shape[axis]
    centre = 2 * np.arange((n + 1) // 2)
    taps = [np.take(a, np.clip(centre + k, 0, n - 1), axis=axis) for k in range(-2, 3)]
    return (
        taps[0]
        + taps[1] * np.float32(4)
        + taps[2] * np.float32(6)
        + taps[3] * np.float32(4)
        + taps[4]
    ) * np.float32(0.0625)


def _up(a, axis, n):
    """Expand along `axis` to length n: even i from [1 6 1]/8, odd i from [4 4]/8."""
    m = a.shape[axis]
    i = np.arange(n)
    half = i // 2

    def tap(idx):
        return np.take(a, np.clip(idx, 0, m - 1), axis=axis)

    even = (tap(half - 1) + tap(half) * np.float32(6) + tap(half + 1)) * np.float32(0.125)
    odd = (tap(half) * np.float32(4) + tap(half + 1) * np.float32(4)) * np.float32(0.125)
    shape = [1] * a.ndim
    shape[axis] = n
    return np.where((i % 2 == 0).reshape(shape), even, odd)


def _gaussian(a):
    levels = [a]
    for _ in range(1, LEVELS):
        levels.append(_down(_down(levels[-1], -2), -1))
    return levels


def _expand(a, like):
    """Upsample `a` to the spatial shape of `like`: along x (rows) first, then y."""
    return _up(_up(a, -2, like.shape[-2]), -1, like.shape[-1])


def reference(img1, img2, mask, **_):
    """NumPy version written from the algorithm, independently of the interpreter."""
    g1, g2, gm = _gaussian(img1), _gaussian(img2), _gaussian(mask)
    one = np.float32(1)
    blended = []
    for l in range(LEVELS):
        if l < LEVELS - 1:
            lap1 = g1[l] - _expand(g1[l + 1], g1[l])
            lap2 = g2[l] - _expand(g2[l + 1], g2[l])
        else:
            lap1, lap2 = g1[l], g2[l]
        blended.append(lap1 * gm[l] + lap2 * (one - gm[l]))
    out = blended[-1]
    for l in range(LEVELS - 2, -1, -1):
        out = _expand(out, blended[l]) + blended[l]
    return out


def to_photo(output):
    """The output as an HWC float image for saving."""
    return np.clip(output.transpose(1, 2, 0), 0, 1)
