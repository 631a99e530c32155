"""The bounded build cache: least-recently-used eviction under POLYIMAGE_CACHE_MAX, hits that
refresh recency, `polyimage cache info|clear`, and processes sharing one small, capped cache."""

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT, child_env

import polyimage
from polyimage.commands.cli import main
from polyimage.commands.handlers import human_size
from polyimage.config import DEFAULT_CACHE_MAX, Options
from polyimage.jit import cache
from polyimage.jit.toolchain import TOOLCHAIN_DIR

PIPELINE_SRC = """
import json
import numpy as np
import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable

def scaled(scale):
    N = Parameter(Int, "N")
    i = Variable(Int, "i")
    a = Image(Float, "a", [N])
    f = Function(([i], [Interval(Int, 0, N - 1)]), Float, "scaled")
    f.defn = [a(i) * scale]
    return f
"""

# each child compiles its scales in order, runs every pipeline and reports its cache hits
CHILD_SRC = (
    PIPELINE_SRC
    + """
import sys
hits = []
for scale in json.loads(sys.argv[1]):
    pipe = polyimage.compile(scaled(scale))
    data = np.arange(9, dtype=np.float32)
    out = pipe(a=data)
    assert (out == data * np.float32(scale)).all(), (scale, out)
    hits.append(pipe.build_info.cache_hit)
print(json.dumps(hits))
"""
)


def _scaled(scale):
    namespace = {}
    exec(PIPELINE_SRC, namespace)
    return namespace["scaled"](scale)


def _check_runs(pipe, scale):
    data = np.arange(9, dtype=np.float32)
    np.testing.assert_array_equal(pipe(a=data), data * np.float32(scale))


def _fake_entries(root: Path, sizes: list, start: float) -> list:
    """Entry folders of `sizes` bytes, last used 10 s apart from `start` on, oldest first."""
    made = []
    for k, size in enumerate(sizes):
        key = f"{k:02x}" + "0" * 62
        entry = cache.entry_dir(root, key)
        entry.mkdir(parents=True)
        (entry / "module.so").write_bytes(b"\0" * size)
        os.utime(entry, (start + 10 * k, start + 10 * k))
        made.append(entry)
    return made


def _modules(root: Path) -> list:
    """The built modules' entry folders, least recently used first."""
    return [e.path for e in cache.entries(root) if e.kind == cache.MODULE]


def _run_children(root: Path, plans: list, **env) -> list:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD_SRC, json.dumps(plan)],
            env=child_env(root, **env),
            cwd=str(ROOT),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for plan in plans
    ]
    results = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{stderr}"
        assert "CacheWarning" not in stderr, stderr
        results.append(json.loads(stdout.strip().splitlines()[-1]))
    return results


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(root))
    monkeypatch.delenv("POLYIMAGE_NO_CACHE", raising=False)
    monkeypatch.delenv("POLYIMAGE_CACHE_MAX", raising=False)
    return root


# -- the cap --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, size",
    [("1073741824", 1 << 30), ("500M", 500 << 20), ("2G", 2 << 30), ("64k", 64 << 10)]
    + [("1.5GiB", 3 << 29), ("300 MB", 300 << 20), ("100B", 100), ("0", 0)],
)
def test_cache_max_from_the_environment(text, size):
    assert Options.from_env({"POLYIMAGE_CACHE_MAX": text}).cache_max_bytes == size


def test_cache_max_defaults_to_one_gibibyte():
    assert DEFAULT_CACHE_MAX == 1 << 30
    assert Options().cache_max_bytes == 1 << 30
    assert Options.from_env({}).cache_max_bytes == 1 << 30
    assert Options.from_env({"POLYIMAGE_CACHE_MAX": ""}).cache_max_bytes == 1 << 30


@pytest.mark.parametrize("text", ["lots", "-1", "2X", "G", "1e9", "1.2.3", "5 GG"])
def test_a_bad_cache_max_names_the_variable(text):
    with pytest.raises(ValueError, match="POLYIMAGE_CACHE_MAX must be a size") as info:
        Options.from_env({"POLYIMAGE_CACHE_MAX": text})
    assert repr(text) in str(info.value) and "\n" not in str(info.value)


# -- least recently used first --------------------------------------------------------------


