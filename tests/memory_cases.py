"""Pipelines that once corrupted memory or lost a zero's sign (found by random testing), with
their schedules and arguments: the regression tests run them plainly, in the checked build
and under the sanitizers (tests/sanitized_run.py)."""

import dataclasses
from dataclasses import dataclass, field

import numpy as np
from helpers import (
    channels_last,
    channels_last_arguments,
    conv_nchw,
    conv_nhwc,
    matmul,
    matmul_nt,
    offset_weighted_sum,
    pooling,
    row_reduction,
    weighted_means,
    window_sum,
)

import polyimage
from polyimage import (
    Case,
    Cast,
    Char,
    Clamp,
    Condition,
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
    Schedule,
    Select,
    Short,
    Sqrt,
    UChar,
    Variable,
    constant_exterior,
    mirror,
    mirror_interior,
    repeat_edge,
    wrap,
)
from polyimage.driver.lower import generate_c
from polyimage.driver.pipeline import Pipeline
from polyimage.jit.build import build
from polyimage.schedule.regions import Region, Regions


@dataclass
class MemoryCase:
    name: str
    outputs: list
    schedules: tuple
    arguments: dict
    machine: dict = field(default_factory=dict)  # Machine fields planned for instead of the host's


# inner tiles equal to the outer ones in x, smaller in c and y: an inner tile whose c range
# misses the first c tile used to read a 2-D live-out's empty box mapped through 2y - 2, whose
# low end fell below the outer tile's region (a write 4 bytes before a scratchpad); the others
# give inner sizes of every shape (dividing, not dividing, larger)
TWO_LEVEL_TILES = (
    "4x4x12 then 1x4x3",
    "1024x4x12 then 256x4x3",
    "3x5x7 then 1x5x2",
    "2x8x5 then 4x3x5",
)


