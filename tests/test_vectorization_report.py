"""pipe.report(vectorization=True): every innermost loop mapped to its stage, with whether gcc
vectorized it and why not."""

from helpers import stage_trees

import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Select, Variable
from polyimage.codegen.cprint import print_c
from polyimage.codegen.ctree import Block, Declare, For, If, Stage, names_used, walk
from polyimage.tools.vectorization import _messages, _verdicts, vectorization


def _pipeline():
    N = Parameter(Int, "N")
    i = Variable(Int, "i")
    a = Image(Float, "a", [N])
    table = Image(Int, "table", [256])
    smooth = Function(([i], [Interval(Int, 1, N - 2)]), Float, "smooth")
    smooth.defn = [(a(i - 1) + a(i) + a(i + 1)) * 0.5]
    looked = Function(([i], [Interval(Int, 1, N - 2)]), Float, "looked")
    # a read guarded by a data-dependent Select stays a branch: not vectorizable as written
    looked.defn = [Select(smooth(i) > 0.5, a(table(i % 256) % N), 0.0)]
    return looked


def test_every_innermost_loop_gets_a_verdict():
    pipe = polyimage.compile([_pipeline()], schedule="naive", inline=False)
    loops = vectorization(pipe)
    stages = [v.stages for v in loops]
    assert ("smooth",) in stages and ("looked",) in stages
    smooth = next(v for v in loops if v.stages == ("smooth",))
    assert smooth.vectorized and "vectorized using" in smooth.detail
    assert all(v.detail for v in loops)
    text = pipe.report(vectorization=True)
    assert "vectorization (innermost loops):" in text and "smooth (line" in text


def test_messages_are_read_per_line_of_kernel_c():
    log = (
        "# 1.20 s\ngcc ...\n"
        "kernel.c:12:5: optimized: loop vectorized using 32 byte vectors\n"
        "kernel.c:15:1: missed: not vectorized: control flow in loop.\n"
        "string_fortified.h:3:1: missed: not vectorized\n"
    )
    messages = _messages(log)
    assert messages == {
        12: [("optimized", "loop vectorized using 32 byte vectors")],
        15: [("missed", "not vectorized: control flow in loop.")],
    }


def test_a_lookup_table_of_fixed_bounds_gets_only_the_32_bit_loop():
    """A lookup in a table of constant bounds computes its offsets in int32 with no run-time
    guard and no int64 copy (codegen.loops._narrow_or_wide): one loop, vectorized."""
    from polyimage import UChar

    N = Parameter(Int, "N")
    i, j, b = Variable(Int, "i"), Variable(Int, "j"), Variable(Int, "b")
    keys = Image(UChar, "keys", [N, N])
    lut = Function(([b], [Interval(Int, 0, 255)]), Float, "lut")
    lut.defn = [b * 0.5]
    rows = Interval(Int, 0, N - 1)
    out = Function(([i, j], [rows, rows]), Float, "out")
    out.defn = [lut(keys(i, j)) + 1.0]
    pipe = polyimage.compile([out], schedule="naive", inline=False, estimates={"N": 1000})
    (tree,) = stage_trees(pipe, "out")
    assert ("helper", ("clamp", "int32_t")) in names_used(tree)  # int32 offsets
    assert not any(isinstance(n, Block) and n.note for n in walk(tree))  # and no int64 copy
    verdicts = [v for v in vectorization(pipe) if v.stages == ("out",)]
    assert len(verdicts) == 1 and verdicts[0].vectorized


def _simd(var, body):
    return For(var, "0", "n", Block((body,)), simd=True)


