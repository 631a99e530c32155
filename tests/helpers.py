"""Helpers shared by several test files: paths, child-process environments, random data and
NumPy references for the semantics tests, small pipelines and brute-force footprints."""

import dataclasses
import itertools
import math
import os
import shutil
from pathlib import Path

import islpy as isl
import numpy as np
import pytest

from polyimage import (
    Case,
    Char,
    Double,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Long,
    Min,
    Op,
    Parameter,
    Reduce,
    Reduction,
    Short,
    UChar,
    UInt,
    ULong,
    UShort,
    Variable,
    interpret,
)
from polyimage.algebra.evaluate import Evaluator, subset
from polyimage.config import Options
from polyimage.dsl import expr as E
from polyimage.grouping import Machine
from polyimage.interp.interpreter import _case_masks

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "images"

# a fixed machine for cost-model tests, so that they do not depend on the host's caches
MACHINE = Machine(l1_bytes=48 * 1024, l2_bytes=1024 * 1024, cores=2)


def pinned_options(**fields) -> Options:
    """Options whose cost model plans for MACHINE (with `fields` changed), every field fixed,
    the vector width and op cost too: for tests that assert on what `auto` chooses, which
    would otherwise depend on the host's caches, cores and target."""
    machine = {**dataclasses.asdict(MACHINE), **fields}
    return dataclasses.replace(Options.from_env(), machine=machine)


def needs_tool(tool: str, package: str) -> None:
    """Skip the test unless `tool` is on the PATH (Debian's `package` has it)."""
    if shutil.which(tool) is None:
        pytest.skip(f"needs {tool}: apt-get install {package}")


def child_env(cache_dir, **extra) -> dict:
    """The environment of a child Python process: this checkout importable, its own cache
    directory, caching on, and `extra` variables set."""
    env = dict(os.environ, **extra)
    env.pop("POLYIMAGE_NO_CACHE", None)
    env["POLYIMAGE_CACHE_DIR"] = str(cache_dir)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def signature(tree):
    """The nodes of `tree` (kind, type, constant, operator, function, stage, name) in order."""
    return [
        (
            type(n).__name__,
            n.typ,
            getattr(n, "value", None),
            getattr(n, "op", None),
            getattr(n, "fn", None),
            getattr(getattr(n, "func", None), "name", None),
            getattr(n, "name", None),
        )
        for n in E.walk(tree)
    ]


# -- the semantics tests: types, data and hand-written references -----------------------------

# The semantics tests compare compiled C, the interpreter and a NumPy reference written by hand
# (oracle.run_both). Sizes are odd on purpose (13x17, 67x93, one row, one column). Pipelines whose
# C text is the same are built once and loaded from the cache afterwards, so data is parametrized
# per type, not per value.
INT_TYPES = [Char, UChar, Short, UShort, Int, UInt, Long, ULong]
FLOAT_TYPES = [Float, Double]
SHAPES = [(13, 17), (67, 93), (1, 17), (13, 1), (1, 1)]
SHAPE_IDS = ["x".join(map(str, s)) for s in SHAPES]

IGNORE = dict(all="ignore")  # np.errstate: overflow, NaN and division by zero are meant


