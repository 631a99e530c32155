"""Whole-compile records (driver/record.py): a compile seen before runs no pass and gives the
same C and results; every input of the key makes a miss when it changes; warnings are issued
again on a hit; a damaged record is rebuilt with a warning; processes share records safely."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
from helpers import child_env, uncovered_read

import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable
from polyimage.config import Options
from polyimage.driver import record
from polyimage.driver.record import record_path

PASSES = ("analyze", "inline", "schedule", "generate_c")


def _blur(constant=0.25, typ=Float, name="out", upper=None):
    R = Parameter(Int, "R")
    x = Variable(Int, "x")
    img = Image(Float, "img", [R])
    last = R - 2 if upper is None else upper(R)
    mid = Function(([x], [Interval(Int, 1, last)]), typ, "mid")
    mid.defn = [(img(x - 1) + img(x) + img(x + 1)) * constant]
    out = Function(([x], [Interval(Int, 1, last)]), Float, name)
    out.defn = [mid(x) * 2.0]
    return [out], R


@pytest.fixture
def options(tmp_path, monkeypatch):
    monkeypatch.delenv("POLYIMAGE_NO_CACHE", raising=False)
    return Options(cache_dir=tmp_path / "cache")


def _compile(outputs, options, **kwargs):
    return polyimage.compile(outputs, options=options, **kwargs)


def test_a_second_compile_runs_no_pass_and_gives_the_same_result(options):
    outputs, _ = _blur()
    first = _compile(outputs, options, estimates={"R": 1000})
    second = _compile(outputs, options, estimates={"R": 1000})
    assert not first.cached and second.cached
    assert all(p in first.pass_seconds for p in PASSES)
    assert not any(p in second.pass_seconds for p in PASSES)
    assert second.cmodule.source == first.cmodule.source
    assert str(second.schedule) == str(first.schedule)
    assert second.origin == "loaded from the cache" and first.origin == "compiled"
    data = np.linspace(0, 1, 37, dtype=np.float32)
    np.testing.assert_array_equal(second(img=data), first(img=data))
    assert "schedule:" in second.report() and "passes:" in second.report()
    assert repr(second).endswith("loaded from the cache>")


def _variants():
    """(what changes, outputs, compile keyword arguments) that must each miss."""
    base, R = _blur()
    yield "a constant", _blur(0.5)[0], {}
    yield "a stage type", _blur(typ=polyimage.Double)[0], {}
    yield "a domain", _blur(upper=lambda R: R - 3)[0], {}
    yield "a stage name", _blur(name="other")[0], {}
    yield "the estimates", base, {"estimates": {"R": 77}}
    yield "the constraints", base, {"constraints": [R >= 8]}
    yield "the schedule", base, {"schedule": "naive"}
    yield "the schedule text", base, {"schedule": "group 0: out [64]"}
    yield "inlining", base, {"inline": False}
    yield "the weights", base, {"weights": {"overlap": 0.9}}
    yield "the pipeline name", base, {"name": "renamed"}


@pytest.mark.parametrize("change", [v[0] for v in _variants()])
def test_every_input_of_the_key_misses(options, change):
    base, _ = _blur()
    _compile(base, options)
    _, outputs, kwargs = next(v for v in _variants() if v[0] == change)
    changed = _compile(outputs, options, **kwargs)
    assert not changed.cached, change
    assert _compile(outputs, options, **kwargs).cached, change  # and is kept itself


def test_options_machine_and_version_are_in_the_key(options, monkeypatch):
    outputs, _ = _blur()
    _compile(outputs, options)
    flagged = Options(cache_dir=options.cache_dir, cflags=options.cflags + ("-DPIM_OTHER",))
    assert not _compile(outputs, flagged).cached
    machine = Options(cache_dir=options.cache_dir, machine={"l2_bytes": 12345})
    assert not _compile(outputs, machine).cached
    monkeypatch.setattr("polyimage.driver.record.__version__", "0.0.0-other")
    assert not _compile(outputs, options).cached


def test_a_changed_compiler_source_misses(options, monkeypatch, tmp_path):
    outputs, _ = _blur()
    _compile(outputs, options)
    assert _compile(outputs, options).cached
    digest = record.compiler_digest()
    assert len(digest) == 64 and digest == record.compiler_digest()
    monkeypatch.setattr(record, "compiler_digest", lambda: "0" * 64)
    assert not _compile(outputs, options).cached


def test_the_compiler_digest_covers_the_compiler_only(monkeypatch, tmp_path):
    """A copy of the package: editing a pass in any folder changes the digest, editing an app
    does not."""
    package = tmp_path / "polyimage"
    for name, text in (
        ("driver/record.py", "x = 1\n"),
        ("codegen/blocked.py", "y = 2\n"),
        ("apps/app.py", "z = 3\n"),
    ):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    monkeypatch.setattr(record, "__file__", str(package / "driver" / "record.py"))
    digests = []
    for path, text in (
        (None, None),
        (package / "apps" / "app.py", "z = 4\n"),
        (package / "codegen" / "blocked.py", "y = 5\n"),
    ):
        if path is not None:
            path.write_text(text)
        record.compiler_digest.cache_clear()
        digests.append(record.compiler_digest())
    record.compiler_digest.cache_clear()
    assert digests[0] == digests[1] != digests[2]


def test_warnings_are_issued_again_on_a_hit(options):
    outputs = uncovered_read()
    for expect_cached in (False, True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pipe = _compile(outputs, options, inline=False, schedule="auto")
        assert pipe.cached is expect_cached
        kinds = {(w.category, str(w.message).split(",")[0].split(":")[0]) for w in caught}
        assert (polyimage.UncoveredReadWarning, "g (its definition) reads f(x)") in kinds
        assert (polyimage.EstimateWarning, "no estimate for R") in kinds


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "other object"])
def test_a_damaged_record_is_rebuilt_with_a_warning(options, damage):
    outputs, _ = _blur()
    first = _compile(outputs, options)
    path = next((options.cache_dir / "records").rglob("*.pickle"))
    data = path.read_bytes()
    path.write_bytes(
        {
            "truncate": data[: len(data) // 2],
            "garbage": b"\x80\x05not a pickle at all",
            "empty": b"",
            "other object": b"\x80\x04K\x07.",  # the pickle of 7
        }[damage]
    )
    with pytest.warns(polyimage.CacheWarning, match="compile record .* is damaged"):
        again = _compile(outputs, options)
    assert not again.cached and again.cmodule.source == first.cmodule.source
    with warnings.catch_warnings():
        warnings.simplefilter("error", polyimage.CacheWarning)
        assert _compile(outputs, options).cached


def test_no_cache_and_dumps_run_every_pass(options, tmp_path):
    outputs, _ = _blur()
    _compile(outputs, options)
    off = Options(cache_dir=options.cache_dir, use_cache=False)
    assert not _compile(outputs, off).cached
    dumped = _compile(outputs, options, dump=tmp_path / "dump")
    assert not dumped.cached and (tmp_path / "dump" / "out" / "01-graph.txt").is_file()


def test_the_record_path_is_under_the_cache(options):
    outputs, _ = _blur()
    pipe = _compile(outputs, options)
    records = list((options.cache_dir / "records").rglob("*.pickle"))
    assert len(records) == 1 and records[0].parent.parent == options.cache_dir / "records"
    assert record_path(options.cache_dir, records[0].stem) == records[0]
    assert pipe.cached is False


CHILD = """
import numpy as np, polyimage, sys
from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable
R = Parameter(Int, "R"); x = Variable(Int, "x")
img = Image(Float, "img", [R])
f = Function(([x], [Interval(Int, 0, R - 1)]), Float, "f")
f.defn = [img(x) * float(sys.argv[1])]
pipe = polyimage.compile([f], name="shared")
data = np.arange(5, dtype=np.float32)
assert (pipe(img=data) == data * np.float32(float(sys.argv[1]))).all()
print(pipe.cached)
"""


def test_processes_compile_the_same_and_different_pipelines_at_once(tmp_path):
    env = child_env(tmp_path / "cache")
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(k % 2 + 2)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(4)
    ]
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
    again = subprocess.run(
        [sys.executable, "-c", CHILD, "2"], env=env, capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0 and again.stdout.strip() == "True", again.stderr
