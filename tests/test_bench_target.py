"""`polyimage bench --target avx2 --machine l2=512K,llc=8M`: what the bench builds and plans
for on another machine's behalf, and the header that says what it measured on."""

import json
from pathlib import Path

import pytest

from polyimage.commands import targets
from polyimage.commands.cli import main
from polyimage.config import MACHINE_VARIABLES
from polyimage.errors import ArgumentError


def test_machine_overrides_parse_sizes_and_cores():
    assert targets.parse_machine("l2=512K, llc=8M,cores=4") == {
        "l2_bytes": 512 * 1024,
        "llc_bytes": 8 * 1024**2,
        "cores": 4,
    }
    assert targets.parse_machine("") == {}
    for bad in ("l2", "l3=1M", "l2=big", "l1=0"):
        with pytest.raises(ArgumentError, match="--machine"):
            targets.parse_machine(bad)


def test_the_avx2_target_builds_for_x86_64_v3_with_the_given_caches():
    options = targets.target_options("avx2", {"l2_bytes": 512 * 1024})
    assert options.march == "x86-64-v3" and "-march=x86-64-v3" in options.flags
    assert options.machine["l2_bytes"] == 512 * 1024
    assert targets.target_options("native", {}).march == "native"
    with pytest.raises(ArgumentError, match="--target"):
        targets.target_options("avx9", {})


def test_the_header_names_cpu_target_isa_caches_vectors_and_threads():
    options = targets.target_options("avx2", targets.parse_machine("l2=512K,llc=8M"))
    described = targets.describe("avx2", options, threads=2)
    assert described["isa"] == "x86-64-v3" and described["threads"] == 2
    assert described["l2_bytes"] == 512 * 1024 and described["llc_bytes"] == 8 * 1024**2
    line = targets.header(described)
    assert described["cpu"] in line and "-march=x86-64-v3" in line
    assert "L2 512 KiB, LLC 8 MiB (set by --machine); 32-byte vectors, op cost" in line
    assert line.endswith("; 2 threads") and described["vector_bytes"] == 32
    assert described["op_bytes"] > 0 and "op cost" in described["op_cost_origin"]
    assert str(Path.home()) not in json.dumps(described)  # a shared JSON names no home folder


class _Stop(Exception):
    pass


def test_bench_passes_target_and_machine_through_and_refuses_bad_ones(
    monkeypatch, capsys, tmp_path
):
    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(tmp_path / "cache"))  # it calibrates
    for variable in MACHINE_VARIABLES.values():  # --machine alone, whatever the host sets
        monkeypatch.delenv(variable, raising=False)
    seen = {}

    def fake_bench_app(name, size, threads, runs, report, options, target, *more):
        seen.update(name=name, march=options.march, machine=options.machine, target=target)
        raise _Stop

    from polyimage.commands import bench

    monkeypatch.setattr(bench, "bench_app", fake_bench_app)
    with pytest.raises(_Stop):
        main(["bench", "unsharp_mask", "--target", "avx2", "--machine", "l2=512K"])
    assert seen == {
        "name": "unsharp_mask",
        "march": "x86-64-v3",
        "machine": {"l2_bytes": 512 * 1024},
        "target": "avx2",
    }
    assert "target avx2 (-march=x86-64-v3" in capsys.readouterr().out
    # the environment's machine model stands where --machine says nothing of a field
    monkeypatch.setenv("POLYIMAGE_L1_BYTES", "49152")
    monkeypatch.setenv("POLYIMAGE_L2_BYTES", str(2 * 1024**2))
    with pytest.raises(_Stop):
        main(["bench", "unsharp_mask", "--machine", "l2=512K"])
    assert seen["machine"] == {"l1_bytes": 49152, "l2_bytes": 512 * 1024}
    capsys.readouterr()
    assert main(["bench", "unsharp_mask", "--machine", "l2=lots"]) == 2
    assert "--machine" in capsys.readouterr().err
    assert main(["bench", "unsharp_mask", "--target", "sse9"]) == 2
