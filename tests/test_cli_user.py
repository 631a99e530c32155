"""The command line and the README as a new user meets them: --version, the app list in
`run --help`, one-line errors (exit status 2) raised before anything is compiled, and the README's
example."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from helpers import ROOT

import polyimage
from polyimage.apps import APP_NAMES, load_app
from polyimage.apps.inputs import bundled, to_float
from polyimage.commands import bench
from polyimage.commands.cli import main
from polyimage.version import __version__


class CompileReached(polyimage.PolyimageError):
    """Raised by the stand-in for polyimage.compile: the run got past its checks."""


@pytest.fixture
def no_compile(monkeypatch):
    """polyimage.compile replaced by a stand-in that fails with CompileReached."""

    def refuse(*args, **kwargs):
        raise CompileReached("compile reached")

    monkeypatch.setattr(polyimage, "compile", refuse)


def one_line_error(err: str) -> str:
    """The single `polyimage: error: ...` line of stderr (and no traceback)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("polyimage: error: ")
    return lines[0]


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"polyimage {__version__}"


def test_run_help_lists_every_app_with_its_description(capsys):
    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    assert "APP [INPUT ...]" in " ".join(out.split()), "INPUT is optional in the usage line"
    flat = " ".join(out.split())
    for name in APP_NAMES:
        app = load_app(name)
        assert app.DESCRIPTION and "\n" not in app.DESCRIPTION
        assert f"{name} {' '.join(app.DESCRIPTION.split())}" in flat, name
        assert ", ".join(app.PHOTOS) in flat