def test_an_int64_copy_the_compiler_removed_is_reported_unused():
    """Where gcc proves a guard true and drops the int64 copy, that copy's loop is reported
    unused, not as a loop that failed to vectorize; the printer's loop map says which loop is
    which stage's and where each stands."""
    from types import SimpleNamespace

    from polyimage.codegen.loops import WIDE_COPY
    from polyimage.tools.vectorization import UNUSED_WIDE_COPY, LoopVerdict, describe

    narrow = _simd("i", Declare("int", (("a", "0"),)))
    wide = _simd("i", Declare("int64_t", (("a", "0"),)))
    tree = Stage(
        "function", "out", (If("guard", Block((narrow,)), Block((wide,), note=WIDE_COPY)),)
    )
    printed = print_c(tree, first_line=10)
    lines = printed.text.splitlines()
    first, second = printed.loops
    assert lines[first.line - 10].strip().startswith("for (int64_t i = 0")
    assert first.end == first.line + 2 and first.stages == second.stages == ("out",)
    assert WIDE_COPY not in first.notes and WIDE_COPY in second.notes
    source = "\n" * 9 + printed.text
    pipe = SimpleNamespace(cmodule=SimpleNamespace(loops=printed.loops, source=source))
    log = f"kernel.c:{first.line}:5: optimized: loop vectorized using 32 byte vectors\n"
    verdicts = list(_verdicts(pipe, log))
    assert [v.detail for v in verdicts] == [
        "loop vectorized using 32 byte vectors",
        UNUSED_WIDE_COPY,
    ]
    text = describe([LoopVerdict(("out",), 7, True, UNUSED_WIDE_COPY)])
    assert "out (line 7): unused: the int64 copy" in text


def test_float_min_and_max_vectorize_and_propagate_nan_from_either_side():
    """A median of three by Min and Max (NumPy's NaN-propagating minimum and maximum) over
    rows: gcc vectorizes the helpers' form under the default flags (it did not vectorize
    `(a < b || a != a) ? a : b`, which left a median filter 14x behind Halide)."""
    import numpy as np

    from polyimage import Max, Min

    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 2, C])
    median = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 0, C - 1)]), Float, "median")
    a, b, c = img(x - 1, y), img(x, y), img(x + 1, y)
    median.defn = [Max(Min(a, b), Min(Max(a, b), c))]
    pipe = polyimage.compile([median], schedule="naive")
    loop = next(v for v in vectorization(pipe) if v.stages == ("median",))
    assert loop.vectorized, loop.detail
    values = np.random.default_rng(1).random((9, 37), dtype=np.float32)
    values[2, 3], values[4, 5], values[6, 7] = np.nan, -0.0, 0.0
    values[3, 9] = values[4, 9] = np.nan
    got = pipe(img=values, R=7, C=37)
    lo, mid, hi = values[:-2], values[1:-1], values[2:]
    want = np.maximum(np.minimum(lo, mid), np.minimum(np.maximum(lo, mid), hi))
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[0:3, 3]).all() and np.isnan(got[1:4, 9]).all()