def two_level_group() -> MemoryCase:
    R, C, K = Parameter(Int, "R"), Parameter(Int, "C"), Parameter(Int, "K")
    x, y, c = Variable(Int, "x"), Variable(Int, "y"), Variable(Int, "c")
    img = Image(Short, "img", [R, C])
    img3 = Image(UChar, "img3", [K, R, C])
    half_r, half_c = (R - 1) // 2, (C - 1) // 2
    s0 = Function(
        ([c, x, y], [Interval(Int, 0, K - 1), Interval(Int, 1, R - 1), Interval(Int, 2, C - 1)]),
        Int,
        "s0",
    )
    s0.defn = [
        Case(
            x < 4,
            Max(
                Cast(Float, Clamp(img3(c, x, y), 2, 32)) * 0.5,
                (
                    img3(c, x, Min(Max(y + 2, 0), C - 1))
                    - img3(K - 1 - c, x - 1, Clamp(y + 1, 0, C - 1))
                )
                + Cast(UChar, 3),
            ),
        ),
        y * -1,
    ]
    s1 = Function(
        ([c, x, y], [Interval(Int, 0, K - 1), Interval(Int, 2, R - 1), Interval(Int, 0, C - 1)]),
        Float,
        "s1",
    )
    s1.defn = [
        Case(
            y % 2 == 0,
            Min(
                s0(Clamp(c + 1, 0, K - 1), x, Min(Max(y + 1, 2), C - 1)),
                s0(c, Min(Max(x - 2, 1), R - 1), Min(Max(y - 2, 2), C - 1)) + 1,
            ),
        ),
        Case((y >= 2) & (y <= C - 1), Clamp(s0(K - 1 - c, x, y), 0, 0)),
        Select(
            (y - 2 >= 2) & (y - 2 <= C - 1),
            s0(Clamp(c + 1, 0, K - 1), Clamp(x + 2, 1, R - 1), y - 2),
            3,
        )
        + (
            (Cast(Short, 3) % Cast(UChar, x))
            % Select(
                Condition(x + y, ">=", -100),
                x * 3 - y,
                s0(Clamp(c + 1, 0, K - 1), x, Clamp(y - 1, 2, C - 1)),
            )
        ),
    ]
    s2 = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 2)]), UChar, "s2")
    s2.defn = [
        Cast(
            UChar,
            Select((y - 1 >= 0) & (y - 1 <= C - 1), img(Min(Max(x + 1, 0), R - 1), y - 1), 1)
            * img(Min(Max(x - 1, 0), R - 1), y + 1)
            * (x + y + Select((x >= 2) & (x <= R - 1), s1(K // 2, x, y), 1)),
        )
    ]
    s3 = Function(
        (
            [c, x, y],
            [Interval(Int, 0, K - 1), Interval(Int, 1, half_r), Interval(Int, 0, half_c - 1)],
        ),
        Short,
        "s3",
    )
    s3.defn = [
        Select((2 * x + 1 >= 0) & (2 * x + 1 <= R - 1), s2(2 * x + 1, Clamp(2 * y, 0, C - 2)), 1)
    ]
    s4 = Function(
        (
            [c, x, y],
            [Interval(Int, 0, K - 1), Interval(Int, 0, half_r - 1), Interval(Int, 1, half_c - 2)],
        ),
        Short,
        "s4",
    )
    s4.defn = [img(Clamp(2 * x - 2, 0, R - 1), Clamp(2 * y - 1, 0, C - 1))]
    s5 = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 2, half_c - 2)]), Int, "s5")
    s5.defn = [
        Case(
            (x + y < 4) | (y > half_c - 3),
            -Select(
                (2 * y - 2 >= 2) & (2 * y - 2 <= C - 1), s0(0, Clamp(x + 1, 1, R - 1), 2 * y - 2), 1
            ),
        ),
        Case(
            Condition(s4(K - 1, Clamp(x // 2 - 2, 0, half_r - 1), y - 1), "!=", 0)
            & (x + 2 >= 1)
            & (x + 2 <= R - 1),
            Sqrt(Cast(Float, s0(K - 1, x + 2, Clamp(2 * y + 2, 2, C - 1)))),
        ),
        s0(K - 1, Clamp(x, 1, R - 1), Clamp(2 * y, 2, C - 1)),
    ]
    s6 = Function(
        (
            [c, x, y],
            [Interval(Int, 0, K - 1), Interval(Int, 2, half_r), Interval(Int, 0, half_c - 1)],
        ),
        Float,
        "s6",
    )
    s6.defn = [
        Case(y > half_c - 2, y),
        Case(
            (x + y < 9) & (2 * x >= 0) & (2 * x <= R - 1) & (y >= 2) & (y <= half_c - 2),
            Select(
                Condition(s5(2 * x, Clamp(y, 2, half_c - 2)) - s3(c, x, y), "<", 2),
                Clamp(Cast(UChar, x), 7, 7),
                s3(c, Clamp(x + 1, 1, half_r), Min(Max(y - 2, 0), half_c - 1)) % s5(2 * x, y),
            ),
        ),
        s3(c, x, Clamp(y + 1, 0, half_c - 1))
        - Select(
            Condition(s3(c, x, y), "==", -7),
            y,
            s2(Min(Max(2 * x + 2, 0), R - 1), Clamp(2 * y, 0, C - 2)),
        )
        // 2,
    ]
    schedules = tuple(
        Schedule.parse(f"group 0: s0, s1, s4, s5, s2, s3 [{tiles}]\ngroup 1: s6 [64x64x64]")
        for tiles in TWO_LEVEL_TILES
    )
    rng = np.random.default_rng(0)
    arguments = dict(
        img=rng.integers(-300, 300, (64, 97)).astype(np.int16),
        img3=rng.integers(0, 255, (3, 64, 97)).astype(np.uint8),
    )
    return MemoryCase("two-level group", [s0, s1, s6], schedules, arguments)


def reduce_target_through_a_cast() -> MemoryCase:
    """A Reduce target that is data (a cast of another stage's value) until inlining makes it
    `Cast(Int, j) // 3`: it must stay clamped to [0, 0] (the interpreter's 38, not 2)."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y, i, j = (Variable(Int, n) for n in "xyij")
    img = Image(Short, "img", [R, C])
    s2 = Function(([x, y], [Interval(Int, 0, R - 3), Interval(Int, 1, C - 2)]), Int, "s2")
    s2.defn = [y]
    s4 = Reduction(
        ([x], [Interval(Int, 0, 0)]),
        ([i, j], [Interval(Int, 0, R - 3), Interval(Int, 1, C - 2)]),
        Float,
        "s4",
    )
    s4.defn = [Reduce(s4(Cast(Int, s2(i, j)) // 3), 1, Op.Sum)]
    out = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Float, "out")
    out.defn = [img(x, y) + s4(0)]
    arguments = dict(img=np.zeros((3, 40), np.int16))
    return MemoryCase("Reduce target through a cast", [s4, out], ("naive", "auto"), arguments)


def negative_zero_casts() -> MemoryCase:
    """Float -> integer -> float casts: an integer zero has no sign, so -0.3 gives +0.0, and a
    division by it +inf (gcc folds (float)(int)v into truncf(v), which keeps -0.0)."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    A, B = Image(Float, "A", [R, C]), Image(Float, "B", [R, C])
    dom = ([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)])
    as_float = Function(dom, Float, "as_float")
    as_float.defn = [Cast(Float, Cast(Char, B(x, y)))]
    through_int = Function(dom, Float, "through_int")
    through_int.defn = [Cast(Float, Cast(Int, B(x, y)))]
    quotient = Function(dom, Float, "quotient")
    quotient.defn = [A(x, y) / Cast(Char, B(x, y))]
    # converted by the stage's type, through a Select's arms and through Cases
    implicit = Function(dom, Float, "implicit")
    implicit.defn = [Cast(Char, B(x, y))]
    selected = Function(dom, Float, "selected")
    selected.defn = [Select(B(x, y) > -0.5, Cast(Int, B(x, y)), Cast(Short, B(x, y) * 2.0))]
    cased = Function(dom, Float, "cased")
    cased.defn = [Case(y > 1, Cast(Int, B(x, y))), 1.0 / Cast(Short, B(x, y))]
    arguments = dict(
        A=np.ones((2, 4), np.float32),
        B=np.array([[-0.3, -0.0, 0.3, -0.9], [-0.9, -0.2, -0.0, 0.4]], np.float32),
    )
    outputs = [as_float, through_int, quotient, implicit, selected, cased]
    return MemoryCase("negative zero", outputs, ("naive", "auto"), arguments)


def guarded_read_with_a_clamped_index() -> MemoryCase:
    """A Select guards a read whose row index `x - 1` leaves the domain at x = 0 while its
    channel is data (clamped): the stage must not count as branch-free (both Select arms
    evaluated), which once read row -1 (found by the sanitizer run, seed 37)."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [3, R, C])
    pick = Image(UChar, "pick", [R, C])
    dom = ([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)])
    edge = Function(dom, Float, "edge")
    edge.defn = [Select(x >= 1, img(pick(x, y) % 3, x - 1, y) - img(0, x, y), img(2, x, y) * 0.5)]
    rng = np.random.default_rng(1)
    arguments = dict(
        img=rng.random((3, 9, 21), np.float32),
        pick=rng.integers(0, 255, (9, 21)).astype(np.uint8),
    )
    return MemoryCase("guarded read with a clamped index", [edge], ("naive",), arguments)


def _every_border(shape) -> MemoryCase:
    """Every border mode (dsl.borders) of an image and of a stage over a shifted domain, read
    up to 3 points out, fused under a tiling and not: the folds' head and tail loops and the
    interiors between them stay inside both buffers at any size."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R, C])
    inner = Function(([x, y], [Interval(Int, 1, R - 1), Interval(Int, 0, C - 1)]), Float, "inner")
    inner.defn = [img(x, y) - img(x - 1, y) * 0.5]
    out = Function.like(img, Float, "out", variables=[x, y])
    modes = (repeat_edge, mirror, mirror_interior, wrap, lambda f: constant_exterior(f, 2.0))
    out.defn = [
        sum(
            make(source)(x + d, y - 2 * d)
            for source in (img, inner)
            for make in modes
            for d in (-3, 1, 3)
        )
    ]
    arguments = {"img": np.random.default_rng(2).random(shape, np.float32)}
    schedules = ("naive", "auto", "group 0: inner, out [2x5]")
    return MemoryCase(f"every border at {shape}", [out], schedules, arguments)


def every_border_of_one_point() -> MemoryCase:
    return _every_border((2, 1))  # `inner` has one row


def every_border_of_odd_sizes() -> MemoryCase:
    return _every_border((7, 19))


def reduction_reading_its_group() -> MemoryCase:
    """A Reduction tiled with the producers it reads over its search offsets (non-local means
    in small, tests/helpers.py): their scratchpads span the footprint of a tile's reduction
    points, under one level, sliding inner tiles that do not divide the outer ones, and the
    Reduction as a live-out whose owned part is copied out."""
    rng = np.random.default_rng(2)
    schedules = (
        "group 0: diff, patch, acc, out [3x5x7]",
        "group 0: diff, patch, acc, out [3x8x16 then 3x3x16]",
        "group 0: diff, patch, acc [4x9x12 then 4x4x12]\ngroup 1: out [3x4x4]",
        "auto",
    )
    arguments = dict(img=rng.random((3, 17, 25), np.float32))
    return MemoryCase("Reduction reading its group", offset_weighted_sum(), schedules, arguments)


def channels_last_tiles() -> MemoryCase:
    """Tiles that span a small constant innermost dimension whole run a copy of the nest with
    its bounds as constants (codegen.jam.specialized_nest); tiles that split it, the other."""
    schedules = (
        "group 0: blur, mixed, out [4x8x5]",
        "group 0: blur, mixed, out [3x4x2]",
        "group 0: blur, mixed, out [8x16x8 then 2x4x5]",
        "auto",
    )
    return MemoryCase(
        "channels last", [channels_last()], schedules, channels_last_arguments(6, 11, seed=3)
    )


def channels_together() -> MemoryCase:
    """Tiles that span a few constant channels that share a read compute them in one loop
    (codegen.jam); tiles that split them, one channel at a time."""
    rng = np.random.default_rng(4)
    schedules = (
        "group 0: weights, sums [4x4x16]\ngroup 1: out [untiled]",
        "group 0: weights, sums [3x5x9]\ngroup 1: out [untiled]",
        "group 0: weights, sums, out [4x3x40]",
        "auto",
    )
    arguments = dict(img=rng.random((3, 9, 23), np.float32))
    return MemoryCase("channels together", weighted_means(), schedules, arguments)


def register_blocks() -> MemoryCase:
    """A matrix product run by register blocks (schedule.blocking), planned for the default
    estimates and 64-byte vectors whatever the host (its rows and its columns' slices then
    packed: codegen.packing), called at odd sizes: full and partial blocks, a second panel of
    the reduction (300 values of k) and rows that end mid-block."""
    rng = np.random.default_rng(5)
    arguments = dict(A=rng.random((13, 300), np.float32), B=rng.random((300, 70), np.float32))
    return MemoryCase(
        "register blocks", [matmul()], ("naive", "auto"), arguments, {"vector_bytes": 64}
    )


def register_blocks_of_channels() -> MemoryCase:
    """A convolution in NCHW run by register blocks of output channels: 33 channels (a
    partial block), image rows of 39 pixels (a partial block of columns)."""
    rng = np.random.default_rng(6)
    arguments = dict(
        inp=rng.random((2, 3, 9, 41), np.float32), w=rng.random((33, 3, 3, 3), np.float32)
    )
    return MemoryCase("register blocks of channels", [conv_nchw()], ("naive", "auto"), arguments)


def _conv_relu(channels, name: str) -> MemoryCase:
    """A conv layer in NHWC with `channels` output channels whose ReLU the tasks of its
    register blocks compute (schedule.blocking.folds_into_tasks): 17 channels make a
    partial block of columns, rows of 31 pixels blocks of rows and a tail."""
    conv = conv_nhwc(channels)
    n, y, x, o = conv.variables
    bias = Image(Float, "bias", [conv.intervals[3].ub + 1])
    relu = Function((list(conv.variables), list(conv.intervals)), Float, "relu")
    relu.defn = [Max(conv(n, y, x, o) + bias(o), 0.0)]
    rng = np.random.default_rng(8)
    arguments = dict(
        inp=rng.random((2, 11, 33, 3), np.float32),
        w=rng.random((3, 3, 3, 17), np.float32),
        bias=rng.random(17, np.float32) - 0.5,
    )
    return MemoryCase(name, [relu], ("naive", "auto"), arguments)


def register_blocks_with_their_relu() -> MemoryCase:
    """The conv's cells kept in a buffer of each thread's (17 channels, a task's cells few),
    the ReLU computed from each block's accumulators as it ends."""
    return _conv_relu(17, "register blocks with their relu")


def register_blocks_with_their_relu_in_a_buffer() -> MemoryCase:
    """The conv's cells in a full buffer (its channels a parameter, planned for many), the
    ReLU computed from them by each task."""
    return _conv_relu(None, "register blocks with their relu, in a buffer")


def lines_of_a_row_scan() -> MemoryCase:
    """A scan along the contiguous dimension runs a few rows side by side (codegen.scans):
    11 rows make two blocks of lines and three rows left to run alone."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R, C])
    box = ([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)])
    smooth = Function(box, Float, "smooth")
    smooth.defn = [Case(y == 0, img(x, y)), img(x, y) * 0.25 + smooth(x, y - 1) * 0.75]
    arguments = dict(img=np.random.default_rng(7).random((11, 37), np.float32))
    return MemoryCase("lines of a row scan", [smooth], ("naive", "auto"), arguments)


def staged_scatter() -> MemoryCase:
    """A scatter staged 64 points at a time (codegen.reduction_loops.staged_scatter) into
    cells of 4 x 4 pixels by value bins, whose indices leave the grid (clamped into it): 135
    columns make two strips and a tail, untiled and per tile of its consumer, by residues."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    u, v, b, x, y = (Variable(Int, n) for n in ("u", "v", "b", "x", "y"))
    img = Image(Float, "img", [R, C])
    cells = [Interval(Int, 0, 15), Interval(Int, 0, (R - 1) / 4), Interval(Int, 0, (C - 1) / 4)]
    pixels = [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]
    h = Reduction(([b, x, y], cells), ([u, v], pixels), Float, "h")
    at = img(u, v)
    h.defn = [Reduce(h(Cast(Int, at * 15.0 + 0.5), u / 4, v / 4), at * 2.0 - 1.0, Op.Sum)]
    out = Function(([b, x, y], cells), Float, "out")
    out.defn = [h(b, x, y) * 0.5 - 1.0]
    schedules = ("naive", Schedule.parse("group 0: h, out [4x2x3]"))
    arguments = dict(img=np.random.default_rng(5).uniform(-0.5, 1.5, (9, 135)).astype(np.float32))
    return MemoryCase("staged scatter", [out], schedules, arguments)


def transposed_product() -> MemoryCase:
    """A product with a transposed operand (`A(i, k) * B(j, k)`), B copied per block of
    columns and panel for the register blocks (schedule.blocking.transposed_read), planned
    for 64-byte vectors: 70 columns (full blocks, the rest in place), a second panel of k."""
    rng = np.random.default_rng(12)
    arguments = dict(A=rng.random((13, 300), np.float32), B=rng.random((70, 300), np.float32))
    return MemoryCase(
        "transposed product", [matmul_nt()], ("auto",), arguments, {"vector_bytes": 64}
    )


def filter_in_lanes() -> MemoryCase:
    """A 1-D filter whose cells only its contiguous variable owns (schedule.reductions
    .vector_owner): blocks of 1024 samples, each under `omp simd` with its taps inside, 2500
    samples (blocks of 1024 and a partial one)."""
    N = 2500
    x, h = Image(Float, "x", [N + 6]), Image(Float, "h", [7])
    t, k = Variable(Int, "t"), Variable(Int, "k")
    y = Reduction(([t], [Interval(Int, 0, N - 1)]), ([k], [Interval(Int, 0, 6)]), Float, "y")
    y.defn = [Reduce(y(t), x(t + k) * h(k), Op.Sum)]
    rng = np.random.default_rng(13)
    arguments = dict(x=rng.random(2506, np.float32), h=rng.random(7, np.float32))
    return MemoryCase("filter in lanes", [y], (Schedule.parse("group 0: y [untiled]"),), arguments)


def window_sums() -> MemoryCase:
    """A 3x3 window summed as a Reduction by register blocks whose rows each read their own
    vectors (schedule.blocking: rows_read_own), its scaling computed by the tasks from a
    buffer of each thread's: 13 rows (blocks and a tail), 45 columns (full and narrower
    blocks, cells in place), planned for 64-byte vectors whatever the host."""
    rng = np.random.default_rng(9)
    arguments = dict(img=rng.random((15, 47), np.float32), wt=rng.random((3, 3), np.float32) - 0.5)
    outputs = [window_sum(3, scale=0.5)]
    return MemoryCase("window sums", outputs, ("naive", "auto"), arguments, {"vector_bytes": 64})


def window_sums_of_constant_rows() -> MemoryCase:
    """The same with rows a step apart known at compile time (37 columns): blocks of more
    rows, each row's reads at a constant offset from the first row's."""
    rng = np.random.default_rng(10)
    arguments = dict(img=rng.random((22, 41), np.float32), wt=rng.random((5, 5), np.float32))
    outputs = [window_sum(5, cols=37, scale=0.25)]
    return MemoryCase(
        "window sums of constant rows", outputs, ("auto",), arguments, {"vector_bytes": 64}
    )


def pooling_in_lanes() -> MemoryCase:
    """Max pooling of stride 2 whose columns run in lanes (schedule.reductions.vector_owner)
    inside the rows' blocks, reading every other element: 9 rows by 37 columns, each cell
    in a variable beside its NaN flag, planned for 64-byte vectors whatever the host."""
    rng = np.random.default_rng(14)
    arguments = dict(img=rng.random((2 * 9 + 2, 2 * 37 + 2), np.float32))
    return MemoryCase("pooling in lanes", [pooling(3)], ("auto",), arguments, {"vector_bytes": 64})


def row_sums_side_by_side() -> MemoryCase:
    """Float row sums in order, their rows' chains side by side (schedule.reductions
    .jammed_chains): 21 rows (two sets of 8 and 5 alone), 37 columns; by owner blocks, and
    per tile of 13 rows (a set of 8 and 5 alone in each)."""
    rng = np.random.default_rng(15)
    arguments = dict(img=rng.random((21, 37), np.float32), w=rng.random(37, np.float32))
    tiled = Schedule.parse("group 0: s [13]")
    return MemoryCase("row sums side by side", [row_reduction()], ("auto", tiled), arguments)


CASES = (
    two_level_group,
    reduce_target_through_a_cast,
    negative_zero_casts,
    guarded_read_with_a_clamped_index,
    every_border_of_one_point,
    every_border_of_odd_sizes,
    reduction_reading_its_group,
    channels_last_tiles,
    channels_together,
    register_blocks,
    register_blocks_of_channels,
    register_blocks_with_their_relu,
    register_blocks_with_their_relu_in_a_buffer,
    lines_of_a_row_scan,
    staged_scatter,
    window_sums,
    window_sums_of_constant_rows,
    transposed_product,
    filter_in_lanes,
    pooling_in_lanes,
    row_sums_side_by_side,
)


def short_scratchpad(check=False):
    """(pipeline, arguments) of a blur pair tiled as one group whose producer's scratchpad
    region is one column short at its high end: a compiler bug made on purpose, which the
    checked build and AddressSanitizer must each report (its consumer reads that column)."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R, C])
    bx = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Float, "bx")
    bx.defn = [img(x, y) * 2.0]
    by = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 1, C - 2)]), Float, "by")
    by.defn = [bx(x, y - 1) + bx(x, y) + bx(x, y + 1)]
    schedule = Schedule.parse("group 0: bx, by [4x8]")
    pipe = polyimage.compile([by], schedule=schedule, inline=False, check=check)
    plan = pipe.group_plans[0]
    region = plan.regions["bx"]
    (lo0, hi0), (lo1, hi1) = region.bounds
    shorter = Region(((lo0, hi0), (lo1, hi1 - 1)), region.symbols)
    regions = Regions(plan.regions.tile_vars, {**plan.regions.by_stage, "bx": shorter})
    plan = dataclasses.replace(plan, regions=regions)
    compiled = dataclasses.replace(pipe.compiled, group_plans=(plan,))
    cmodule = generate_c(
        compiled.request, compiled.stage_graph, (plan,), compiled.branch_free, {}, frozenset()
    )
    compiled = dataclasses.replace(compiled, cmodule=cmodule)
    pipe = Pipeline(compiled, build(cmodule, compiled.options))
    arguments = dict(img=np.arange(12 * 19, dtype=np.float32).reshape(12, 19))
    return pipe, arguments
