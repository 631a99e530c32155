"""The box filter through a summed-area table in Halide, the same algorithm as
apps/integral_box.py: Int running sums of the edge-repeated uint8 luma along the rows, then
down the columns (each a Func of zeros updated over an RDom in order, the first row and column
left zero), then the four lookups and the rounded mean. No hand-written schedule (Halide's apps
have no integral image on the CPU).

The app's (R, C) input is the Halide buffer (C, R); Funcs are indexed [y, x], the column
innermost.
"""

from ..integral_box import AREA, RADIUS, WIDTH


def build(hl, inputs, params):
    img = hl.Buffer(inputs["img"])
    cols, rows = img.dim(0).extent(), img.dim(1).extent()
    edge = hl.BoundaryConditions.repeat_edge(img)
    y, x = hl.Var("y"), hl.Var("x")
    along = hl.RDom([(1, cols + 2 * RADIUS)]).x
    down = hl.RDom([(1, rows + 2 * RADIUS)]).x

    row_sums, sat, box = hl.Func("rows"), hl.Func("sat"), hl.Func("box")
    row_sums[y, x] = 0
    pixel = hl.cast(hl.Int(32), edge[along - 1 - RADIUS, x - RADIUS])
    row_sums[along, x] = row_sums[along - 1, x] + pixel
    sat[y, x] = 0
    sat[y, down] = sat[y, down - 1] + row_sums[y, down - 1]
    total = sat[y + WIDTH, x + WIDTH] - sat[y + WIDTH, x] - sat[y, x + WIDTH] + sat[y, x]
    box[y, x] = hl.cast(hl.UInt(8), (total + AREA // 2) / AREA)
    box.set_estimates([(0, cols), (0, rows)])
    return [box], [hl.Buffer(hl.UInt(8), [cols, rows])]
