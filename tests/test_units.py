"""The C of a pipeline cut into translation units compiled in parallel (codegen.units): the
units hold kernel.c's code exactly once, map their lines back to it, build a module that gives
the oracle's result, and are the same in every run."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import child_env

import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable
from polyimage.codegen import ctree
from polyimage.codegen import units as units_module
from polyimage.codegen.cprint import print_c
from polyimage.codegen.units import SOURCE_NAME, layout
from polyimage.config import Options
from polyimage.jit import cache
from polyimage.jit.toolchain import compiler_command, compiler_facts
from polyimage.tools.vectorization import vectorization

_LINE = re.compile(rf'^#line (\d+) "{re.escape(SOURCE_NAME)}"$')


def _chain(depth=6):
    """Blurs alternating along x and y: under `auto`, tiled groups with outlined nests."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 2 * depth, C + 2 * depth])
    stage = img
    for k in range(depth):
        lo = k + 1
        dom = (
            [x, y],
            [Interval(Int, lo, R + 2 * depth - 1 - lo), Interval(Int, lo, C + 2 * depth - 1 - lo)],
        )
        f = Function(dom, Float, f"b{k}")
        if k % 2:
            f.defn = [(stage(x - 1, y) + 2 * stage(x, y) + stage(x + 1, y)) * 0.25]
        else:
            f.defn = [(stage(x, y - 1) + 2 * stage(x, y) + stage(x, y + 1)) * 0.25]
        stage = f
    return stage, R, C


def _mapped_lines(unit: str, source_lines: list) -> int:
    """Check that every line under a `#line N "kernel.c"` directive is kernel.c's line N (until
    the next directive or the shared prologue's end); returns how many lines were checked."""
    checked, at = 0, None
    for text in unit.splitlines():
        match = _LINE.match(text)
        if match:
            at = int(match[1])
            continue
        if at is None or text.startswith("#define PIM_SHARED") or text.startswith("PIM_SHARED"):
            at = None  # the unit's own lines: PIM_SHARED and prototypes
            continue
        if text.startswith("#if") or text in ("#else", "#endif"):
            continue
        if at <= len(source_lines) and source_lines[at - 1] != text:
            if not source_lines[at - 1].startswith("static PIM_NOINLINE"):
                raise AssertionError(f"line {at}: {text!r} != {source_lines[at - 1]!r}")
        checked += 1
        at += 1
    return checked


_HEADER = ctree.Directive("#include <x.h>")
_WORKSPACE = ctree.Typedef("w", (ctree.Declare("int", (("a", None),)),))


def _function(name, statements, returns="void", qualifiers="static PIM_NOINLINE"):
    """A function computing the stage `name`."""
    body = tuple(ctree.Assign("a", "a + 1") for _ in range(statements))
    return ctree.Function(returns, name, ("int a",), body, qualifiers=qualifiers, stages=(name,))


def test_layout_keeps_each_function_once_and_maps_lines(monkeypatch):
    monkeypatch.setattr(units_module, "UNIT_BYTES", 80)
    functions = [_function(f"f{k}", k + 3) for k in range(7)]
    entry = ctree.Function(
        "int", "entry", (), (ctree.Call("f0", ("1",)), ctree.Line("return 0;")), qualifiers=""
    )
    laid = layout(_HEADER, _WORKSPACE, functions, entry)
    source, units = laid.source, [unit.text for unit in laid.units]
    assert len(units) > 2
    for k in range(7):
        definitions = [u for u in units if f"PIM_SHARED void f{k}(int a)\n{{" in u]
        assert len(definitions) == 1 and definitions[0] is not units[0]
        assert f"PIM_SHARED void f{k}(int a);" in units[0]
    assert "int entry()" in units[0] and all("int entry" not in u for u in units[1:])
    lines = source.splitlines()
    assert all(_mapped_lines(u, lines) > 0 for u in units)
    assert layout(_HEADER, _WORKSPACE, functions, entry) == laid


