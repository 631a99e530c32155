"""Exported C libraries (`pipe.export`, `polyimage export`): C programs built against them match
the interpreter on odd sizes with 1 and 2 threads; bad extents and parameter values return an
error code and a message naming the culprit, touching no memory (under AddressSanitizer); and
`polyimage.load` calls them like compiled pipelines."""

import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from export_harness import build_harness, run_harness
from helpers import ROOT, needs_tool, no_openmp_compiler
from oracle import as_outputs, assert_same

import polyimage
from polyimage.apps import bilateral_grid, histogram_equalize, unsharp_mask
from polyimage.commands.cli import main
from polyimage.graph import build_graph
from polyimage.graph.arguments import bind_arguments

APPS = {
    "unsharp_mask": unsharp_mask,  # a stencil pipeline
    "histogram_equalize": histogram_equalize,  # a Reduction, a scan, a gather by pixel value
    "bilateral_grid": bilateral_grid,  # a scattering Reduction, trilinear gathers
}
SIZES = [(1, 1), (5, 3), (37, 53)]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """{app: (export folder, harness program)}."""
    made = {}
    for name, app in APPS.items():
        folder = tmp_path_factory.mktemp(name)
        outputs = app.build()[0]
        pipe = polyimage.compile(outputs, estimates=app.SMALL_SIZE, name=name)
        pipe.export(folder / "lib")
        program = build_harness(folder / "lib", folder / "run")
        made[name] = (folder / "lib", program)
    return made


def _arguments(app, rng, rows, cols) -> dict:
    photo = rng.integers(0, 256, (rows, cols, 3), dtype=np.uint8)
    return {**app.prepare([photo], {"R": rows, "C": cols}), **app.DEFAULTS}


def _manifest(folder) -> dict:
    return json.loads((folder / "manifest.json").read_text())


@pytest.mark.parametrize("name", list(APPS))
def test_the_export_holds_its_files(exported, name):
    folder = exported[name][0]
    names = {p.name for p in folder.iterdir()}
    assert names == {
        f"{name}.c",
        f"{name}.h",
        f"lib{name}.a",
        f"lib{name}.so",
        "README.md",
        "manifest.json",
    }
    header = (folder / f"{name}.h").read_text()
    assert 'extern "C"' in header and f"int {name}(void *workspace, int nthreads" in header
    assert f"lib{name}.a -fopenmp -lm" in (folder / "README.md").read_text()
    symbols = subprocess.run(
        ["nm", "-g", "--defined-only", str(folder / f"lib{name}.so")],
        capture_output=True,
        text=True,
    ).stdout
    for function in (name, f"{name}_extents", f"{name}_error", f"{name}_workspace_new"):
        assert f" T {function}\n" in symbols


@pytest.mark.parametrize("name", list(APPS))
@pytest.mark.parametrize("rows, cols", SIZES)
def test_a_c_program_matches_the_interpreter(exported, name, rows, cols, rng, tmp_path):
    folder, program = exported[name]
    _compare_runs(folder, program, APPS[name], rng, tmp_path, rows, cols)


