"""Camera pipeline (PolyMage's campipe, Halide's apps/camera_pipe): a raw 10-bit Bayer mosaic
(GRBG, uint16) to an 8-bit RGB photo.

Stages, as in Halide's camera_pipe (the FCam pipeline of the Nokia N900):
  denoised       hot-pixel suppression: each pixel clamped to the min/max of its four
                 same-colour neighbours two pixels away (as Halide's and PolyMage's original
                 version; Halide's current one clamps to the max only); uint16 -> int16
                 (Halide's `shifted` cast folded in)
  deinterleaved  the four Bayer sites as four half-resolution channels (reads 2*x, 2*x+1)
  g_gr r_r b_b g_gb            the known values, named per channel
  g_r g_b                      green at red and blue sites: interpolated along the direction
                               (vertical or horizontal) of the smaller difference
  r_gr b_gr r_gb b_gb          red and blue at green sites, corrected by green's second
                               derivative
  r_b b_r                      red at blue and blue at red, along the diagonal of the smaller
                               difference, corrected the same way
  red_x1 red_x2 red green_x1 green_x2 green blue_x1 blue_x2 blue
                               interleaving back to full resolution: Select on y % 2 then
                               x % 2, reading y / 2 and x / 2
  matrix         the 3x4 colour matrix in Q8.8 fixed point (int16), linearly interpolated in
                 inverse colour temperature between the calibrated matrix_3200 and matrix_7000
  corrected      colour correction in int32, back to int16
  curve          the tone curve, a lookup table over [0, 1023] built in the pipeline from gamma,
                 contrast and the black and white levels (Halide's apply_curve, from FCam)
  processed      curve(corrected): a data-dependent read, clamped to [0, 1023] automatically;
                 uint8 RGB, channel first
27 stages (Functions), 30 counting the three input images. The paper reports 32 for its
version; the count depends on how the same algorithm is cut into Functions (whether helpers
such as a renaming of the input, the directional averages or the final channel select are
stages of their own). The arithmetic follows Halide's: averages round up (`avg`), demosaic
values are int16, absolute differences are taken in int32, the colour matrix is Q8.8 int16.

Coordinates: x is the row, y the column (the long, contiguous dimension); Halide's (x, y) are
swapped accordingly. The raw image `img` is (R + 16) x (C + 16): the output size R x C plus an
8-pixel border on every side (the stencils reach 7 pixels: 2 for hot-pixel suppression, 1 half-
resolution cell for deinterleaving, 2 cells for the demosaic), and the output is (3, R, C), the
colours of raw pixels 8..R+7 x 8..C+7. The mosaic's phase is fixed by raw pixel (0, 0), a green
of a green-red row, so every R and C works, odd ones included. PAPER_SIZE is the paper's raw size
(2,592 x 1,968, W x H) used as the output size, its raw input then 1984 x 2608 (rows x cols).
prepare() simulates the camera on a photo (cropped or mirror-tiled to R x C when a size is
given, else at its own size, then padded by 8 mirrored pixels): undo a 2.2 gamma, map the linear
colours through the inverse of the colour matrix at the default colour temperature (so that
colour correction gives the photo's colours back), to 10 bits with the black level 25 and white
level 1023 of Halide's camera_pipe (the Int parameters black_level and white_level of the tone
curve), then sample G R / B G per 2x2 block.

The tone curve is float32 arithmetic (with pow) feeding a cast to uint8; the reference performs
the same float32 operations in the same order. A last-bit difference between NumPy's and the C
library's powf could still flip one table entry where z * 255 + 0.5 lies within an ulp of an
integer; for the parameters used in the tests every entry is at least 1e-4 away from that (the
tests check this margin), so the integer result is robust there.
"""

import numpy as np

from polyimage import (
    Abs,
    Case,
    Cast,
    Clamp,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Max,
    Min,
    Parameter,
    Pow,
    Select,
    Short,
    UChar,
    UShort,
    Variable,
)

from .inputs import fit, to_float

