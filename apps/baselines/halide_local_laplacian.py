"""Local Laplacian filter in Halide, the same algorithm as apps/local_laplacian.py (which follows
Halide's apps/local_laplacian on float32 input): the same 82 stages, constants and order of
operations, and the app's borders instead of Halide's repeat_edge on the input: pyramid level j
has the domain [0, (R-1)/2**j] x [0, (C-1)/2**j] and every stencil read clamps its index to that
level's edge. The data-dependent indices are clamped as the app clamps them: the lookup-table
index to 0 .. (K-1)*256 before subtracting 256*k, the pyramid level to 0 .. K-2 (so li + 1 stays
within 0 .. K-1).

Halide's x is NumPy's last axis: the image (3, R, C) is the buffer (C, R, 3). The Funcs keep the
app's names: x the row, y the column (innermost), k the intensity level (outermost).
"""

from ..local_laplacian import EPS, GRAY_WEIGHTS, J, K


def build(hl, inputs, params, schedule=None):
    img = hl.Buffer(inputs["img"])
    rows, cols = inputs["img"].shape[1:]
    f32 = hl.f32
    alpha, beta = f32(params["alpha"]), f32(params["beta"])
    y, x, k, c, i = (hl.Var(n) for n in ("y", "x", "k", "c", "i"))
    # last row / column of pyramid level j (level 0 is the image)
    rmax = [(rows - 1) // 2**j for j in range(J)]
    cmax = [(cols - 1) // 2**j for j in range(J)]

    def at(f, lead, row, col):
        return f[col, row, k] if lead else f[col, row]

    def define(f, lead, value):
        if lead:
            f[y, x, k] = value
        else:
            f[y, x] = value

    first_pass = {}  # (name, j) -> the x pass of that downsampling, for the schedule

    def downsample(f, j, lead, name):
        """Level j from level j-1 with the [1 3 3 1]/8 kernel, x then y, clamped at the edges."""
        rlast, clast = rmax[j - 1], cmax[j - 1]
        downx, downy = hl.Func(f"{name}_downx{j}"), hl.Func(f"{name}{j}")
        first_pass[name, j] = downx
        define(
            downx,
            lead,
            (
                at(f, lead, hl.max(2 * x - 1, 0), y)
                + f32(3.0) * (at(f, lead, 2 * x, y) + at(f, lead, hl.min(2 * x + 1, rlast), y))
                + at(f, lead, hl.min(2 * x + 2, rlast), y)
            )
            / f32(8.0),
        )
        define(
            downy,
            lead,
            (
                at(downx, lead, x, hl.max(2 * y - 1, 0))
                + f32(3.0)
                * (at(downx, lead, x, 2 * y) + at(downx, lead, x, hl.min(2 * y + 1, clast)))
                + at(downx, lead, x, hl.min(2 * y + 2, clast))
            )
            / f32(8.0),
        )
        return downy

    def upsample(f, j, lead, name):
        """Level j from level j+1 by bilinear interpolation, x then y."""
        upx, upy = hl.Func(f"{name}_upx{j}"), hl.Func(f"{name}_upy{j}")
        define(
            upx,
            lead,
            f32(0.25) * at(f, lead, hl.clamp(x // 2 - 1 + 2 * (x % 2), 0, rmax[j + 1]), y)
            + f32(0.75) * at(f, lead, x // 2, y),
        )
        define(
            upy,
            lead,
            f32(0.25) * at(upx, lead, x, hl.clamp(y // 2 - 1 + 2 * (y % 2), 0, cmax[j + 1]))
            + f32(0.75) * at(upx, lead, x, y // 2),
        )
        return upy

    # the remapping function as a lookup table, 256 entries per intensity level
    remap = hl.Func("remap")
    fx = hl.cast(hl.Float(32), i) / f32(256.0)
    remap[i] = alpha / f32(K - 1) * fx * hl.exp(-fx * fx / f32(2.0))

    gray = hl.Func("gray")
    gray[y, x] = (
        f32(GRAY_WEIGHTS[0]) * img[y, x, 0]
        + f32(GRAY_WEIGHTS[1]) * img[y, x, 1]
        + f32(GRAY_WEIGHTS[2]) * img[y, x, 2]
    )

    # the K processed images and their Gaussian pyramids
    level = hl.cast(hl.Float(32), k) * f32(1.0 / (K - 1))
    idx = hl.clamp(hl.cast(hl.Int(32), gray[y, x] * f32(K - 1) * f32(256.0)), 0, (K - 1) * 256)
    g_pyramid = [hl.Func("gpyr0")]
    g_pyramid[0][y, x, k] = beta * (gray[y, x] - level) + level + remap[idx - 256 * k]
    for j in range(1, J):
        g_pyramid.append(downsample(g_pyramid[j - 1], j, True, "gpyr"))

    # their Laplacian pyramids
    l_pyramid = [None] * J
    l_pyramid[J - 1] = g_pyramid[J - 1]
    for j in range(J - 2, -1, -1):
        up = upsample(g_pyramid[j + 1], j, True, "gpyr")
        l_pyramid[j] = hl.Func(f"lpyr{j}")
        l_pyramid[j][y, x, k] = g_pyramid[j][y, x, k] - up[y, x, k]

    # the Gaussian pyramid of the input gray image
    in_pyramid = [gray]
    for j in range(1, J):
        in_pyramid.append(downsample(in_pyramid[j - 1], j, False, "ingpyr"))

    # the output Laplacian pyramid: interpolate between the two processed pyramids that bracket
    # the input's value (a data-dependent index into the K dimension, clamped to 0 .. K-2)
    out_l_pyramid = []
    for j in range(J):
        lev = in_pyramid[j][y, x] * f32(K - 1)
        li = hl.clamp(hl.cast(hl.Int(32), lev), 0, K - 2)
        lf = lev - hl.cast(hl.Float(32), li)
        out = hl.Func(f"outlpyr{j}")
        out[y, x] = (f32(1.0) - lf) * l_pyramid[j][y, x, li] + lf * l_pyramid[j][y, x, li + 1]
        out_l_pyramid.append(out)

    # collapse it
    out_g_pyramid = [None] * J
    out_g_pyramid[J - 1] = out_l_pyramid[J - 1]
    for j in range(J - 2, -1, -1):
        up = upsample(out_g_pyramid[j + 1], j, False, "outgpyr")
        out_g_pyramid[j] = hl.Func(f"outgpyr{j}")
        out_g_pyramid[j][y, x] = up[y, x] + out_l_pyramid[j][y, x]

    # reintroduce colour
    colour = hl.Func("colour")
    colour[y, x, c] = hl.clamp(
        out_g_pyramid[0][y, x] * (img[y, x, c] + f32(EPS)) / (gray[y, x] + f32(EPS)),
        f32(0.0),
        f32(1.0),
    )
    colour.set_estimates([(0, cols), (0, rows), (0, 3)])
    if schedule is not None:
        # after Halide's apps/local_laplacian (CPU): levels 1-4 whole in strips, coarser whole,
        # output levels 0-4 slid along the output's parallel 64-row strips
        lanes = schedule.natural_vector_size(hl.Float(32))
        strip = hl.Var("strip")
        remap.compute_root()
        colour.reorder(c, y, x).split(x, strip, x, 64).parallel(strip).vectorize(y, lanes)
        gray.compute_root().parallel(x, 32).vectorize(y, lanes)
        for j in range(1, min(J, 5)):
            in_pyramid[j].compute_root().parallel(x, 32).vectorize(y, lanes)
            g_pyramid[j].compute_root().reorder_storage(y, k, x).reorder(k, x)
            g_pyramid[j].split(x, strip, x, 8).parallel(strip).vectorize(y, lanes)
            out_g_pyramid[j].store_at(colour, strip).compute_at(colour, x)
            out_g_pyramid[j].vectorize(y, lanes)
        level0 = g_pyramid[0].clone_in(first_pass["gpyr", 1])  # the copy level 1 reads
        level0.store_at(g_pyramid[1], strip).compute_at(g_pyramid[1], x).vectorize(y, lanes)
        out_g_pyramid[0].compute_at(colour, x).hoist_storage(colour, strip).vectorize(y, lanes)
        for j in range(5, J):
            in_pyramid[j].compute_root()
            g_pyramid[j].compute_root().parallel(k)
            out_g_pyramid[j].compute_root()
    return [colour], [hl.Buffer(hl.Float(32), [cols, rows, 3])]