def test_small_code_stays_one_unit():
    entry = ctree.Function("int", "e", ("void",), (), qualifiers="")
    laid = layout(_HEADER, _WORKSPACE, [_function("f", 0)], entry)
    assert len(laid.units) == 1
    assert laid.units[0].text == f'#line 1 "{SOURCE_NAME}"\n' + laid.source
    assert "static PIM_NOINLINE void f(int a)" in laid.source


def test_a_unit_holds_the_helpers_its_functions_use(monkeypatch):
    """A group's unit defines only the helpers its functions' trees name (ctree `uses`)."""
    monkeypatch.setattr(units_module, "UNIT_BYTES", 80)
    uses = frozenset({("helper", ("floordiv", "int64_t"))})
    divides = ctree.Function(
        "void",
        "g0",
        ("int a",),
        (ctree.Assign("a", "pim_floordiv_i64(a, 2)", uses=uses),) * 5,
        stages=("g0",),
    )
    plain = _function("g1", 5)
    entry = ctree.Function("int", "e", ("void",), (), qualifiers="")
    helpers = (("floordiv", "int64_t"), ("max", "int64_t"))
    laid = layout(_HEADER, ctree.Seq(()), [divides, plain], entry, owners=[0, 1], helpers=helpers)
    assert len(laid.units) == 3
    texts = [unit.text for unit in laid.units]
    assert "pim_floordiv_i64(int64_t a" in texts[1] and "pim_max_i64" not in texts[1]
    assert "pim_floordiv_i64(int64_t a" not in texts[2]
    assert "pim_max_i64(int64_t a" in texts[0]  # the main unit defines them all


@pytest.mark.parametrize("unit_bytes", [400, 1600])
def test_split_build_matches_the_oracle(monkeypatch, tmp_path, unit_bytes):
    monkeypatch.setattr(units_module, "UNIT_BYTES", unit_bytes)
    out, R, C = _chain()
    options = Options(cache_dir=tmp_path / "cache")
    pipe = polyimage.compile([out], schedule="auto", estimates={R: 512, C: 512}, options=options)
    units = pipe.cmodule.units
    assert len(units) > 1
    names = [u.name for u in pipe.build_info.units]
    assert names[0] == "main" and names[-1] == "link" and len(names) == len(units) + 1
    assert all(u.seconds > 0 for u in pipe.build_info.units)
    assert f"{len(units)} units in parallel" in pipe.report()
    arr = np.random.default_rng(3).random((45, 38), dtype=np.float32)
    for threads in (1, 2):
        got = pipe(img=arr, threads=threads)
        np.testing.assert_allclose(got, polyimage.interpret([out], img=arr), rtol=1e-5)
    again = polyimage.compile([out], schedule="auto", estimates={R: 512, C: 512}, options=options)
    assert again.build_info.cache_hit and again.cmodule.units == units
    assert [u.name for u in again.build_info.units] == names
    assert "when built: main" in again.report()


def test_a_split_profile_build_times_every_group(monkeypatch, tmp_path):
    monkeypatch.setattr(units_module, "UNIT_BYTES", 400)
    out, R, C = _chain()
    options = Options(cache_dir=tmp_path / "cache")
    pipe = polyimage.compile([out], schedule="auto", estimates={R: 512, C: 512}, options=options)
    arr = np.random.default_rng(5).random((45, 38), dtype=np.float32)
    profile = pipe.profile(img=arr, runs=2)
    assert len(pipe._profiled.cmodule.units) > 1
    text = str(profile)
    assert all(f"b{k}" in text for k in range(6))


def test_vectorization_report_reads_every_unit(monkeypatch, tmp_path):
    monkeypatch.setattr(units_module, "UNIT_BYTES", 1600)
    out, R, C = _chain()
    options = Options(cache_dir=tmp_path / "cache")
    pipe = polyimage.compile([out], schedule="auto", estimates={R: 512, C: 512}, options=options)
    assert len(pipe.cmodule.units) > 1
    verdicts = vectorization(pipe)
    nested = [v for v in verdicts if v.stages != ("(setup)",)]
    assert {s for v in nested for s in v.stages} >= {f"b{k}" for k in range(6)}
    assert all(v.vectorized for v in nested if len(v.stages) == 1)