NAME = "camera_pipe"
DESCRIPTION = "the photo as a simulated raw Bayer mosaic, demosaicked and colour-corrected to RGB"
PAPER_SIZE = {"R": 1968, "C": 2592}
SMALL_SIZE = {"R": 67, "C": 93}
BLACK_LEVEL, WHITE_LEVEL = 25, 1023
DEFAULTS = {
    "color_temp": 3700.0,
    "gamma": 2.0,
    "contrast": 50.0,
    "black_level": BLACK_LEVEL,
    "white_level": WHITE_LEVEL,
}
PHOTOS = ("coffee.png",)
BORDER = 8
LUT_SIZE = 1024

# Colour matrices of the Nokia N900 sensor (FCam, as in Halide's camera_pipe): rows r, g, b;
# columns: weights of r, g, b and an offset.
MATRIX_3200 = np.float32(
    [
        [1.6697, -0.2693, -0.4004, -42.4346],
        [-0.3576, 1.0615, 1.5949, -37.1158],
        [-0.2175, -1.8751, 6.9640, -26.6970],
    ]
)
MATRIX_7000 = np.float32(
    [
        [2.2997, -0.4478, 0.1706, -39.0923],
        [-0.3826, 1.5906, -0.2080, -25.4311],
        [-0.0888, -0.7344, 2.2832, -20.0826],
    ]
)


def _avg(a, b):
    """Halide's avg: the mean of two int16 values rounded up, computed in int32."""
    return Cast(Short, (Cast(Int, a) + b + 1) / 2)


def _absd(a, b):
    """|a - b| in int32 (Halide's absd: no overflow)."""
    return Abs(Cast(Int, a) - b)


