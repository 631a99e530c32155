"""The on-disk build cache: hits and misses, entry layout, keys, POLYIMAGE_NO_CACHE, concurrent
builds from several processes, compiler failures, clearing, and what is logged."""

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT, child_env

import polyimage
from polyimage.config import DEFAULT_CFLAGS, Options
from polyimage.driver.record import RECORDS
from polyimage.jit import build, cache
from polyimage.jit.toolchain import TOOLCHAIN_DIR

# The same text defines the pipeline here (through exec) and in child processes, so both
# generate the same C.
PIPELINE_SRC = """
import json
import numpy as np
import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable
N = Parameter(Int, "N")
i = Variable(Int, "i")
a = Image(Float, "a", [N])
scaled = Function(([i], [Interval(Int, 0, N - 1)]), Float, "scaled")
scaled.defn = [a(i) * {scale!r}]
"""

CHILD_SRC = (
    PIPELINE_SRC
    + """
pipe = polyimage.compile(scaled)
data = np.arange(7, dtype=np.float32)
out = pipe(a=data)
assert (out == data * np.float32({scale!r})).all(), out
info = pipe.build_info
print(json.dumps({{"key": info.key, "hit": info.cache_hit, "path": str(info.path)}}))
"""
)


def _pipeline(scale=3.0):
    namespace = {}
    exec(PIPELINE_SRC.format(scale=scale), namespace)
    return namespace["scaled"]


def _check_runs(pipe, scale=3.0):
    data = np.arange(7, dtype=np.float32)
    np.testing.assert_array_equal(pipe(a=data), data * np.float32(scale))


def _entries(root: Path) -> list:
    root = Path(root)
    return sorted(p for p in root.glob("??/*") if p.is_dir()) if root.is_dir() else []


def _leftovers(root: Path) -> list:
    """Anything under the cache root that is not a complete entry or its two-letter folder, a
    compile record (driver/record.py) or its folder, or what the compiler said about itself
    (jit/toolchain.py, complete .json files)."""
    root = Path(root)
    if not root.is_dir():
        return []
    entries = set(_entries(root))
    records, facts = root / RECORDS, root / TOOLCHAIN_DIR
    stray = [
        p
        for folder, suffix in ((records, ".pickle"), (facts, ".json"))
        if folder.is_dir()
        for p in folder.rglob("*")
        if p.is_file() and p.suffix != suffix
    ]
    return sorted(
        [
            p
            for p in root.iterdir()
            if p not in (records, facts)
            and not (p.is_dir() and len(p.name) == 2 and set(p.iterdir()) <= entries)
        ]
        + stray
    )


