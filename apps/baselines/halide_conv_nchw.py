"""The NCHW 3x3 convolution layer in Halide, the same algorithm as apps/conv_nchw.py: each
cell starts at zero and adds the weighted taps over an RDom whose loops run ci, dx, dy from
the outside in (an RDom's first dimension is innermost), then the bias and ReLU. No
hand-written schedule (Halide's conv_layer app is NHWC-like, channels innermost).

The app's arrays are Halide buffers with the axes reversed: the activation (N, CI, R+2, C+2)
is (C+2, R+2, CI, N), the weights (CO, CI, 3, 3) are (3, 3, CI, CO); Funcs are indexed
[y, x, co, n], the column innermost.
"""

from ..conv_nchw import BORDER, CI, CO, TAPS


def build(hl, inputs, params):
    img, weight, bias = (hl.Buffer(inputs[k]) for k in ("img", "weight", "bias"))
    cols, rows = img.dim(0).extent() - 2 * BORDER, img.dim(1).extent() - 2 * BORDER
    batch = img.dim(3).extent()
    y, x, co, n = hl.Var("y"), hl.Var("x"), hl.Var("co"), hl.Var("n")
    r = hl.RDom([(0, TAPS), (0, TAPS), (0, CI)])  # dy, dx, ci: ci outermost
    dy, dx, ci = r.x, r.y, r.z
    conv, relu = hl.Func("conv"), hl.Func("relu")
    conv[y, x, co, n] = hl.f32(0)
    conv[y, x, co, n] += weight[dy, dx, ci, co] * img[y + dy, x + dx, ci, n]
    relu[y, x, co, n] = hl.max(conv[y, x, co, n] + bias[co], hl.f32(0))
    relu.set_estimates([(0, cols), (0, rows), (0, CO), (0, batch)])
    return [relu], [hl.Buffer(hl.Float(32), [cols, rows, CO, batch])]
