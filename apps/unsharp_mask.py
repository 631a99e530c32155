"""Unsharp mask (PolyMage's benchmark): blur along x then y with the 5-tap [1 4 6 4 1]/16
kernel, sharpen, and keep the original where the detail is under a threshold. 4 stages.

The image is channel-first (3, R+4, C+4) with a 2-pixel border, so that the innermost loop runs
along image rows; the output is (3, R, C).
"""

import numpy as np

from polyimage import (
    Abs,
    Case,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Parameter,
    Variable,
    repeat_edge,
)

from .inputs import fit, to_float

NAME = "unsharp_mask"
DESCRIPTION = "the photo sharpened: the detail a 5x5 blur removes, times `weight`, added back"
PAPER_SIZE = {"R": 2848, "C": 4256}
SMALL_SIZE = {"R": 67, "C": 93}
DEFAULTS = {"weight": 3.0, "threshold": 0.001}
PHOTOS = ("astronaut.png",)
# hand-picked: the whole pipeline in one group, tiles of one channel x 32 rows x 256 columns
SCHEDULES = {"tuned": "group 0: blurx, mask [1x32x256]"}
BORDER = 2
KERNEL = (1, 4, 6, 4, 1)


def build():
    """(outputs, parameters) of the pipeline."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    weight, threshold = Parameter(Float, "weight"), Parameter(Float, "threshold")
    c, x, y = Variable(Int, "c"), Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [3, R + 4, C + 4])
    channels = Interval(Int, 0, 2)
    rows, cols = Interval(Int, 2, R + 1), Interval(Int, 2, C + 1)

    blurx = Function(([c, x, y], [channels, rows, Interval(Int, 0, C + 3)]), Float, "blurx")
    blurx.defn = [sum(k * img(c, x + i - 2, y) for i, k in enumerate(KERNEL)) * (1.0 / 16)]
    blury = Function(([c, x, y], [channels, rows, cols]), Float, "blury")
    blury.defn = [sum(k * blurx(c, x, y + i - 2) for i, k in enumerate(KERNEL)) * (1.0 / 16)]
    sharpen = Function(([c, x, y], [channels, rows, cols]), Float, "sharpen")
    sharpen.defn = [img(c, x, y) * (1 + weight) - blury(c, x, y) * weight]
    mask = Function(([c, x, y], [channels, rows, cols]), Float, "mask")
    mask.defn = [
        Case(Abs(img(c, x, y) - blury(c, x, y)) < threshold, img(c, x, y)),
        sharpen(c, x, y),
    ]
    return [mask], {"R": R, "C": C, "weight": weight, "threshold": threshold}


def build_bordered():
    """The same algorithm on the unpadded (3, R, C) image, its edge repeated by the pipeline
    (`repeat_edge`): every stage has the image's domain and the output its shape."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    weight, threshold = Parameter(Float, "weight"), Parameter(Float, "threshold")
    img = Image(Float, "img", [3, R, C])
    edge = repeat_edge(img, dims=(1, 2))
    blurx = Function.like(img, Float, "blurx")
    c, x, y = blurx.variables
    blurx.defn = [sum(k * edge(c, x + i - 2, y) for i, k in enumerate(KERNEL)) * (1.0 / 16)]
    blurx_edge = repeat_edge(blurx, dims=(2,))
    blury = Function.like(blurx, Float, "blury")
    blury.defn = [sum(k * blurx_edge(c, x, y + i - 2) for i, k in enumerate(KERNEL)) * (1.0 / 16)]
    sharpen = Function.like(blurx, Float, "sharpen")
    sharpen.defn = [img(c, x, y) * (1 + weight) - blury(c, x, y) * weight]
    mask = Function.like(blurx, Float, "mask")
    mask.defn = [
        Case(Abs(img(c, x, y) - blury(c, x, y)) < threshold, img(c, x, y)),
        sharpen(c, x, y),
    ]
    return [mask], {"R": R, "C": C, "weight": weight, "threshold": threshold}


def unpadded(inputs):
    """The prepared inputs without the border the bordered pipeline adds itself."""
    img = inputs["img"]
    return {"img": np.ascontiguousarray(img[:, BORDER:-BORDER, BORDER:-BORDER])}


# the bench times this beside the app: the border in the pipeline rather than in NumPy
VARIANTS = {"border in the pipeline": (build_bordered, unpadded)}


def prepare(photos, size=None):
    """Inputs from one HWC photo (any dtype): float32 in [0, 1], channel first, border added,
    cropped or mirror-tiled to `size` = {"R": rows, "C": cols} when given."""
    rgb = to_float(photos[0], channels=3)
    if size:
        rgb = fit(rgb, size["R"], size["C"])
    chw = np.ascontiguousarray(rgb.transpose(2, 0, 1))
    return {"img": np.pad(chw, ((0, 0), (BORDER, BORDER), (BORDER, BORDER)), mode="edge")}


def reference(img, weight, threshold, **_):
    """NumPy version written from the algorithm, independently of the interpreter."""
    weight, threshold = np.float32(weight), np.float32(threshold)
    k = np.array(KERNEL, np.float32)
    rows = img.shape[1] - 2 * BORDER
    blurx = sum(k[i] * img[:, i : i + rows, :] for i in range(5)) * np.float32(1 / 16)
    cols = img.shape[2] - 2 * BORDER
    blury = sum(k[i] * blurx[:, :, i : i + cols] for i in range(5)) * np.float32(1 / 16)
    inner = img[:, BORDER : BORDER + rows, BORDER : BORDER + cols]
    sharpen = inner * (np.float32(1) + weight) - blury * weight
    return np.where(np.abs(inner - blury) < threshold, inner, sharpen)


def to_photo(output):
    """The output as an HWC float image for saving."""
    return np.clip(output.transpose(1, 2, 0), 0, 1)
