"""Lens blur in Halide, the same algorithm as apps/lens_blur.py: the same stages, constants,
pyramid sizes and clamped reads, and the same `jitter` hash in place of Halide's random_float.

The app's inputs (3, R + 18, C + 18) and (3, R + 18, C + 82) are the Halide buffers
(C + 18, R + 18, 3) and (C + 82, R + 18, 3). Every Func is indexed innermost first by the output
pixel [col, row] (the app's point (row, col), the buffers read 9 pixels further), then the slice
and the channel: push0[col, row, z, c] is the app's push0(z, c, row, col). Reads of depth and of
the bokeh radius at sample positions are clamped to the image, as the app's data-dependent
reads are; the sums of weights times 8-bit colours are exact, so their order does not matter.
"""

from ..lens_blur import BORDER, LEVELS, MAX_RADIUS, SAMPLES, SLICES, _down, _sum, _up, jitter


def build(hl, inputs, params, schedule=None):
    left_buf, right_buf = hl.Buffer(inputs["left"]), hl.Buffer(inputs["right"])
    b = BORDER
    cols, rows = left_buf.dim(0).extent() - 2 * b, left_buf.dim(1).extent() - 2 * b
    focus = hl.Param(hl.Int(32), "focus_depth", int(params["focus_depth"]))
    focus.set_estimate(int(params["focus_depth"]))
    scale = hl.Param(hl.Float(32), "blur_radius_scale", float(params["blur_radius_scale"]))
    scale.set_estimate(float(params["blur_radius_scale"]))
    y, x, z, c, s = (hl.Var(n) for n in ("y", "x", "z", "c", "s"))  # y: column, x: row
    names = (
        "cost confidence filtered_cost min_cost depth bokeh_radius bokeh_sq worst_rows worst "
        "offset_col offset_row sample_weight with_alpha output lens_blur"
    ).split()
    (
        cost,
        confidence,
        filtered_cost,
        min_cost,
        depth,
        bokeh_radius,
        bokeh_sq,
        worst_rows,
        worst,
        offset_col,
        offset_row,
        sample_weight,
        with_alpha,
        output,
        lens_blur,
    ) = (hl.Func(n) for n in names)

    def squared_diff(ch):
        here = left_buf[y + b, x + b, ch]
        diff = hl.min(
            hl.absd(here, right_buf[y + b + 2 * z, x + b, ch]),
            hl.absd(here, right_buf[y + b + 2 * z + 1, x + b, ch]),
        )
        return hl.cast(hl.Float(32), diff) * hl.cast(hl.Float(32), diff)

    cost[y, x, z] = _sum(squared_diff(ch) for ch in range(3))
    r = hl.RDom([(0, SLICES)], "r")
    mean = hl.sum(cost[y, x, r] / SLICES)
    confidence[y, x] = hl.sum(cost[y, x, r] * cost[y, x, r]) / SLICES - mean * mean

    push0 = hl.Func("push0")
    push0[y, x, z, c] = hl.mux(c, [cost[y, x, z] * confidence[y, x], confidence[y, x]])
    push, pull = [push0], [None] * LEVELS
    last_rows = [(rows - 1) // 2**i for i in range(LEVELS)]
    last_cols = [(cols - 1) // 2**i for i in range(LEVELS)]
    for i in range(1, LEVELS):
        prev, down_cols, level = push[-1], hl.Func(f"down_cols{i}"), hl.Func(f"push{i}")
        down_cols[y, x, z, c] = _down(
            *(prev[hl.clamp(2 * y + k, 0, last_cols[i - 1]), x, z, c] for k in (-1, 0, 1, 2))
        )
        level[y, x, z, c] = _down(
            *(down_cols[y, hl.clamp(2 * x + k, 0, last_rows[i - 1]), z, c] for k in (-1, 0, 1, 2))
        )
        push.append(level)
    pull[LEVELS - 1] = push[LEVELS - 1]
    for i in range(LEVELS - 2, -1, -1):
        coarse, lr, lc = pull[i + 1], last_rows[i + 1], last_cols[i + 1]
        up_cols, level = hl.Func(f"up_cols{i}"), hl.Func(f"pull{i}")
        up_cols[y, x, z, c] = _up(
            coarse[y / 2, x, z, c], coarse[hl.clamp(y / 2 - 1 + 2 * (y % 2), 0, lc), x, z, c]
        )
        up = _up(
            up_cols[y, x / 2, z, c], up_cols[y, hl.clamp(x / 2 - 1 + 2 * (x % 2), 0, lr), z, c]
        )
        level[y, x, z, c] = up * 0.5 + push[i][y, x, z, c] * 0.5
        pull[i] = level

    filtered_cost[y, x, z] = pull[0][y, x, z, 0] / pull[0][y, x, z, 1]
    min_cost[y, x] = hl.minimum(filtered_cost[y, x, r])
    depth[y, x] = hl.minimum(hl.select(filtered_cost[y, x, r] == min_cost[y, x], r, SLICES))
    bokeh_radius[y, x] = hl.cast(hl.Float(32), hl.abs(depth[y, x] - focus)) * scale
    bokeh_sq[y, x] = bokeh_radius[y, x] * bokeh_radius[y, x]
    reach = range(-MAX_RADIUS, MAX_RADIUS + 1)

    def maximum(terms):
        terms = list(terms)
        out = terms[0]
        for t in terms[1:]:
            out = hl.max(out, t)
        return out

    worst_rows[y, x] = maximum(bokeh_radius[y, hl.clamp(x + k, 0, rows - 1)] for k in reach)
    worst[y, x] = maximum(worst_rows[hl.clamp(y + k, 0, cols - 1), x] for k in reach)

    def spread(axis):
        uint = jitter(y, x, s, axis, lambda e: hl.cast(hl.UInt(32), e))
        rand = hl.cast(hl.Float(32), uint) / 32768.0
        return hl.clamp(
            hl.cast(hl.Int(32), (rand - 0.5) * 2 * worst[y, x]), -MAX_RADIUS, MAX_RADIUS
        )

    offset_col[y, x, s] = spread(0)
    offset_row[y, x, s] = spread(1)
    d_col, d_row = offset_col[y, x, s], offset_row[y, x, s]
    r_sq = d_row * d_row + d_col * d_col
    seen_y, seen_x = hl.clamp(y + d_col, 0, cols - 1), hl.clamp(x + d_row, 0, rows - 1)
    use = ((r_sq < bokeh_sq[y, x]) | (depth[seen_y, seen_x] < depth[y, x])) & (
        r_sq < bokeh_sq[seen_y, seen_x]
    )
    sample_weight[y, x, s] = hl.select(use, hl.f32(1), hl.f32(0))

    def colour(col, row, ch):
        return hl.cast(hl.Float(32), left_buf[col + b, row + b, ch])

    with_alpha[y, x, c] = hl.mux(
        c, [colour(y, x, 0), colour(y, x, 1), colour(y, x, 2), hl.f32(255)]
    )
    sample = hl.RDom([(0, SAMPLES)], "sample")
    output[y, x, c] = with_alpha[y, x, c]
    output[y, x, c] += (
        sample_weight[y, x, sample]
        * with_alpha[y + offset_col[y, x, sample], x + offset_row[y, x, sample], c]
    )
    lens_blur[y, x, c] = output[y, x, c] / output[y, x, 3]
    lens_blur.set_estimates([(0, cols), (0, rows), (0, 3)])
    if schedule is not None:
        # after Halide's apps/lens_blur (CPU): push0 with its cost per vector of columns; the
        # pyramid per (slice, channel) of pull1; depth and the colours by rows; the blur per
        # output row, its samples per vector of output columns
        lanes = schedule.natural_vector_size(hl.Float(32))
        yi, xi, t = hl.Var("yi"), hl.Var("xi"), hl.Var("t")
        push0.compute_root().reorder(c, z, y, x).bound(c, 0, 2).unroll(c)
        push0.vectorize(y, 2 * lanes).parallel(x, 4)
        cost.compute_at(push0, y).vectorize(y)
        confidence.compute_at(push0, y).vectorize(y)
        for i in range(1, LEVELS):
            push[i].compute_at(pull[1], t).vectorize(y, lanes)
            if i > 1:
                pull[i].compute_at(pull[1], t).tile(y, x, yi, xi, lanes, 2)
                pull[i].vectorize(yi).unroll(xi)
        pull[1].compute_root().fuse(z, c, t).parallel(t)
        pull[1].tile(y, x, yi, xi, lanes, 2).vectorize(yi).unroll(xi)
        depth.compute_root().tile(y, x, yi, xi, lanes, 2).vectorize(yi).unroll(xi)
        depth.parallel(x, 8)
        with_alpha.compute_root().reorder(c, y, x).unroll(c).vectorize(y, lanes).parallel(x, 8)
        lens_blur.compute_root().reorder(c, y, x).bound(c, 0, 3).unroll(c)
        lens_blur.vectorize(y, lanes).parallel(x)
        worst_rows.compute_at(lens_blur, x).vectorize(y, lanes)
        worst.compute_at(lens_blur, x).vectorize(y, lanes)
        output.compute_at(lens_blur, y).vectorize(y)
        output.update().reorder(c, y, sample).vectorize(y).unroll(c)
        sample_weight.compute_at(output, y).unroll(y)
        for f in (offset_col, offset_row):
            f.compute_at(output, y).vectorize(y)
    return [lens_blur], [hl.Buffer(hl.Float(32), [cols, rows, 3])]