def grid():
    """Parameters R, C and variables x, y of a 2-D stage over [0, R-1] x [0, C-1]."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    return R, C, x, y


def box(R, C):
    """The intervals [0, R-1] x [0, C-1]."""
    return [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]


def shifted(a, dx, dy):
    """a[clip(i + dx), clip(j + dy)]: a shifted read clamped to the array (edge padding)."""
    i = np.clip(np.arange(a.shape[0]) + dx, 0, a.shape[0] - 1)
    j = np.clip(np.arange(a.shape[1]) + dy, 0, a.shape[1] - 1)
    return a[i][:, j]


def random_values(rng, shape, typ, lo=None, hi=None):
    """Uniform values of `typ` in [lo, hi] (default: [-1, 1] for floats, the whole range for
    integers)."""
    dt = typ.dtype
    if dt.kind == "f":
        lo = -1.0 if lo is None else lo
        hi = 1.0 if hi is None else hi
        return rng.uniform(lo, hi, size=shape).astype(dt)
    info = np.iinfo(dt)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return rng.integers(lo, hi, size=shape, dtype=dt, endpoint=True)


def wrap(value: int, dtype) -> int:
    """Python integer reduced modulo 2**bits into the range of an integer dtype."""
    info = np.iinfo(dtype)
    span = 1 << info.bits
    value = (value - info.min) % span + info.min
    return value


def interesting_ints(dtype):
    """Small values, the extremes and their neighbours, that `dtype` holds."""
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    values = [0, 1, 2, 3, 7, 100, hi - 1, hi]
    if lo < 0:
        values += [lo, lo + 1, -1, -2, -3, -7, -100]
    return sorted({v for v in values if lo <= v <= hi})


def saturate(values, dtype):
    """Hand-written reference: truncate toward zero with exact Python integers, saturate,
    NaN -> 0."""
    info = np.iinfo(dtype)
    out = []
    for v in values:
        v = float(v)
        if math.isnan(v):
            out.append(0)
        elif math.isinf(v):
            out.append(int(info.max) if v > 0 else int(info.min))
        else:
            out.append(min(max(math.trunc(v), int(info.min)), int(info.max)))
    return np.array(out, dtype)


# -- small pipelines and brute-force footprints (footprints and regions) ----------------------


def guarded_blur_chain():
    """Two 2-D blurs with reads 2 apart and an output whose first Case covers x < 6 only."""
    R, C, x, y = grid()
    img = Image(Float, "img", [R + 4, C + 4])
    bx = Function(([x, y], [Interval(Int, 2, R + 1), Interval(Int, 0, C + 3)]), Float, "bx")
    bx.defn = [img(x - 2, y) + img(x, y) + img(x + 2, y)]
    by = Function(([x, y], [Interval(Int, 2, R + 1), Interval(Int, 2, C + 1)]), Float, "by")
    by.defn = [bx(x, y - 2) + bx(x, y + 1) + bx(x, y + 2)]
    out = Function(([x, y], [Interval(Int, 2, R + 1), Interval(Int, 2, C + 1)]), Float, "out")
    out.defn = [Case(x < 6, by(x, y) * 2), by(x, y) - bx(x, y)]
    return [out]


def uncovered_read():
    """[g] where g reads f at points no Case of f defines: an UncoveredReadWarning on compile."""
    R, x = Parameter(Int, "R"), Variable(Int, "x")
    img = Image(Float, "img", [R])
    f = Function(([x], [Interval(Int, 0, R - 1)]), Float, "f")
    f.defn = [Case(x < 3, img(x) + 1)]
    g = Function(([x], [Interval(Int, 0, R - 1)]), Float, "g")
    g.defn = [f(x) * 2.0]
    return [g]


def sampling_pyramid(misaligned=False):
    """1-D: down-sample twice, then up-sample; `misaligned` also reads `down` at (x+1)/2."""
    R, x = Parameter(Int, "R"), Variable(Int, "x")
    img = Image(Float, "img", [R])
    down = Function(([x], [Interval(Int, 0, (R - 2) / 2)]), Float, "down")
    down.defn = [img(2 * x) + img(2 * x + 1)]
    down2 = Function(([x], [Interval(Int, 0, (R - 4) / 4)]), Float, "down2")
    down2.defn = [down(2 * x) + down(2 * x + 1)]
    up = Function(([x], [Interval(Int, 0, 2 * ((R - 4) / 4) + 1)]), Float, "up")
    up.defn = [down2(x / 2) + (down((x + 1) / 2) if misaligned else down(x))]
    return [up]


def offset_weighted_sum(offsets_first=False):
    """Non-local means in small (apps/nl_means): `diff` per search offset (i, j) and pixel,
    `patch` its sum over a cross with a halo along x and y, then a Reduction `acc` over the
    pixels (u, v), the offsets and the channels ch (unrolled) that reads `patch` at (i, j, u,
    v) and the image at (u + i, v + j): channels 0-2 weighted colours, 3 the weights; `out`
    divides. `offsets_first` puts i, j before u, v in the reduction domain."""
    R, C, x, y = grid()
    c, i, j, u, v, ch = (Variable(Int, n) for n in ("c", "i", "j", "u", "v", "ch"))
    img = Image(Float, "img", [3, R + 4, C + 4])
    offset = Interval(Int, -1, 1)
    wide = [Interval(Int, 1, R + 2), Interval(Int, 1, C + 2)]
    inner = [Interval(Int, 2, R + 1), Interval(Int, 2, C + 1)]
    diff = Function(([i, j, x, y], [offset, offset, *wide]), Float, "diff")
    diff.defn = [(img(0, x, y) - img(0, x + i, y + j)) * (img(1, x, y) - img(1, x + i, y + j))]
    patch = Function(([i, j, x, y], [offset, offset, *inner]), Float, "patch")
    patch.defn = [
        1.0 / (1.0 + diff(i, j, x - 1, y) + diff(i, j, x, y) + diff(i, j, x + 1, y) * 0.5)
        + diff(i, j, x, y + 1)
    ]
    pixels, offsets = [(u, inner[0]), (v, inner[1])], [(i, offset), (j, offset)]
    order = offsets + pixels if offsets_first else pixels + offsets
    order.append((ch, Interval(Int, 0, 3)))
    acc = Reduction(
        ([c, x, y], [Interval(Int, 0, 3), *inner]),
        ([r for r, _ in order], [iv for _, iv in order]),
        Float,
        "acc",
    )
    weight = patch(i, j, u, v)
    acc.defn = [
        Case(ch == 3, Reduce(acc(ch, u, v), weight, Op.Sum)),
        Case(ch < 3, Reduce(acc(ch, u, v), weight * img(Min(ch, 2), u + i, v + j), Op.Sum)),
    ]
    acc.default = 0.25
    out = Function(([c, x, y], [Interval(Int, 0, 2), *inner]), Float, "out")
    out.defn = [acc(c, x, y) / acc(3, x, y)]
    return [out]


def channel_stencil():
    """A 3-channel stencil reading the next channel through (c + 1) % 3."""
    R, C, x, y = grid()
    c = Variable(Int, "c")
    img = Image(Float, "img", [3, R, C + 2])
    f = Function(
        ([c, x, y], [Interval(Int, 0, 2), Interval(Int, 0, R - 1), Interval(Int, 1, C)]), Float, "f"
    )
    f.defn = [img(c, x, y - 1) + img((c + 1) % 3, x, y + 1)]
    g = Function(
        ([c, x, y], [Interval(Int, 0, 2), Interval(Int, 1, R - 2), Interval(Int, 1, C)]), Float, "g"
    )
    g.defn = [f(c, x - 1, y) + f(c, x + 1, y)]
    return [g]


def brute_force(graph, group, liveouts, tile_sizes, params, tile):
    """{stage: set of points} one tile needs, by evaluating every index of every reference."""
    evaluate = Evaluator({}, {}, params)
    needed = {name: set() for name in [s.name for s in graph.stages]}
    for name in liveouts:
        func = graph.stage(name).func
        ranges = []
        for t, o, iv in zip(tile_sizes, tile, func.intervals):
            lb = evaluate(iv.lb, {}, 1).item()
            ub = evaluate(iv.ub, {}, 1).item()
            ranges.append(range(max(lb, lb + t * o), min(ub, lb + t * o + t - 1) + 1))
        needed[name] |= set(itertools.product(*ranges))
    order = [s.name for s in graph.stages if s.name in group]
    for name in reversed(order):
        func = graph.stage(name).func
        if not needed[name]:
            continue
        pts = np.array(sorted(needed[name]))
        points = {v: pts[:, d].astype(np.int32) for d, v in enumerate(func.variables)}
        for case, chosen in _case_masks(func.defn, evaluate, points):
            sub = subset(points, chosen)
            for ref in E.references(case.value):
                idx = [
                    np.broadcast_to(evaluate(a, sub, len(chosen)), (len(chosen),)) for a in ref.args
                ]
                needed[ref.func.name] |= set(zip(*(i.tolist() for i in idx)))
    return needed


def isl_points(isl_map, point):
    """The set of points (tuples) an isl map sends the input point `point` to."""
    fixed = isl_map
    for d, o in enumerate(point):
        fixed = fixed.fix_val(isl.dim_type.in_, d, isl.Val.int_from_si(fixed.get_ctx(), o))
    found = set()
    fixed.range().foreach_point(
        lambda p: found.add(
            tuple(
                p.get_coordinate_val(isl.dim_type.set, d).to_python()
                for d in range(fixed.dim(isl.dim_type.out))
            )
        )
    )
    return found


def assert_exact_on_threads(pipe, outputs, arguments, threads=(1, 2, 3)):
    """`pipe` gives the interpreter's result for `outputs`, bit for bit, on every thread
    count in `threads`."""
    want = interpret(outputs, **arguments)
    for count in threads:
        got = pipe(threads=count, **arguments)
        np.testing.assert_array_equal(got, want, err_msg=f"{count} threads")


def no_openmp_compiler(folder) -> Path:
    """A compiler that has no OpenMP: gcc behind a script refusing -fopenmp (as Apple's
    clang does)."""
    return refusing_compiler(folder, "no-openmp-cc", "-fopenmp*")


def refusing_compiler(folder, name: str, pattern: str) -> Path:
    """gcc behind a script named `name` that refuses every argument matching the shell
    `pattern`, as a compiler without that option does."""
    wrapper = Path(folder) / name
    wrapper.write_text(REFUSING_CC.format(name=name, pattern=pattern))
    wrapper.chmod(0o755)
    return wrapper


REFUSING_CC = """\
#!/bin/sh
for arg in "$@"; do
    case "$arg" in {pattern}) echo "{name}: unsupported option '$arg'" >&2; exit 1;; esac
