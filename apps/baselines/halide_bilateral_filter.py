"""The direct 7x7 bilateral filter in Halide, the same algorithm as apps/bilateral_filter.py:
the same taps, weights and order of the sums. No hand-written schedule (Halide's apps compute
a bilateral grid, not the direct filter).

The app's (R, C) input is the Halide buffer (C, R); the Func is indexed [col, row] and reads
the input through Halide's repeat_edge, as the app reads it through polyimage's.
"""

from ..bilateral_filter import RANGE_SCALE, TAPS, spatial_weight


def build(hl, inputs, params):
    buffer = hl.Buffer(inputs["img"])
    cols, rows = buffer.dim(0).extent(), buffer.dim(1).extent()
    edge = hl.BoundaryConditions.repeat_edge(buffer)
    y, x = hl.Var("y"), hl.Var("x")  # the app's names: x the row, y the column (innermost)
    bilateral = hl.Func("bilateral")
    centre = buffer[y, x]
    numerator, denominator = hl.f32(0), hl.f32(0)
    for i, j in TAPS:
        tap = edge[y + j, x + i]
        difference = tap - centre
        weight = hl.f32(spatial_weight(i, j)) * hl.exp(
            difference * difference * hl.f32(RANGE_SCALE)
        )
        numerator = numerator + weight * tap
        denominator = denominator + weight
    bilateral[y, x] = numerator / denominator
    bilateral.set_estimates([(0, cols), (0, rows)])
    return [bilateral], [hl.Buffer(hl.Float(32), [cols, rows])]
