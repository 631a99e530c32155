"""Non-local means in Halide, the same algorithm as apps/nl_means.py: the same stages, patch and
search sizes, and sums in the same order (search offsets row outer, column inner).

The app's input (3, R + 12, C + 12) is the Halide buffer (C + 12, R + 12, 3). Every Func is
indexed by the output pixel [col, row] (the app's point (row + 6, col + 6)) and the offsets as
[col offset, row offset], innermost first. The weights use exp, as the app does, not Halide's
fast_exp; sigma is a Param, so that -1 / (sigma^2 * 49) is computed as in the app.
"""

from ..nl_means import BORDER, OFFSETS, PATCH, PATCH_TAPS


def _sum(terms):
    terms = list(terms)
    return sum(terms[1:], terms[0])


def build(hl, inputs, params, schedule=None):
    img = hl.Buffer(inputs["img"])
    cols, rows = img.dim(0).extent() - 2 * BORDER, img.dim(1).extent() - 2 * BORDER
    sigma = hl.Param(hl.Float(32), "sigma", float(params["sigma"]))
    sigma.set_estimate(float(params["sigma"]))
    y, x, c, j, i = (hl.Var(n) for n in ("y", "x", "c", "j", "i"))  # j, i: column, row offset
    names = ("d", "blur_rows", "blur_d", "w", "with_alpha", "nl_sum", "nl_means")
    d, blur_rows, blur_d, w, with_alpha, nl_sum, nl_means = (hl.Func(n) for n in names)

    def pixel(col, row, ch):
        return img[col + BORDER, row + BORDER, ch]

    def squared_difference(ch):
        diff = pixel(y, x, ch) - pixel(y + j, x + i, ch)
        return diff * diff

    d[y, x, j, i] = _sum(squared_difference(ch) for ch in range(3))
    blur_rows[y, x, j, i] = _sum(d[y, x + k, j, i] for k in PATCH_TAPS)
    blur_d[y, x, j, i] = _sum(blur_rows[y + k, x, j, i] for k in PATCH_TAPS)
    inv_sigma_sq = hl.f32(-1) / (sigma * sigma * hl.f32(PATCH) * hl.f32(PATCH))
    w[y, x, j, i] = hl.exp(blur_d[y, x, j, i] * inv_sigma_sq)
    with_alpha[y, x, c] = hl.mux(c, [pixel(y, x, 0), pixel(y, x, 1), pixel(y, x, 2), hl.f32(1)])
    half = max(abs(di) for di, _ in OFFSETS)
    s = hl.RDom([(-half, 2 * half + 1), (-half, 2 * half + 1)], "s")  # s.x: column offset
    nl_sum[y, x, c] = hl.f32(0)
    nl_sum[y, x, c] += w[y, x, s.x, s.y] * with_alpha[y + s.x, x + s.y, c]
    nl_means[y, x, c] = hl.clamp(nl_sum[y, x, c] / nl_sum[y, x, 3], hl.f32(0), hl.f32(1))
    nl_means.set_estimates([(0, cols), (0, rows), (0, 3)])
    if schedule is not None:
        # after Halide's apps/nl_means (CPU): parallel rows of 16x8 tiles, the difference and
        # row blur per tile (storage per tile row), the column blur and the sums per pixel
        lanes = schedule.natural_vector_size(hl.Float(32))
        tile_y, tile_x, yi, xi = (hl.Var(n) for n in ("tile_y", "tile_x", "yi", "xi"))
        nl_means.compute_root().reorder(c, y, x).tile(y, x, tile_y, tile_x, yi, xi, 16, 8)
        nl_means.parallel(tile_x).vectorize(yi, lanes)
        for f in (d, blur_rows):
            f.compute_at(nl_means, tile_y).hoist_storage(nl_means, tile_x).vectorize(y, lanes)
        blur_rows.reorder(x, y)
        nl_sum.compute_at(nl_means, yi).reorder(c, y, x).bound(c, 0, 4).unroll(c)
        nl_sum.vectorize(y, lanes)
        nl_sum.update(0).reorder(c, y, x, s.x, s.y).unroll(c).vectorize(y, lanes)
        blur_d.compute_at(nl_sum, y).vectorize(y, lanes)
    return [nl_means], [hl.Buffer(hl.Float(32), [cols, rows, 3])]
