"""The CPU the C is built for: POLYIMAGE_MARCH and compile(march=...) replace -march=native,
are part of the cache key, and an AVX2 target (x86-64-v3) builds code without AVX-512."""

import shutil
import subprocess

import numpy as np
import pytest
from oracle import assert_same

import polyimage
from polyimage.apps import unsharp_mask
from polyimage.config import Options


def test_polyimage_march_replaces_native():
    options = Options.from_env({"POLYIMAGE_MARCH": "x86-64-v3"})
    assert options.march == "x86-64-v3"
    assert "-march=x86-64-v3" in options.cflags and "-march=native" not in options.cflags
    assert "-march=native" in Options.from_env({}).cflags
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
    native = polyimage.compile(outputs, estimates=unsharp_mask.PAPER_SIZE)
    avx2 = polyimage.compile(outputs, estimates=unsharp_mask.PAPER_SIZE, march="x86-64-v3")
    assert avx2.options.march == "x86-64-v3" and "-march=x86-64-v3" in avx2.options.cflags
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
