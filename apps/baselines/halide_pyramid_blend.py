"""Pyramid blending in Halide, the same algorithm as apps/pyramid_blend.py: the same 40 stages
(Gaussian pyramids of both images and the mask, x then y; upsampled Gaussian levels; the blends
with the Laplacian difference inlined; the collapse with its addition in the y pass), the same
[1 4 6 4 1]/16 and [1 6 1]/8, [4 4]/8 weights summed in the same order, and the app's borders:
level l has ceil(R / 2**l) x ceil(C / 2**l) points and every read of another level clamps its
index into that level's domain (repeat the edge) with min/max.

Halide's x is NumPy's last axis: the images (3, R, C) are the buffers (C, R, 3) and the mask
(R, C) the buffer (C, R). The Funcs keep the app's names: x the row, y the column (innermost).
"""

import numpy as np

from ..pyramid_blend import LEVELS


def _buffer(hl, array):
    """hl.Buffer wrapping `array` (copied only when read-only, e.g. a broadcast 1x1 mask)."""
    return hl.Buffer(np.require(array, requirements=["C", "W"]))


def build(hl, inputs, params, schedule=None):
    img1, img2 = _buffer(hl, inputs["img1"]), _buffer(hl, inputs["img2"])
    mask = _buffer(hl, inputs["mask"])
    rows, cols = inputs["img1"].shape[1:]
    y, x, c = hl.Var("y"), hl.Var("x"), hl.Var("c")
    # last index of level l along rows and columns
    last_r = [(rows - 1) // (1 << l) for l in range(LEVELS)]
    last_c = [(cols - 1) // (1 << l) for l in range(LEVELS)]
    f32 = hl.f32

    def at(f, colour, i, j):
        """f at row i, column j (and channel c when colour)."""
        return f[j, i, c] if colour else f[j, i]

    def define(f, colour, value):
        if colour:
            f[y, x, c] = value
        else:
            f[y, x] = value

    def down_taps(i, last):
        """The 5 indices 2*i-2 .. 2*i+2 of the finer level, clamped to 0 .. last."""
        return [
            hl.max(2 * i - 2, 0),
            hl.max(2 * i - 1, 0),
            2 * i,
            hl.min(2 * i + 1, last),
            hl.min(2 * i + 2, last),
        ]

    def down5(v):
        return (v[0] + v[1] * f32(4.0) + v[2] * f32(6.0) + v[3] * f32(4.0) + v[4]) * f32(0.0625)

    def pyr_down(f, l, colour, name):
        """Level l of a Gaussian pyramid from level l-1 (f): along x (rows), then along y."""
        downx, downy = hl.Func(f"Dx_{l}_{name}"), hl.Func(f"Dy_{l}_{name}")
        define(downx, colour, down5([at(f, colour, i, y) for i in down_taps(x, last_r[l - 1])]))
        define(downy, colour, down5([at(downx, colour, x, j) for j in down_taps(y, last_c[l - 1])]))
        return downy

    def up_expr(value, i, last):
        """Expand to index i of the finer level from the coarser one (value(index)), whose last
        index is `last`: weights [1 6 1]/8 for even i, [4 4]/8 for odd i."""
        half = i // 2
        even = (
            value(hl.max(half - 1, 0)) + value(half) * f32(6.0) + value(hl.min(half + 1, last))
        ) * f32(0.125)
        odd = (value(half) * f32(4.0) + value(hl.min(half + 1, last)) * f32(4.0)) * f32(0.125)
        return hl.select(i % 2 == 0, even, odd)

    def up_x(f, l, name):
        """Level l+1 (f) upsampled along x to level l's rows (columns stay at level l+1)."""
        upx = hl.Func(f"Ux_{l}_{name}")
        upx[y, x, c] = up_expr(lambda i: f[y, i, c], x, last_r[l + 1])
        return upx

    def up_y_expr(upx, l):
        return up_expr(lambda j: upx[j, x, c], y, last_c[l + 1])

    # 1. Gaussian pyramids (level 0 is the input itself)
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
            upy = hl.Func(f"Uy_{l}_{name}")
            upy[y, x, c] = up_y_expr(up_x(gauss[l + 1], l, name), l)
            ups.append(upy)
        res = hl.Func(f"Res_{l}")
        m = gmask[l][y, x]
        res[y, x, c] = (gauss1[l][y, x, c] - ups[0][y, x, c]) * m + (
            gauss2[l][y, x, c] - ups[1][y, x, c]
        ) * (f32(1.0) - m)
        blended.append(res)
    top = LEVELS - 1
    res = hl.Func(f"Res_{top}")
    m = gmask[top][y, x]
    res[y, x, c] = gauss1[top][y, x, c] * m + gauss2[top][y, x, c] * (f32(1.0) - m)
    blended.append(res)

    # 4. Collapse: upsample from the coarsest level and add the blended Laplacian level
    out = blended[top]
    collapsed = []  # Col_{top-1} .. Col_1, then the output
    for l in range(top - 1, -1, -1):
        colx = up_x(out, l, "coll")
        col = hl.Func("blend" if l == 0 else f"Col_{l}")
        col[y, x, c] = up_y_expr(colx, l) + blended[l][y, x, c]
        out = col
        collapsed.append(col)
    out.set_estimates([(0, cols), (0, rows), (0, 3)])
    if schedule is not None:
        # no Halide app: after apps/local_laplacian's pyramids (CPU): Gaussian levels whole in
        # 8-row strips, collapse levels slid along the output's parallel 64-row strips
        lanes = schedule.natural_vector_size(hl.Float(32))
        strip, row = hl.Var("strip"), hl.Var("row")
        for level in gauss1[1:] + gauss2[1:] + gmask[1:]:
            level.compute_root().split(x, strip, row, 8).parallel(strip).vectorize(y, lanes)
        blended[top].compute_root().parallel(x, 8).vectorize(y, lanes)
        out.reorder(c, y, x).split(x, strip, x, 64).parallel(strip).vectorize(y, lanes)
        for level in collapsed[:-1]:
            level.store_at(out, strip).compute_at(out, x).vectorize(y, lanes)
    return [out], [hl.Buffer(hl.Float(32), [cols, rows, 3])]