def test_entries_are_listed_least_recently_used_first(tmp_path):
    made = _fake_entries(tmp_path, [300, 100, 200], start=time.time() - 1000)
    os.utime(made[0], None)  # the oldest is used now
    (made[1].parent / f"{cache.TRASH_PREFIX}going-1-2").mkdir()
    (made[1].parent / "stray-file").write_text("not an entry")
    listed = cache.entries(tmp_path)
    assert [e.path for e in listed] == [made[1], made[2], made[0]]
    assert [e.size for e in listed] == [100, 200, 300]
    assert cache.entries(tmp_path / "missing") == []


def test_files_in_other_folders_are_entries_too(tmp_path):
    """Such as compile records: each file is an entry, removed by unlinking it."""
    old = time.time() - 1000
    module = _fake_entries(tmp_path, [100], start=old + 20)[0]
    records = tmp_path / "records" / "ab"
    records.mkdir(parents=True)
    (records / "k1.pickle").write_bytes(b"r" * 50)
    (records / "k2.pickle").write_bytes(b"r" * 70)
    (records / ".record-being-written").write_bytes(b"r" * 1000)
    os.utime(records / "k1.pickle", (old, old))
    os.utime(records / "k2.pickle", (old + 30, old + 30))
    listed = cache.entries(tmp_path)
    assert [(e.path, e.kind, e.size) for e in listed] == [
        (records / "k1.pickle", "records", 50),
        (module, cache.MODULE, 100),
        (records / "k2.pickle", "records", 70),
    ]
    assert cache.evict(tmp_path, max_bytes=100) == [records / "k1.pickle", module]
    assert cache.clear(tmp_path) == 0  # built modules
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [".record-being-written"]


def test_eviction_removes_the_least_recently_used_until_under_the_cap(tmp_path):
    made = _fake_entries(tmp_path, [400, 100, 300, 200, 500], start=time.time() - 1000)
    assert cache.evict(tmp_path, max_bytes=1000) == made[:2]  # 1500 -> 1100 -> 1000 bytes
    assert [e.path for e in cache.entries(tmp_path)] == made[2:]
    assert cache.evict(tmp_path, max_bytes=1000) == []
    assert cache.evict(tmp_path, max_bytes=699) == [made[2], made[3]]  # 1000 -> 700 -> 500
    assert [e.path for e in cache.entries(tmp_path)] == made[4:]
    assert list(tmp_path.glob(f"??/{cache.TRASH_PREFIX}*")) == []


def test_eviction_keeps_the_entries_asked_for(tmp_path):
    made = _fake_entries(tmp_path, [100, 100, 100, 100], start=time.time() - 1000)
    assert cache.evict(tmp_path, max_bytes=0, keep=[made[0]]) == made[1:]
    assert [e.path for e in cache.entries(tmp_path)] == [made[0]]


def test_a_hit_refreshes_recency(cache_dir):
    first = polyimage.compile(_scaled(3.0))
    second = polyimage.compile(_scaled(4.0))
    old = time.time() - 1000
    os.utime(first.build_info.path, (old, old))
    os.utime(second.build_info.path, (old + 10, old + 10))
    again = polyimage.compile(_scaled(3.0))
    assert again.build_info.cache_hit is True
    assert _modules(cache_dir) == [second.build_info.path, first.build_info.path]
    total = sum(e.size for e in cache.entries(cache_dir))
    assert cache.evict(cache_dir, total - 1) == [second.build_info.path]
    _check_runs(again, 3.0)


def test_a_build_evicts_down_to_the_cap_keeping_its_own_entry(cache_dir):
    options = Options(cache_dir=cache_dir, cache_max_bytes=1)
    pipes = [polyimage.compile(_scaled(s), options=options) for s in (5.0, 6.0, 7.0)]
    assert [p.build_info.cache_hit for p in pipes] == [False, False, False]
    assert _modules(cache_dir) == [pipes[-1].build_info.path]
    for pipe, scale in zip(pipes, (5.0, 6.0, 7.0)):
        _check_runs(pipe, scale)  # a loaded module outlives its evicted entry
    again = polyimage.compile(_scaled(5.0), options=options)
    assert again.build_info.cache_hit is False
    _check_runs(again, 5.0)


