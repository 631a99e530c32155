"""The depthwise-separable convolution layer in Halide, the same algorithm as
apps/depthwise_conv.py: the 3x3 depthwise taps summed row by row, the pointwise sum over the
input channels in order from zero, then the bias and ReLU.

The app's arrays are Halide buffers with the axes reversed: the activation (N, R+2, C+2, CI)
is (CI, C+2, R+2, N), the depthwise filter (3, 3, CI) is (CI, 3, 3), the pointwise filter
(CI, CO) is (CO, CI). Funcs are indexed [channel, col, row, n] by the output point, which is
the padded activation's [channel, col + 1, row + 1, n].
"""

from ..depthwise_conv import BORDER, CI, CO, TAPS


def build(hl, inputs, params, schedule=None):
    img = hl.Buffer(inputs["img"])
    depthwise_filter = hl.Buffer(inputs["depthwise_filter"])
    pointwise_filter = hl.Buffer(inputs["pointwise_filter"])
    bias = hl.Buffer(inputs["bias"])
    cols, rows = img.dim(1).extent() - 2 * BORDER, img.dim(2).extent() - 2 * BORDER
    batch = img.dim(3).extent()
    d, y, x, n = hl.Var("d"), hl.Var("y"), hl.Var("x"), hl.Var("n")  # x the row, y the column

    depthwise, pointwise, output = (hl.Func(f) for f in ("depthwise", "pointwise", "output"))
    terms = [
        depthwise_filter[d, dy + 1, dx + 1] * img[d, y + BORDER + dy, x + BORDER + dx, n]
        for dx, dy in TAPS
    ]
    depthwise[d, y, x, n] = sum(terms[1:], terms[0])
    rc = hl.RDom([(0, CI)])
    pointwise[d, y, x, n] = hl.f32(0)
    pointwise[d, y, x, n] += pointwise_filter[d, rc.x] * depthwise[rc.x, y, x, n]
    output[d, y, x, n] = hl.max(pointwise[d, y, x, n] + bias[d], hl.f32(0))
    output.set_estimates([(0, CO), (0, cols), (0, rows), (0, batch)])
    if schedule is not None:
        _schedule(hl, schedule, depthwise, pointwise, output, rc, (d, y, x, n))
    return [output], [hl.Buffer(hl.Float(32), [CO, cols, rows, batch])]


def _schedule(hl, target, depthwise, pointwise, output, rc, variables):
    """After the CPU schedule of Halide's app: output tiles of channels x columns x rows sized
    so that their accumulators fill most of the vector registers, parallel over rows and
    batch; each tile's pointwise sum runs over slices of input channels, the depthwise
    convolution of a slice computed on the stack just before it is used."""
    d, y, x, n = variables
    lanes = target.natural_vector_size(hl.Float(32))
    registers = 32 if target.has_feature(hl.TargetFeature.AVX512_Skylake) else 16
    # (vectors of channels, columns, rows) per tile: 24 or 12 accumulators
    vectors, tile_w, tile_h = {(32, 16): (1, 6, 4), (32, 4): (4, 3, 2), (16, 8): (2, 3, 2)}.get(
        (registers, lanes), (4, 2, 1)
    )
    tile_d = min(vectors * lanes, CO)
    di, yi, xi, rows_batch = hl.Var("di"), hl.Var("yi"), hl.Var("xi"), hl.Var("rows_batch")
    ro, ri = hl.RVar("ro"), hl.RVar("ri")
    output.tile([d, y, x], [di, yi, xi], [tile_d, tile_w, tile_h])
    output.vectorize(di).unroll(yi).unroll(xi).fuse(x, n, rows_batch).parallel(rows_batch)
    pointwise.compute_at(output, d).vectorize(d).unroll(y).unroll(x)
    update = pointwise.update().reorder(d, y, x, rc.x, n)
    update.vectorize(d).unroll(y).unroll(x).split(rc.x, ro, ri, tile_d)
    depthwise.store_in(hl.MemoryType.Stack).bound_extent(d, tile_d).compute_at(pointwise, ro)
    depthwise.vectorize(d).reorder(y, x, d).unroll(y).unroll(x)
