"""Multiscale interpolation in Halide, the same algorithm as apps/interpolate.py (itself Halide's
apps/interpolate): the same 47 stages (downsampled_0, downx_l and downsampled_l for l = 1..9,
upsampledx_l, upsampled_l and interpolated_l for l = 8..0, normalize), the same [1 2 1]/4
downsampling and the same averaging upsampling, and the app's borders rather than Halide's
repeat_edge of the input.

The app's input (4, R, C) is the Halide buffer (C, R, 4), so every Func is indexed innermost
first: f[y, x, c] with x the row and y the column as in the app. Level l covers rows
0 .. (R - 1) >> l and columns 0 .. (C - 1) >> l, and every read of another level clamps its
index into that level's range (repeat the edge) exactly where the app does: the outer taps
2 * i - 1 and 2 * i + 1 of the downsampling and the upper tap (i + 1) / 2 of the upsampling.
The other reads stay inside the level by construction. The app's Halide-x filters (downx,
upsampledx) run along the column y, as in Halide's version.
"""

from ..interpolate import LEVELS


def build(hl, inputs, params, schedule=None):
    img = hl.Buffer(inputs["img"])
    cols, rows = img.dim(0).extent(), img.dim(1).extent()
    y, x, c = hl.Var("y"), hl.Var("x"), hl.Var("c")  # the app's names: x row, y column
    # last row and column of level l (rows, cols >= 1, so >> is the app's floor division)
    last_r = [(rows - 1) >> l for l in range(LEVELS)]
    last_c = [(cols - 1) >> l for l in range(LEVELS)]
    quarter, two = hl.f32(0.25), hl.f32(2)

    downsampled, downxs = [hl.Func("downsampled_0")], [None]
    downsampled[0][y, x, c] = hl.select(c < 3, img[y, x, c] * img[y, x, 3], img[y, x, 3])
    for l in range(1, LEVELS):
        prev, lr, lc = downsampled[l - 1], last_r[l - 1], last_c[l - 1]
        downx = hl.Func(f"downx_{l}")
        downx[y, x, c] = (
            prev[hl.max(2 * y - 1, 0), x, c]
            + two * prev[2 * y, x, c]
            + prev[hl.min(2 * y + 1, lc), x, c]
        ) * quarter
        down = hl.Func(f"downsampled_{l}")
        down[y, x, c] = (
            downx[y, hl.max(2 * x - 1, 0), c]
            + two * downx[y, 2 * x, c]
            + downx[y, hl.min(2 * x + 1, lr), c]
        ) * quarter
        downsampled.append(down)
        downxs.append(downx)

    interpolated = downsampled[LEVELS - 1]
    levels = [interpolated]  # interpolated_l, coarsest first
    for l in range(LEVELS - 2, -1, -1):
        prev, lr, lc = interpolated, last_r[l + 1], last_c[l + 1]
        upx = hl.Func(f"upsampledx_{l}")
        upx[y, x, c] = (prev[y / 2, x, c] + prev[hl.min((y + 1) / 2, lc), x, c]) / two
        up = hl.Func(f"upsampled_{l}")
        up[y, x, c] = (upx[y, x / 2, c] + upx[y, hl.min((x + 1) / 2, lr), c]) / two
        interpolated = hl.Func(f"interpolated_{l}")
        alpha = hl.f32(1) - downsampled[l][y, x, 3]
        interpolated[y, x, c] = downsampled[l][y, x, c] + alpha * up[y, x, c]
        levels.append(interpolated)

    normalize = hl.Func("normalize")
    normalize[y, x, c] = interpolated[y, x, c] / interpolated[y, x, 3]
    normalize.set_estimates([(0, cols), (0, rows), (0, 3)])
    if schedule is not None:
        # after Halide's apps/interpolate (CPU): mid levels whole in 8-row strips, levels slid
        # along the output's parallel 32-row strips
        lanes = schedule.natural_vector_size(hl.Float(32))
        strip, row, col = hl.Var("strip"), hl.Var("row"), hl.Var("col")
        for down in downsampled[1 : LEVELS - 1]:
            down.compute_root().reorder(y, c, x).split(x, strip, row, 8).parallel(strip)
            down.vectorize(y, lanes)
        first = downsampled[1]
        level0 = downsampled[0].clone_in(downxs[1])  # the copy level 1 reads
        level0.store_at(first, strip).compute_at(first, row).reorder(c, y, x).unroll(c)
        level0.vectorize(y, lanes)
        normalize.bound(y, 0, cols).bound(x, 0, rows).bound(c, 0, 3)
        normalize.split(y, y, col, lanes).split(x, strip, row, 32)
        normalize.reorder(col, c, y, row, strip).unroll(c).vectorize(col).parallel(strip)
        for level in levels[:-1]:  # all but interpolated_0, inlined into the output
            level.store_at(normalize, strip).compute_at(normalize, row).vectorize(y, lanes)
    return [normalize], [hl.Buffer(hl.Float(32), [cols, rows, 3])]
