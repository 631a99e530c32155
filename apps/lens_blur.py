"""Lens blur (Halide's apps/lens_blur): depth from a stereo pair, then a synthetic
shallow depth of field, the blur radius growing with the distance from a focal depth.

  cost            for each of 32 slices z (disparity 2z or 2z + 1 columns) the colour
                  difference between the left view and the right one, squared, summed over RGB
  cost_sq_sum, cost_mean   Reductions over the slices: sum of cost^2, mean of the cost
  confidence      their variance across the slices (a textured pixel has a clear minimum)
  push0 .. push7  a pyramid of (cost * confidence, confidence), each level the previous one
                  blurred by [1 3 3 1] / 8 and halved, columns (down_cols) then rows
  pull7 .. pull0  back up: each level the mean of the bilinear upsampling of the coarser pull
                  (up_cols, then rows) and its own push level: low-confidence regions inpainted
  filtered_cost   pull0's cost / its confidence
  min_cost, depth Reductions: the smallest filtered cost over the slices, then the first slice
                  that has it (Halide's argmin)
  bokeh_radius, bokeh_sq   |depth - focus_depth| * blur_radius_scale, and its square
  worst_rows, worst        a 19x19 max filter of the radius (rows, then columns)
  offset_col, offset_row   32 aperture samples per pixel at pseudo-random offsets within the
                  worst radius around it, clamped to +-9
  sample_weight   1 where the sample's and the pixel's bokeh reach each other (or the sample is
                  in front), else 0
  output          a Reduction over the samples: channels 0-2 the sums of weight * colour,
                  channel 3 of weight * 255 (Halide's alpha channel)
  lens_blur       (the pixel's colour + output) / (255 + output's alpha): RGB in [0, 1], the
                  pixel itself counting as one more sample (all sums are exact integers)
45 stages, Halide's Funcs: its diff inlined into cost, its Tuple sample_locations as the two
offset stages, its inline sums and argmin as the four slice Reductions.

Halide's defaults are kept: 32 slices, 32 aperture samples, 8 pyramid levels, focus_depth 13 and
blur_radius_scale 0.5 (parameters). The largest blur radius, int(max(32 - 13, 13) * 0.5) = 9,
is fixed (it sets the max filter's width and the border): with other parameters the samples stay
within 9 pixels. Differences from Halide's, all at the borders or where Halide is random:
  - pyramid levels have ceil(R / 2^i) x ceil(C / 2^i) points (Halide: floor, empty at small
    sizes) and every read of a level is clamped into it; Halide computes push0 and the pull
    levels beyond the image from the inputs' repeated edges;
  - depth and the bokeh radius are read clamped to the image (repeated edges) too;
  - Halide's random_float() is a hash of (column, row, sample, axis) in uint32 arithmetic,
    `jitter` below, the same in the NumPy reference and the Halide version.

Inputs: the left view (3, R + 18, C + 18) uint8, channel first, with a 9-pixel border of edge
values (the samples reach 9 pixels), and the right view (3, R + 18, C + 18 + 64), its border 64
columns wider on the right (the cost reads up to 2 * 31 + 1 columns to the right). Without a
bundled stereo pair, prepare() makes the right view from the photo: each row shifted right by 2z
columns, z growing from 1 at the top row to 29 at the bottom, so that the depth is a tilted
plane and only the rows at depth 13 stay sharp. The output is (3, R, C) float32.
PAPER_SIZE is Halide's estimate for the app, 192 x 320 (W x H).
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
    Op,
    Parameter,
    Reduce,
    Reduction,
    Select,
    UChar,
    UInt,
    Variable,
)

from .inputs import fit, to_float

NAME = "lens_blur"
DESCRIPTION = "the photo refocused from a stereo pair: rows at focus_depth sharp, others blurred"
PAPER_SIZE = {"R": 320, "C": 192}
SMALL_SIZE = {"R": 37, "C": 53}
DEFAULTS = {"focus_depth": 13, "blur_radius_scale": 0.5}
PHOTOS = ("coffee.png",)
SLICES = 32
SAMPLES = 32
LEVELS = 8
MAX_RADIUS = int(max(SLICES - 13, 13) * 0.5)
BORDER = MAX_RADIUS
RIGHT_EXTRA = 2 * SLICES  # the right view's extra columns
NEAR, FAR = 29, 1  # the synthetic right view's slices at the bottom and top rows


def jitter(col, row, sample, axis, to_uint):
    """A pseudo-random integer in [0, 32768) from (column, row, sample, axis), all in uint32
    arithmetic that wraps (`to_uint` casts an integer expression or array to uint32)."""
    h = to_uint(col) * 73856093 + to_uint(row) * 19349663 + to_uint(sample * 2 + axis) * 83492791
    h = h * 1103515245 + 12345
    return (h // 65536) % 32768


def _sum(terms):
    terms = list(terms)
    return sum(terms[1:], terms[0])


def _down(a, b, c, d):
    """The [1 3 3 1] / 8 blur of four taps."""
    return (a + 3.0 * (b + c) + d) / 8.0


def _up(near, far):
    """Bilinear upsampling: the nearer coarse point weighs 3/4, the other 1/4."""
    return 0.25 * far + 0.75 * near


def build():
    """(outputs, parameters) of the pipeline."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    focus_depth = Parameter(Int, "focus_depth")
    scale = Parameter(Float, "blur_radius_scale")
    z, c, s, x, y, u, v = (Variable(Int, n) for n in ("z", "c", "s", "x", "y", "u", "v"))
    channel = Variable(Int, "channel")
    b = BORDER
    left = Image(UChar, "left", [3, R + 2 * b, C + 2 * b])
    right = Image(UChar, "right", [3, R + 2 * b, C + 2 * b + RIGHT_EXTRA])
    rows, cols = Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)
    slices, pair = Interval(Int, 0, SLICES - 1), Interval(Int, 0, 1)

    def stage(name, variables, domain, value, typ=Float):
        f = Function((variables, domain), typ, name)
        f.defn = value if isinstance(value, list) else [value]
        return f

    def slice_reduction(name, value, op, default, typ=Float):
        r = Reduction(([x, y], [rows, cols]), ([z, u, v], [slices, rows, cols]), typ, name)
        r.default = default
        r.defn = [Reduce(r(u, v), value, op)]
        return r

    def absd(p, q):
        return Max(p, q) - Min(p, q)

    def squared_diff(ch):
        here = left(ch, x + b, y + b)
        diff = Min(
            absd(here, right(ch, x + b, y + b + 2 * z)),
            absd(here, right(ch, x + b, y + b + 2 * z + 1)),
        )
        return Cast(Float, diff) * Cast(Float, diff)

    cost = stage("cost", [z, x, y], [slices, rows, cols], _sum(squared_diff(ch) for ch in range(3)))
    cost_sq_sum = slice_reduction("cost_sq_sum", cost(z, u, v) * cost(z, u, v), Op.Sum, 0.0)
    cost_mean = slice_reduction("cost_mean", cost(z, u, v) / SLICES, Op.Sum, 0.0)
    confidence = stage(
        "confidence",
        [x, y],
        [rows, cols],
        cost_sq_sum(x, y) / SLICES - cost_mean(x, y) * cost_mean(x, y),
    )
    push = [
        stage(
            "push0",
            [z, c, x, y],
            [slices, pair, rows, cols],
            [Case(c == 0, cost(z, x, y) * confidence(x, y)), confidence(x, y)],
        )
    ]
    last_rows = [(R - 1) / 2**i for i in range(LEVELS)]
    last_cols = [(C - 1) / 2**i for i in range(LEVELS)]

    def level(i):
        return [slices, pair, Interval(Int, 0, last_rows[i]), Interval(Int, 0, last_cols[i])]

    for i in range(1, LEVELS):
        prev, lr, lc = push[-1], last_rows[i - 1], last_cols[i - 1]
        taps = [prev(z, c, x, Clamp(2 * y + k, 0, lc)) for k in (-1, 0, 1, 2)]
        down_cols_domain = [slices, pair, Interval(Int, 0, lr), Interval(Int, 0, last_cols[i])]
        down_cols = stage(f"down_cols{i}", [z, c, x, y], down_cols_domain, _down(*taps))
        taps = [down_cols(z, c, Clamp(2 * x + k, 0, lr), y) for k in (-1, 0, 1, 2)]
        push.append(stage(f"push{i}", [z, c, x, y], level(i), _down(*taps)))

    pull = push[-1]
    for i in range(LEVELS - 2, -1, -1):
        coarse, lr, lc = pull, last_rows[i + 1], last_cols[i + 1]
        up_cols = stage(
            f"up_cols{i}",
            [z, c, x, y],
            [slices, pair, Interval(Int, 0, lr), Interval(Int, 0, last_cols[i])],
            _up(coarse(z, c, x, y / 2), coarse(z, c, x, Clamp(y / 2 - 1 + 2 * (y % 2), 0, lc))),
        )
        up = _up(up_cols(z, c, x / 2, y), up_cols(z, c, Clamp(x / 2 - 1 + 2 * (x % 2), 0, lr), y))
        pull = stage(f"pull{i}", [z, c, x, y], level(i), up * 0.5 + push[i](z, c, x, y) * 0.5)

    filtered_cost = stage(
        "filtered_cost", [z, x, y], [slices, rows, cols], pull(z, 0, x, y) / pull(z, 1, x, y)
    )
    min_cost = slice_reduction("min_cost", filtered_cost(z, u, v), Op.Min, float("inf"))
    first_minimum = Select(filtered_cost(z, u, v) == min_cost(u, v), z, SLICES)
    depth = slice_reduction("depth", first_minimum, Op.Min, SLICES, Int)
    bokeh_radius = stage(
        "bokeh_radius", [x, y], [rows, cols], Cast(Float, Abs(depth(x, y) - focus_depth)) * scale
    )
    bokeh_sq = stage("bokeh_sq", [x, y], [rows, cols], bokeh_radius(x, y) * bokeh_radius(x, y))
    reach = range(-MAX_RADIUS, MAX_RADIUS + 1)

    def maximum(terms):
        terms = list(terms)
        out = terms[0]
        for t in terms[1:]:
            out = Max(out, t)
        return out

    worst_rows = stage(
        "worst_rows",
        [x, y],
        [rows, cols],
        maximum(bokeh_radius(Clamp(x + k, 0, R - 1), y) for k in reach),
    )
    worst = stage(
        "worst", [x, y], [rows, cols], maximum(worst_rows(x, Clamp(y + k, 0, C - 1)) for k in reach)
    )

    def offset(axis, name):
        rand = Cast(Float, jitter(y, x, s, axis, lambda e: Cast(UInt, e))) / 32768.0
        spread = Cast(Int, (rand - 0.5) * 2 * worst(x, y))
        samples = Interval(Int, 0, SAMPLES - 1)
        return stage(
            name, [s, x, y], [samples, rows, cols], Clamp(spread, -MAX_RADIUS, MAX_RADIUS), Int
        )

    offset_col, offset_row = offset(0, "offset_col"), offset(1, "offset_row")
    d_row, d_col = offset_row(s, x, y), offset_col(s, x, y)
    r_sq = d_row * d_row + d_col * d_col
    seen_x, seen_y = x + d_row, y + d_col  # data dependent: clamped to the image
    use = ((r_sq < bokeh_sq(x, y)) | (depth(seen_x, seen_y) < depth(x, y))) & (
        r_sq < bokeh_sq(seen_x, seen_y)
    )
    sample_weight = stage(
        "sample_weight",
        [s, x, y],
        [Interval(Int, 0, SAMPLES - 1), rows, cols],
        Select(use, 1.0, 0.0),
    )

    output = Reduction(
        ([c, x, y], [Interval(Int, 0, 3), rows, cols]),
        ([s, channel, u, v], [Interval(Int, 0, SAMPLES - 1), Interval(Int, 0, 3), rows, cols]),
        Float,
        "output",
    )
    weight = sample_weight(s, u, v)
    seen = (u + b + offset_row(s, u, v), v + b + offset_col(s, u, v))
    output.defn = [
        Case(channel == 3, Reduce(output(channel, u, v), weight * 255.0, Op.Sum)),
        Case(
            channel < 3,
            Reduce(output(channel, u, v), weight * Cast(Float, left(channel, *seen)), Op.Sum),
        ),
    ]
    lens_blur = stage(
        "lens_blur",
        [c, x, y],
        [Interval(Int, 0, 2), rows, cols],
        (Cast(Float, left(c, x + b, y + b)) + output(c, x, y)) / (255.0 + output(3, x, y)),
    )
    params = {"R": R, "C": C, "focus_depth": focus_depth, "blur_radius_scale": scale}
    return [lens_blur], params


