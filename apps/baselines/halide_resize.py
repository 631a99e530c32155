"""Bicubic resampling in Halide, the same algorithm as apps/resize.py: per axis the widened Keys
kernel at each output point's taps and its normalised weights, then the pass along the
columns and the pass along the rows, tap indices clamped into the image, the output clamped to
[0, 1].

The app's (3, R, C) photo is the Halide buffer (C, R, 3); Funcs are indexed [col, row, c]
(kernels and weights [k, col] or [k, row]).
"""

from ..resize import SCALE, Axis, cubic


def _fold(terms):
    return sum(terms[1:], terms[0])


def build(hl, inputs, params, schedule=None):
    img = hl.Buffer(inputs["img"])
    cols, rows = img.dim(0).extent(), img.dim(1).extent()
    axis = Axis(SCALE)
    out_cols, out_rows = axis.size(cols), axis.size(rows)
    y, x, c, k = hl.Var("y"), hl.Var("x"), hl.Var("c"), hl.Var("k")  # x the row, y the column
    f32 = hl.Float(32)

    def weights(name, j):
        kernel, normalised = hl.Func(f"kernel_{name}"), hl.Func(f"weights_{name}")
        argument = hl.cast(f32, axis.offset(j, k)) / hl.f32(axis.denominator)
        kernel[k, j] = cubic(argument, hl.select, hl.abs)
        normalised[k, j] = kernel[k, j] / _fold([kernel[i, j] for i in range(axis.taps)])
        return kernel, normalised

    kernel_cols, weights_cols = weights("cols", y)
    kernel_rows, weights_rows = weights("rows", x)
    resized_cols, resized = hl.Func("resized_cols"), hl.Func("resized")
    resized_cols[y, x, c] = _fold(
        [
            weights_cols[i, y] * img[hl.clamp(axis.begin(y) + i, 0, cols - 1), x, c]
            for i in range(axis.taps)
        ]
    )
    rows_sum = _fold(
        [
            weights_rows[i, x] * resized_cols[y, hl.clamp(axis.begin(x) + i, 0, rows - 1), c]
            for i in range(axis.taps)
        ]
    )
    resized[y, x, c] = hl.clamp(rows_sum, hl.f32(0), hl.f32(1))
    resized.set_estimates([(0, out_cols), (0, out_rows), (0, 3)])
    if schedule is not None:
        # after Halide's apps/resize (CPU, the columns first as in its upsampling variant):
        # the column weights once, the row weights per strip of rows; parallel 64-row strips
        # of 16-column tiles, the column pass computed per tile
        lanes = schedule.natural_vector_size(f32)
        yi, xi = hl.Var("yi"), hl.Var("xi")
        kernel_cols.compute_at(weights_cols, y).vectorize(y)
        weights_cols.compute_root().reorder(k, y).vectorize(y, lanes)
        kernel_rows.compute_at(weights_rows, x).vectorize(x)
        weights_rows.compute_at(resized, x).reorder(k, x).vectorize(x, lanes)
        strip = hl.TailStrategy.GuardWithIf  # strips of 64 rows even for fewer output rows
        resized.split(x, x, xi, 64, strip).split(y, y, yi, 16).reorder(yi, xi, y, x)
        resized.parallel(x).vectorize(yi, lanes)
        resized_cols.compute_at(resized, y).store_in(hl.MemoryType.Stack).vectorize(y, lanes)
    return [resized], [hl.Buffer(f32, [out_cols, out_rows, 3])]
