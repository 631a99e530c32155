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


_APPS = {"unsharp_mask": _unsharp_mask}


def opencv_variants(name: str, inputs: dict, params: dict, threads) -> dict:
    """{"opencv": callable} when cv2 is importable and the app has an equivalent."""
    try:
        import cv2
    except ImportError:
        return {}
    if name not in _APPS:
        return {}
    if threads:
        cv2.setNumThreads(int(threads))
    return {"opencv": lambda: _APPS[name](cv2, **inputs, **params)}
