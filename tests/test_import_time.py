"""`import polyimage` stays light: isl, cffi and the compiler's modules load on first compile
(or interpret), while every public name keeps working. Checked in fresh processes, by the modules
loaded rather than by a time."""

import json
import subprocess
import sys

import pytest
from helpers import ROOT, child_env

import polyimage

HEAVY = ("islpy", "cffi", "polyimage.driver", "polyimage.interp", "polyimage.poly")
HEAVY += ("polyimage.jit.build", "polyimage.codegen", "polyimage.grouping", "PIL")


def _loaded_after(code: str, tmp_path) -> list:
    """The heavy modules loaded in a fresh process after running `code`."""
    report = (
        "import json, sys; "
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({HEAVY!r}))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\n{report}"],
        env=child_env(tmp_path / "cache"),
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_loads_nothing_heavy(tmp_path):
    assert _loaded_after("import polyimage", tmp_path) == []


def test_star_import_loads_nothing_heavy(tmp_path):
    code = "from polyimage import *\nassert Function and Image and Schedule and ScheduleError"
    assert _loaded_after(code, tmp_path) == []


def test_the_command_line_loads_nothing_heavy_until_it_compiles(tmp_path):
    code = (
        "from polyimage.commands.cli import main\n"
        "assert main(['--version']) == 0\n"
        "assert main(['cache', 'info']) == 0"
    )
    assert _loaded_after(code, tmp_path) == []


def test_first_use_of_compile_loads_the_compiler(tmp_path):
    loaded = _loaded_after("import polyimage\npolyimage.compile", tmp_path)
    assert "islpy" in loaded and "polyimage.driver.compiling" in loaded


def test_lazy_names_are_the_real_ones():
    from polyimage import Pipeline, compile, interpret
    from polyimage.driver.compiling import compile as real_compile
    from polyimage.driver.pipeline import Pipeline as RealPipeline
    from polyimage.interp import interpret as real_interpret

    assert compile is real_compile and polyimage.compile is real_compile
    assert Pipeline is RealPipeline and interpret is real_interpret
    assert {"compile", "Pipeline", "interpret", "driver", "jit"} <= set(dir(polyimage))
    # submodules are reachable as attributes
    assert polyimage.driver.compiling.compile is real_compile
    with pytest.raises(AttributeError, match="no_such_name"):
        polyimage.no_such_name


def test_every_public_name_resolves():
    namespace = {}
    exec("from polyimage import *", namespace)
    assert set(polyimage.__all__) <= set(namespace)
    for name in polyimage.__all__ + ["compile", "Pipeline", "interpret", "__version__"]:
        assert getattr(polyimage, name) is not None, name
