"""What a NumPy or SciPy user calls instead of the apps that have such a call: numpy.matmul
for gemm, im2col and numpy.matmul for the conv layers, scipy.signal.lfilter for the recursive
filter. NumPy is always there; SciPy is optional (a note says so when it does not import).

numpy.matmul runs on the threads of the BLAS that NumPy was built with (OpenBLAS in its
wheels: all cores, or OPENBLAS_NUM_THREADS); with threadpoolctl installed the bench's thread
count is applied to it.
"""

from __future__ import annotations

import contextlib

import numpy as np


def _blas_threads(threads):
    """A context limiting the BLAS to `threads` threads where threadpoolctl imports, else
    nothing (the BLAS's own count)."""
    if not threads:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(int(threads), user_api="blas")


def _gemm(inputs, params, threads, report):
    a, b = inputs["A"], inputs["B"]
    out = np.empty((a.shape[0], b.shape[1]), np.float32)

    def matmul():
        with _blas_threads(threads):
            np.matmul(a, b, out=out)

    return {"numpy.matmul": matmul}


def _conv_nchw(inputs, params, threads, report):
    """im2col: the (CI * 9, R * C) matrix of every tap of every pixel, copied out of the
    activation, then one matrix product per batch item with the (CO, CI * 9) weights."""
    img, weight, bias = inputs["img"], inputs["weight"], inputs["bias"]
    taps = weight.shape[2]

    def im2col():
        windows = np.lib.stride_tricks.sliding_window_view(img, (taps, taps), axis=(2, 3))
        batch, channels, rows, cols = windows.shape[:4]
        columns = windows.transpose(0, 1, 4, 5, 2, 3).reshape(batch, channels * taps**2, -1)
        with _blas_threads(threads):
            out = np.matmul(weight.reshape(weight.shape[0], -1), columns)
        out += bias[:, None]
        return np.maximum(out, 0, out=out).reshape(batch, -1, rows, cols)

    return {"numpy im2col + matmul": im2col}


def _conv_nhwc(inputs, params, threads, report):
    """im2col in NHWC: the (N * R * C, 9 * CI) matrix of every pixel's taps times the
    (9 * CI, CO) weights, in one matrix product."""
    img, weight, bias = inputs["img"], inputs["weight"], inputs["bias"]
    taps = weight.shape[0]

    def im2col():
        windows = np.lib.stride_tricks.sliding_window_view(img, (taps, taps), axis=(1, 2))
        batch, rows, cols = windows.shape[:3]
        rows_of_taps = windows.transpose(0, 1, 2, 4, 5, 3).reshape(batch * rows * cols, -1)
        with _blas_threads(threads):
            out = np.matmul(rows_of_taps, weight.reshape(-1, weight.shape[3]))
        out += bias
        return np.maximum(out, 0, out=out).reshape(batch, rows, cols, -1)

    return {"numpy im2col + matmul": im2col}


def _recursive_filter(inputs, params, threads, report):
    """scipy.signal.lfilter along each axis, forwards and on the reversed array, each line
    started so that y[0] = x[0] as in the app (one thread: lfilter has no others)."""
    try:
        from scipy import signal
    except ImportError:
        report(
            "  recursive_filter: note: SciPy is not installed (scipy does not import), so the "
            "scipy.signal.lfilter timing is left out; install it with pip install scipy"
        )
        return {}
    img = inputs["img"]
    alpha = np.float32(params["alpha"])
    keep = np.float32(1) - alpha
    b, a = np.array([alpha], np.float32), np.array([1, -keep], np.float32)

    def one_pass(x, axis):
        start = np.expand_dims(np.take(x, 0, axis=axis) * keep, axis)
        return signal.lfilter(b, a, x, axis=axis, zi=start)[0]

    def passes():
        out = one_pass(img, 0)
        out = one_pass(out[::-1], 0)[::-1]
        out = one_pass(out, 1)
        return one_pass(out[:, ::-1], 1)[:, ::-1]

    return {"scipy.signal.lfilter": passes}


_APPS = {
    "gemm": _gemm,
    "conv_nchw": _conv_nchw,
    "conv_nhwc": _conv_nhwc,
    "recursive_filter": _recursive_filter,
}


def library_variants(name: str, inputs: dict, params: dict, threads, report=print) -> dict:
    """{label: callable} of the NumPy and SciPy calls that do app `name`'s work (none for most
    apps); `report(text)` hears why one is left out."""
    if name not in _APPS:
        return {}
    return _APPS[name](inputs, params, threads, report)