def _start_child(cache_dir: Path, scale=3.0) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD_SRC.format(scale=scale)],
        env=child_env(cache_dir),
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish_child(proc: subprocess.Popen) -> dict:
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{stderr}"
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh cache directory, set through the environment as users do."""
    root = tmp_path / "cache"
    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(root))
    monkeypatch.delenv("POLYIMAGE_NO_CACHE", raising=False)
    return root


# -- hits and misses in one process ----------------------------------------------------------


def test_second_build_in_one_process_is_a_cache_hit(cache_dir, monkeypatch):
    first = polyimage.compile(_pipeline())
    assert first.build_info.cache_hit is False

    def no_compiler(argv, cwd):
        raise AssertionError(f"a cached build ran {argv[0]}")

    monkeypatch.setattr(build, "_run", no_compiler)
    second = polyimage.compile(_pipeline())  # fresh DSL objects, identical pipeline
    assert second.build_info.cache_hit is True
    assert second.build_info.key == first.build_info.key
    assert second.build_info.path == first.build_info.path
    _check_runs(first)
    _check_runs(second)


def test_options_cache_dir(tmp_path):
    options = Options(cache_dir=tmp_path / "opts")
    first = polyimage.compile(_pipeline(), options=options)
    second = polyimage.compile(_pipeline(), options=options)
    assert (first.build_info.cache_hit, second.build_info.cache_hit) == (False, True)
    assert [p.name for p in _entries(tmp_path / "opts")] == [first.build_info.key]
    _check_runs(second)


def test_entry_layout(cache_dir):
    pipe = polyimage.compile(_pipeline())
    key = pipe.build_info.key
    assert re.fullmatch(r"[0-9a-f]{64}", key), key
    entry = cache_dir / key[:2] / key
    assert pipe.build_info.path == entry
    assert _entries(cache_dir) == [entry]
    assert _leftovers(cache_dir) == []
    assert (entry / "kernel.c").read_text() == pipe.c_source
    meta = json.loads((entry / "meta.json").read_text())
    assert isinstance(meta, dict) and meta
    assert (entry / "build.log").is_file()
    libraries = [p for p in entry.iterdir() if p.suffix in (".so", ".dylib")]
    assert len(libraries) == 1 and libraries[0].stat().st_size > 0, list(entry.iterdir())
    assert libraries[0].stem == meta["module"]
    assert cache.lookup(cache_dir, key) == entry


# -- keys -------------------------------------------------------------------------------------


def test_key_changes_with_the_c_source(cache_dir):
    three = polyimage.compile(_pipeline(3.0))
    four = polyimage.compile(_pipeline(4.0))
    assert three.c_source != four.c_source
    assert three.build_info.key != four.build_info.key
    assert four.build_info.cache_hit is False
    assert len(_entries(cache_dir)) == 2
    _check_runs(three, 3.0)
    _check_runs(four, 4.0)


def test_key_changes_with_the_flags(tmp_path):
    plain = polyimage.compile(_pipeline(), options=Options(cache_dir=tmp_path))
    flagged = polyimage.compile(
        _pipeline(),
        options=Options(cache_dir=tmp_path, cflags=DEFAULT_CFLAGS + ("-DPOLYIMAGE_TEST_FLAG=1",)),
    )
    assert plain.c_source == flagged.c_source
    assert plain.build_info.key != flagged.build_info.key
    assert flagged.build_info.cache_hit is False
    assert len(_entries(tmp_path)) == 2
    _check_runs(flagged)


def test_key_is_the_same_in_two_processes(cache_dir, tmp_path):
    child = _finish_child(_start_child(tmp_path / "child_cache"))
    assert child["hit"] is False
    here = polyimage.compile(_pipeline())
    assert here.build_info.cache_hit is False
    assert child["key"] == here.build_info.key


def test_second_process_loads_from_the_cache(cache_dir):
    here = polyimage.compile(_pipeline())
    assert here.build_info.cache_hit is False
    child = _finish_child(_start_child(cache_dir))
    assert child["hit"] is True
    assert child["key"] == here.build_info.key
    assert Path(child["path"]) == here.build_info.path
    assert len(_entries(cache_dir)) == 1


# -- POLYIMAGE_NO_CACHE ------------------------------------------------------------------------


def test_no_cache_leaves_nothing(cache_dir, monkeypatch):
    monkeypatch.setenv("POLYIMAGE_NO_CACHE", "1")
    first = polyimage.compile(_pipeline())
    second = polyimage.compile(_pipeline())
    assert first.build_info.cache_hit is False
    assert second.build_info.cache_hit is False
    _check_runs(first)
    _check_runs(second)
    assert not cache_dir.exists() or list(cache_dir.iterdir()) == []
    assert not first.build_info.path.exists()


def test_no_cache_leaves_no_temporary_directories(cache_dir, monkeypatch, tmp_path):
    """Private build directories go away after a build, whether it worked or not."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("POLYIMAGE_NO_CACHE", "1")
    _check_runs(polyimage.compile(_pipeline()))
    assert list(scratch.iterdir()) == []
    with pytest.raises(polyimage.CompileError) as info:
        polyimage.compile(
            _pipeline(),
            options=Options(
                cache_dir=cache_dir, use_cache=False, cflags=("-this-flag-does-not-exist",)
            ),
        )
    kept = Path(info.value.log_path).parent
    assert kept.is_dir()
    assert [p for p in scratch.iterdir() if p != kept] == []
    assert not cache_dir.exists() or list(cache_dir.iterdir()) == []