done
exec gcc "$@"
"""


def stage_trees(pipe, name) -> list:
    """The C trees computing stage `name` (codegen.ctree): its Stage node in the entry
    function (an untiled group), or the outlined functions whose loops compute it."""
    from polyimage.codegen import ctree

    *functions, entry = pipe.cmodule.functions
    found = [n for n in ctree.walk(entry) if isinstance(n, ctree.Stage) and n.name == name]
    return found + [f for f in functions if name in f.stages]


def loop_structure(node) -> list:
    """The loops of a tree in source order as "variable:property:...", as devito's
    assert_structure reads them: `y:simd`, `x:parallel for:collapse(2)` (the iterator's
    `pim_w_` prefix dropped)."""
    from polyimage.codegen.ctree import for_loops

    shown = []
    for loop in for_loops(node):
        properties = [loop.parallel] if loop.parallel else []
        properties += ["simd"] if loop.simd else []
        properties += [f"collapse({loop.collapse})"] if loop.collapse > 1 else []
        shown.append(":".join([loop.var.removeprefix("pim_w_"), *properties]))
    return shown


CHANNELS = 5


def channels_last():
    """A 3x3 blur per channel (channels last), then a Reduction mixing the channels into
    CHANNELS outputs per pixel, then a pointwise stage."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y, ch = Variable(Int, "x"), Variable(Int, "y"), Variable(Int, "ch")
    rx, ry, rc, rd = (Variable(Int, v) for v in ("rx", "ry", "rc", "rd"))
    img = Image(Float, "img", [R + 2, C + 2, CHANNELS])
    mix = Image(Float, "mix", [CHANNELS, CHANNELS])
    rows, cols, chans = Interval(Int, 1, R), Interval(Int, 1, C), Interval(Int, 0, CHANNELS - 1)
    blur = Function(([x, y, ch], [rows, cols, chans]), Float, "blur")
    blur.defn = [sum(img(x + i, y + j, ch) for i in (-1, 0, 1) for j in (-1, 0, 1)) / 9.0]
    mixed = Reduction(
        ([x, y, ch], [rows, cols, chans]),
        ([rx, ry, rc, rd], [rows, cols, chans, chans]),
        Float,
        "mixed",
    )
    mixed.defn = [Reduce(mixed(rx, ry, rd), mix(rc, rd) * blur(rx, ry, rc), Op.Sum)]
    out = Function(([x, y, ch], [rows, cols, chans]), Float, "out")
    out.defn = [mixed(x, y, ch) * 0.5 + blur(x, y, ch)]
    return out