def test_compile_records_count_under_the_cap(cache_dir):
    """The record a compile saves after its build is evicted for too: the cache never ends a
    compile over its cap."""
    first = polyimage.compile(_scaled(2.0), options=Options(cache_dir=cache_dir))
    sizes = {e.kind: e.size for e in cache.entries(cache_dir)}
    module, record = sizes[cache.MODULE], sizes["records"]
    cap = 3 * module + 2 * record + record // 2
    options = Options(cache_dir=cache_dir, cache_max_bytes=cap)
    for scale in (3.0, 4.0, 5.0):
        last = polyimage.compile(_scaled(scale), options=options)
        assert sum(e.size for e in cache.entries(cache_dir)) <= cap
    kept = {e.path for e in cache.entries(cache_dir)}
    assert last.build_info.path in kept and first.build_info.path not in kept
    _check_runs(last, 5.0)


def test_the_cap_comes_from_the_environment(cache_dir, monkeypatch):
    monkeypatch.setenv("POLYIMAGE_CACHE_MAX", "1")
    polyimage.compile(_scaled(8.0))
    last = polyimage.compile(_scaled(9.0))
    assert _modules(cache_dir) == [last.build_info.path]


def test_an_entry_removed_between_lookup_and_load_is_rebuilt(cache_dir, monkeypatch):
    """Another process evicts the entry after this one found it, before it loaded it."""
    scale = 10.5  # built by a child, so that this process has not loaded its module
    assert _run_children(cache_dir, [[scale]]) == [[False]]
    real_lookup = cache.lookup

    def lookup_then_evicted(root, key):
        found = real_lookup(root, key)
        if found is not None:
            cache.discard(found)
        return found

    monkeypatch.setattr(cache, "lookup", lookup_then_evicted)
    with warnings.catch_warnings():
        warnings.simplefilter("error", polyimage.CacheWarning)
        pipe = polyimage.compile(_scaled(scale))
    assert pipe.build_info.cache_hit is False
    assert cache.damage(pipe.build_info.path) is None
    _check_runs(pipe, scale)


def test_an_entry_evicted_during_its_check_is_no_damage(cache_dir, monkeypatch):
    pipe = polyimage.compile(_scaled(11.0))
    entry, key = pipe.build_info.path, pipe.build_info.key
    real_damage = cache.damage

    def evicted_meanwhile(path):
        cache.discard(path)
        return real_damage(path)

    monkeypatch.setattr(cache, "damage", evicted_meanwhile)
    with warnings.catch_warnings():
        warnings.simplefilter("error", polyimage.CacheWarning)
        assert cache.lookup(cache_dir, key) is None
    assert not entry.exists()


# -- polyimage cache info | clear -----------------------------------------------------------


def test_cache_info_of_a_missing_folder(cache_dir, capsys):
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"location: {cache_dir} (not created yet)" in out
    assert "entries:  0" in out and "size:     0 B (0 bytes) of at most 1.0 GiB" in out
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out.strip() == f"removed 0 entries from {cache_dir}"
    assert not cache_dir.exists()


def test_cache_info_and_clear(cache_dir, capsys, monkeypatch):
    pipes = [polyimage.compile(_scaled(s)) for s in (12.0, 13.0)]
    listed = cache.entries(cache_dir)
    size = sum(e.size for e in listed)
    assert len(_modules(cache_dir)) == 2 and size > 0
    monkeypatch.setenv("POLYIMAGE_CACHE_MAX", "500M")
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"location: {cache_dir}"
    assert out[1].startswith(f"entries:  {len(listed)} (built modules: 2"), out
    assert out[2:] == [
        f"size:     {human_size(size)} ({size} bytes) of at most 500.0 MiB (POLYIMAGE_CACHE_MAX)"
    ]
    assert main(["cache", "clear"]) == 0
    cleared = capsys.readouterr().out.strip()
    assert cleared.startswith(f"removed {len(listed)} entries (built modules: 2"), cleared
    assert cleared.endswith(f") from {cache_dir}")
    assert cache.entries(cache_dir) == []
    # only what the compiler said about itself stays (jit/toolchain.py), as calibrations do
    kept = [p for p in cache_dir.rglob("*") if p.is_file()]
    assert all(p.parent.name == TOOLCHAIN_DIR and p.suffix == ".json" for p in kept), kept
    for pipe, scale in zip(pipes, (12.0, 13.0)):
        _check_runs(pipe, scale)  # cleared under a process that has them loaded
    assert main(["cache", "info"]) == 0
    assert "entries:  0\n" in capsys.readouterr().out
    again = polyimage.compile(_scaled(12.0))
    assert again.build_info.cache_hit is False
    _check_runs(again, 12.0)


