"""The matrix product in Halide, the same algorithm as apps/gemm.py: each cell starts at zero
and adds A(i, k) * B(k, j) over an RDom of k in order. No hand-written schedule (Halide's
linear-algebra apps call into a BLAS of their own, not one Func to schedule).

The app's row-major (M, K) and (K, N) arrays are the Halide buffers (K, M) and (N, K); Funcs are
indexed [j, i], the column innermost, as NumPy's last axis.
"""


def build(hl, inputs, params):
    a, b = hl.Buffer(inputs["A"]), hl.Buffer(inputs["B"])
    inner, rows = a.dim(0).extent(), a.dim(1).extent()
    cols = b.dim(0).extent()
    j, i = hl.Var("j"), hl.Var("i")
    k = hl.RDom([(0, inner)])
    product = hl.Func("C")
    product[j, i] = hl.f32(0)
    product[j, i] += a[k.x, i] * b[j, k.x]
    product.set_estimates([(0, cols), (0, rows)])
    return [product], [hl.Buffer(hl.Float(32), [cols, rows])]