def test_reads_at_rational_scales_vectorize_along_either_dimension():
    """A resampler by 3/4 reads the input at `(24 j + 5) // 18 + k`: along the rows the index
    is one per row (a branch-free floor division, hoisted out of the loop: the general helper's
    branches left the loop scalar), along the columns the residue loops make it affine (period
    18 / gcd(24, 18) = 3, not the divisor's 18, beyond the largest period tried)."""
    import numpy as np

    from polyimage import Clamp

    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R, C])
    dom = ([x, y], [Interval(Int, 0, (3 * R) // 4), Interval(Int, 0, (3 * C) // 4)])
    rows = Function(dom, Float, "rows")
    rows.defn = [sum(img(Clamp((24 * x + 5) // 18 + k, 0, R - 1), y) for k in range(3))]
    cols = Function(dom, Float, "cols")
    cols.defn = [sum(img(x, Clamp((24 * y + 5) // 18 + k, 0, C - 1)) * 0.5 for k in range(3))]
    for out in (rows, cols):
        pipe = polyimage.compile([out], schedule="naive")
        verdicts = [v for v in vectorization(pipe) if v.stages == (out.name,)]
        assert verdicts and any(v.vectorized for v in verdicts), verdicts
        values = np.random.default_rng(2).random((29, 41), dtype=np.float32)
        np.testing.assert_array_equal(pipe(img=values), polyimage.interpret([out], img=values))


def test_the_report_works_without_a_cache(monkeypatch):
    """POLYIMAGE_NO_CACHE=1 builds each module in a folder removed after loading it: the
    report's own build keeps its log until it is read."""
    monkeypatch.setenv("POLYIMAGE_NO_CACHE", "1")
    pipe = polyimage.compile([_pipeline()], schedule="naive", inline=False)
    assert not pipe.compiled.options.use_cache
    assert "smooth (line" in pipe.report(vectorization=True)


def test_a_window_of_many_exp_weights_vectorizes():
    """A 7x7 bilateral filter: 49 calls of the exp helper in one loop body, which gcc stops
    inlining (and leaves the loop scalar) unless each helper is always inlined."""
    from polyimage import Exp, repeat_edge

    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [R, C])
    edge = repeat_edge(img)
    out = Function.like(img, Float, "bilateral")
    x, y = out.variables
    taps = [(i, j) for i in range(-3, 4) for j in range(-3, 4)]
    differences = [edge(x + i, y + j) - img(x, y) for i, j in taps]
    weights = [Exp(-(d * d) * 50.0) for d in differences]
    out.defn = [sum(w * edge(x + i, y + j) for w, (i, j) in zip(weights, taps)) / sum(weights)]
    (loop,) = vectorization(polyimage.compile([out], schedule="naive"))
    assert loop.vectorized, loop.detail


def test_the_verdicts_come_from_the_build_that_runs_anyway(monkeypatch):
    """Every build writes gcc's report to its log; vectorization() and scalar_stages read it
    without building again."""
    import polyimage.tools.vectorization as vectorization_module

    monkeypatch.setenv("POLYIMAGE_NO_CACHE", "1")
    pipe = polyimage.compile([_pipeline()], schedule="naive", inline=False)
    assert "-fopt-info-vec-missed" in pipe.kernel.info.log

    def no_second_build(*args, **kwargs):
        raise AssertionError("built again")

    monkeypatch.setattr(vectorization_module, "build", no_second_build)
    stages = {v.stages[0] for v in vectorization(pipe)}
    assert {"smooth", "looked"} <= stages
    assert "smooth" not in pipe.scalar_stages


def test_the_report_flags_change_neither_the_cache_key_nor_the_c(monkeypatch):
    """The flags only add messages: a build without them has the same key and C (jit.build)."""
    from polyimage.jit import build as jit_build

    monkeypatch.setenv("POLYIMAGE_NO_CACHE", "1")
    with_report = polyimage.compile([_pipeline()], schedule="naive", inline=False)
    monkeypatch.setattr(jit_build, "VECTOR_REPORT_FLAGS", ())
    without = polyimage.compile([_pipeline()], schedule="naive", inline=False)
    assert with_report.build_info.key == without.build_info.key
    assert with_report.c_source == without.c_source
    assert "-fopt-info" not in without.kernel.info.log


def test_a_log_without_the_report_is_built_again(tmp_path):
    """A cache entry of an older version (its log without the report) or a unit whose object
    was reused: vectorization() builds once more with the report."""
    from types import SimpleNamespace

    from polyimage.tools.vectorization import logged_verdicts, reports_every_unit

    pipe = polyimage.compile([_pipeline()], schedule="naive", inline=False)
    old = "# 0.30 s\ngcc -O3 -fPIC -shared kernel_wrapper.c -o module.so\n"
    (tmp_path / "build.log").write_text(old)
    kernel = SimpleNamespace(info=SimpleNamespace(log="", path=tmp_path))
    assert logged_verdicts(pipe, kernel) is None
    assert {v.stages[0] for v in vectorization(pipe, kernel)} >= {"smooth", "looked"}
    flags = "-fopt-info-vec-optimized -fopt-info-vec-missed"
    reused = f"# 0.30 s\ngcc -O3 -c main.c -o main.o {flags}\nreused objects/ab/ab12.o\n"
    assert not reports_every_unit(reused)
    assert reports_every_unit(f"# 0.30 s\ngcc -O3 -c main.c -o main.o {flags}\n")


def test_a_reused_units_messages_are_replayed_at_its_new_lines(monkeypatch, tmp_path):
    """A recompile that reuses a unit's object (jit.build) replays the messages kept with it,
    moved to the lines its code now stands at: the same verdicts as a build of every unit."""
    from types import SimpleNamespace

    from polyimage.codegen import units as units_module
    from polyimage.config import Options
    from polyimage.tools.vectorization import reports_every_unit

    monkeypatch.setattr(units_module, "UNIT_BYTES", 400)
    monkeypatch.setattr(units_module, "GROUP_UNIT_BYTES", 200)
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 8, C + 8])
    stage = img
    for k in range(4):
        box = [Interval(Int, k + 1, R + 6 - k), Interval(Int, k + 1, C + 6 - k)]
        f = Function(([x, y], box), Float, f"b{k}")
        taps = [(-1, 0), (0, 0), (1, 0)] if k % 2 else [(0, -1), (0, 0), (0, 1)]
        f.defn = [sum(stage(x + i, y + j) for i, j in taps) * 0.25]
        stage = f
    options = Options(cache_dir=tmp_path / "cache")

    def compiled(schedule):
        return polyimage.compile([stage], {R: 64, C: 64}, schedule=schedule, options=options)

    compiled("group 0: b0, b1 [8x16]\ngroup 1: b2, b3 [8x16]")
    pipe = compiled("group 0: b0, b1 [4x32]\ngroup 1: b2, b3 [8x16]")
    assert any(u.reused for u in pipe.build_info.units)
    assert reports_every_unit((pipe.build_info.path / "build.log").read_text())
    rebuilt = SimpleNamespace(info=SimpleNamespace(log="", path=tmp_path))
    assert vectorization(pipe) == vectorization(pipe, rebuilt)


def test_replayed_messages_move_with_the_units_line_directives(tmp_path):
    """The same unit code placed further down kernel.c: each message keeps its place in the
    piece of code its `#line` directive starts."""
    from polyimage.codegen.units import Unit
    from polyimage.jit.objects import keep_log, replayed_log

    kept = tmp_path / "ab12.o"
    before = Unit(((1, "helpers\n"), (50, "loops\n")))
    after = Unit(((1, "helpers\n"), (80, "loops\n")))
    assert before.code == after.code and after.text.startswith('#line 1 "kernel.c"\nhelpers\n')
    log = (
        "# 0.20 s\ngcc -c unit1.c -fopt-info-vec-missed\n"
        "kernel.c:3:1: missed: in the helpers\nkernel.c:61:9: optimized: loop vectorized\n"
    )
    keep_log(log, before.lines, kept)
    replayed = replayed_log(kept, after.lines)
    assert "kernel.c:3:1: missed: in the helpers" in replayed
    assert "kernel.c:91:9: optimized: loop vectorized" in replayed
    assert "gcc -c unit1.c -fopt-info-vec-missed" in replayed
    assert replayed_log(tmp_path / "other.o", after.lines) is None


def test_a_loop_is_judged_by_its_own_messages_not_its_nested_loops():
    """An owner's lane loop holds its cells' loops: gcc's verdict on an inner loop (a
    fold-left it vectorized) says nothing of the lane loop around it, which it could not
    vectorize: the lane loop reads as scalar."""
    from polyimage.codegen.cprint import LoopLines
    from polyimage.codegen.names import LANE_LOOPS

    inner_loop = For("j", "0", "9", Block(()))
    outer_loop = For("i", "0", "9", Block((inner_loop,)), simd=True)
    outer = LoopLines(outer_loop, 10, 30, ("s",), ())
    inner = LoopLines(inner_loop, 15, 25, ("s",), (LANE_LOOPS,))
    log = (
        "kernel.c:12:5: missed: couldn't vectorize loop\n"
        "kernel.c:15:9: optimized: loop vectorized using 64 byte vectors\n"
    )
    compiled = type("C", (), {})()
    compiled.cmodule = type("M", (), {"loops": (outer, inner)})()
    compiled.stage_graph = type("G", (), {"stages": ()})()
    compiled.plain_stages = frozenset()
    compiled.options = polyimage.config.Options()
    verdicts = list(_verdicts(compiled, log))
    assert [(v.line, v.vectorized) for v in verdicts] == [(10, False)]
