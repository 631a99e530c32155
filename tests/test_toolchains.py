"""gcc and clang both build the JIT path, apart in the cache; a compiler without OpenMP builds
serial code that gives the interpreter's results on any thread count, and says so once."""

import json
import shutil
import warnings

import numpy as np
import pytest
from helpers import matmul, no_openmp_compiler, refusing_compiler
from oracle import assert_calls_match

import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable
from polyimage.apps import unsharp_mask
from polyimage.apps.inputs import bundled
from polyimage.config import DEFAULT_CFLAGS, flags_for
from polyimage.io import load_image
from polyimage.jit import toolchain
from polyimage.jit.toolchain import compiler_facts, compiler_fingerprint, resolved_target


# a compiler without OpenMP, as Apple's clang is: gcc refusing every -fopenmp flag
def _blur():
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R + 2, C + 2])
    bx = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 0, C + 1)]), Float, "bx")
    bx.defn = [(img(x - 1, y) + img(x, y) + img(x + 1, y)) / 3]
    by = Function(([x, y], [Interval(Int, 1, R), Interval(Int, 1, C)]), Float, "by")
    by.defn = [(bx(x, y - 1) + bx(x, y) + bx(x, y + 1)) / 3]
    return [by], {"img": np.random.default_rng(0).random((45, 71), dtype=np.float32)}


def _unsharp_mask():
    outputs, _ = unsharp_mask.build()
    arrays = unsharp_mask.prepare([load_image(bundled("coffee.png"))], {"R": 37, "C": 53})
    return outputs, {**arrays, **unsharp_mask.DEFAULTS}


def _check(outputs, arguments, schedule, **compile_args):
    """Compile `outputs` with `schedule`; it must give the interpreter's result on 1 and 2
    threads. Returns the pipeline."""
    pipe = polyimage.compile(outputs, schedule=schedule, **compile_args)
    expected = polyimage.interpret(outputs, **arguments)
    assert_calls_match(pipe, expected, arguments, f"{pipe.name} ({schedule})")
    return pipe


@pytest.mark.parametrize("schedule", ["auto", "naive"])
@pytest.mark.parametrize("make", [_blur, _unsharp_mask], ids=["blur", "unsharp_mask"])
def test_clang_builds_and_matches_the_interpreter(clang, make, schedule):
    pipe = _check(*make(), schedule)
    assert pipe.build_info.compiler == "clang" and not pipe.build_info.serial
    meta = json.loads((pipe.build_info.path / "meta.json").read_text())
    assert meta["compiler"] == "clang" and "-fopenmp" in meta["flags"]
    assert "--param" not in meta["flags"]  # gcc's own
    assert "clang" in (pipe.build_info.path / "build.log").read_text()


def test_the_vectorization_report_under_clang_says_it_needs_gcc(clang):
    pipe = polyimage.compile(_blur()[0])
    with pytest.raises(polyimage.ArgumentError, match="set CC=gcc"):
        pipe.report(vectorization=True)


def test_gcc_and_clang_build_apart(clang, monkeypatch):
    outputs, arguments = _blur()
    built = {}
    for compiler in ("gcc", "clang"):
        monkeypatch.setenv("CC", compiler)
        pipe = polyimage.compile(outputs)
        np.testing.assert_allclose(pipe(**arguments), polyimage.interpret(outputs, **arguments))
        built[compiler] = pipe
    assert built["gcc"].c_source == built["clang"].c_source
    assert built["gcc"].build_info.key != built["clang"].build_info.key
    assert built["gcc"].build_info.path != built["clang"].build_info.path


def test_fingerprints_tell_the_compilers_apart_and_are_stable(clang):
    flags = tuple(DEFAULT_CFLAGS)
    prints = {}
    for compiler in ("gcc", "clang"):
        toolchain._queried.cache_clear()
        first = compiler_fingerprint(compiler, flags)
        toolchain._queried.cache_clear()
        assert compiler_fingerprint(compiler, flags) == first
        prints[compiler] = first
    assert prints["gcc"] != prints["clang"]
    assert compiler_facts("gcc", flags).family == "gcc"
    assert compiler_facts("clang", flags).family == "clang"
    if resolved_target("gcc", flags):  # the ISA names gcc and clang give the host's CPU
        assert resolved_target("clang", flags).get("-march=")


def test_flags_are_filtered_by_family_and_openmp():
    flags = ("-O3", "-fopenmp", "--param", "max-unswitch-level=1", "-mtune-ctrl=use_gather")
    assert flags_for(flags, "gcc") == flags
    assert flags_for(flags, "clang") == ("-O3", "-fopenmp")
    assert flags_for(flags, "other", openmp=False) == ("-O3",)
    assert flags_for(flags, "clang", openmp=False, openmp_simd=True) == ("-O3", "-fopenmp-simd")


def test_a_parameter_the_compiler_does_not_know_is_left_out(monkeypatch, tmp_path):
    """gcc 13.3 refuses gcc 12's `--param max-unswitch-level`: the build goes on without it
    (and with OpenMP and the rest of the flags), where it failed every compile."""
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    wrapper = refusing_compiler(tmp_path, "newer-gcc", "max-unswitch-level=*")
    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CC", str(wrapper))
    assert "max-unswitch-level=1" in DEFAULT_CFLAGS
    flags = compiler_facts(str(wrapper), DEFAULT_CFLAGS).flags
    assert "max-unswitch-level=1" not in flags and "--param" not in flags
    assert "-fopenmp" in flags and "-O3" in flags
    outputs, arguments = _blur()
    pipe = _check(outputs, arguments, "auto")
    meta = json.loads((pipe.build_info.path / "meta.json").read_text())
    assert "max-unswitch-level=1" not in meta["flags"] and "-fopenmp" in meta["flags"]


def test_a_compiler_without_openmp_builds_serial_code(monkeypatch, tmp_path):
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    wrapper = no_openmp_compiler(tmp_path)
    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CC", str(wrapper))
    outputs, arguments = _blur()
    with pytest.warns(polyimage.SerialBuildWarning, match="no OpenMP") as caught:
        pipe = _check(outputs, arguments, "auto")
        _check(outputs, arguments, "naive")
    said = [w for w in caught if issubclass(w.category, polyimage.SerialBuildWarning)]
    assert len(said) == 1 and str(wrapper) in str(said[0].message)
    assert pipe.build_info.serial and pipe.build_info.compiler == str(wrapper)
    assert f"threads: serial build (the compiler {wrapper} has no OpenMP)" in pipe.report()
    assert "for 1 thread)" in pipe.report()  # the scratchpads of one thread
    meta = json.loads((pipe.build_info.path / "meta.json").read_text())
    assert not any(flag.startswith("-fopenmp") for flag in meta["flags"])
    source = pipe.c_source
    assert source.count("#include <omp.h>") == source.count("#ifdef _OPENMP\n#include <omp.h>")
    with warnings.catch_warnings():
        warnings.simplefilter("error", polyimage.SerialBuildWarning)  # said once already
        profile = pipe.profile(**arguments, runs=1, threads=2)
    assert all(row.seconds >= 0 for row in profile.rows)


def test_clang_builds_register_blocks_in_vector_types(clang, rng):
    """A register-blocked matrix product keeps its accumulators in the vector types gcc and
    clang share (codegen.vector_blocks)."""
    out = matmul()
    arguments = {"A": rng.random((37, 29), np.float32), "B": rng.random((29, 150), np.float32)}
    pipe = _check([out], arguments, "auto", estimates={"M": 256, "N": 256, "K": 256})
    assert "pim_vec pim_a0_0" in pipe.c_source and pipe.build_info.compiler == "clang"
