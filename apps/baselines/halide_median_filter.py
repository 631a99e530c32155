"""3x3 median filter in Halide, the same algorithm as apps/median_filter.py: every vertical
triple sorted with min/max, then the median of the column minima's max, the column medians'
median and the column maxima's min. Halide's apps have no median filter, so no hand-written
schedule.

The app's (3, R+2, C+2) input with a 1-pixel edge border is the Halide buffer (C+2, R+2, 3);
Funcs are indexed [col, row, c] by the output pixel, which is the padded input's
[col + 1, row + 1]. The input's rows are read clamped to the buffer (the edge repeated), so
that a schedule computing a producer beyond what the output needs stays inside it.
"""

from ..median_filter import BORDER


def build(hl, inputs, params):
    buffer = hl.Buffer(inputs["img"])
    cols, rows = buffer.dim(0).extent() - 2 * BORDER, buffer.dim(1).extent() - 2 * BORDER
    last_row = buffer.dim(1).extent() - 1
    y, x, c = hl.Var("y"), hl.Var("x"), hl.Var("c")  # the app's names: x the row, y the column

    def img(dcol, drow):
        return buffer[y + BORDER + dcol, hl.clamp(hl.likely(x + BORDER + drow), 0, last_row), c]

    def median3(a, b, d):
        return hl.max(hl.min(a, b), hl.min(hl.max(a, b), d))

    names = ("col_lo", "col_mid", "col_hi", "median")
    col_lo, col_mid, col_hi, median = (hl.Func(n) for n in names)
    up, centre, down = img(0, -1), img(0, 0), img(0, 1)
    col_lo[y, x, c] = hl.min(hl.min(up, centre), down)
    col_mid[y, x, c] = median3(up, centre, down)
    col_hi[y, x, c] = hl.max(hl.max(up, centre), down)

    def across(f):
        return f[y - 1, x, c], f[y, x, c], f[y + 1, x, c]

    left, middle, right = across(col_lo)
    lows = hl.max(hl.max(left, middle), right)
    mids = median3(*across(col_mid))
    left, middle, right = across(col_hi)
    highs = hl.min(hl.min(left, middle), right)
    median[y, x, c] = median3(lows, mids, highs)
    median.set_estimates([(0, cols), (0, rows), (0, 3)])
    return [median], [hl.Buffer(hl.Float(32), [cols, rows, 3])]
