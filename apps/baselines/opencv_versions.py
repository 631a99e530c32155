"""OpenCV equivalents of the apps that have a natural one (used only when cv2 imports)."""

from __future__ import annotations

import numpy as np


def _unsharp_mask(cv2, img, weight, threshold, **_):
    kernel = np.float32([1, 4, 6, 4, 1]) / np.float32(16)
    weight, threshold = np.float32(weight), np.float32(threshold)
    channels = []
    for plane in img:
        blur = cv2.sepFilter2D(plane, cv2.CV_32F, kernel, kernel, borderType=cv2.BORDER_ISOLATED)
        inner, blur = plane[2:-2, 2:-2], blur[2:-2, 2:-2]
        sharpen = cv2.addWeighted(inner, float(1 + weight), blur, float(-weight), 0)
        channels.append(np.where(cv2.absdiff(inner, blur) < threshold, inner, sharpen))
    return np.stack(channels)


def _harris(cv2, img, **_):
    """apps/harris.py on its padded (R+4, C+4) input: the derivatives as 3x3 Sobel filters
    scaled by 1/12 (the app's weights; Iy is the derivative along the columns), the products,
    unnormalised 3x3 box sums and det - k * trace^2, computed over the whole padded image (the
    border pixels use OpenCV's border mode) and cropped to the R x C photo, where only real
    input pixels are read."""
    from ..harris import BORDER, K

    iy = cv2.Sobel(img, cv2.CV_32F, 1, 0, ksize=3, scale=1.0 / 12)
    ix = cv2.Sobel(img, cv2.CV_32F, 0, 1, ksize=3, scale=1.0 / 12)
    sums = [
        cv2.boxFilter(cv2.multiply(a, b), -1, (3, 3), normalize=False)
        for a, b in ((ix, ix), (iy, iy), (ix, iy))
    ]
    sxx, syy, sxy = sums
    det = cv2.subtract(cv2.multiply(sxx, syy), cv2.multiply(sxy, sxy))
    trace = cv2.add(sxx, syy)
    response = cv2.scaleAdd(cv2.multiply(trace, trace), -K, det)
    return response[BORDER:-BORDER, BORDER:-BORDER]


def _histogram_equalize(cv2, img, **_):
    """OpenCV's colour recipe on the photo in its own layout (HWC, made before timing): to
    YCrCb, equalizeHist of the luma, back to RGB; and equalizeHist alone on the luma that the
    app's "luma only" variant equalizes."""
    from ..histogram_equalize import luma_of

    rgb = np.ascontiguousarray(img.transpose(1, 2, 0))
    luma = luma_of(img)

    def colour():
        ycrcb = cv2.cvtColor(rgb, cv2.COLOR_RGB2YCrCb)
        ycrcb[:, :, 0] = cv2.equalizeHist(ycrcb[:, :, 0])
        return cv2.cvtColor(ycrcb, cv2.COLOR_YCrCb2RGB)

    return {"opencv": colour, "opencv equalizeHist (luma only)": lambda: cv2.equalizeHist(luma)}


def _integral_box(cv2, img, **_):
    """apps/integral_box.py as cv2.integral of the edge-padded luma (Int sums with its zero
    first row and column, as the app's table) and the four lookups as NumPy slices ("opencv");
    and cv2.blur, the box filter a user would call, rounding the same means ("opencv blur")."""
    from ..integral_box import RADIUS, WIDTH, rounded_mean, window_sums

    rows, cols = img.shape

    def integral():
        padded = cv2.copyMakeBorder(img, RADIUS, RADIUS, RADIUS, RADIUS, cv2.BORDER_REPLICATE)
        return rounded_mean(window_sums(cv2.integral(padded), rows, cols))

    def blur():
        return cv2.blur(img, (WIDTH, WIDTH), borderType=cv2.BORDER_REPLICATE)

    return {"opencv": integral, "opencv blur": blur}


_APPS = {"unsharp_mask": _unsharp_mask, "harris": _harris}
_PREPARED = {"histogram_equalize": _histogram_equalize, "integral_box": _integral_box}


def opencv_variants(name: str, inputs: dict, params: dict, threads) -> dict:
    """{"opencv": callable, ...} when cv2 is importable and the app has an equivalent."""
    try:
        import cv2
    except ImportError:
        return {}
    if name not in _APPS and name not in _PREPARED:
        return {}
    if threads:
        cv2.setNumThreads(int(threads))
    if name in _PREPARED:
        return _PREPARED[name](cv2, **inputs, **params)
    return {"opencv": lambda: _APPS[name](cv2, **inputs, **params)}
