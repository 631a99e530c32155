"""Bilateral filter, computed directly: every output pixel is the average of its 7x7
neighbourhood weighted by distance (a Gaussian of sigma SIGMA_S pixels) and by likeness (a
Gaussian of the difference to the centre, sigma SIGMA_R). One stage, 49 taps of an Exp each:
compute-bound, the case where a loop left scalar costs ten times its vector speed.

The input is the photo's luma, (R, C) float32 in [0, 1], its edge repeated by the pipeline
(`repeat_edge`); the output has the input's shape. Written from a user's report, not from the
TOPLAS 2020 paper.
"""

import math

import numpy as np

from polyimage import Exp, Float, Function, Image, Int, Parameter, repeat_edge

from .inputs import fit, to_float

NAME = "bilateral_filter"
DESCRIPTION = "the photo's luma smoothed by a 7x7 bilateral filter: noise gone, edges kept"
PAPER_SIZE = {"R": 1536, "C": 2560}
SMALL_SIZE = {"R": 67, "C": 93}
DEFAULTS = {}
PHOTOS = ("astronaut.png",)
RADIUS = 3
SIGMA_S, SIGMA_R = 2.0, 0.1
TAPS = tuple((i, j) for i in range(-RADIUS, RADIUS + 1) for j in range(-RADIUS, RADIUS + 1))


def spatial_weight(i: int, j: int) -> float:
    """The distance weight of the tap (i, j): exp(-(i^2 + j^2) / (2 SIGMA_S^2))."""
    return math.exp(-(i * i + j * j) / (2 * SIGMA_S * SIGMA_S))


RANGE_SCALE = -1.0 / (2 * SIGMA_R * SIGMA_R)


def build():
    """(outputs, parameters) of the pipeline."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [R, C])
    edge = repeat_edge(img)
    bilateral = Function.like(img, Float, "bilateral")
    x, y = bilateral.variables
    numerator, denominator = 0.0, 0.0
    for i, j in TAPS:
        difference = edge(x + i, y + j) - img(x, y)
        weight = spatial_weight(i, j) * Exp(difference * difference * RANGE_SCALE)
        numerator = numerator + weight * edge(x + i, y + j)
        denominator = denominator + weight
    bilateral.defn = [numerator / denominator]
    return [bilateral], {"R": R, "C": C}


def prepare(photos, size=None):
    """Inputs from one HWC photo (any dtype): its luma, float32 in [0, 1], cropped or
    mirror-tiled to `size` = {"R": rows, "C": cols} when given."""
    luma = to_float(photos[0], channels=1)[:, :, 0]
    if size:
        luma = fit(luma[:, :, None], size["R"], size["C"])[:, :, 0]
    return {"img": np.ascontiguousarray(luma, dtype=np.float32)}


def reference(img, **_):
    """NumPy version, in float64: the 49 shifted copies of the edge-padded image, weighted."""
    rows, cols = img.shape
    padded = np.pad(img.astype(np.float64), RADIUS, mode="edge")
    numerator, denominator = np.zeros((rows, cols)), np.zeros((rows, cols))
    for i, j in TAPS:
        tap = padded[RADIUS + i : RADIUS + i + rows, RADIUS + j : RADIUS + j + cols]
        weight = spatial_weight(i, j) * np.exp((tap - img) ** 2 * RANGE_SCALE)
        numerator += weight * tap
        denominator += weight
    return (numerator / denominator).astype(np.float32)


def to_photo(output):
    """The output as an HW float image for saving."""
    return np.clip(output, 0, 1)