def disparity_slices(rows: int) -> np.ndarray:
    """The synthetic scene's slice per row: FAR at the top row to NEAR at the bottom one."""
    return np.rint(np.linspace(FAR, NEAR, rows)).astype(np.int64)


def stereo_inputs(left_view: np.ndarray, right_view: np.ndarray) -> dict:
    """The pipeline's inputs from an HWC uint8 stereo pair: the left view (R x C) and the right
    one (R x (C + 64)), both made channel first and given their borders of edge values."""
    b = BORDER
    chw = [np.ascontiguousarray(view.transpose(2, 0, 1)) for view in (left_view, right_view)]
    return {
        "left": np.pad(chw[0], ((0, 0), (b, b), (b, b)), mode="edge"),
        "right": np.pad(chw[1], ((0, 0), (b, b), (b, b)), mode="edge"),
    }


def prepare(photos, size=None):
    """Inputs from one HWC photo (any dtype), cropped or mirror-tiled to `size` = {"R": rows,
    "C": cols} when given: the photo as the left view in 8 bits, and as the right view each
    row shifted right by twice its slice (disparity_slices), its left edge repeated."""
    rgb = to_float(photos[0], channels=3)
    if size:
        rgb = fit(rgb, size["R"], size["C"])
    left_view = (rgb * 255 + 0.5).astype(np.uint8)
    rows, cols = left_view.shape[:2]
    shift = 2 * disparity_slices(rows)[:, None]
    source = np.clip(np.arange(cols + RIGHT_EXTRA)[None, :] - shift, 0, cols - 1)
    right_view = left_view[np.arange(rows)[:, None], source]
    return stereo_inputs(left_view, right_view)