# -- several processes -------------------------------------------------------------------------


def test_two_processes_build_at_once(tmp_path):
    root = tmp_path / "shared"
    procs = [_start_child(root, 5.0), _start_child(root, 5.0)]
    results = [_finish_child(p) for p in procs]
    assert results[0]["key"] == results[1]["key"]
    assert results[0]["path"] == results[1]["path"]
    entries = _entries(root)
    assert [p.name for p in entries] == [results[0]["key"]]
    assert _leftovers(root) == []
    assert (entries[0] / "meta.json").is_file()
    # and a third process now finds it there
    assert _finish_child(_start_child(root, 5.0))["hit"] is True


# -- compiler failures -------------------------------------------------------------------------


def test_compiler_failure(tmp_path):
    root = tmp_path / "cache"
    options = Options(cache_dir=root, cflags=DEFAULT_CFLAGS + ("-this-flag-does-not-exist",))
    with pytest.raises(polyimage.CompileError) as info:
        polyimage.compile(_pipeline(), options=options)
    try:
        log_path = Path(info.value.log_path)
        assert log_path.name == "build.log" and log_path.is_file()
        assert "this-flag-does-not-exist" in log_path.read_text(errors="replace")
        assert "scaled" in str(info.value) and str(log_path) in str(info.value)
        assert isinstance(info.value, RuntimeError)
        assert _entries(root) == []
        assert _leftovers(root) == []
        # the failure did not poison the cache: good flags build and run
        good = polyimage.compile(_pipeline(), options=Options(cache_dir=root))
        assert good.build_info.cache_hit is False
        _check_runs(good)
    finally:
        shutil.rmtree(Path(info.value.log_path).parent, ignore_errors=True)


# -- clearing ----------------------------------------------------------------------------------


def test_clear(cache_dir, tmp_path):
    polyimage.compile(_pipeline(3.0))
    polyimage.compile(_pipeline(6.0))
    assert len(_entries(cache_dir)) == 2
    assert cache.clear(cache_dir) == 2
    assert _entries(cache_dir) == []
    assert cache.clear(cache_dir) == 0
    assert cache.clear(tmp_path / "does-not-exist") == 0
    again = polyimage.compile(_pipeline(3.0))
    assert again.build_info.cache_hit is False
    _check_runs(again)


# -- logging -----------------------------------------------------------------------------------


def test_logging_of_misses_and_hits(cache_dir, caplog):
    caplog.set_level(logging.INFO, logger="polyimage")
    polyimage.compile(_pipeline())
    miss = [r for r in caplog.records if r.name == "polyimage" and r.levelno == logging.INFO]
    assert any("compiled" in r.getMessage() and "scaled" in r.getMessage() for r in miss), [
        r.getMessage() for r in miss
    ]
    assert not any("loaded from the cache" in r.getMessage() for r in miss)
    caplog.clear()
    polyimage.compile(_pipeline())
    hit = [r for r in caplog.records if r.name == "polyimage" and r.levelno == logging.INFO]
    assert any(
        "loaded from the cache" in r.getMessage() and "scaled" in r.getMessage() for r in hit
    ), [r.getMessage() for r in hit]
    assert not any("compiled" in r.getMessage() for r in hit)


# -- damaged entries heal ----------------------------------------------------------------------


def _module(entry: Path) -> Path:
    meta = json.loads((entry / "meta.json").read_text())
    return entry / meta["module_file"]


def _truncate(fraction):
    def damage(entry):
        module = _module(entry)
        data = module.read_bytes()
        module.write_bytes(data[: int(len(data) * fraction)])

    return damage