def test_cache_info_counts_each_kind(cache_dir, capsys):
    _fake_entries(cache_dir, [100, 200], start=time.time() - 1000)
    (cache_dir / "records" / "ab").mkdir(parents=True)
    (cache_dir / "records" / "ab" / "k.pickle").write_bytes(b"r" * 30)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == [
        "entries:  3 (built modules: 2, records: 1)",
        "size:     330 B (330 bytes) of at most 1.0 GiB (POLYIMAGE_CACHE_MAX)",
    ]
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out == (
        f"removed 3 entries (built modules: 2, records: 1) from {cache_dir}\n"
    )


def test_human_size():
    assert [human_size(n) for n in (0, 1023, 1024, 1536, 84 << 20, 1 << 30, 3 << 40)] == [
        "0 B",
        "1023 B",
        "1.0 KiB",
        "1.5 KiB",
        "84.0 MiB",
        "1.0 GiB",
        "3072.0 GiB",
    ]


def test_clear_leaves_builds_under_way_alone(cache_dir):
    polyimage.compile(_scaled(14.0))
    building = cache.staging_dir(cache_dir)
    assert cache.clear(cache_dir) == 1
    assert building.is_dir() and cache.entries(cache_dir) == []


def test_cache_info_says_when_caching_is_off(cache_dir, capsys, monkeypatch):
    monkeypatch.setenv("POLYIMAGE_NO_CACHE", "1")
    assert main(["cache", "info"]) == 0
    assert "caching is off (POLYIMAGE_NO_CACHE)" in capsys.readouterr().out


def test_a_bad_cache_max_is_a_one_line_usage_error(cache_dir, capsys, monkeypatch):
    monkeypatch.setenv("POLYIMAGE_CACHE_MAX", "lots")
    for command in (["cache", "info"], ["cache", "clear"], ["run", "unsharp_mask"]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [
            "polyimage: error: POLYIMAGE_CACHE_MAX must be a size in bytes such as "
            "1073741824, 500M or 2G, got 'lots'"
        ]


def test_cache_usage_errors(capsys):
    assert main(["cache"]) == 2
    assert main(["cache", "empty"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_cache_command_in_a_fresh_process(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "polyimage", "cache", "info"],
        env=child_env(tmp_path / "cache", POLYIMAGE_CACHE_MAX="2G"),
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "entries:  0" in done.stdout and "of at most 2.0 GiB" in done.stdout


# -- several processes, one small cache -----------------------------------------------------


def test_processes_share_a_small_capped_cache(tmp_path):
    """Four processes compile the same and different pipelines into a cache that holds about
    one and a half entries, so that they evict each other's entries as they go."""
    root = tmp_path / "shared"
    probe = polyimage.compile(_scaled(20.0), options=Options(cache_dir=tmp_path / "probe"))
    entry_bytes = sum(e.size for e in cache.entries(tmp_path / "probe") if e.kind == cache.MODULE)
    cap = entry_bytes * 3 // 2
    plans = [[21.0, 22.0, 21.0], [21.0, 23.0, 21.0], [22.0, 21.0, 22.0], [24.0, 22.0, 24.0]]
    results = _run_children(root, plans, POLYIMAGE_CACHE_MAX=str(cap))
    assert [len(hits) for hits in results] == [3, 3, 3, 3]
    left = _modules(root)
    # two evictions at once each keep only their own new entry, so none may be left
    assert len(left) <= 4
    assert all(cache.damage(path) is None for path in left)
    assert list(root.glob(cache.STAGING_PREFIX + "*")) == []
    assert list(root.glob(f"??/{cache.TRASH_PREFIX}*")) == []
    # once they are done, one more build brings the cache under its cap
    last = polyimage.compile(_scaled(25.0), options=Options(cache_dir=root, cache_max_bytes=cap))
    assert sum(e.size for e in cache.entries(root) if e.kind == cache.MODULE) <= cap
    assert last.build_info.path in _modules(root)
    _check_runs(probe, 20.0)
