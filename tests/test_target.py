"""The CPU the C is built for: POLYIMAGE_MARCH and compile(march=...) replace -march=native,
are part of the cache key, and an AVX2 target (x86-64-v3) builds code without AVX-512."""

import json
import platform
import shutil
import subprocess

import numpy as np
import pytest
from oracle import assert_same

import polyimage
from polyimage.apps import unsharp_mask
from polyimage.config import Options
from polyimage.jit.toolchain import (
    GATHER_FLAGS,
    compiler_command,
    compiler_fingerprint,
    target_facts,
)


def test_polyimage_march_replaces_native():
    options = Options.from_env({"POLYIMAGE_MARCH": "x86-64-v3"})
    assert options.march == "x86-64-v3"
    assert "-march=x86-64-v3" in options.flags and "-march=native" not in options.flags
    assert "-march=native" in Options.from_env({}).flags
    for bad in ("has well", "-O0", "x;rm"):
        with pytest.raises(ValueError, match="POLYIMAGE_MARCH"):
            Options.from_env({"POLYIMAGE_MARCH": bad})


def _avx512(path) -> int:
    """How many instructions of the module at `path` use AVX-512 registers (zmm)."""
    listing = subprocess.run(["objdump", "-d", str(path)], capture_output=True, text=True)
    return listing.stdout.count("%zmm")


def test_an_avx2_target_builds_apart_and_matches_the_interpreter():
    outputs, _ = unsharp_mask.build()
    img = np.random.default_rng(0).random((3, 37, 53), dtype=np.float32)
    arguments = dict(img=img, weight=3.0, threshold=0.001)
    native = polyimage.compile(outputs, estimates=unsharp_mask.PAPER_SIZE, march="native")
    avx2 = polyimage.compile(outputs, estimates=unsharp_mask.PAPER_SIZE, march="x86-64-v3")
    assert avx2.options.march == "x86-64-v3" and "-march=x86-64-v3" in avx2.options.flags
    assert avx2.build_info.key != native.build_info.key
    assert "C target: -march=x86-64-v3" in avx2.report()
    assert_same(avx2(**arguments), polyimage.interpret(outputs, **arguments))
    if shutil.which("objdump"):
        modules = list(avx2.build_info.path.glob("*.so"))
        assert modules and all(_avx512(m) == 0 for m in modules)


def test_a_bad_march_is_refused_naming_it():
    outputs, _ = unsharp_mask.build()
    with pytest.raises(ValueError, match="march"):
        polyimage.compile(outputs, march="not a cpu")


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 targets")
def test_target_facts_read_the_vector_width_and_turn_gathers_on():
    compiler = compiler_command()
    facts = {m: target_facts(compiler, ("-O3", f"-march={m}")) for m in ("x86-64", "x86-64-v3")}
    assert facts["x86-64"].vector_bytes == 16 and facts["x86-64-v3"].vector_bytes == 32
    assert facts["x86-64"].flags == ()  # no AVX2: no gathers to turn on
    if "gcc" in compiler_fingerprint(compiler, ()).lower():
        assert facts["x86-64-v3"].flags == GATHER_FLAGS


def test_a_lookup_table_read_vectorizes_for_an_avx2_target():
    """gcc's generic tuning leaves gathers off and the loop reading a table scalar; the
    target's flags turn them on (camera_pipe's curve took 2x as long without)."""
    if not shutil.which("objdump") or platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("needs objdump on x86-64")
    r, c = polyimage.Parameter(polyimage.Int, "R"), polyimage.Parameter(polyimage.Int, "C")
    x, y, v = (polyimage.Variable(polyimage.Int, n) for n in "xyv")
    img = polyimage.Image(polyimage.UShort, "img", [r, c])
    table = polyimage.Function(
        ([v], [polyimage.Interval(polyimage.Int, 0, 1023)]), polyimage.Int, "table"
    )
    table.defn = [v * 3 - 7]
    out = polyimage.Function(
        (
            [x, y],
            [
                polyimage.Interval(polyimage.Int, 0, r - 1),
                polyimage.Interval(polyimage.Int, 0, c - 1),
            ],
        ),
        polyimage.Int,
        "out",
    )
    out.defn = [table(img(x, y))]
    pipe = polyimage.compile([out], estimates={r: 64, c: 256}, march="x86-64-v3", inline=False)
    image = np.random.default_rng(1).integers(0, 1024, (9, 301), dtype=np.uint16)
    assert_same(pipe(img=image), polyimage.interpret([out], img=image))
    if "gcc" in compiler_fingerprint(compiler_command(), ()).lower():
        listing = "".join(
            subprocess.run(["objdump", "-d", str(m)], capture_output=True, text=True).stdout
            for m in pipe.build_info.path.glob("*.so")
        )
        assert "vpgatherdd" in listing


def test_the_compiler_is_asked_about_itself_once_per_cache(monkeypatch, tmp_path):
    """What the compiler says about its target is kept beside the cache: a fresh process (the
    per-process memo cleared) asks it nothing, and a damaged record is asked again and
    rewritten."""
    from polyimage.jit import toolchain

    compiler, flags = compiler_command(), ("-O3", "-march=x86-64-v3")
    toolchain._queried.cache_clear()
    first = (
        target_facts(compiler, flags, tmp_path),
        compiler_fingerprint(compiler, flags, tmp_path),
    )
    records = list((tmp_path / toolchain.TOOLCHAIN_DIR).glob("*.json"))
    assert len(records) == 1
    toolchain._queried.cache_clear()
    real_run = subprocess.run

    def no_compiler(*args, **kwargs):
        raise AssertionError(f"the compiler was run: {args[0]}")

    monkeypatch.setattr(toolchain.subprocess, "run", no_compiler)
    again = (
        target_facts(compiler, flags, tmp_path),
        compiler_fingerprint(compiler, flags, tmp_path),
    )
    assert again == first
    records[0].write_text("{not json")
    toolchain._queried.cache_clear()
    monkeypatch.setattr(toolchain.subprocess, "run", real_run)
    assert target_facts(compiler, flags, tmp_path) == first[0]
    assert json.loads(records[0].read_text())["vector_bytes"] == first[0].vector_bytes
    toolchain._queried.cache_clear()