def test_help_of_other_commands_imports_no_app():
    code = (
        "import sys; from polyimage.commands.cli import main; main(['bench', '--help']); "
        "main(['--version']); "
        "print(sorted(m for m in sys.modules if m.startswith('polyimage.apps')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_cli_rejects_unknown_app(capsys):
    assert main(["run", "no_such_app"]) == 2
    assert "unknown app 'no_such_app'" in capsys.readouterr().err


def test_missing_app_is_a_usage_error(capsys):
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert "required: APP" in err and "INPUT" not in err.splitlines()[-1]


@pytest.mark.parametrize(
    "output, expected", [("out.bmp", "'.bmp'"), ("out.tiff", "'.tiff'"), ("out", "no extension")]
)
def test_unsupported_output_format_fails_before_compiling(
    tmp_path, capsys, no_compile, output, expected
):
    target = tmp_path / output
    assert main(["run", "unsharp_mask", "-o", str(target)]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert str(target) in line and expected in line and ".png, .jpg, .jpeg" in line
    assert not target.exists()


def test_output_in_a_missing_folder_fails_before_compiling(tmp_path, capsys, no_compile):
    target = tmp_path / "no_such_folder" / "out.png"
    assert main(["run", "unsharp_mask", "-o", str(target)]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert "no_such_folder" in line and "does not exist" in line


@pytest.mark.parametrize("output", ["out.png", "out.JPG", "out.jpeg"])
def test_supported_output_format_gets_to_compiling(tmp_path, capsys, no_compile, output):
    assert main(["run", "unsharp_mask", "-o", str(tmp_path / output)]) == 2
    assert "compile reached" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["text", "missing", "folder"])
def test_an_input_that_is_no_image_is_a_one_line_error(tmp_path, capsys, no_compile, kind):
    path = tmp_path / "notes.txt"
    if kind == "text":
        path.write_text("not a photo\n")
    elif kind == "folder":
        path.mkdir()
    assert main(["run", "unsharp_mask", str(path)]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert repr(str(path)) in line
    assert {"text": "not an image file", "missing": "No such file", "folder": "directory"}[
        kind
    ] in line


def test_wrong_number_of_inputs_is_reported_before_reading_them(tmp_path, capsys, no_compile):
    missing = tmp_path / "missing.png"
    assert main(["run", "pyramid_blend", str(missing)]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert "takes 2 input photo(s), got 1" in line


def test_grey_with_alpha_photo_becomes_grey_colour():
    grey_alpha = np.stack(
        [np.arange(12, dtype=np.uint8).reshape(3, 4), np.full((3, 4), 255, np.uint8)], axis=2
    )
    rgb = to_float(grey_alpha, channels=3)
    assert rgb.shape == (3, 4, 3)
    np.testing.assert_array_equal(rgb[:, :, 1], grey_alpha[:, :, 0] / np.float32(255))
    assert to_float(grey_alpha, channels=1).shape == (3, 4, 1)


def test_missing_baselines_notes_say_what_and_how_to_install():
    notes = bench.missing_baselines(importable=lambda module: False)
    assert len(notes) == 2
    assert "OpenCV" in notes[0] and "Halide" in notes[1]
    for note in notes:
        assert 'pip install "polyimage[bench]"' in note and 'pip install -e ".[bench]"' in note
    assert bench.missing_baselines(importable=lambda module: True) == []
    only_halide = bench.missing_baselines(importable=lambda module: module == "cv2")
    assert len(only_halide) == 1 and "Halide" in only_halide[0]


def test_bench_reports_the_missing_baselines(monkeypatch, tmp_path):
    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(tmp_path / "cache"))  # it calibrates
    fake = {
        "size": {"R": 4, "C": 5},
        "compile": {"cold": 1.0, "cached": 0.01},
        "timings": {"polyimage:naive": {"median": 0.002, "min": 0.001, "max": 0.003}},
    }
    monkeypatch.setattr(bench, "bench_app", lambda *args: fake)
    monkeypatch.setattr(bench, "missing_baselines", lambda: ["Halide is not installed"])
    lines = []
    bench.run_bench(["unsharp_mask"], json_path=tmp_path / "b.json", report=lines.append)
    notes = [i for i, line in enumerate(lines) if line == "note: Halide is not installed"]
    table = next(i for i, line in enumerate(lines) if "polyimage:naive" in line)
    assert len(notes) == 2 and notes[0] < table < notes[1], "before the run and under the table"
    assert json.loads((tmp_path / "b.json").read_text())["left_out"] == ["Halide is not installed"]


def test_bench_help_says_how_to_install_the_baselines(capsys):
    assert main(["bench", "--help"]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    assert 'pip install "polyimage[bench]"' in flat and "OpenCV" in flat and "Halide" in flat


def test_bundled_photos_of_every_app_exist():
    for name in APP_NAMES:
        for photo in load_app(name).PHOTOS:
            assert bundled(photo).is_file()


def test_a_programming_error_is_not_hidden(monkeypatch):
    """Only polyimage's own errors and file errors become one-line messages; anything else is
    a bug and keeps its traceback."""

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(polyimage, "compile", broken)
    with pytest.raises(KeyError):
        main(["run", "unsharp_mask"])


def test_debug_shows_the_traceback_of_user_errors(tmp_path):
    with pytest.raises(polyimage.PolyimageError, match="takes 1 input photo"):
        main(["--debug", "run", "unsharp_mask", str(tmp_path / "a.png"), str(tmp_path / "b.png")])


def test_readme_example_runs():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    namespace = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["out"].shape == (512, 512)


USER_FILE = """
from polyimage import *


def blurs():
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 2, C + 2])
    blurx = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 0, C + 1)]), Float, "blurx")
    blurx.defn = [(img(x - 1, y) + img(x, y) + img(x + 1, y)) / 3]
    blury = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 1, C)]), Float, "blury")
    blury.defn = [(blurx(x, y - 1) + blurx(x, y) + blurx(x, y + 1)) / 3]
    return blury
"""


def test_report_and_graph_take_a_function_of_a_users_file(tmp_path, capsys):
    """As export does: `polyimage report|graph FILE.py:function`, with --estimates."""
    target = f"{tmp_path / 'mine.py'}:blurs"
    (tmp_path / "mine.py").write_text(USER_FILE)
    assert main(["report", target, "--estimates", "R=2048,C=2048"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("pipeline blury: 2 stages as written") and "group 0: blurx" in out
    assert "estimates: R=2048, C=2048" in out
    assert main(["graph", target, "-o", str(tmp_path / "g.dot")]) == 0
    written = (tmp_path / "g.dot").read_text()
    assert "blurx" in written and "blury" in written and "img" in written
    assert main(["graph", target, "-o", str(tmp_path / "s.dot"), "--schedule", "naive"]) == 0
    assert "blury" in (tmp_path / "s.dot").read_text()
    assert main(["report", f"{tmp_path / 'mine.py'}:nothing"]) == 2
    assert "has no function 'nothing'" in one_line_error(capsys.readouterr().err)
    assert main(["graph", "nowhere.py:blurs", "-o", str(tmp_path / "x.dot")]) == 2
    assert "no file 'nowhere.py'" in one_line_error(capsys.readouterr().err)


COLOUR_FILE = """
from polyimage import *


def brighten():
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    gain = Parameter(Float, "gain")
    c, x, y = Variable(Int, "c"), Variable(Int, "x"), Variable(Int, "y")
    img = Image(UChar, "img", [3, R, C])
    out = Function(([c, x, y], [Interval(Int, 0, 2), Interval(Int, 0, R - 1),
                                Interval(Int, 0, C - 1)]), Float, "out")
    out.defn = [Min(Cast(Float, img(c, x, y)) * gain / 255.0, 1.0)]
    return out
"""


def test_run_takes_a_function_of_a_users_file(tmp_path, capsys):
    """`polyimage run FILE.py:function PHOTO -o OUT --param ... --check`: the photo fills the
    3-D uint8 image channels first, the sizes come from it, the output is saved as a photo."""
    (tmp_path / "mine.py").write_text(USER_FILE)
    (tmp_path / "colour.py").write_text(COLOUR_FILE)
    photo = bundled("coffee.png")
    out = tmp_path / "out.png"
    target = f"{tmp_path / 'colour.py'}:brighten"
    argv = ["run", target, str(photo), "-o", str(out), "--param", "gain=1.5", "--check"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "max abs difference from the interpreter 0" in printed and f"wrote {out}" in printed
    source = np.asarray(polyimage.io.load_image(photo))[:, :, :3].astype(np.float32)
    expected = np.minimum(source * 1.5 / 255.0, 1.0)
    saved = np.asarray(polyimage.io.load_image(out)).astype(np.float32) / 255.0
    assert saved.shape == source.shape and np.abs(saved - expected).max() <= 1 / 255 + 1e-6
    # a grey 2-D image with a border: the bundled photo by default, R and C off its size
    assert main(["run", f"{tmp_path / 'mine.py'}:blurs", "--check", "--runs", "1"]) == 0
    printed = capsys.readouterr()
    assert "max abs difference from the interpreter 0" in printed.out
    assert "no INPUT given, so img reads the bundled photo astronaut.png" in printed.err
    assert main(["run", str(tmp_path / "mine.py"), "-o", str(out)]) == 2
    assert f"here, {tmp_path / 'mine.py'}:blurs" in one_line_error(capsys.readouterr().err)
    assert main(["run", target, str(photo), str(photo)]) == 2
    assert "takes 1 input image(s) (img), got 2" in one_line_error(capsys.readouterr().err)
    assert main(["run", target, "--param", "gains=2"]) == 2
    assert "--param 'gains=2'" in one_line_error(capsys.readouterr().err)


SAME_SHAPE_FILE = """
from polyimage import *


def soften():
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [3, R, C])
    src = mirror(img, dims=(1, 2))
    out = Function.like(img, Float, "out")
    c, x, y = out.variables
    out.defn = [sum(src(c, x + i, y + j) for i in (-2, 0, 2) for j in (-2, 0, 2)) / 9]
    return out
"""


def test_run_writes_a_bordered_pipelines_output_at_the_photos_size(tmp_path, capsys):
    """A user's filter written with Function.like and a border mode: `polyimage run` gives the
    photo in, unpadded, and saves an output of the photo's own size."""
    (tmp_path / "soft.py").write_text(SAME_SHAPE_FILE)
    photo = bundled("coffee.png")
    out = tmp_path / "soft.png"
    argv = ["run", f"{tmp_path / 'soft.py'}:soften", str(photo), "-o", str(out), "--check"]
    assert main(argv) == 0
    assert "max abs difference from the interpreter 0" in capsys.readouterr().out
    source = np.asarray(polyimage.io.load_image(photo))
    assert np.asarray(polyimage.io.load_image(out)).shape[:2] == source.shape[:2]


FUNCTIONS_FILE = """
def blurs():
    pass


def sharpen(strength=2.0, *, name="sharpen"):
    pass


def helper(image):
    pass


def _private():
    pass
"""


def test_a_file_named_without_its_function_names_the_functions_it_could_be(
    tmp_path, capsys, no_compile
):
    """`run mine.py` (the `:function` left out) names FILE.py:function and the file's
    functions that take no arguments; a file that is no Python file, or none at all, is said
    so, and a function the file lacks is answered with those it has."""
    mine = tmp_path / "mine.py"
    mine.write_text(FUNCTIONS_FILE)
    assert main(["run", str(mine), "-o", str(tmp_path / "x.png")]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert "FILE.py:function" in line and f"one of {mine}:blurs, {mine}:sharpen" in line, line
    assert "helper" not in line and "_private" not in line
    (tmp_path / "one.py").write_text("def build():\n    pass\n")
    assert main(["report", str(tmp_path / "one.py")]) == 2
    assert one_line_error(capsys.readouterr().err).endswith(f"here, {tmp_path / 'one.py'}:build")
    notes = tmp_path / "notes.txt"
    notes.write_text("not python\n")
    assert main(["graph", str(notes), "-o", str(tmp_path / "g.dot")]) == 2
    assert "is a file, not an app" in one_line_error(capsys.readouterr().err)
    assert main(["export", str(tmp_path / "gone.py"), "-o", str(tmp_path / "lib")]) == 2
    assert "gone.py: no such file" in one_line_error(capsys.readouterr().err)
    assert main(["run", f"{mine}:blur"]) == 2
    assert f"no function 'blur'; try one of {mine}:blurs" in one_line_error(capsys.readouterr().err)


@pytest.mark.parametrize("name", ["unsharp_mask", "pyramid_blend"])
def test_a_run_without_input_says_which_bundled_photos_it_reads(capsys, no_compile, name):
    """Without INPUT an app runs on its bundled photos and says which, in one line on stderr
    (stdout keeps the results)."""
    assert main(["run", name]) == 2
    captured = capsys.readouterr()
    note, error = captured.err.strip().splitlines()
    photos = load_app(name).PHOTOS
    assert note.startswith(f"polyimage: note: {name}: no INPUT given")
    assert f"bundled photo{'s' if len(photos) > 1 else ''} {', '.join(photos)}" in note
    assert "compile reached" in error and "bundled" not in captured.out


def test_graph_help_says_what_each_option_does(capsys):
    assert main(["graph", "--help"]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    assert "as for export" not in flat
    assert "--estimates K=V,... typical parameter values the groups are planned for" in flat
    assert "graphviz package" in flat and "FILE.dot writes Graphviz text and needs nothing" in flat