def build():
    """(outputs, parameters) of the pipeline."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    color_temp = Parameter(Float, "color_temp")
    gamma, contrast = Parameter(Float, "gamma"), Parameter(Float, "contrast")
    black, white = Parameter(Int, "black_level"), Parameter(Int, "white_level")
    c, x, y = Variable(Int, "c"), Variable(Int, "x"), Variable(Int, "y")
    i, j, v = Variable(Int, "i"), Variable(Int, "j"), Variable(Int, "v")

    img = Image(UShort, "img", [R + 2 * BORDER, C + 2 * BORDER])
    matrix_3200 = Image(Float, "matrix_3200", [3, 4])
    matrix_7000 = Image(Float, "matrix_7000", [3, 4])

    # full-resolution rows/columns of the output, in raw coordinates
    rows, cols = Interval(Int, BORDER, R + BORDER - 1), Interval(Int, BORDER, C + BORDER - 1)

    # half-resolution cells covering the output, widened by m cells
    def half_rows(m):
        return Interval(Int, BORDER // 2 - m, (R + BORDER - 1) / 2 + m)

    def half_cols(m):
        return Interval(Int, BORDER // 2 - m, (C + BORDER - 1) / 2 + m)

    def half(name, m):
        return Function(([x, y], [half_rows(m), half_cols(m)]), Short, name)

    # 1. hot-pixel suppression
    denoised = Function(
        ([x, y], [Interval(Int, 2, R + 2 * BORDER - 3), Interval(Int, 2, C + 2 * BORDER - 3)]),
        Short,
        "denoised",
    )
    hi = Max(Max(img(x - 2, y), img(x + 2, y)), Max(img(x, y - 2), img(x, y + 2)))
    lo = Min(Min(img(x - 2, y), img(x + 2, y)), Min(img(x, y - 2), img(x, y + 2)))
    denoised.defn = [Cast(Short, Clamp(img(x, y), lo, hi))]

    # 2. deinterleave: row 2x is G R G R ..., row 2x+1 is B G B G ...
    deinterleaved = Function(
        ([c, x, y], [Interval(Int, 0, 3), half_rows(2), half_cols(2)]), Short, "deinterleaved"
    )
    deinterleaved.defn = [
        Case(c == 0, denoised(2 * x, 2 * y)),
        Case(c == 1, denoised(2 * x, 2 * y + 1)),
        Case(c == 2, denoised(2 * x + 1, 2 * y)),
        denoised(2 * x + 1, 2 * y + 1),
    ]

    # 3. demosaic; f_s = the value of colour f at the sites of s
    g_gr, r_r, b_b, g_gb = (half(name, 2) for name in ("g_gr", "r_r", "b_b", "g_gb"))
    for k, f in enumerate((g_gr, r_r, b_b, g_gb)):
        f.defn = [deinterleaved(k, x, y)]

    g_r = half("g_r", 1)
    gv_r, gvd_r = _avg(g_gb(x - 1, y), g_gb(x, y)), _absd(g_gb(x - 1, y), g_gb(x, y))
    gh_r, ghd_r = _avg(g_gr(x, y + 1), g_gr(x, y)), _absd(g_gr(x, y + 1), g_gr(x, y))
    g_r.defn = [Select(ghd_r < gvd_r, gh_r, gv_r)]

    g_b = half("g_b", 1)
    gv_b, gvd_b = _avg(g_gr(x + 1, y), g_gr(x, y)), _absd(g_gr(x + 1, y), g_gr(x, y))
    gh_b, ghd_b = _avg(g_gb(x, y - 1), g_gb(x, y)), _absd(g_gb(x, y - 1), g_gb(x, y))
    g_b.defn = [Select(ghd_b < gvd_b, gh_b, gv_b)]

    r_gr = half("r_gr", 0)
    r_gr.defn = [g_gr(x, y) - _avg(g_r(x, y), g_r(x, y - 1)) + _avg(r_r(x, y - 1), r_r(x, y))]
    b_gr = half("b_gr", 0)
    b_gr.defn = [g_gr(x, y) - _avg(g_b(x, y), g_b(x - 1, y)) + _avg(b_b(x, y), b_b(x - 1, y))]
    r_gb = half("r_gb", 0)
    r_gb.defn = [g_gb(x, y) - _avg(g_r(x, y), g_r(x + 1, y)) + _avg(r_r(x, y), r_r(x + 1, y))]
    b_gb = half("b_gb", 0)
    b_gb.defn = [g_gb(x, y) - _avg(g_b(x, y), g_b(x, y + 1)) + _avg(b_b(x, y), b_b(x, y + 1))]

    r_b = half("r_b", 0)
    rp_b = g_b(x, y) - _avg(g_r(x, y), g_r(x + 1, y - 1)) + _avg(r_r(x, y), r_r(x + 1, y - 1))
    rpd_b = _absd(r_r(x, y), r_r(x + 1, y - 1))
    rn_b = g_b(x, y) - _avg(g_r(x, y - 1), g_r(x + 1, y)) + _avg(r_r(x, y - 1), r_r(x + 1, y))
    rnd_b = _absd(r_r(x, y - 1), r_r(x + 1, y))
    r_b.defn = [Select(rpd_b < rnd_b, rp_b, rn_b)]

    b_r = half("b_r", 0)
    bp_r = g_r(x, y) - _avg(g_b(x, y), g_b(x - 1, y + 1)) + _avg(b_b(x, y), b_b(x - 1, y + 1))
    bpd_r = _absd(b_b(x, y), b_b(x - 1, y + 1))
    bn_r = g_r(x, y) - _avg(g_b(x, y + 1), g_b(x - 1, y)) + _avg(b_b(x, y + 1), b_b(x - 1, y))
    bnd_r = _absd(b_b(x, y + 1), b_b(x - 1, y))
    b_r.defn = [Select(bpd_r < bnd_r, bp_r, bn_r)]

    # 4. interleave back to full resolution: (even row, even col), (even, odd), (odd, even),
    # (odd, odd) come from the four half-resolution stages in that order
    def interleave(name, even_even, even_odd, odd_even, odd_odd):
        def along_y(a, b, part):
            f = Function(([x, y], [half_rows(0), cols]), Short, f"{name}_{part}")
            f.defn = [Select(y % 2 == 0, a(x, y / 2), b(x, y / 2))]
            return f

        even, odd = along_y(even_even, even_odd, "x1"), along_y(odd_even, odd_odd, "x2")
        f = Function(([x, y], [rows, cols]), Short, name)
        f.defn = [Select(x % 2 == 0, even(x / 2, y), odd(x / 2, y))]
        return f

    red = interleave("red", r_gr, r_r, r_b, r_gb)
    green = interleave("green", g_gr, g_r, g_b, g_gb)
    blue = interleave("blue", b_gr, b_r, b_b, b_gb)

    # 5. colour correction
    alpha = (1.0 / color_temp - 1.0 / 3200) / (1.0 / 7000 - 1.0 / 3200)
    matrix = Function(([i, j], [Interval(Int, 0, 2), Interval(Int, 0, 3)]), Short, "matrix")
    matrix.defn = [(matrix_3200(i, j) * alpha + matrix_7000(i, j) * (1 - alpha)) * 256.0]
    ir, ig, ib = Cast(Int, red(x, y)), Cast(Int, green(x, y)), Cast(Int, blue(x, y))

    def channel(k):
        return (matrix(k, 3) + matrix(k, 0) * ir + matrix(k, 1) * ig + matrix(k, 2) * ib) / 256

    corrected = Function(([c, x, y], [Interval(Int, 0, 2), rows, cols]), Short, "corrected")
    corrected.defn = [Case(c == 0, channel(0)), Case(c == 1, channel(1)), channel(2)]

    # 6. tone curve (Halide's apply_curve) and its lookup
    inv_range = 1.0 / Cast(Float, white - black)
    b = 2.0 - Pow(2.0, contrast / 100.0)
    a = 2.0 - 2.0 * b
    xf = Clamp(Cast(Float, v - black) * inv_range, 0.0, 1.0)
    g = Pow(xf, 1.0 / gamma)
    z = Select(g > 0.5, 1.0 - (a * (1.0 - g) * (1.0 - g) + b * (1.0 - g)), a * g * g + b * g)
    val = Cast(UChar, Clamp(z * 255.0 + 0.5, 0.0, 255.0))
    curve = Function(([v], [Interval(Int, 0, LUT_SIZE - 1)]), UChar, "curve")
    curve.defn = [Case(v <= black, 0), Case(v > white, 255), val]

    processed = Function(([c, x, y], [Interval(Int, 0, 2), rows, cols]), UChar, "processed")
    processed.defn = [curve(corrected(c, x, y))]
    return [processed], {
        "R": R,
        "C": C,
        "color_temp": color_temp,
        "gamma": gamma,
        "contrast": contrast,
        "black_level": black,
        "white_level": white,
    }


def _correction_matrix(color_temp=DEFAULTS["color_temp"]):
    """The colour matrix the pipeline uses at `color_temp`, as float64 (Q8.8 values / 256)."""
    alpha = (np.float32(1) / np.float32(color_temp) - np.float32(1 / 3200)) / np.float32(
        1 / 7000 - 1 / 3200
    )
    q88 = (MATRIX_3200 * alpha + MATRIX_7000 * (np.float32(1) - alpha)) * np.float32(256)
    return q88.astype(np.int16).astype(np.float64) / 256


def mosaic(rgb, black_level=BLACK_LEVEL, white_level=WHITE_LEVEL):
    """Raw GRBG uint16 mosaic that the camera would record for an HWC float [0, 1] sRGB-ish
    photo: linear colours (gamma 2.2 undone) pass through the inverse of the default colour
    matrix, scaled so that colour correction maps them to black_level..white_level."""
    linear = np.asarray(rgb, np.float64) ** 2.2
    target = black_level + linear * (white_level - black_level)
    m = _correction_matrix()
    camera = (target - m[:, 3]) @ np.linalg.inv(m[:, :3]).T
    camera = np.clip(np.rint(camera), 0, 1023).astype(np.uint16)
    raw = np.empty(camera.shape[:2], np.uint16)
    raw[0::2, 0::2] = camera[0::2, 0::2, 1]  # G (green-red rows)
    raw[0::2, 1::2] = camera[0::2, 1::2, 0]  # R
    raw[1::2, 0::2] = camera[1::2, 0::2, 2]  # B
    raw[1::2, 1::2] = camera[1::2, 1::2, 1]  # G (green-blue rows)
    return raw


def prepare(photos, size=None):
    """Inputs from one HWC photo (any dtype): the raw mosaic of the photo cropped or mirror-
    tiled to `size` = {"R": rows, "C": cols} (else its own size), with an 8-pixel mirrored
    border, and the two calibration matrices."""
    rgb = to_float(photos[0], channels=3)
    if size:
        rgb = fit(rgb, size["R"], size["C"])
    rgb = np.pad(rgb, ((BORDER, BORDER), (BORDER, BORDER), (0, 0)), mode="symmetric")
    return {
        "img": mosaic(rgb),
        "matrix_3200": MATRIX_3200.copy(),
        "matrix_7000": MATRIX_7000.copy(),
    }


def tone_curve(gamma, contrast, black_level, white_level):
    """The uint8 lookup table over 0..1023, in float32 as the pipeline computes it, and the
    float values z * 255 + 0.5 before the cast (for checking the rounding margin)."""
    f32 = np.float32
    v = np.arange(LUT_SIZE, dtype=np.int32)
    inv_range = f32(1) / f32(white_level - black_level)
    contrast_exp = np.full(LUT_SIZE, f32(contrast) / f32(100), np.float32)
    b = f32(2) - np.power(np.full(LUT_SIZE, 2, np.float32), contrast_exp)
    a = f32(2) - f32(2) * b
    xf = np.clip((v - np.int32(black_level)).astype(np.float32) * inv_range, f32(0), f32(1))
    g = np.power(xf, np.full(LUT_SIZE, f32(1) / f32(gamma), np.float32))
    one_g = f32(1) - g
    z = np.where(g > f32(0.5), f32(1) - (a * one_g * one_g + b * one_g), a * g * g + b * g)
    scaled = np.clip(z * f32(255) + f32(0.5), f32(0), f32(255))
    lut = scaled.astype(np.uint8)
    lut = np.where(v <= black_level, np.uint8(0), np.where(v > white_level, np.uint8(255), lut))
    return lut.astype(np.uint8), scaled


def reference(
    img, matrix_3200, matrix_7000, color_temp, gamma, contrast, black_level, white_level, **_
):
    """NumPy version written from the algorithm, independently of the interpreter."""
    rows, cols = img.shape[0] - 2 * BORDER, img.shape[1] - 2 * BORDER
    raw = img.astype(np.int32)

    # hot-pixel suppression, kept at raw coordinates (2..R+13 computed, the rest unused)
    den = np.zeros(img.shape, np.int16)
    inner = raw[2:-2, 2:-2]
    nbrs = (raw[:-4, 2:-2], raw[4:, 2:-2], raw[2:-2, :-4], raw[2:-2, 4:])
    hi = np.maximum(np.maximum(nbrs[0], nbrs[1]), np.maximum(nbrs[2], nbrs[3]))
    lo = np.minimum(np.minimum(nbrs[0], nbrs[1]), np.minimum(nbrs[2], nbrs[3]))
    den[2:-2, 2:-2] = np.minimum(np.maximum(inner, lo), hi).astype(np.int16)

    # half-resolution cells 4-m .. (R+7)//2+m (rows), likewise for columns; margin 2 for the
    # deinterleaved channels
    top = BORDER // 2
    last_r, last_c = (rows + BORDER - 1) // 2, (cols + BORDER - 1) // 2

    def known(dr, dc):
        return den[
            2 * (top - 2) + dr : 2 * (last_r + 2) + 2 : 2,
            2 * (top - 2) + dc : 2 * (last_c + 2) + 2 : 2,
        ]

    g_gr, r_r, b_b, g_gb = known(0, 0), known(0, 1), known(1, 0), known(1, 1)

    def at(arr, margin, out_margin, dx=0, dy=0):
        """arr (covering margin `margin`) shifted by (dx, dy), cut to margin `out_margin`."""
        off = margin - out_margin
        nr, nc = arr.shape[0] - 2 * off, arr.shape[1] - 2 * off
        return arr[off + dx : off + dx + nr, off + dy : off + dy + nc]

    def avg(p, q):
        return ((p.astype(np.int32) + q + 1) // 2).astype(np.int16)

    def absd(p, q):
        return np.abs(p.astype(np.int32) - q)

    def pick(dp, dn, p, n):
        return np.where(dp < dn, p, n)

    # green at red and blue sites (margin 1)
    g_r = pick(
        absd(at(g_gr, 2, 1, 0, 1), at(g_gr, 2, 1)),
        absd(at(g_gb, 2, 1, -1, 0), at(g_gb, 2, 1)),
        avg(at(g_gr, 2, 1, 0, 1), at(g_gr, 2, 1)),
        avg(at(g_gb, 2, 1, -1, 0), at(g_gb, 2, 1)),
    )
    g_b = pick(
        absd(at(g_gb, 2, 1, 0, -1), at(g_gb, 2, 1)),
        absd(at(g_gr, 2, 1, 1, 0), at(g_gr, 2, 1)),
        avg(at(g_gb, 2, 1, 0, -1), at(g_gb, 2, 1)),
        avg(at(g_gr, 2, 1, 1, 0), at(g_gr, 2, 1)),
    )

    def R2(arr, dx=0, dy=0):
        return at(arr, 2, 0, dx, dy)

    def R1(arr, dx=0, dy=0):
        return at(arr, 1, 0, dx, dy)

    # red and blue at green sites (margin 0)
    r_gr = R2(g_gr) - avg(R1(g_r), R1(g_r, 0, -1)) + avg(R2(r_r, 0, -1), R2(r_r))
    b_gr = R2(g_gr) - avg(R1(g_b), R1(g_b, -1, 0)) + avg(R2(b_b), R2(b_b, -1, 0))
    r_gb = R2(g_gb) - avg(R1(g_r), R1(g_r, 1, 0)) + avg(R2(r_r), R2(r_r, 1, 0))
    b_gb = R2(g_gb) - avg(R1(g_b), R1(g_b, 0, 1)) + avg(R2(b_b), R2(b_b, 0, 1))

    # red at blue, blue at red: along the diagonal of the smaller difference
    rp_b = R1(g_b) - avg(R1(g_r), R1(g_r, 1, -1)) + avg(R2(r_r), R2(r_r, 1, -1))
    rn_b = R1(g_b) - avg(R1(g_r, 0, -1), R1(g_r, 1, 0)) + avg(R2(r_r, 0, -1), R2(r_r, 1, 0))
    r_b = pick(absd(R2(r_r), R2(r_r, 1, -1)), absd(R2(r_r, 0, -1), R2(r_r, 1, 0)), rp_b, rn_b)
    bp_r = R1(g_r) - avg(R1(g_b), R1(g_b, -1, 1)) + avg(R2(b_b), R2(b_b, -1, 1))
    bn_r = R1(g_r) - avg(R1(g_b, 0, 1), R1(g_b, -1, 0)) + avg(R2(b_b, 0, 1), R2(b_b, -1, 0))
    b_r = pick(absd(R2(b_b), R2(b_b, -1, 1)), absd(R2(b_b, 0, 1), R2(b_b, -1, 0)), bp_r, bn_r)

    def interleave(ee, eo, oe, oo):
        out = np.empty((rows, cols), np.int16)
        for arr, (pr, pc) in ((ee, (0, 0)), (eo, (0, 1)), (oe, (1, 0)), (oo, (1, 1))):
            part = out[pr::2, pc::2]
            part[...] = arr[: part.shape[0], : part.shape[1]]
        return out

    red = interleave(r_gr, R2(r_r), r_b, r_gb)
    green = interleave(R2(g_gr), R1(g_r), R1(g_b), R2(g_gb))
    blue = interleave(b_gr, b_r, R2(b_b), b_gb)

    # colour correction in Q8.8
    f32 = np.float32
    alpha = (f32(1) / f32(color_temp) - f32(1.0 / 3200)) / f32(1.0 / 7000 - 1.0 / 3200)
    mat = ((matrix_3200 * alpha + matrix_7000 * (f32(1) - alpha)) * f32(256)).astype(np.int16)
    rgb = [ch.astype(np.int32) for ch in (red, green, blue)]
    corrected = np.stack(
        [
            (mat[k, 3] + mat[k, 0] * rgb[0] + mat[k, 1] * rgb[1] + mat[k, 2] * rgb[2]) // 256
            for k in range(3)
        ]
    ).astype(np.int16)

    lut, _ = tone_curve(gamma, contrast, black_level, white_level)
    return lut[np.clip(corrected, 0, LUT_SIZE - 1)]


def to_photo(output):
    """The output as an HWC uint8 image for saving."""
    return np.ascontiguousarray(output.transpose(1, 2, 0))
