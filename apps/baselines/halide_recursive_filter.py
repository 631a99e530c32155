"""The recursive filter in Halide, the same passes as apps/recursive_filter.py: down the
columns, up them, along the rows and back, each y[i] = alpha x[i] + (1 - alpha) y[i - 1] from
y[0] = x[0]. Written as Halide code scans: each pass a Func set to its input, then updated in
place over an RDom running forwards or backwards (Halide needs no reversed copies).

The app's (R, C) input is the Halide buffer (C, R); Funcs are indexed [y, x], the column
innermost. No hand-written schedule (Halide's apps have no IIR filter on the CPU).
"""


def build(hl, inputs, params):
    img = hl.Buffer(inputs["img"])
    cols, rows = img.dim(0).extent(), img.dim(1).extent()
    alpha = hl.f32(params["alpha"])
    keep = hl.f32(1) - alpha
    y, x = hl.Var("y"), hl.Var("x")
    down_rows = hl.RDom([(1, rows - 1)])
    along_cols = hl.RDom([(1, cols - 1)])
    r, s = down_rows.x, along_cols.x

    down, up, right, left = (hl.Func(n) for n in ("down", "up", "right", "left"))
    down[y, x] = img[y, x]
    down[y, r] = alpha * down[y, r] + keep * down[y, r - 1]
    up[y, x] = down[y, x]
    back = rows - 1 - r
    up[y, back] = alpha * up[y, back] + keep * up[y, back + 1]
    right[y, x] = up[y, x]
    right[s, x] = alpha * right[s, x] + keep * right[s - 1, x]
    left[y, x] = right[y, x]
    back = cols - 1 - s
    left[back, x] = alpha * left[back, x] + keep * left[back + 1, x]
    left.set_estimates([(0, cols), (0, rows)])
    return [left], [hl.Buffer(hl.Float(32), [cols, rows])]
