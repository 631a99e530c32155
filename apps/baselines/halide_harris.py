"""Harris corner detection in Halide, the same algorithm as apps/harris.py: the same 11 stages,
3x3 derivative weights, 3x3 box sums and k, summed in the same order.

The app's input is the (R+4, C+4) luma with a 2-pixel edge border, the Halide buffer
(C+4, R+4). Every Func here is indexed by the output pixel [col, row]: output pixel (row, col)
is the app's point (row + 2, col + 2) of the padded input, so the derivatives (needed one pixel
around the photo) read the input at [col + 2 + dcol, row + 2 + drow] and the box sums read the
products at [col + dcol, row + drow], dcol and drow in -1..1. The input's rows are read
clamped to the buffer (as Halide's repeat_edge would), which only matters for points that a
schedule computes and throws away.
"""

from ..harris import BORDER, BOX, DERIVATIVE, K


def build(hl, inputs, params, schedule=None):
    buffer = hl.Buffer(inputs["img"])
    cols, rows = buffer.dim(0).extent() - 2 * BORDER, buffer.dim(1).extent() - 2 * BORDER
    # The outputs read only the buffer, but a schedule may compute a producer beyond what they
    # need: at the paper size Adams2019 slides Ix and Iy along the rows, and Halide's sliding
    # window warms up with an extra iteration that reads 7 rows before the buffer. So the rows
    # are clamped to the buffer (its edge repeated, as Halide's repeat_edge does, inline rather
    # than a Func that an autoscheduler would schedule as a 12th stage); clamping the columns
    # too turns the vector loads of Li2018's schedule into gathers, and none of the three
    # autoschedulers needs it at either size.
    last_row = buffer.dim(1).extent() - 1

    def img(col, row):
        return buffer[col, hl.clamp(hl.likely(row), 0, last_row)]

    y, x = hl.Var("y"), hl.Var("x")  # the app's names: x the row, y the column (innermost)
    names = ("Iy", "Ix", "Ixx", "Iyy", "Ixy", "Sxx", "Syy", "Sxy", "det", "trace", "harris")
    Iy, Ix, Ixx, Iyy, Ixy, Sxx, Syy, Sxy, det, trace, harris = (hl.Func(n) for n in names)

    def derivative(transpose):
        # the app's img(x + dx, y + dy) * w (Ix: img(x + dy, y + dx)) in DERIVATIVE's order
        terms = []
        for dx, dy, w in DERIVATIVE:
            drow, dcol = (dy, dx) if transpose else (dx, dy)
            terms.append(img(y + BORDER + dcol, x + BORDER + drow) * hl.f32(w))
        return sum(terms[1:], terms[0])

    def box(f):
        terms = [f[y + dy, x + dx] for dx, dy in BOX]
        return sum(terms[1:], terms[0])

    Iy[y, x] = derivative(False)
    Ix[y, x] = derivative(True)
    Ixx[y, x] = Ix[y, x] * Ix[y, x]
    Iyy[y, x] = Iy[y, x] * Iy[y, x]
    Ixy[y, x] = Ix[y, x] * Iy[y, x]
    Sxx[y, x] = box(Ixx)
    Syy[y, x] = box(Iyy)
    Sxy[y, x] = box(Ixy)
    det[y, x] = Sxx[y, x] * Syy[y, x] - Sxy[y, x] * Sxy[y, x]
    trace[y, x] = Sxx[y, x] + Syy[y, x]
    harris[y, x] = det[y, x] - hl.f32(K) * trace[y, x] * trace[y, x]
    harris.set_estimates([(0, cols), (0, rows)])
    if schedule is not None:
        # after Halide's apps/harris (CPU): parallel 32-row strips; Ix, Iy slid per row, fused
        lanes = schedule.natural_vector_size(hl.Float(32))
        strip, row = hl.Var("strip"), hl.Var("row")
        harris.split(x, strip, row, 32).parallel(strip).vectorize(y, lanes)
        for f in (Ix, Iy):
            f.store_at(harris, strip).compute_at(harris, row).vectorize(y, lanes)
        Ix.compute_with(Iy, y)
    return [harris], [hl.Buffer(hl.Float(32), [cols, rows])]