def _garble(entry):
    module = _module(entry)
    data = bytearray(module.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(255 - b for b in data[middle : middle + 64])
    module.write_bytes(bytes(data))


def _write_meta(text):
    return lambda entry: (entry / "meta.json").write_text(text)


@pytest.fixture(scope="module")
def built_by_a_child(tmp_path_factory):
    """(a cache in which a child process built the pipeline, the child's report): built once,
    each damage test damaging a copy of it."""
    root = tmp_path_factory.mktemp("built_by_a_child") / "cache"
    first = _finish_child(_start_child(root))
    assert first["hit"] is False
    return root, first


@pytest.mark.parametrize(
    "damage",
    [
        _truncate(0.1),
        _truncate(0.25),
        _truncate(0.9),
        _truncate(0.0),
        _garble,
        lambda entry: (entry / "meta.json").unlink(),
        lambda entry: _module(entry).unlink(),
        _write_meta("{not json"),
        _write_meta("[]"),
        _write_meta('{"module_file": 3}'),
    ],
    ids=[
        "truncated-10%",
        "truncated-25%",
        "truncated-90%",
        "emptied",
        "garbled",
        "meta-deleted",
        "module-deleted",
        "meta-garbled",
        "meta-a-list",
        "meta-wrong-types",
    ],
)
def test_damaged_entry_is_rebuilt_with_a_warning(tmp_path, damage, built_by_a_child):
    """Each damage once made every later compile fail (ImportError, SIGBUS, OSError)."""
    pristine, first = built_by_a_child
    root = tmp_path / "cache"
    shutil.copytree(pristine, root)  # the entry a child built, as it left it
    entry = root / Path(first["path"]).relative_to(pristine)
    assert cache.damage(entry) is None
    damage(entry)
    proc = _start_child(root)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{stderr}"
    second = json.loads(stdout.strip().splitlines()[-1])
    assert second["hit"] is False and second["path"] == str(entry)
    assert "CacheWarning" in stderr and str(entry) in stderr and "rebuilding" in stderr, stderr
    assert cache.damage(entry) is None
    assert _leftovers(root) == []
    third = _finish_child(_start_child(root))
    assert third["hit"] is True


def test_damage_checks_size_and_hash(cache_dir):
    pipe = polyimage.compile(_pipeline())
    entry = pipe.build_info.path
    meta = json.loads((entry / "meta.json").read_text())
    assert meta["module_bytes"] == _module(entry).stat().st_size
    assert meta["module_sha256"] == cache.file_digest(_module(entry))
    assert cache.damage(entry) is None
    (entry / "meta.json").write_text(json.dumps(dict(meta, module_sha256="0" * 64)))
    assert "SHA-256" in cache.damage(entry)
    (entry / "meta.json").write_text(json.dumps(dict(meta, module_bytes=1)))
    assert "bytes" in cache.damage(entry)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_staging_folders_of_killed_builds_are_swept(cache_dir):
    import socket

    cache_dir.mkdir(parents=True)
    host = socket.gethostname()
    dead = cache_dir / f"{cache.STAGING_PREFIX}{host}-{_dead_pid()}-abc123"
    mine = cache_dir / f"{cache.STAGING_PREFIX}{host}-{os.getpid()}-def456"
    old_foreign = cache_dir / f"{cache.STAGING_PREFIX}other-host-7-ghi789"
    new_foreign = cache_dir / f"{cache.STAGING_PREFIX}other-host-8-jkl012"
    trash = cache_dir / "ab" / f"{cache.TRASH_PREFIX}ab12-1-2"
    for folder in (dead, mine, old_foreign, new_foreign, trash):
        (folder / "build").mkdir(parents=True)
        (folder / "build" / "half.o").write_bytes(b"\0" * 10)
    stale = time.time() - cache.STALE_SECONDS - 60
    os.utime(old_foreign, (stale, stale))
    _check_runs(polyimage.compile(_pipeline()))  # a miss: the build sweeps first
    assert not dead.exists() and not old_foreign.exists() and not trash.exists()
    assert mine.exists() and new_foreign.exists()  # live or recent builds are left alone