def test_a_failing_unit_fails_the_build_cleanly(monkeypatch, tmp_path):
    monkeypatch.setattr(units_module, "UNIT_BYTES", 400)
    out, R, C = _chain()
    root = tmp_path / "cache"
    bad = Options(cache_dir=root, cflags=Options().cflags + ("-include", "no-such-header.h"))
    with pytest.raises(polyimage.CompileError) as info:
        polyimage.compile([out], schedule="auto", estimates={R: 512, C: 512}, options=bad)
    log_path = Path(info.value.log_path)
    try:
        log = log_path.read_text(errors="replace")
        assert log.count("no-such-header.h: No such file") >= 2  # every unit tried
        assert (log_path.parent / SOURCE_NAME).is_file()
        assert [p for p in root.rglob("*") if p.name.startswith(".build-")] == []
    finally:
        shutil.rmtree(log_path.parent, ignore_errors=True)
    good = polyimage.compile(
        [out], schedule="auto", estimates={R: 512, C: 512}, options=Options(cache_dir=root)
    )
    assert len(good.cmodule.units) > 1 and not good.build_info.cache_hit


CHILD = """
import json, sys
import numpy as np
import polyimage
from polyimage.codegen import units
sys.path.insert(0, sys.argv[1])
from test_units import _chain
units.UNIT_BYTES = 400
out, R, C = _chain()
pipe = polyimage.compile([out], schedule="auto", estimates={R: 512, C: 512})
arr = np.arange(40 * 30, dtype=np.float32).reshape(40, 30)
same = np.allclose(pipe(img=arr), polyimage.interpret([out], img=arr), rtol=1e-5)
found = {"units": len(pipe.cmodule.units), "same": bool(same), "key": pipe.build_info.key}
print(json.dumps(found))
"""


def test_processes_build_one_split_pipeline_at_once(tmp_path):
    root = tmp_path / "shared"
    tests = str(Path(__file__).parent)
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, tests],
            env=child_env(root),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    results = []
    for child in children:
        stdout, stderr = child.communicate(timeout=300)
        assert child.returncode == 0, stderr
        results.append(json.loads(stdout.strip().splitlines()[-1]))
    assert all(r["units"] > 1 and r["same"] for r in results)
    assert len({r["key"] for r in results}) == 1
    modules = [e for e in cache.entries(root) if e.kind == cache.MODULE]
    assert len(modules) == 1
    assert [p for p in root.rglob("*") if p.name.startswith((".build-", ".trash-"))] == []


def test_large_modules_build_with_o2_and_small_ones_with_o3(monkeypatch, tmp_path):
    """Where the flags ask for -O3, every unit of a module of O2_MODULE_BYTES of C or more
    builds with -O2 (as fast in the bench, far quicker to compile), whatever the unit's own
    size; the compiler's commands in build.log show it; flags asking for another level are
    left alone."""
    from polyimage.jit import build as build_module
    from polyimage.jit.build import unit_flags

    flags = ("-O3", "-march=native")
    limit = build_module.O2_MODULE_BYTES
    assert unit_flags(flags, limit - 1) == flags
    assert unit_flags(flags, limit) == flags + ("-O2",)
    assert unit_flags(flags, limit, driver=True) == flags + (build_module.DRIVER_LEVEL,)
    assert unit_flags(flags, limit - 1, driver=True) == flags
    assert unit_flags(("-O3", "-O1"), limit) == ("-O3", "-O1")
    epilogues = build_module.LARGE_MODULE_GCC_FLAGS
    assert unit_flags(flags, limit, gcc=True) == (*flags, "-O2", *epilogues)
    assert unit_flags(flags, limit, driver=True, gcc=True) == (*flags, build_module.DRIVER_LEVEL)
    assert unit_flags(flags, limit - 1, gcc=True) == flags
    monkeypatch.setattr(units_module, "UNIT_BYTES", 400)
    out, R, C = _chain()

    def commands(module_limit, folder):
        monkeypatch.setattr(build_module, "O2_MODULE_BYTES", module_limit)
        pipe = polyimage.compile(
            [out],
            schedule="auto",
            estimates={R: 512, C: 512},
            options=Options(cache_dir=tmp_path / folder),
        )
        arr = np.random.default_rng(4).random((45, 38), dtype=np.float32)
        want = polyimage.interpret([out], img=arr)
        np.testing.assert_allclose(pipe(img=arr), want, rtol=1e-5)
        log = (pipe.build_info.path / "build.log").read_text()
        found = [line for line in log.splitlines() if " -c " in line]
        assert len(found) == len(pipe.cmodule.units) > 1
        return found, len(pipe.cmodule.source)

    large, size = commands(limit, "a")
    assert all(" -O2 " in c for c in large[1:]) == (size >= limit)
    found = commands(size, "b")[0]
    assert f" {build_module.DRIVER_LEVEL} " in found[0] and all(" -O2 " in c for c in found[1:])
    gcc = compiler_facts(compiler_command(), Options().flags).family == "gcc"
    epilogues = " ".join(build_module.LARGE_MODULE_GCC_FLAGS)
    assert [epilogues in c for c in found] == [False] + [gcc] * (len(found) - 1)
    assert not any(" -O2 " in c for c in commands(size + 1, "c")[0])


