"""A user's script type-checks against the package (py.typed and the annotated public API): mypy
finds no error in a script that writes, compiles and calls a pipeline, sees the types the API
declares (not Any), and reports the mistakes of a wrong script, each on its line."""

import os
import re
import subprocess
import sys
import textwrap

import pytest
from helpers import ROOT

pytest.importorskip("mypy", reason="mypy is not installed (it comes with the test extra)")

RIGHT = """
    import numpy as np

    import polyimage
    from polyimage import (
        Case, Float, Function, Image, Int, Interval, Max, Op, Parameter, Reduce, Reduction,
        Select, Sqrt, Stencil, Variable,
    )

    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 2, C + 2])
    blurx = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 0, C + 1)]), Float, "blurx")
    blurx.defn = [(img(x - 1, y) + img(x, y) + img(x + 1, y)) / 3]
    sharp = Function.like(blurx, Float, "sharp")
    u, v = sharp.variables
    sharp.defn = [
        Case(u > 2, Select(v < 3, blurx(u, v), Sqrt(Max(blurx(u, v), 0.0)))),
        Stencil(blurx, [u, v], [[0, 1, 0], [1, 2, 1], [0, 1, 0]]) * 0.25,
    ]
    b = Variable(Int, "b")
    hist = Reduction(([b], [Interval(Int, 0, 9)]), ([x, y], [Interval(Int, 0, R)] * 2), Int, "h")
    hist.defn = [Reduce(hist(0), 1, Op.Sum)]

    pipe = polyimage.compile([sharp, hist], estimates={R: 2048, C: 2048}, name="blur")
    arr = np.zeros((514, 514), np.float32)
    out = pipe(img=arr, threads=2)
    report: str = pipe.report(vectorization=False)
    background = polyimage.compile(sharp, background=True)
    done: bool = background.ready()
    reveal_type(pipe)
    reveal_type(background.wait(timeout=5.0))
    reveal_type(polyimage.load("folder"))
    reveal_type(blurx(x, y))
    reveal_type(x + 1)
    reveal_type(x < 1)
"""

REVEALED = [
    "polyimage.driver.pipeline.Pipeline",
    "polyimage.driver.pipeline.Pipeline",
    "polyimage.tools.deploy.LoadedPipeline",
    "polyimage.dsl.expr.Reference",
    "polyimage.dsl.arithmetic.Expr",
    "polyimage.dsl.arithmetic.Condition",
]

# each mistake on a line of its own, with the error code mypy gives it
WRONG = {
    "R = Parameter(Int, 5)": "arg-type",
    'img = Image(Float, "img", [R, "C"])': "list-item",
    "f = Function(([x], [Interval(Int, 0, 9)]), Float)": "call-overload",
    'f2 = Function(([x], [Interval(Int, 0, 9)]), Float, "f2")': None,
    "f2.defn = [img(x, 0) * 2]": None,
    "pipe = polyimage.compile(f2)": None,
    'pipe(img=np.zeros((3, 3), np.float32), threads="2")': "arg-type",
    "pipe.reprot()": "attr-defined",
}


def _mypy(tmp_path, name: str, source: str) -> subprocess.CompletedProcess:
    """mypy on the script `source`, finding polyimage in this checkout (as an installed
    package's errors are, the package's own are not reported)."""
    script = tmp_path / f"{name}.py"
    script.write_text(source)
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nfollow_imports = silent\n")
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--no-incremental"]
        + ["--show-error-codes", "--no-color-output", str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_right_script_type_checks_and_sees_the_declared_types(tmp_path):
    done = _mypy(tmp_path, "right", textwrap.dedent(RIGHT))
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert errors == [], done.stdout + done.stderr
    revealed = re.findall(r'Revealed type is "([^"]+)"', done.stdout)
    assert revealed == REVEALED, done.stdout


def test_a_wrong_script_gets_an_error_on_each_mistake(tmp_path):
    header = "import numpy as np\n\nimport polyimage\n"
    header += "from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable\n"
    header += 'x = Variable(Int, "x")\n'
    first = header.count("\n") + 1
    done = _mypy(tmp_path, "wrong", header + "\n".join(WRONG) + "\n")
    found = {
        (int(m.group(1)), m.group(2))
        for m in re.finditer(r"wrong\.py:(\d+): error: .*\[([a-z-]+)\]$", done.stdout, re.M)
    }
    expected = {(first + k, code) for k, code in enumerate(WRONG.values()) if code}
    assert found == expected, done.stdout + done.stderr
    assert done.returncode == 1