def channels_last_arguments(rows, cols, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "img": rng.random((rows + 2, cols + 2, CHANNELS), dtype=np.float32),
        "mix": rng.standard_normal((CHANNELS, CHANNELS)).astype(np.float32),
        "R": rows,
        "C": cols,
    }


SHIFTS = [(i, j) for i in (-1, 0, 1) for j in (-1, 0, 1)]


def weighted_means():
    """Non-local means in small: nine weight planes, `sums` (channels 0-2 the weighted
    colours, 3 the weights, which every channel reads), `out` the weighted mean."""
    R, C, x, y = grid()
    c, k = Variable(Int, "c"), Variable(Int, "k")
    img = Image(Float, "img", [3, R + 2, C + 2])
    rows, cols = Interval(Int, 1, R), Interval(Int, 1, C)
    weights = Function(([k, x, y], [Interval(Int, 0, 8), rows, cols]), Float, "weights")
    weights.defn = [1.0 / (1.0 + (img(0, x, y) - img(1, x + k % 3 - 1, y + k // 3 - 1)))]
    sums = Function(([c, x, y], [Interval(Int, 0, 3), rows, cols]), Float, "sums")
    colours = [weights(n, x, y) * img(c, x + i, y + j) for n, (i, j) in enumerate(SHIFTS)]
    plain = [weights(n, x, y) for n in range(len(SHIFTS))]
    sums.defn = [Case(c == 3, sum(plain[1:], plain[0])), sum(colours[1:], colours[0])]
    out = Function(([c, x, y], [Interval(Int, 0, 2), rows, cols]), Float, "out")
    out.defn = [sums(c, x, y) / sums(3, x, y)]
    return [out]


def matmul(typ=Float, op=Op.Sum):
    """C(i, j) = A(i, k) * B(k, j) combined over k by `op`: a matrix product as a Reduction."""
    M, N, K = (Parameter(Int, n) for n in "MNK")
    A, B = Image(typ, "A", [M, K]), Image(typ, "B", [K, N])
    i, j, k = (Variable(Int, n) for n in "ijk")
    rows, cols = Interval(Int, 0, M - 1), Interval(Int, 0, N - 1)
    C = Reduction(([i, j], [rows, cols]), ([k], [Interval(Int, 0, K - 1)]), typ, "C")
    C.defn = [Reduce(C(i, j), A(i, k) * B(k, j), op)]
    return C


def conv_nchw():
    """out(n, o, y, x) = sum over c, dy, dx of w(o, c, dy, dx) * inp(n, c, y + dy, x + dx)."""
    N, O, I, H, W = (Parameter(Int, n) for n in ("N", "O", "I", "H", "W"))
    inp = Image(Float, "inp", [N, I, H + 2, W + 2])
    w = Image(Float, "w", [O, I, 3, 3])
    n, o, y, x, c, dy, dx = (Variable(Int, v) for v in ("n", "o", "y", "x", "c", "dy", "dx"))
    out = Reduction(
        ([n, o, y, x], [Interval(Int, 0, d - 1) for d in (N, O, H, W)]),
        ([c, dy, dx], [Interval(Int, 0, I - 1), Interval(Int, 0, 2), Interval(Int, 0, 2)]),
        Float,
        "out",
    )
    out.defn = [Reduce(out(n, o, y, x), w(o, c, dy, dx) * inp(n, c, y + dy, x + dx), Op.Sum)]
    return out


def conv_nhwc(channels=None):
    """out(n, y, x, o) = sum over dy, dx, c of inp(n, y + dy, x + dx, c) * w(dy, dx, c, o);
    `channels`: the output channels' count (default: a Parameter O)."""
    N, O, I, H, W = (Parameter(Int, n) for n in ("N", "O", "I", "H", "W"))
    O = O if channels is None else channels
    inp = Image(Float, "inp", [N, H + 2, W + 2, I])
    w = Image(Float, "w", [3, 3, I, O])
    n, o, y, x, c, dy, dx = (Variable(Int, v) for v in ("n", "o", "y", "x", "c", "dy", "dx"))
    out = Reduction(
        ([n, y, x, o], [Interval(Int, 0, d - 1) for d in (N, H, W, O)]),
        ([dy, dx, c], [Interval(Int, 0, 2), Interval(Int, 0, 2), Interval(Int, 0, I - 1)]),
        Float,
        "out",
    )
    out.defn = [Reduce(out(n, y, x, o), inp(n, y + dy, x + dx, c) * w(dy, dx, c, o), Op.Sum)]
    return out


def matmul_nt(typ=Float, op=Op.Sum):
    """C(i, j) = sum over k of A(i, k) * B(j, k): a product with a transposed operand, both
    read along k, `B` moving with the columns `j` a row of it at a time."""
    M, N, K = Parameter(Int, "M"), Parameter(Int, "N"), Parameter(Int, "K")
    A, B = Image(typ, "A", [M, K]), Image(typ, "B", [N, K])
    i, j, k = Variable(Int, "i"), Variable(Int, "j"), Variable(Int, "k")
    rows, cols = Interval(Int, 0, M - 1), Interval(Int, 0, N - 1)
    C = Reduction(([i, j], [rows, cols]), ([k], [Interval(Int, 0, K - 1)]), typ, "C")
    C.defn = [Reduce(C(i, j), A(i, k) * B(j, k), op)]
    return C


def window_sum(taps=5, cols=None, scale=None):
    """s(x, y) = sum over dx, dy of img(x + dx, y + dy) * wt(dx, dy), a `taps` x `taps` window
    written as a Reduction (its rows' reads move with the columns too); `cols`: the output's
    column count (default: a Parameter C, the image's rows a step apart known at run time);
    with `scale`, also out = s * scale, a stage over its cells. Returns the output."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    cols = C if cols is None else cols
    img = Image(Float, "img", [R + taps - 1, cols + taps - 1])
    wt = Image(Float, "wt", [taps, taps])
    x, y, dx, dy = (Variable(Int, v) for v in ("x", "y", "dx", "dy"))
    domain = [Interval(Int, 0, R - 1), Interval(Int, 0, cols - 1)]
    window = [Interval(Int, 0, taps - 1)] * 2
    s = Reduction(([x, y], domain), ([dx, dy], window), Float, "s")
    s.defn = [Reduce(s(x, y), img(x + dx, y + dy) * wt(dx, dy), Op.Sum)]
    if scale is None:
        return s
    out = Function(([x, y], domain), Float, "out")
    out.defn = [s(x, y) * scale]
    return out


def pooling(rows: int, op=Op.Max, typ=Float, default=None):
    """m(x, y) = op over a `rows` x 3 window of img(2 x + dx, 2 y + dy): a pooling layer of
    stride 2, its lanes (y) reading every other element."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(typ, "img", [2 * R + rows - 1, 2 * C + 2])
    x, y, dx, dy = (Variable(Int, v) for v in ("x", "y", "dx", "dy"))
    cells = [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]
    taps = [Interval(Int, 0, rows - 1), Interval(Int, 0, 2)]
    m = Reduction(([x, y], cells), ([dx, dy], taps), typ, "m")
    if default is not None:
        m.default = default
    m.defn = [Reduce(m(x, y), img(2 * x + dx, 2 * y + dy), op)]
    return m


def row_reduction(op=Op.Sum, typ=Float):
    """s(x) = op over y of img(x, y) * w(y), in order: each cell a chain along y."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img, w = Image(typ, "img", [R, C]), Image(typ, "w", [C])
    x, y = Variable(Int, "x"), Variable(Int, "y")
    s = Reduction(([x], [Interval(Int, 0, R - 1)]), ([y], [Interval(Int, 0, C - 1)]), typ, "s")
    s.defn = [Reduce(s(x), img(x, y) * w(y), op)]
    return s


def sanitizers_required() -> bool:
    """Whether the sanitizer run must run (POLYIMAGE_REQUIRE_SANITIZERS=1, as in CI): it then
    fails rather than skips without libasan."""
    return os.environ.get("POLYIMAGE_REQUIRE_SANITIZERS") == "1"


def numeric_regions(numeric, plan, points, params) -> dict:
    """{stage: (lows, highs)}, arrays of shape (tiles, ndim), of the cost model's regions
    (NumericRegions.tile_regions, one tile at a time) of tiled `plan` for the tiles of
    `points` (a row of tile_lo, tile_hi and first values per tile), in the form the symbolic
    regions' `evaluate` gives them."""
    count = len(points)
    evaluate = Evaluator({}, {}, params)
    columns = dict(zip(plan.tile_lo + plan.tile_hi + plan.first, np.asarray(points).T))
    owned = {
        name: [np.broadcast_to(evaluate(e, columns, count), (count,)) for pair in box for e in pair]
        for name, box in plan.owned.items()
    }
    tiles = [
        numeric.tile_regions(
            tuple(plan.members),
            {name: tuple(int(bound[k]) for bound in bounds) for name, bounds in owned.items()},
        )
        for k in range(count)
    ]
    return {
        name: tuple(
            np.array([tile[name][0][side::2] for tile in tiles], np.int64) for side in (0, 1)
        )
        for name in (tiles[0] if tiles else ())
    }
