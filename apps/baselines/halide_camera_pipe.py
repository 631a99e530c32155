"""Camera pipeline in Halide, the same algorithm as apps/camera_pipe.py (itself Halide's
apps/camera_pipe): the same stages (denoised, deinterleaved, the twelve demosaic Funcs, the
interleaving Funcs, matrix, corrected, curve, processed), the same int16/int32 arithmetic
(averages rounding up, absolute differences in int32, the Q8.8 colour matrix) and the same
float32 tone curve.

The raw mosaic (R + 16, C + 16) is the Halide buffer (C + 16, R + 16) and the 3x4 matrices are
the buffers (4, 3), so every Func is indexed innermost first as in the app: f[y, x] with x the
row and y the column, matrix[j, i] (the app's matrix(i, j)), corrected[y, x, c]. Every Func
except the output works in the app's coordinates (raw pixels, half-resolution cells); the output
pixel [col, row, c] is the app's point (c, row + 8, col + 8). The curve's lookup is clamped to
0 .. 1023 as the app clamps data-dependent indices to the curve's domain.
"""

from ..camera_pipe import BORDER, LUT_SIZE


def build(hl, inputs, params, schedule=None):
    img = hl.Buffer(inputs["img"])
    m3200, m7000 = hl.Buffer(inputs["matrix_3200"]), hl.Buffer(inputs["matrix_7000"])
    cols, rows = img.dim(0).extent() - 2 * BORDER, img.dim(1).extent() - 2 * BORDER
    color_temp = hl.f32(params["color_temp"])
    gamma, contrast = hl.f32(params["gamma"]), hl.f32(params["contrast"])
    black, white = int(params["black_level"]), int(params["white_level"])
    y, x, c = hl.Var("y"), hl.Var("x"), hl.Var("c")  # the app's names: x row, y column
    i, j, v = hl.Var("i"), hl.Var("j"), hl.Var("v")
    i16, i32, f32 = hl.Int(16), hl.Int(32), hl.Float(32)

    def avg(a, b):
        return hl.cast(i16, (hl.cast(i32, a) + b + 1) / 2)

    def absd(a, b):
        return hl.abs(hl.cast(i32, a) - b)

    # 1. hot-pixel suppression (uint16 -> int16)
    denoised = hl.Func("denoised")
    nbrs = (img[y, x - 2], img[y, x + 2], img[y - 2, x], img[y + 2, x])
    hi = hl.max(hl.max(nbrs[0], nbrs[1]), hl.max(nbrs[2], nbrs[3]))
    lo = hl.min(hl.min(nbrs[0], nbrs[1]), hl.min(nbrs[2], nbrs[3]))
    denoised[y, x] = hl.cast(i16, hl.clamp(img[y, x], lo, hi))

    # 2. deinterleave: row 2x is G R G R ..., row 2x+1 is B G B G ...
    deinterleaved = hl.Func("deinterleaved")
    deinterleaved[y, x, c] = hl.select(
        c == 0,
        denoised[2 * y, 2 * x],
        c == 1,
        denoised[2 * y + 1, 2 * x],
        c == 2,
        denoised[2 * y, 2 * x + 1],
        denoised[2 * y + 1, 2 * x + 1],
    )

    # 3. demosaic; f_s = the value of colour f at the sites of s
    names = (
        "g_gr",
        "r_r",
        "b_b",
        "g_gb",
        "g_r",
        "g_b",
        "r_gr",
        "b_gr",
        "r_gb",
        "b_gb",
        "r_b",
        "b_r",
    )
    g_gr, r_r, b_b, g_gb, g_r, g_b, r_gr, b_gr, r_gb, b_gb, r_b, b_r = (hl.Func(n) for n in names)
    for k, f in enumerate((g_gr, r_r, b_b, g_gb)):
        f[y, x] = deinterleaved[y, x, k]

    gv_r, gvd_r = avg(g_gb[y, x - 1], g_gb[y, x]), absd(g_gb[y, x - 1], g_gb[y, x])
    gh_r, ghd_r = avg(g_gr[y + 1, x], g_gr[y, x]), absd(g_gr[y + 1, x], g_gr[y, x])
    g_r[y, x] = hl.select(ghd_r < gvd_r, gh_r, gv_r)

    gv_b, gvd_b = avg(g_gr[y, x + 1], g_gr[y, x]), absd(g_gr[y, x + 1], g_gr[y, x])
    gh_b, ghd_b = avg(g_gb[y - 1, x], g_gb[y, x]), absd(g_gb[y - 1, x], g_gb[y, x])
    g_b[y, x] = hl.select(ghd_b < gvd_b, gh_b, gv_b)

    r_gr[y, x] = g_gr[y, x] - avg(g_r[y, x], g_r[y - 1, x]) + avg(r_r[y - 1, x], r_r[y, x])
    b_gr[y, x] = g_gr[y, x] - avg(g_b[y, x], g_b[y, x - 1]) + avg(b_b[y, x], b_b[y, x - 1])
    r_gb[y, x] = g_gb[y, x] - avg(g_r[y, x], g_r[y, x + 1]) + avg(r_r[y, x], r_r[y, x + 1])
    b_gb[y, x] = g_gb[y, x] - avg(g_b[y, x], g_b[y + 1, x]) + avg(b_b[y, x], b_b[y + 1, x])

    rp_b = g_b[y, x] - avg(g_r[y, x], g_r[y - 1, x + 1]) + avg(r_r[y, x], r_r[y - 1, x + 1])
    rpd_b = absd(r_r[y, x], r_r[y - 1, x + 1])
    rn_b = g_b[y, x] - avg(g_r[y - 1, x], g_r[y, x + 1]) + avg(r_r[y - 1, x], r_r[y, x + 1])
    rnd_b = absd(r_r[y - 1, x], r_r[y, x + 1])
    r_b[y, x] = hl.select(rpd_b < rnd_b, rp_b, rn_b)

    bp_r = g_r[y, x] - avg(g_b[y, x], g_b[y + 1, x - 1]) + avg(b_b[y, x], b_b[y + 1, x - 1])
    bpd_r = absd(b_b[y, x], b_b[y + 1, x - 1])
    bn_r = g_r[y, x] - avg(g_b[y + 1, x], g_b[y, x - 1]) + avg(b_b[y + 1, x], b_b[y, x - 1])
    bnd_r = absd(b_b[y + 1, x], b_b[y, x - 1])
    b_r[y, x] = hl.select(bpd_r < bnd_r, bp_r, bn_r)

    # 4. interleave back to full resolution (raw coordinates: y and x are never negative)
    def interleave(name, even_even, even_odd, odd_even, odd_odd):
        def along_y(a, b, part):
            f = hl.Func(f"{name}_{part}")
            f[y, x] = hl.select(y % 2 == 0, a[y / 2, x], b[y / 2, x])
            return f

        even, odd = along_y(even_even, even_odd, "x1"), along_y(odd_even, odd_odd, "x2")
        f = hl.Func(name)
        f[y, x] = hl.select(x % 2 == 0, even[y, x / 2], odd[y, x / 2])
        return f

    red = interleave("red", r_gr, r_r, r_b, r_gb)
    green = interleave("green", g_gr, g_r, g_b, g_gb)
    blue = interleave("blue", b_gr, b_r, b_b, b_gb)

    # 5. colour correction
    alpha = (hl.f32(1) / color_temp - hl.f32(1.0 / 3200)) / hl.f32(1.0 / 7000 - 1.0 / 3200)
    matrix = hl.Func("matrix")
    matrix[j, i] = hl.cast(
        i16, (m3200[j, i] * alpha + m7000[j, i] * (hl.f32(1) - alpha)) * hl.f32(256)
    )
    ir, ig, ib = hl.cast(i32, red[y, x]), hl.cast(i32, green[y, x]), hl.cast(i32, blue[y, x])

    def channel(k):
        return (
            hl.cast(i32, matrix[3, k]) + matrix[0, k] * ir + matrix[1, k] * ig + matrix[2, k] * ib
        ) / 256

    corrected = hl.Func("corrected")
    corrected[y, x, c] = hl.cast(i16, hl.select(c == 0, channel(0), c == 1, channel(1), channel(2)))

    # 6. tone curve (Halide's apply_curve) and its lookup
    inv_range = hl.f32(1) / hl.cast(f32, hl.i32(white - black))
    b = hl.f32(2) - hl.pow(hl.f32(2), contrast / hl.f32(100))
    a = hl.f32(2) - hl.f32(2) * b
    xf = hl.clamp(hl.cast(f32, v - black) * inv_range, hl.f32(0), hl.f32(1))
    g = hl.pow(xf, hl.f32(1) / gamma)
    z = hl.select(
        g > hl.f32(0.5),
        hl.f32(1) - (a * (hl.f32(1) - g) * (hl.f32(1) - g) + b * (hl.f32(1) - g)),
        a * g * g + b * g,
    )
    val = hl.cast(hl.UInt(8), hl.clamp(z * hl.f32(255) + hl.f32(0.5), hl.f32(0), hl.f32(255)))
    curve = hl.Func("curve")
    curve[v] = hl.select(v <= black, hl.u8(0), v > white, hl.u8(255), val)

    processed = hl.Func("processed")
    index = hl.clamp(hl.cast(i32, corrected[y + BORDER, x + BORDER, c]), 0, LUT_SIZE - 1)
    processed[y, x, c] = curve[index]
    processed.set_estimates([(0, cols), (0, rows), (0, 3)])
    if schedule is not None:
        # after Halide's apps/camera_pipe (CPU), our output as its curved stage (no sharpening):
        # parallel 32-row strips of 2-row tiles, stencils slid per row pair, colours per tile
        lanes = 2 * schedule.natural_vector_size(hl.UInt(16))
        strip, pair, tile, col, row = (hl.Var(n) for n in ("strip", "pair", "tile", "col", "row"))
        processed.tile(y, x, tile, pair, col, row, lanes, 2).reorder(c, col, row, tile, pair)
        processed.bound(c, 0, 3).split(pair, strip, pair, 16).parallel(strip)
        processed.vectorize(col).unroll(row).unroll(c)
        denoised.store_at(processed, strip).compute_at(processed, pair)
        denoised.tile(y, x, y, x, col, row, lanes, 2).vectorize(col).unroll(row)
        deinterleaved.store_at(processed, strip).compute_at(processed, pair)
        deinterleaved.reorder(c, y, x).vectorize(y, lanes).unroll(c)
        for f in (g_r, g_b):
            f.store_at(processed, strip).compute_at(processed, pair).vectorize(y, lanes)
        g_b.compute_with(g_r, y)
        corrected.compute_at(processed, tile).reorder(c, y, x).vectorize(y).unroll(c)
        for f in (red, green, blue):
            f.compute_at(processed, tile).vectorize(y)
        matrix.compute_root()
        curve.compute_root()
    return [processed], [hl.Buffer(hl.UInt(8), [cols, rows, 3])]