def test_a_recompile_builds_only_the_units_whose_code_changed(monkeypatch, tmp_path):
    """A group's unit holds its own loop nests, whose code does not depend on the tile sizes:
    retiling one group rebuilds the main unit only, and regrouping the last stages rebuilds
    their units only; the others' objects come from the cache, and every build gives the
    oracle's result."""
    monkeypatch.setattr(units_module, "UNIT_BYTES", 400)
    monkeypatch.setattr(units_module, "GROUP_UNIT_BYTES", 200)
    out, R, C = _chain()
    options = Options(cache_dir=tmp_path / "cache")
    arr = np.random.default_rng(5).random((45, 38), dtype=np.float32)
    want = polyimage.interpret([out], img=arr)
    groups = ["group 0: b0, b1 [8x16]", "group 1: b2, b3 [8x16]", "group 2: b4, b5 [8x16]"]

    def built(schedule):
        pipe = polyimage.compile(
            [out], schedule=schedule, estimates={R: 64, C: 64}, options=options
        )
        np.testing.assert_allclose(pipe(img=arr, threads=2), want, rtol=1e-5)
        units = [u for u in pipe.build_info.units if u.name != "link"]
        assert len(units) == len(pipe.cmodule.units)
        return sorted(u.name for u in units if not u.reused)

    assert built("\n".join(groups)) == ["main", "nests 1", "nests 2", "nests 3"]
    assert built("\n".join(groups[:1] + ["group 1: b2, b3 [4x32]"] + groups[2:])) == ["main"]
    regrouped = groups[:2] + ["group 2: b4 [8x16]", "group 3: b5 [16x16]"]
    assert built("\n".join(regrouped)) == ["main", "nests 3", "nests 4"]
    objects = list((tmp_path / "cache" / "objects").rglob("*.o"))
    assert len(objects) == 5 and all(o.stat().st_size > 0 for o in objects)


def test_the_main_unit_of_a_large_pipeline_only_drives():
    """Where the entry computes no stage, a large pipeline's main unit keeps the entry and the
    functions that compute no stage (a group's regions), marked `driver`; every function that
    computes a stage is in another unit, the small groups' together. Where the entry computes,
    the small groups' functions stay in the main unit, which is no driver."""
    regions = ctree.Function("void", "regions0", ("int a",), (ctree.Assign("a", "a + 1"),) * 20)
    big, small = _function("big", 40), _function("small", 3)
    functions = [regions, big, small]
    entry = ctree.Function("int", "e", ("void",), (), qualifiers="")
    bytes_of = sum(len(print_c(f).text) for f in functions)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(units_module, "UNIT_BYTES", bytes_of)
        patch.setattr(units_module, "GROUP_UNIT_BYTES", len(print_c(functions[1]).text))
        driving = layout(_HEADER, _WORKSPACE, functions, entry, [0, 0, 1], (), False)
        computing = layout(_HEADER, _WORKSPACE, functions, entry, [0, 0, 1], (), True)
    texts = [unit.text for unit in driving.units]
    assert [unit.driver for unit in driving.units] == [True, False, False]
    assert "void regions0(int a)\n{" in texts[0]
    assert "void big(int a)\n{" in texts[1] and "void small(int a)\n{" in texts[2]
    assert not any(unit.driver for unit in computing.units) and len(computing.units) == 2
    assert "void small(int a)\n{" in computing.units[0].text
    assert driving.source == computing.source


