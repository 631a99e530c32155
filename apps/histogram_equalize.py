"""Histogram equalization of an 8-bit photo's luma, keeping its chroma. 6 stages.

1. luma = (77 R + 150 G + 29 B + 128) / 256, the BT.601 weights in 8 bits (a grey photo, given
   as three equal channels, is its own luma).
2. hist: a Reduction counting the pixels of each luma value.
3. cdf: the cumulative distribution, a scan (cdf(b) = cdf(b - 1) + hist(b)).
4. cdf_min: the cdf at the first luma value that occurs (a Min Reduction over the used values).
5. lut: the equalizing map, as OpenCV's equalizeHist computes it but in exact integers:
   round((cdf(b) - cdf_min) * 255 / (pixels - cdf_min)), clamped to 0..255; a photo of one luma
   value keeps it.
6. the output: every channel moved by the luma's change, lut(luma) - luma, clamped to 0..255, so
   that the chroma (B - Y, R - Y) is unchanged where nothing clips.

The photo is channel-first (3, R, C) uint8; so is the output.
"""

import numpy as np

from polyimage import (
    Case,
    Cast,
    Clamp,
    Function,
    Image,
    Int,
    Interval,
    Long,
    Op,
    Parameter,
    Reduce,
    Reduction,
    UChar,
    Variable,
)

from .inputs import fit, to_float

NAME = "histogram_equalize"
DESCRIPTION = "the photo with its luma spread evenly over 0..255, colours kept"
PAPER_SIZE = {"R": 2848, "C": 4256}
SMALL_SIZE = {"R": 67, "C": 93}
DEFAULTS = {}
PHOTOS = ("astronaut.png",)
WEIGHTS = (77, 150, 29)


def build():
    """(outputs, parameters) of the pipeline."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    c, x, y = (Variable(Int, n) for n in ("c", "x", "y"))
    img = Image(UChar, "img", [3, R, C])
    rows, cols = Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)

    luma = Function(([x, y], [rows, cols]), UChar, "luma")
    weighted = sum(w * Cast(Int, img(k, x, y)) for k, w in enumerate(WEIGHTS))
    luma.defn = [Cast(UChar, (weighted + 128) / 256)]
    lut = equalizing_lut(luma, R, C)

    out = Function(([c, x, y], [Interval(Int, 0, 2), rows, cols]), UChar, "equalized")
    change = Cast(Int, lut(luma(x, y))) - Cast(Int, luma(x, y))
    out.defn = [Cast(UChar, Clamp(Cast(Int, img(c, x, y)) + change, 0, 255))]
    return [out], {"R": R, "C": C}


def build_grey():
    """(outputs, parameters) of the same equalization of a grey (R, C) uint8 image, which is
    its own luma: what OpenCV's equalizeHist computes."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(UChar, "img", [R, C])
    lut = equalizing_lut(img, R, C)
    rows, cols = Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)
    out = Function(([x, y], [rows, cols]), UChar, "equalized")
    out.defn = [lut(img(x, y))]
    return [out], {"R": R, "C": C}


def equalizing_lut(luma, R, C):
    """The lookup table (a Function of the luma value) equalizing `luma`, an (R, C) uint8
    Function or Image: histogram, cumulative distribution, its first used value, the map."""
    x, y, b, v = (Variable(Int, n) for n in ("x", "y", "b", "v"))
    rows, cols, bins = Interval(Int, 0, R - 1), Interval(Int, 0, C - 1), Interval(Int, 0, 255)
    hist = Reduction(([b], [bins]), ([x, y], [rows, cols]), Int, "hist")
    hist.defn = [Reduce(hist(luma(x, y)), 1, Op.Sum)]

    cdf = Function(([b], [bins]), Int, "cdf")
    cdf.defn = [Case(b == 0, hist(0)), cdf(b - 1) + hist(b)]

    pixels = Cast(Long, R) * Cast(Long, C)
    cdf_min = Reduction(([b], [Interval(Int, 0, 0)]), ([v], [bins]), Long, "cdf_min")
    cdf_min.default = pixels
    cdf_min.defn = [Case(hist(v) > 0, Reduce(cdf_min(0), Cast(Long, cdf(v)), Op.Min))]

    lut = Function(([b], [bins]), UChar, "lut")
    spread = pixels - cdf_min(0)
    scaled = ((Cast(Long, cdf(b)) - cdf_min(0)) * 255 + spread / 2) / spread
    lut.defn = [Case(spread == 0, Cast(UChar, b)), Cast(UChar, Clamp(scaled, 0, 255))]
    return lut


def prepare(photos, size=None):
    """Inputs from one HWC photo: uint8 (other integer or float photos are scaled to 0..255),
    three channels (a grey photo repeated), channel first, cropped or mirror-tiled to `size`
    when given."""
    photo = np.asarray(photos[0])
    if photo.dtype != np.uint8 or photo.ndim != 3 or photo.shape[2] < 3:
        photo = np.rint(to_float(photo, channels=3) * 255).astype(np.uint8)
    rgb = photo[:, :, :3]
    if size:
        rgb = fit(rgb, size["R"], size["C"])
    return {"img": np.ascontiguousarray(rgb.transpose(2, 0, 1))}


def luma_of(img):
    """The luma of a channel-first uint8 photo, as the pipeline computes it (NumPy)."""
    channels = img.astype(np.int64)
    return ((sum(w * channels[k] for k, w in enumerate(WEIGHTS)) + 128) // 256).astype(np.uint8)


def equalizing_lut_of(luma):
    """The equalizing lookup table of a uint8 luma array (NumPy), as int64."""
    hist = np.bincount(luma.ravel(), minlength=256)
    cdf = np.cumsum(hist)
    pixels = luma.size
    cdf_min = cdf[np.flatnonzero(hist)[0]]
    spread = pixels - cdf_min
    if spread == 0:
        return np.arange(256)
    return np.clip(((cdf - cdf_min) * 255 + spread // 2) // spread, 0, 255)


def reference(img, **_):
    """NumPy version written from the algorithm, independently of the interpreter."""
    luma = luma_of(img).astype(np.int64)
    change = equalizing_lut_of(luma)[luma] - luma
    return np.clip(img.astype(np.int64) + change, 0, 255).astype(np.uint8)


def reference_grey(img, **_):
    """NumPy version of build_grey."""
    return equalizing_lut_of(img)[img].astype(np.uint8)


# other pipelines the bench times beside this one: {label: (build, inputs from the app's)}
VARIANTS = {"luma only": (build_grey, lambda inputs: {"img": luma_of(inputs["img"])})}


def to_photo(output):
    """The output as an HWC uint8 image for saving."""
    return np.ascontiguousarray(output.transpose(1, 2, 0))
