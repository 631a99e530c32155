"""A pipeline of every pixel-type operation (Half stages and images, saturating casts and
arithmetic, absd, widening_mul, the halving adds) over 8-bit, 16-bit and Half images, with
clamped stencil reads so that `auto` fuses and tiles it (Half and 8-bit scratchpads): the
pixel-type tests and the sanitizer run (tests/sanitized_run.py) compile it."""

import numpy as np
from helpers import box, grid

from polyimage import (
    Cast,
    Char,
    Clamp,
    Float,
    Function,
    Half,
    Image,
    Short,
    UChar,
    UShort,
    absd,
    halving_add,
    rounding_halving_add,
    saturating_add,
    saturating_cast,
    saturating_sub,
    widening_mul,
)

# Half values a test image mixes in: NaN, infinities, zeros of both signs, subnormals, the
# largest finite Half and values that overflow once scaled
HALF_SPECIALS = np.array(
    [np.nan, np.inf, -np.inf, 0.0, -0.0, 6e-8, -3e-6, 6.1e-5, 65504.0, -65504.0, 30000.0, 1.0],
    np.float16,
)


def pixel_pipeline():
    """(outputs, a function of (rng, rows, cols) giving the arguments)."""
    R, C, x, y = grid()
    dom = (([x, y]), box(R, C))
    a, b = Image(UChar, "a", [R, C]), Image(UChar, "b", [R, C])
    s, h = Image(Short, "s", [R, C]), Image(Half, "h", [R, C])
    up, down = Clamp(x - 1, 0, R - 1), Clamp(x + 1, 0, R - 1)
    left, right = Clamp(y - 1, 0, C - 1), Clamp(y + 1, 0, C - 1)

    def stage(typ, name, value):
        f = Function(dom, typ, name)
        f.defn = [value]
        return f

    blur = stage(UChar, "blur", rounding_halving_add(halving_add(a(up, y), a(down, y)), a(x, y)))
    sharp = stage(UChar, "sharp", saturating_add(a(x, y), saturating_sub(a(x, y), blur(x, y))))
    diff = stage(UChar, "diff", absd(sharp(x, left), b(x, right)))
    wide = stage(UShort, "wide", widening_mul(diff(x, y), b(x, y)))
    sdiff = stage(UShort, "sdiff", absd(s(x, y), s(x, left)))
    narrow = stage(Char, "narrow", saturating_cast(Char, saturating_sub(s(x, y), 7)))
    mixed = h(x, y) * 0.5 + h(up, y) * 0.25 + Cast(Float, diff(x, y))
    smooth = stage(Half, "smooth", mixed)
    edge = stage(Half, "edge", smooth(x, left) - smooth(x, right) * 2.0)
    back = stage(UChar, "back", saturating_cast(UChar, edge(x, y) * 4.0))
    outputs = [sharp, diff, wide, sdiff, narrow, edge, back]

    def arguments(rng, rows, cols):
        halves = rng.normal(0, 300, (rows, cols)).astype(np.float16)
        picks = rng.random((rows, cols)) < 0.2
        halves[picks] = rng.choice(HALF_SPECIALS, int(picks.sum()))
        return dict(
            a=rng.integers(0, 256, (rows, cols), dtype=np.uint8),
            b=rng.integers(0, 256, (rows, cols), dtype=np.uint8),
            s=rng.integers(-32768, 32768, (rows, cols), dtype=np.int16),
            h=halves,
        )

    return outputs, arguments
