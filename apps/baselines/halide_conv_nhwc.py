"""The NHWC 3x3 convolution layer in Halide, the same algorithm as apps/conv_nhwc.py: each
cell starts at zero and adds the weighted taps over an RDom whose loops run dx, dy, ci from
the outside in, then the bias and ReLU. No hand-written schedule (Halide's conv_layer app
computes a different layer: its own sizes, padding and sum order).

The app's arrays are Halide buffers with the axes reversed: the activation (N, R+2, C+2, CI)
is (CI, C+2, R+2, N), the weights (3, 3, CI, CO) are (CO, CI, 3, 3); Funcs are indexed
[co, y, x, n], the channel innermost.
"""

from ..conv_nhwc import BORDER, CI, CO, TAPS


def build(hl, inputs, params):
    img, weight, bias = (hl.Buffer(inputs[k]) for k in ("img", "weight", "bias"))
    cols, rows = img.dim(1).extent() - 2 * BORDER, img.dim(2).extent() - 2 * BORDER
    batch = img.dim(3).extent()
    co, y, x, n = hl.Var("co"), hl.Var("y"), hl.Var("x"), hl.Var("n")
    r = hl.RDom([(0, CI), (0, TAPS), (0, TAPS)])  # ci, dy, dx: dx outermost
    ci, dy, dx = r.x, r.y, r.z
    conv, relu = hl.Func("conv"), hl.Func("relu")
    conv[co, y, x, n] = hl.f32(0)
    conv[co, y, x, n] += weight[co, ci, dy, dx] * img[ci, y + dy, x + dx, n]
    relu[co, y, x, n] = hl.max(conv[co, y, x, n] + bias[co], hl.f32(0))
    relu.set_estimates([(0, CO), (0, cols), (0, rows), (0, batch)])
    return [relu], [hl.Buffer(hl.Float(32), [CO, cols, rows, batch])]
