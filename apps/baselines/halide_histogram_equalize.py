"""Histogram equalization in Halide, the same algorithm as apps/histogram_equalize.py: 8-bit
luma, a histogram over an RDom, the cdf as a scan along another RDom, the cdf at the first used
luma, the integer equalizing map and every channel moved by the luma's change.

The app's (3, R, C) uint8 photo is the Halide buffer (C, R, 3); Funcs are indexed [col, row]."""

from ..histogram_equalize import WEIGHTS


def build(hl, inputs, params):
    img = hl.Buffer(inputs["img"])
    cols, rows = img.dim(0).extent(), img.dim(1).extent()
    y, x, c, b = hl.Var("y"), hl.Var("x"), hl.Var("c"), hl.Var("b")
    i32, i64 = hl.Int(32), hl.Int(64)

    luma = hl.Func("luma")
    weighted = sum(w * hl.cast(i32, img[y, x, k]) for k, w in enumerate(WEIGHTS))
    luma[y, x] = hl.cast(hl.UInt(8), (weighted + 128) // 256)

    hist = hl.Func("hist")
    hist[b] = 0
    pixels_dom = hl.RDom([(0, cols), (0, rows)])
    hist[hl.cast(i32, luma[pixels_dom.x, pixels_dom.y])] += 1

    cdf = hl.Func("cdf")
    cdf[b] = hist[b]
    scan = hl.RDom([(1, 255)])
    cdf[scan.x] = cdf[scan.x - 1] + hist[scan.x]

    pixels = hl.cast(i64, cols) * hl.cast(i64, rows)
    cdf_min = hl.Func("cdf_min")
    cdf_min[b] = pixels
    used = hl.RDom([(0, 256)])
    cdf_min[0] = hl.select(
        hist[used.x] > 0, hl.min(cdf_min[0], hl.cast(i64, cdf[used.x])), cdf_min[0]
    )

    lut = hl.Func("lut")
    spread = pixels - cdf_min[0]
    scaled = ((hl.cast(i64, cdf[b]) - cdf_min[0]) * 255 + spread // 2) // spread
    lut[b] = hl.select(
        spread == 0, hl.cast(hl.UInt(8), b), hl.cast(hl.UInt(8), hl.clamp(scaled, 0, 255))
    )

    out = hl.Func("equalized")
    level = hl.cast(i32, luma[y, x])
    change = hl.cast(i32, lut[level]) - level
    out[y, x, c] = hl.cast(hl.UInt(8), hl.clamp(hl.cast(i32, img[y, x, c]) + change, 0, 255))
    out.set_estimates([(0, cols), (0, rows), (0, 3)])
    return [out], [hl.Buffer(hl.UInt(8), [cols, rows, 3])]
