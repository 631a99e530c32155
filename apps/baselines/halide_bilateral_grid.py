"""Bilateral grid in Halide, the same algorithm as apps/bilateral_grid.py: the same 7 stages
(clamped, grid, blurz, blurx, blury, interpolated, filtered), constants, grid layout and
data-dependent clamping.

The app's input (R, C) is the Halide buffer (C, R), so every Func is indexed innermost first:
clamped[y, x], grid[y, x, z, c] (the app's grid(c, z, x, y)), with x the row and y the column as
in the app. Stored cell g (= cell g - PAD) and stored bin z (= bin z - PAD) are the app's.

The grid's reduction is written as in Halide's apps/bilateral_grid, the cell coordinates pure
variables and an RDom walking the 8x8 pixels of the cell (pixel row outer, pixel column inner),
with the channel a reduction variable outside them as in the app: the app's reduction over
(channel, pixel row, pixel column) with its scattered cell index u / 8, v / 8 made pure, each
cell and bin accumulating the same pixels in the same order. (With the channel a pure variable
instead, Li2018 fuses it with the cells into one parallel loop split with GuardWithIf, Halide
bounds the grid's channel dimension at 32499 instead of 2 at the paper size, and the 133 GB
allocation fails.) The bin is cast<int>(value / r_sigma + 0.5) + PAD clamped to the grid's
bins, and the slicing clamps its bins to the blurred ones, as the app does for data-dependent
indices.

r_sigma is a Param, a runtime parameter as in the app: Halide rewrites a division by a constant
0.1f into a multiplication by 10.0f, which bins the values 0.65f and 0.84999996f differently
from the app's division.
"""

from ..bilateral_grid import PAD, S_SIGMA, Z_BINS


def build(hl, inputs, params, schedule=None):
    img = hl.Buffer(inputs["img"])
    cols, rows = img.dim(0).extent(), img.dim(1).extent()
    r_sigma = hl.Param(hl.Float(32), "r_sigma", float(params["r_sigma"]))
    r_sigma.set_estimate(float(params["r_sigma"]))
    s, half = S_SIGMA, S_SIGMA // 2
    last_z = Z_BINS + 1 + 2 * PAD  # the grid's bins are 0 .. last_z
    y, x, z, c = hl.Var("y"), hl.Var("x"), hl.Var("z"), hl.Var("c")
    names = ("clamped", "grid", "blurz", "blurx", "blury", "interpolated", "filtered")
    clamped, grid, blurz, blurx, blury, interpolated, filtered = (hl.Func(n) for n in names)

    clamped[y, x] = hl.clamp(img[y, x], hl.f32(0), hl.f32(1))

    # stored cell g collects the pixels s * (g - PAD) - half + 0 .. s - 1, clamped to the image
    # r.x: pixel column (innermost), r.y: pixel row, r.z: channel (outermost)
    r = hl.RDom([(0, s), (0, s), (0, 2)], "r")
    offset = s * PAD + half
    value = clamped[
        hl.clamp(y * s + r.x - offset, 0, cols - 1), hl.clamp(x * s + r.y - offset, 0, rows - 1)
    ]
    zbin = hl.clamp(hl.cast(hl.Int(32), value / r_sigma + hl.f32(0.5)) + PAD, 0, last_z)
    grid[y, x, z, c] = hl.f32(0)
    grid[y, x, zbin, r.z] += hl.select(r.z == 0, value, hl.f32(1))

    def blur(out, f, axis):
        def tap(i):
            args = [y, x, z, c]
            args[axis] = args[axis] + (i - 2)
            return f[args[0], args[1], args[2], args[3]]

        out[y, x, z, c] = (
            tap(0) + tap(1) * hl.f32(4) + tap(2) * hl.f32(6) + tap(3) * hl.f32(4) + tap(4)
        )

    blur(blurz, grid, 2)
    blur(blurx, blurz, 1)
    blur(blury, blurx, 0)

    val = clamped[y, x]
    zv = val / r_sigma
    zi = hl.cast(hl.Int(32), zv)  # truncation = floor: zv >= 0
    zf = zv - hl.cast(hl.Float(32), zi)
    xf = hl.cast(hl.Float(32), x % s) / hl.f32(s)
    yf = hl.cast(hl.Float(32), y % s) / hl.f32(s)
    xi, yi = x / s + PAD, y / s + PAD

    def lerp(a, b, w):
        return a * (hl.f32(1) - w) + b * w

    def corner(dz, dx, dy):
        # the blurred bins are PAD .. last_z - PAD: the app clamps the bin into them
        return blury[yi + dy, xi + dx, hl.clamp(zi + dz, 0, last_z - 2 * PAD) + PAD, c]

    def plane(dz):
        return lerp(
            lerp(corner(dz, 0, 0), corner(dz, 1, 0), xf),
            lerp(corner(dz, 0, 1), corner(dz, 1, 1), xf),
            yf,
        )

    interpolated[y, x, c] = lerp(plane(0), plane(1), zf)
    filtered[y, x] = interpolated[y, x, 0] / interpolated[y, x, 1]
    filtered.set_estimates([(0, cols), (0, rows)])
    if schedule is not None:
        # after Halide's apps/bilateral_grid (CPU), for our blur order (bins, rows, columns):
        # grid and bin blur per grid row of the row blur, last blur per output row on the stack
        lanes = schedule.natural_vector_size(hl.Float(32))
        strip, row = hl.Var("strip"), hl.Var("row")
        blurx.compute_root().reorder(c, y, z, x).split(x, strip, row, 8).parallel(strip)
        blurx.vectorize(y, lanes).unroll(c)
        blurz.store_at(blurx, strip).compute_at(blurx, row).reorder(c, z, y, x)
        blurz.vectorize(y, lanes).unroll(c)
        grid.compute_at(blurz, x)
        grid.update().reorder(r.z, r.x, r.y, y, x).unroll(r.z)
        blury.compute_at(filtered, x).store_in(hl.MemoryType.Stack).reorder(c, y, x, z)
        blury.reorder_storage(c, z, y, x).vectorize(y, lanes).unroll(c)
        filtered.compute_root().parallel(x, 8).vectorize(y, lanes)
    return [filtered], [hl.Buffer(hl.Float(32), [cols, rows])]
