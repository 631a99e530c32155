"""A float32 matrix product C = A x B, written as a user would: one Reduction whose cells sum
A(i, k) * B(k, j) over k in order, from zero. 1 stage; a dense Reduction whose operands are
each read M, N or K times over, the construct a BLAS library is tuned for.

A is (M, K), B is (K, N), C is (M, N), all row-major float32. From a photo, A is its luma and
B the first N vectors of the orthonormal DCT-II basis of length K, so that C holds each row's
frequencies (half of a 2-D DCT, as in JPEG): real data and a picture to look at; any A and B
run alike. Written for issue 52, not from the TOPLAS 2020 paper.
"""

import numpy as np

from polyimage import Float, Image, Int, Interval, Op, Parameter, Reduce, Reduction, Variable

from .inputs import fit, to_float

NAME = "gemm"
DESCRIPTION = "the photo's luma times a DCT basis, by a matrix product: each row's spectrum"
PAPER_SIZE = {"M": 1024, "N": 1024, "K": 1024}
SMALL_SIZE = {"M": 37, "N": 29, "K": 41}
DEFAULTS = {}
PHOTOS = ("astronaut.png",)


def build():
    """(outputs, parameters) of the pipeline."""
    M, N, K = Parameter(Int, "M"), Parameter(Int, "N"), Parameter(Int, "K")
    i, j, k = Variable(Int, "i"), Variable(Int, "j"), Variable(Int, "k")
    A = Image(Float, "A", [M, K])
    B = Image(Float, "B", [K, N])
    # i and j join the reduction domain before k (docs/dsl.md): the textbook i, j, k nest
    C = Reduction(
        ([i, j], [Interval(Int, 0, M - 1), Interval(Int, 0, N - 1)]),
        ([k], [Interval(Int, 0, K - 1)]),
        Float,
        "C",
    )
    C.defn = [Reduce(C(i, j), A(i, k) * B(k, j), Op.Sum)]
    return [C], {"M": M, "N": N, "K": K}


def dct_basis(rows: int, cols: int) -> np.ndarray:
    """The (rows, cols) matrix of the first `cols` orthonormal DCT-II basis vectors of length
    `rows`, as columns: B[k, j] = sqrt((1 or 2) / rows) cos(pi (k + 1/2) j / rows)."""
    k, j = np.arange(rows)[:, None], np.arange(cols)[None, :]
    scale = np.where(j == 0, np.sqrt(1 / rows), np.sqrt(2 / rows))
    return (scale * np.cos(np.pi * (k + 0.5) * j / rows)).astype(np.float32)


def prepare(photos, size=None):
    """A: one HWC photo's luma (any dtype), float32 in [0, 1], cropped or mirror-tiled to M x K
    (the photo's size when `size` is not given); B: dct_basis(K, N) (N = K by default)."""
    luma = to_float(photos[0], channels=1)
    if size:
        luma = fit(luma, size["M"], size["K"])
    a = np.ascontiguousarray(luma[:, :, 0], dtype=np.float32)
    return {"A": a, "B": dct_basis(a.shape[1], size["N"] if size else a.shape[1])}


def reference(A, B, **_):
    """NumPy version: the K rank-one updates A[:, k] B[k, :] added in order in float32, so
    that every cell sums in the pipeline's order (numpy.matmul, the bench's library row,
    sums in its own)."""
    C = np.zeros((A.shape[0], B.shape[1]), np.float32)
    for k in range(A.shape[1]):
        C += A[:, k : k + 1] * B[k]
    return C


def to_photo(output):
    """|C| on a log scale, 0.001 black and C's largest magnitude white: each row's spectrum,
    low frequencies on the left."""
    magnitude = np.log10(np.abs(np.asarray(output, np.float64)) + 1e-3)
    top = magnitude.max() if magnitude.size else 0.0
    if top <= -3:
        return np.zeros(magnitude.shape)
    return np.clip((magnitude + 3) / (top + 3), 0, 1)