def _loop_function(name, statements, attributes=""):
    body = ctree.Block(tuple(ctree.Assign("a", "a + 1") for _ in range(statements)))
    loop = ctree.For("i", "0", "n", body)
    params = ("int a", "int n")
    return ctree.Function("void", name, params, (loop,), attributes=attributes, stages=(name,))


def test_a_long_jammed_nest_is_a_unit_of_its_own():
    """A function kept in order (a jammed nest) whose loop body holds LONG_CHAIN_STATEMENTS
    statements is a unit of its own marked long_chains, even in a small pipeline; a shorter
    one, or a long loop not kept in order, is not."""
    from polyimage.codegen.prelude import IN_ORDER

    long = units_module.LONG_CHAIN_STATEMENTS
    functions = [
        _loop_function("short", long - 1, IN_ORDER),
        _loop_function("chain", long, IN_ORDER),
        _loop_function("plain", long),
    ]
    assert [units_module.long_chains(f) for f in functions] == [False, True, False]
    entry = ctree.Function("int", "e", ("void",), (), qualifiers="")
    laid = layout(_HEADER, _WORKSPACE, functions, entry)
    assert [unit.long_chains for unit in laid.units] == [False, True]
    assert "PIM_SHARED PIM_IN_ORDER void chain(int a, int n)\n{" in laid.units[1].text
    assert "void short(int a, int n)\n{" in laid.units[0].text


def test_gcc_builds_the_unit_of_a_long_jammed_nest_with_its_own_flags(monkeypatch, tmp_path):
    """The unit of a long jammed nest gets LONG_CHAIN_FLAGS from gcc (the other units do not),
    and the module gives the interpreter's result."""
    from helpers import assert_exact_on_threads, weighted_means

    from polyimage.jit import build as build_module

    options = Options(cache_dir=tmp_path / "cache")
    if compiler_facts(compiler_command(), options.flags).family != "gcc":
        pytest.skip("the flags are gcc's")
    monkeypatch.setattr(units_module, "LONG_CHAIN_STATEMENTS", 2)
    schedule = polyimage.Schedule.parse("group 0: weights, sums [4x4x16]\ngroup 1: out [untiled]")
    outputs = weighted_means()
    pipe = polyimage.compile(outputs, schedule=schedule, inline=False, options=options)
    marked = [unit.long_chains for unit in pipe.cmodule.units]
    assert marked.count(True) >= 1 and not marked[0]
    log = (pipe.build_info.path / "build.log").read_text()
    commands = [line for line in log.splitlines() if " -c " in line]
    flag = " ".join(build_module.LONG_CHAIN_FLAGS)
    assert [flag in command for command in commands] == marked
    rng = np.random.default_rng(7)
    arguments = {"img": rng.random((3, 9, 40), dtype=np.float32)}
    assert_exact_on_threads(pipe, outputs, arguments, threads=(1, 2))


def test_untiled_stages_are_functions_the_entry_calls(tmp_path):
    """An untiled stage's loops are a function of their own, which the entry calls with the
    buffers and parameters it uses, so large pipelines cut into units by stage too."""
    out, R, C = _chain(depth=3)
    options = Options(cache_dir=tmp_path / "cache")
    pipe = polyimage.compile([out], schedule="naive", options=options)
    source = pipe.cmodule.source
    entry = source[source.index("int pipeline_") :]
    for k in range(3):
        assert f"static PIM_NOINLINE void pim_stage{k}_0(int pim_nthreads" in source
        assert f"    pim_stage{k}_0(pim_nthreads, " in entry
        assert f"/* function b{k} */" not in entry
    arr = np.random.default_rng(6).random((17, 23), dtype=np.float32)
    for threads in (1, 2):
        got = pipe(img=arr, threads=threads)
        np.testing.assert_array_equal(got, polyimage.interpret([out], img=arr))
