"""Unsharp mask in Halide, the same algorithm as apps/unsharp_mask.py."""

from ..unsharp_mask import BORDER, KERNEL


def build(hl, inputs, params, schedule=None):
    img = hl.Buffer(inputs["img"])
    cols, rows = img.dim(0).extent() - 2 * BORDER, img.dim(1).extent() - 2 * BORDER
    weight, threshold = hl.f32(params["weight"]), hl.f32(params["threshold"])
    y, x, c = hl.Var("y"), hl.Var("x"), hl.Var("c")
    blurx, blury, sharpen, mask = (hl.Func(n) for n in ("blurx", "blury", "sharpen", "mask"))
    blurx[y, x, c] = sum(hl.f32(k) * img[y, x + i, c] for i, k in enumerate(KERNEL)) * hl.f32(
        1.0 / 16
    )
    blury[y, x, c] = sum(hl.f32(k) * blurx[y + i, x, c] for i, k in enumerate(KERNEL)) * hl.f32(
        1.0 / 16
    )
    inner = img[y + BORDER, x + BORDER, c]
    sharpen[y, x, c] = inner * (1 + weight) - blury[y, x, c] * weight
    mask[y, x, c] = hl.select(hl.abs(inner - blury[y, x, c]) < threshold, inner, sharpen[y, x, c])
    mask.set_estimates([(0, cols), (0, rows), (0, 3)])
    if schedule is not None:
        # after Halide's apps/unsharp (CPU): parallel 32-row strips, row blur slid, other per row
        lanes = schedule.natural_vector_size(hl.Float(32))
        strip, row = hl.Var("strip"), hl.Var("row")
        mask.split(x, strip, row, 32).reorder(y, c, row, strip).parallel(strip)
        mask.vectorize(y, lanes)
        blurx.store_at(mask, strip).compute_at(mask, row).vectorize(y, lanes)
        blury.store_at(mask, strip).compute_at(mask, row).vectorize(y, lanes)
    return [mask], [hl.Buffer(hl.Float(32), [cols, rows, 3])]