def _clamped(a, axis, index):
    """a at `index` along `axis`, the index clamped into a's extent."""
    return np.take(a, np.clip(index, 0, a.shape[axis] - 1), axis=axis)


def _pyramid_down(a):
    """One push level from the previous: (..., rows, cols) -> (..., ceil(rows/2), ceil(cols/2))."""
    f32 = np.float32
    for axis in (-1, -2):
        n = (a.shape[axis] + 1) // 2
        t = [_clamped(a, axis, 2 * np.arange(n) + k) for k in (-1, 0, 1, 2)]
        a = (t[0] + f32(3) * (t[1] + t[2]) + t[3]) / f32(8)
    return a


def _pyramid_up(a, shape):
    """Bilinear upsampling of a coarser level to (..., rows, cols) = `shape`."""
    for axis, n in ((-1, shape[-1]), (-2, shape[-2])):
        i = np.arange(n)
        near, far = _clamped(a, axis, i // 2), _clamped(a, axis, i // 2 - 1 + 2 * (i % 2))
        a = np.float32(0.25) * far + np.float32(0.75) * near
    return a


def reference_depth(left, right):
    """The depth (slice) of every pixel, as the pipeline estimates it, in NumPy."""
    f32, b = np.float32, BORDER
    rows, cols = left.shape[1] - 2 * b, left.shape[2] - 2 * b
    here = left[:, b : b + rows, b : b + cols]
    cost = np.empty((SLICES, rows, cols), f32)
    for z in range(SLICES):
        near = [right[:, b : b + rows, b + 2 * z + k : b + 2 * z + k + cols] for k in (0, 1)]
        diff = np.minimum(*(np.maximum(here, r) - np.minimum(here, r) for r in near))
        sq = diff.astype(f32) * diff.astype(f32)
        cost[z] = sq[0] + sq[1] + sq[2]
    sq_sum, mean = np.zeros((rows, cols), f32), np.zeros((rows, cols), f32)
    for z in range(SLICES):
        sq_sum += cost[z] * cost[z]
        mean += cost[z] / f32(SLICES)
    confidence = sq_sum / f32(SLICES) - mean * mean
    push = [np.stack([cost * confidence, np.broadcast_to(confidence, cost.shape)], axis=1)]
    for _ in range(1, LEVELS):
        push.append(_pyramid_down(push[-1]))
    pull = push[-1]
    for i in range(LEVELS - 2, -1, -1):
        pull = _pyramid_up(pull, push[i].shape) * f32(0.5) + push[i] * f32(0.5)
    filtered = pull[:, 0] / pull[:, 1]
    at_lowest = filtered == filtered.min(axis=0)
    return np.where(at_lowest.any(axis=0), at_lowest.argmax(axis=0), SLICES).astype(np.int32)


def reference(left, right, focus_depth, blur_radius_scale, **_):
    """NumPy version written from the algorithm, independently of the interpreter."""
    f32, b = np.float32, BORDER
    rows, cols = left.shape[1] - 2 * b, left.shape[2] - 2 * b
    here = left[:, b : b + rows, b : b + cols]
    depth = reference_depth(left, right)
    radius = np.abs(depth - np.int32(focus_depth)).astype(f32) * f32(blur_radius_scale)
    radius_sq = radius * radius
    reach = np.arange(-MAX_RADIUS, MAX_RADIUS + 1)
    x, y = np.arange(rows)[:, None], np.arange(cols)[None, :]
    worst_rows = np.max([_clamped(radius, 0, np.arange(rows) + k) for k in reach], axis=0)
    worst = np.max([_clamped(worst_rows, 1, np.arange(cols) + k) for k in reach], axis=0)
    grid = np.broadcast_to(x, (rows, cols)), np.broadcast_to(y, (rows, cols))
    colours = left.astype(f32)
    out = np.concatenate([here.astype(f32), np.full((1, rows, cols), 255, f32)])
    for k in range(SAMPLES):
        d_col, d_row = (
            np.clip(
                (
                    (jitter(grid[1], grid[0], k, axis, _as_uint) / f32(32768) - f32(0.5))
                    * f32(2)
                    * worst
                ).astype(np.int32),
                -MAX_RADIUS,
                MAX_RADIUS,
            )
            for axis in (0, 1)
        )
        seen_x, seen_y = np.clip(x + d_row, 0, rows - 1), np.clip(y + d_col, 0, cols - 1)
        r_sq = d_row * d_row + d_col * d_col
        use = ((r_sq < radius_sq) | (depth[seen_x, seen_y] < depth)) & (
            r_sq < radius_sq[seen_x, seen_y]
        )
        weight = use.astype(f32)
        sampled = colours[:, b + x + d_row, b + y + d_col]
        out[:3] += weight * sampled
        out[3] += weight * f32(255)
    return out[:3] / out[3]


def _as_uint(a):
    return np.asarray(a).astype(np.uint32)


def to_photo(output):
    """The output as an HWC float image for saving."""
    return np.clip(output.transpose(1, 2, 0), 0, 1)
