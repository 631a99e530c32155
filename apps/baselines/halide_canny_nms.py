"""Canny non-maximum suppression in Halide, the same algorithm as apps/canny_nms.py: Sobel
gx and gy of the edge-repeated luma, the L1 magnitude, the two neighbours across the edge
chosen by the same comparisons, the same thresholds. No hand-written schedule.

The app's (R, C) input is the Halide buffer (C, R); Funcs are indexed [col, row], and the
magnitude is read through repeat_edge over the image's extent, as the app reads it.
"""

from ..canny_nms import ACROSS


def build(hl, inputs, params):
    buffer = hl.Buffer(inputs["img"])
    cols, rows = buffer.dim(0).extent(), buffer.dim(1).extent()
    e_func = hl.BoundaryConditions.repeat_edge(buffer)
    y, x = hl.Var("y"), hl.Var("x")  # the app's names: x the row, y the column (innermost)

    def e(dr, dc):
        return e_func[y + dc, x + dr]

    gx, gy, mag, edges = (hl.Func(n) for n in ("gx", "gy", "mag", "edges"))
    gx[y, x] = (e(-1, 1) + 2 * e(0, 1) + e(1, 1)) - (e(-1, -1) + 2 * e(0, -1) + e(1, -1))
    gy[y, x] = (e(1, -1) + 2 * e(1, 0) + e(1, 1)) - (e(-1, -1) + 2 * e(-1, 0) + e(-1, 1))
    mag[y, x] = hl.abs(gx[y, x]) + hl.abs(gy[y, x])
    edge_mag = hl.BoundaryConditions.repeat_edge(mag, [(0, cols), (0, rows)])

    def m(col, row):  # an Expr: select() of FuncRefs would pick Tuples
        return hl.Expr(edge_mag[col, row])

    ax, ay = hl.abs(gx[y, x]), hl.abs(gy[y, x])
    horizontal, vertical = ax > 2 * ay, ay > 2 * ax
    rising = ((gx[y, x] > 0) & (gy[y, x] > 0)) | ((gx[y, x] < 0) & (gy[y, x] < 0))

    def neighbour(k):
        (a, b), (c, d), (f, g), (h, i) = (ACROSS[n][k] for n in ACROSS)
        diagonal = hl.select(rising, m(y + g, x + f), m(y + i, x + h))
        across = hl.select(vertical, m(y + d, x + c), diagonal)
        return hl.select(horizontal, m(y + b, x + a), across)

    centre = hl.Expr(mag[y, x])
    kept = hl.select((centre >= neighbour(0)) & (centre >= neighbour(1)), centre, hl.f32(0))
    low, high = hl.f32(params["low"]), hl.f32(params["high"])
    edges[y, x] = hl.select(kept > high, hl.u8(255), hl.select(kept > low, hl.u8(128), hl.u8(0)))
    edges.set_estimates([(0, cols), (0, rows)])
    return [edges], [hl.Buffer(hl.UInt(8), [cols, rows])]
