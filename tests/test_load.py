"""`polyimage.load(DIR)`: an exported pipeline called through cffi's ABI mode takes the arguments
of the compiled one, gives its results bit for bit, refuses the same bad calls with the same
messages, and runs in a process where neither islpy nor a C compiler can be had."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import polyimage
from polyimage.apps import bilateral_grid, histogram_equalize, unsharp_mask
from polyimage.tools.deploy import LoadError

APPS = {"unsharp_mask": unsharp_mask, "histogram_equalize": histogram_equalize}


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """{app: (compiled pipeline, the same loaded from its export)}."""
    made = {}
    for name, app in {**APPS, "bilateral_grid": bilateral_grid}.items():
        pipe = polyimage.compile(app.build()[0], estimates=app.SMALL_SIZE, name=name)
        folder = tmp_path_factory.mktemp(name)
        pipe.export(folder)
        made[name] = (pipe, polyimage.load(folder))
    return made


def _arguments(app, rng, rows, cols) -> dict:
    photo = rng.integers(0, 256, (rows, cols, 3), dtype=np.uint8)
    return {**app.prepare([photo], {"R": rows, "C": cols}), **app.DEFAULTS}


@pytest.mark.parametrize("name", ["unsharp_mask", "histogram_equalize", "bilateral_grid"])
def test_a_loaded_pipeline_gives_the_compiled_result(pair, name, rng):
    pipe, loaded = pair[name]
    app = {**APPS, "bilateral_grid": bilateral_grid}[name]
    for rows, cols in ((1, 1), (29, 41)):
        arguments = _arguments(app, rng, rows, cols)
        for threads in (1, 2):
            expected = pipe(threads=threads, **arguments)
            got = loaded(threads=threads, **arguments)
            assert got.dtype == expected.dtype and np.array_equal(got, expected, equal_nan=True)
        out = np.empty_like(expected)
        assert loaded(out=out, **arguments) is out and np.array_equal(out, expected, equal_nan=True)


def _message(call) -> tuple:
    with pytest.raises(polyimage.PolyimageError) as caught:
        call()
    return type(caught.value), str(caught.value)


def test_bad_calls_fail_as_the_compiled_pipelines_do(pair, rng):
    pipe, loaded = pair["unsharp_mask"]
    img = _arguments(unsharp_mask, rng, 9, 7)["img"]
    bad = [
        {"img": img[:, :, :4]},  # C = 0: an empty domain
        {"img": img, "C": 3},  # a given parameter that disagrees with the shape
        {"img": img.astype(np.float64)},
        {"img": img[0]},
        {"img": img.tolist()},
        {"img": img, "R": 5.5},
        {"img": img, "nope": 1},
        {},
        {"img": img, "threads": 0},
        {"img": img, "out": np.empty((3, 9, 6), np.float32)},
        {"img": img, "out": img},
        {"img": img[:, :, :4], "R": 9},
    ]
    for arguments in bad:
        arguments = {**unsharp_mask.DEFAULTS, **arguments}
        expected = _message(lambda: pipe(**arguments))
        assert _message(lambda: loaded(**arguments)) == expected
    assert _message(lambda: loaded(img, img)) == _message(lambda: pipe(img, img))


def test_the_library_refuses_overlapping_buffers_itself(pair):
    loaded = pair["unsharp_mask"][1]
    ffi = loaded.ffi
    img = np.zeros((3, 9, 9), np.float32)
    pointer = ffi.from_buffer("float[]", img, require_writable=True)
    extents = ffi.new("int64_t[]", [3, 9, 9])
    out_extents = ffi.new("int64_t[]", [3, 5, 5])
    status = loaded.lib.unsharp_mask(
        ffi.NULL, 1, 5, 5, 3.0, 0.001, pointer, extents, pointer, out_extents
    )
    assert status == 2
    assert ffi.string(loaded.lib.unsharp_mask_error()).decode() == "output mask overlaps img"


def test_a_folder_that_is_no_export_is_one_clear_error(tmp_path):
    with pytest.raises(LoadError, match="manifest.json"):
        polyimage.load(tmp_path)
    (tmp_path / "manifest.json").write_text('{"format": 99}')
    with pytest.raises(LoadError, match="export it again"):
        polyimage.load(tmp_path)


LOADER = textwrap.dedent(
    """
    import sys
    sys.modules["islpy"] = None  # importing islpy fails, as where it is not installed
    import numpy as np
    import polyimage
    arguments = dict(np.load(sys.argv[2]))
    result = polyimage.load(sys.argv[1])(threads=2, weight=3.0, threshold=0.001, **arguments)
    np.save(sys.argv[3], result)
    assert "islpy" not in sys.modules or sys.modules["islpy"] is None
    assert "polyimage.driver.pipeline" not in sys.modules
    assert "polyimage.jit.build" not in sys.modules
    """
)


def test_a_machine_without_a_compiler_or_islpy_runs_an_export(pair, tmp_path, rng):
    pipe, loaded = pair["unsharp_mask"]
    arguments = _arguments(unsharp_mask, rng, 13, 11)
    np.savez(tmp_path / "arguments.npz", img=arguments["img"])
    script = tmp_path / "loader.py"
    script.write_text(LOADER)
    env = {
        **os.environ,
        "PATH": str(tmp_path / "empty"),  # no cc, gcc or clang to be found
        "CC": str(tmp_path / "no-compiler"),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "faulthandler",
            str(script),
            str(loaded.folder),
            str(tmp_path / "arguments.npz"),
            str(tmp_path / "result.npy"),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert np.array_equal(np.load(tmp_path / "result.npy"), pipe(**arguments))


def test_a_pipeline_of_two_outputs_loads_as_it_compiles(tmp_path, rng):
    from polyimage import Float, Function, Image, Int, Interval, Parameter, Short, Variable

    R = Parameter(Int, "R")
    x = Variable(Int, "x")
    img = Image(Short, "img", [R + 1])
    rise = Function(([x], [Interval(Int, 0, R - 1)]), Short, "rise")
    rise.defn = [img(x + 1) - img(x)]
    half = Function(([x], [Interval(Int, 0, R // 2)]), Float, "half")
    half.defn = [img(2 * x) * 0.5]
    pipe = polyimage.compile([rise, half], estimates={R: 4096}, name="two")
    pipe.export(tmp_path)
    loaded = polyimage.load(tmp_path)
    for size in (2, 9, 1000):
        arguments = {"img": rng.integers(-300, 300, size, dtype=np.int16)}
        expected, got = pipe(**arguments), loaded(**arguments)
        assert isinstance(got, tuple) and len(got) == 2
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype and np.array_equal(g, e)