def test_the_header_compiles_as_cpp(exported, tmp_path):
    if shutil.which("g++") is None:
        pytest.skip("needs a C++ compiler: apt-get install g++")
    folder = exported["unsharp_mask"][0]
    source = tmp_path / "use.cpp"
    source.write_text(
        '#include "unsharp_mask.h"\nint main() { return unsharp_mask_error() == nullptr; }\n'
    )
    done = subprocess.run(
        [
            "g++",
            "-I",
            str(folder),
            str(source),
            str(folder / "libunsharp_mask.a"),
            "-fopenmp",
            "-o",
            str(tmp_path / "use"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert subprocess.run([str(tmp_path / "use")]).returncode == 0


@pytest.fixture(scope="module")
def sanitized(exported, tmp_path_factory):
    """(the unsharp_mask harness built from the exported source under AddressSanitizer, the
    export's manifest)."""
    folder = exported["unsharp_mask"][0]
    flags = ["-g", "-O1", "-fsanitize=address", "-fno-omit-frame-pointer", "-fopenmp"]
    program = tmp_path_factory.mktemp("asan") / "run"
    try:
        build_harness(folder, program, "gcc", flags, [str(folder / "unsharp_mask.c"), "-lm"])
    except AssertionError as exc:
        if "asan" in str(exc).lower():
            pytest.skip(f"no AddressSanitizer runtime (apt-get install libasan8): {exc}")
        raise
    return program, _manifest(folder)


BAD = [
    # (a change to a good call: R=11, C=9, img 3x15x13, mask 3x11x9; what the message says)
    ({"img": (3, 15, 12)}, "image img: dimension 2 must have extent C + 4 = 13, got 12"),
    ({"img": (2, 15, 13)}, "image img: dimension 0 must have extent 3 = 3, got 2"),
    ({"mask": (3, 10, 9)}, "output mask: dimension 1 must have extent R = 11, got 10"),
    ({"R": 0}, "parameter values R=0 make the domain of blurx empty: x in [2, R + 1]"),
    ({"C": -7}, "parameter values C=-7 make the domain of"),
    ({"R": 2**31 - 1}, "R=2147483647 give"),
]


@pytest.mark.parametrize("change, named", BAD, ids=[str(c) for c, _ in BAD])
def test_bad_extents_and_parameters_return_an_error_from_c(sanitized, change, named, tmp_path):
    program, manifest = sanitized
    img = np.zeros(change.get("img", (3, 15, 13)), np.float32)
    values = {"R": 11, "C": 9, "weight": 3.0, "threshold": 0.001}
    values.update({k: v for k, v in change.items() if k in values})
    mask = change.get("mask", (3, 11, 9))
    status, message, _ = run_harness(program, manifest, 2, values, {"img": img}, [mask], tmp_path)
    assert status == 2 and named in message, message


def test_a_good_call_under_the_sanitizer_matches(sanitized, rng, tmp_path):
    program, manifest = sanitized
    arguments = _arguments(unsharp_mask, rng, 11, 9)
    expected = polyimage.interpret(unsharp_mask.build()[0], **arguments)
    values = {"R": 11, "C": 9, **unsharp_mask.DEFAULTS}
    status, message, got = run_harness(
        program, manifest, 2, values, {"img": arguments["img"]}, [expected.shape], tmp_path
    )
    assert (status, message) == (0, "")
    assert_same(got[0], expected)


USER_FILE = """
from polyimage import *


def sharpen():
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 2, C + 2])
    rows, cols = Interval(Int, 1, R), Interval(Int, 1, C)
    blur = Function(([x, y], [rows, cols]), Float, "blur")
    blur.defn = [(img(x - 1, y) + img(x, y) + img(x + 1, y)) / 3]
    out = Function(([x, y], [rows, cols]), Float, "out")
    sharper = 2 * img(x, y) - blur(x, y)
    out.defn = [Select(Condition(img(x, y), ">", blur(x, y)), sharper, img(x, y))]
    return [out]
"""


def test_polyimage_export_takes_a_function_of_a_users_file(tmp_path, rng, capsys):
    (tmp_path / "mine.py").write_text(USER_FILE)
    folder = tmp_path / "out"
    argv = [
        "export",
        f"{tmp_path / 'mine.py'}:sharpen",
        "-o",
        str(folder),
        "--estimates",
        "R=64,C=64",
    ]
    assert main(argv) == 0
    assert "exported out to" in capsys.readouterr().out
    program = build_harness(folder, tmp_path / "run")
    manifest = _manifest(folder)
    img = rng.random((23, 18), dtype=np.float32)
    spec = {}
    exec(compile(USER_FILE, "mine.py", "exec"), spec)
    expected = polyimage.interpret(spec["sharpen"](), img=img)
    for threads in (1, 2):
        status, message, got = run_harness(
            program, manifest, threads, {"R": 21, "C": 16}, {"img": img}, [expected.shape], tmp_path
        )
        assert (status, message) == (0, "")
        assert_same(got[0], expected)


def test_a_constraint_is_checked_by_the_library(tmp_path):
    R = polyimage.Parameter(polyimage.Int, "R")
    x = polyimage.Variable(polyimage.Int, "x")
    img = polyimage.Image(polyimage.Float, "img", [R])
    out = polyimage.Function(
        ([x], [polyimage.Interval(polyimage.Int, 0, R - 1)]), polyimage.Float, "out"
    )
    out.defn = [img(x) * 2]
    pipe = polyimage.compile([out], constraints=[R >= 8], estimates={R: 64}, name="twice")
    pipe.export(tmp_path / "twice")
    program = build_harness(tmp_path / "twice", tmp_path / "run")
    manifest = _manifest(tmp_path / "twice")
    small = np.ones(5, np.float32)
    status, message, _ = run_harness(
        program, manifest, 1, {"R": 5}, {"img": small}, [(5,)], tmp_path
    )
    assert status == 2 and message == "parameter values R=5 violate the constraint R >= 8"
    big = np.arange(9, dtype=np.float32)
    status, _, got = run_harness(program, manifest, 1, {"R": 9}, {"img": big}, [(9,)], tmp_path)
    assert status == 0 and np.array_equal(got[0], big * 2)


def _compare_runs(folder, program, app, rng, tmp_path, rows=29, cols=31, runner=()):
    """The harness of an export of `app` on a random image of rows x cols, on 1 and 2
    threads, against the interpreter."""
    outputs = app.build()[0]
    graph = build_graph(outputs)
    arguments = _arguments(app, rng, rows, cols)
    expected = as_outputs(polyimage.interpret(outputs, **arguments))
    values = bind_arguments(graph, arguments).params
    images = {i.name: arguments[i.name] for i in graph.images}
    shapes = [e.shape for e in expected]
    for threads in (1, 2):
        status, message, got = run_harness(
            program, _manifest(folder), threads, values, images, shapes, tmp_path, runner
        )
        assert (status, message) == (0, "")
        for g, e in zip(got, expected):
            assert_same(g, e, f"{app.NAME} {rows}x{cols}, {threads} threads")


def test_an_export_cross_compiled_for_arm_runs_under_qemu(tmp_path, rng, monkeypatch):
    needs_tool("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu")
    needs_tool("qemu-aarch64", "qemu-user")
    monkeypatch.setenv("CC", "aarch64-linux-gnu-gcc")
    pipe = polyimage.compile(
        unsharp_mask.build()[0],
        estimates={"R": 256, "C": 256},
        name="unsharp_mask",
        march="armv8-a",
        build=False,
    )
    with pytest.raises(polyimage.PipelineError, match="build=False"):
        pipe(img=np.zeros((3, 9, 9), np.float32), weight=3.0, threshold=0.001)
    assert "C compile: not built (build=False)" in pipe.report()
    folder = tmp_path / "arm"
    pipe.export(folder)
    elf = (folder / "libunsharp_mask.so").read_bytes()
    assert elf[:4] == b"\x7fELF" and int.from_bytes(elf[18:20], "little") == 183  # EM_AARCH64
    assert "-march=armv8-a" in (folder / "README.md").read_text()
    program = build_harness(folder, tmp_path / "run", "aarch64-linux-gnu-gcc", ["-static"])
    _compare_runs(folder, program, unsharp_mask, rng, tmp_path, runner=["qemu-aarch64"])


def test_clang_builds_an_export_and_a_program_with_it(tmp_path, rng, monkeypatch):
    needs_tool("clang", "clang")
    probe = tmp_path / "omp.c"
    probe.write_text("#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n")
    if subprocess.run(["clang", "-fopenmp", str(probe), "-o", str(tmp_path / "omp")]).returncode:
        pytest.skip("clang has no OpenMP runtime: apt-get install libomp-dev")
    monkeypatch.setenv("CC", "clang")
    pipe = polyimage.compile(
        unsharp_mask.build()[0], estimates={"R": 256, "C": 256}, name="unsharp_mask", build=False
    )
    folder = tmp_path / "clang"
    pipe.export(folder)
    assert "with `clang`" in (folder / "README.md").read_text()
    program = build_harness(folder, tmp_path / "run", "clang")
    _compare_runs(folder, program, unsharp_mask, rng, tmp_path)


def _blocks(kind: str) -> list:
    """The ```kind blocks of docs/deploying.md."""
    text = (ROOT / "docs" / "deploying.md").read_text()
    return re.findall(rf"```{kind}\n(.*?)```", text, re.S)


def _shell(block: str, folder, env=None):
    """Run each line of a docs ```sh block in `folder` (a line ending in a backslash goes on
    in the next), polyimage as this Python's."""
    for line in block.replace("\\\n", "").strip().splitlines():
        line = re.sub(r"(^|=\S+ )polyimage ", rf"\1{sys.executable} -m polyimage ", line)
        done = subprocess.run(line, shell=True, cwd=folder, capture_output=True, text=True, env=env)
        assert done.returncode == 0, f"{line}\n{done.stdout}{done.stderr}"


def test_the_deploying_page_runs(tmp_path):
    (app,) = _blocks("c")
    (tmp_path / "app.c").write_text(app)
    _shell(_blocks("sh")[0], tmp_path)
    # the page's example of a wrong extent, and its message
    (tmp_path / "app.c").write_text(app.replace("C + 4}", "C + 3}"))
    _shell(_blocks("sh")[0].splitlines()[1], tmp_path)
    done = subprocess.run(["./app"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2
    assert (
        done.stderr
        == "unsharp_mask: image img: dimension 2 must have extent C + 4 = 644, got 643\n"
    )


def test_the_deploying_pages_header_excerpt_is_the_header(tmp_path):
    """The page's excerpt of unsharp_mask.h is the generated header's text, line for line, and
    the header's comment fits 80 columns (but for the one-line link command)."""
    pipe = polyimage.compile(
        unsharp_mask.build()[0],
        estimates=unsharp_mask.PAPER_SIZE,
        name="unsharp_mask",
        build=False,
    )
    header = pipe.export(tmp_path / "lib").folder / "unsharp_mask.h"
    lines = header.read_text().splitlines()
    (excerpt,) = _blocks("text")
    for line in excerpt.splitlines():
        assert line in lines, line
    comment = [line for line in lines if line.startswith(" *") and "Link with" not in line]
    assert comment and max(len(line) for line in comment) <= 80


def test_the_deploying_pages_cross_compile_runs(tmp_path):
    needs_tool("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu")
    needs_tool("qemu-aarch64", "qemu-user")
    (app,) = _blocks("c")
    (tmp_path / "app.c").write_text(app)
    _shell(_blocks("sh")[1], tmp_path)


def test_a_compiler_without_openmp_exports_a_serial_library(tmp_path, rng, monkeypatch):
    wrapper = no_openmp_compiler(tmp_path)
    monkeypatch.setenv("CC", str(wrapper))
    pipe = polyimage.compile(
        unsharp_mask.build()[0], estimates={"R": 256, "C": 256}, name="unsharp_mask", build=False
    )
    folder = tmp_path / "serial"
    with pytest.warns(polyimage.SerialBuildWarning):
        pipe.export(folder)
    assert "libunsharp_mask.a -lm -o app" in (folder / "README.md").read_text()
    assert "cc app.c libunsharp_mask.a -lm\n" in (folder / "unsharp_mask.h").read_text()
    program = build_harness(
        folder, tmp_path / "run", str(wrapper), [], [str(folder / "libunsharp_mask.a"), "-lm"]
    )
    _compare_runs(folder, program, unsharp_mask, rng, tmp_path)


C_FROM_THE_HEADER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "unsharp_mask.h"

/* written from unsharp_mask.h alone: img is float[3, R + 4, C + 4], mask float[3, R, C] */
int main(void) {
    const int32_t R = 5, C = 7;
    int64_t img_extents[3] = {3, R + 4, C + 4}, mask_extents[3] = {3, R, C};
    float *img = malloc(sizeof(float) * 3 * (R + 4) * (C + 4));
    float *mask = malloc(sizeof(float) * 3 * R * C);
    for (int64_t i = 0; i < 3 * (R + 4) * (C + 4); i++) img[i] = (float)(i % 17) * 0.05f;
    if (unsharp_mask(NULL, 1, R, C, 3.0f, 0.001f, img, img_extents, mask, mask_extents)) {
        fprintf(stderr, "%s\n", unsharp_mask_error());
        return 1;
    }
    for (int64_t i = 0; i < 3 * R * C; i++) printf("%.9g\n", mask[i]);
    return 0;
}
"""


def test_the_header_says_what_each_argument_is(tmp_path):
    """Each parameter with the extents it sizes (or that it is a value) and its typical value,
    each buffer with its layout and which point of its stage an element holds; a C program
    written from the header alone gets the interpreter's result."""
    from polyimage.apps import unsharp_mask

    outputs, _ = unsharp_mask.build()
    pipe = polyimage.compile(
        outputs, name="unsharp_mask", estimates=unsharp_mask.PAPER_SIZE, build=False
    )
    pipe.export(tmp_path / "lib")
    header = (tmp_path / "lib" / "unsharp_mask.h").read_text()
    # the comment's text, its lines (wrapped at 80 columns) joined
    header = " ".join(line.lstrip(" *").strip() for line in header.splitlines())
    for line in (
        "C (int32_t): a size: img dimension 2 has C + 4; mask dimension 2 has C (typical: 4256)",
        "R (int32_t): a size: img dimension 1 has R + 4; mask dimension 1 has R (typical: 2848)",
        "threshold (float): a value the pipeline computes with",
        "img (image img): float[3, R + 4, C + 4]",
        "element [i0, i1, i2] holds mask(i0, 2 + i1, 2 + i2), its domain's point",
    ):
        assert line in header, line
    source = tmp_path / "app.c"
    source.write_text(C_FROM_THE_HEADER)
    program = tmp_path / "app"
    link = ["gcc", "-O1", str(source), "-I", str(tmp_path / "lib")]
    link += [str(tmp_path / "lib" / "libunsharp_mask.a"), "-fopenmp", "-lm", "-o", str(program)]
    subprocess.run(link, check=True, capture_output=True)
    ran = subprocess.run([str(program)], capture_output=True, text=True, check=True)
    got = np.array(ran.stdout.split(), dtype=np.float32).reshape(3, 5, 7)
    img = ((np.arange(3 * 9 * 11) % 17) * np.float32(0.05)).astype(np.float32).reshape(3, 9, 11)
    want = polyimage.interpret(outputs, img=img, threshold=0.001, weight=3.0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _gradient():
    """A row gradient whose Parameters are declared `R, C, scale`: not their order by name."""
    R, C = polyimage.Parameter(polyimage.Int, "R"), polyimage.Parameter(polyimage.Int, "C")
    scale = polyimage.Parameter(polyimage.Float, "scale")
    x, y = polyimage.Variable(polyimage.Int, "x"), polyimage.Variable(polyimage.Int, "y")
    img = polyimage.Image(polyimage.Float, "img", [R + 2, C])
    rows, cols = (
        polyimage.Interval(polyimage.Int, 0, R - 1),
        polyimage.Interval(polyimage.Int, 0, C - 1),
    )
    out = polyimage.Function(([x, y], [rows, cols]), polyimage.Float, "grad")
    out.defn = [scale * (img(x + 2, y) - img(x, y))]
    return [out]


def _export_gradient(folder):
    """The gradient exported into `folder`, and the interpreter's output for a 7 x 4 call."""
    outputs = _gradient()
    pipe = polyimage.compile(outputs, estimates={"R": 64, "C": 48}, name="grad", build=False)
    pipe.export(folder)
    img = np.random.default_rng(1).random((9, 4), dtype=np.float32)
    return img, polyimage.interpret(outputs, img=img, scale=0.5)


def test_the_entry_takes_the_parameters_in_their_declared_order(tmp_path):
    img, expected = _export_gradient(tmp_path / "grad")
    declared = "int32_t R, int32_t C, float scale"
    for file in ("grad.h", "grad.c"):
        text = (tmp_path / "grad" / file).read_text()
        assert f"int grad(void *workspace, int nthreads, {declared}, const float *img" in text
        assert f"int grad_extents({declared}, int64_t *extents)" in text
    assert _manifest(tmp_path / "grad")["params"] == [
        ["R", "Int"],
        ["C", "Int"],
        ["scale", "Float"],
    ]
    assert np.array_equal(polyimage.load(tmp_path / "grad")(img, scale=0.5), expected)


def test_the_report_lists_the_parameters_in_their_declared_order():
    pipe = polyimage.compile(_gradient(), estimates={"R": 64, "C": 48}, build=False)
    assert "parameters: R, C, scale" in pipe.report().splitlines()


def test_an_export_made_before_the_declared_order_still_loads(tmp_path, monkeypatch):
    """An export whose entry takes its parameters by name (`grad(ws, n, C, R, scale, ...)`),
    as before they came in declared order, in a manifest of format 1: the loader calls it
    in the order its manifest lists."""
    monkeypatch.setattr(
        "polyimage.tools.export.entry_parameters", lambda compiled: compiled.stage_graph.parameters
    )
    img, expected = _export_gradient(tmp_path / "old")
    header = (tmp_path / "old" / "grad.h").read_text()
    assert "int grad(void *workspace, int nthreads, int32_t C, int32_t R, float scale" in header
    old = {**_manifest(tmp_path / "old"), "format": 1}
    assert old["params"] == [["C", "Int"], ["R", "Int"], ["scale", "Float"]]
    (tmp_path / "old" / "manifest.json").write_text(json.dumps(old))
    assert np.array_equal(polyimage.load(tmp_path / "old")(img, scale=0.5), expected)
