"""Multiply-add contraction (`compile(..., contract=True)`, `-ffp-contract=fast`): results within
a few ulps of the interpreter, a build and record apart from the exact one in the cache, the
flag in the build command, the report, an export and on the command line.

The tolerance: a fused multiply-add rounds once where the exact build rounds the product and
then the sum, so each fused operation moves a result by at most half an ulp of its product.
The chains here (5-tap blurs, a sharpen mixing the image and its blur, the random pipeline's
weighted sums) are at most some 12 fused operations deep on terms no larger than a few times
the output's range, which bounds the difference by a few ulps of that range; we allow ULPS
of it. A wrong result (a lost tap, a stage off by one point) errs by 1e-3 of the range or more.
"""

import json
import os
import shlex
import subprocess

import numpy as np
import pytest

import polyimage
from polyimage.apps import unsharp_mask
from polyimage.apps.inputs import bundled
from polyimage.commands import bench
from polyimage.commands.parser import build_parser
from polyimage.commands.runner import run_app
from polyimage.config import DEFAULT_CFLAGS, Options
from polyimage.driver.record import compile_key
from polyimage.io import load_image
from polyimage.jit.toolchain import compiler_command
from polyimage.testing import random_pipeline

ULPS = 16
# a random pipeline with weighted sums, selects and cases whose result contraction changes
RANDOM_SEED = 15


def _unsharp_mask():
    outputs, _ = unsharp_mask.build()
    arrays = unsharp_mask.prepare(
        [load_image(bundled(p)) for p in unsharp_mask.PHOTOS], unsharp_mask.SMALL_SIZE
    )
    return outputs, {**arrays, **unsharp_mask.DEFAULTS}, unsharp_mask.SMALL_SIZE, "auto"


def _random():
    rp = random_pipeline(RANDOM_SEED)
    sizes = {"R": rp.arguments["R"], "C": rp.arguments["C"]}
    return rp.outputs, rp.arguments, sizes, "naive"


def _outputs(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def _fuses(options: Options) -> bool:
    """Whether the compiler's target under `options` has a fast float multiply-add (FMA):
    only there does contraction change a result."""
    argv = shlex.split(compiler_command()) + [f"-march={options.march}", "-dM", "-E", "-x", "c"]
    done = subprocess.run(argv + [os.devnull], capture_output=True, text=True)
    return "__FP_FAST_FMAF " in done.stdout


@pytest.mark.parametrize("make", [_unsharp_mask, _random], ids=["unsharp_mask", "random"])
def test_a_contracted_build_is_within_a_few_ulps_of_the_interpreter(make):
    outputs, arguments, sizes, schedule = make()
    expected = _outputs(polyimage.interpret(outputs, **arguments))
    exact = polyimage.compile(outputs, estimates=sizes, schedule=schedule)
    contracted = polyimage.compile(outputs, estimates=sizes, schedule=schedule, contract=True)
    assert contracted.options.contract and not exact.options.contract
    changed = False
    for threads in (1, 2):
        fused = _outputs(contracted(threads=threads, **arguments))
        for name, got, want, plain in zip(
            contracted.graph.outputs, fused, expected, _outputs(exact(**arguments))
        ):
            np.testing.assert_array_equal(plain, want, err_msg=f"{name}: the exact build")
            scale = max(1.0, float(np.max(np.abs(want))))
            tolerance = ULPS * np.finfo(np.float32).eps * scale
            np.testing.assert_allclose(got, want, rtol=0, atol=tolerance, err_msg=name)
            changed |= bool(np.any(got != want))
    if _fuses(contracted.options):
        assert changed, "contraction changed no result on a target with FMA"


def test_contracted_and_exact_builds_are_apart_in_the_cache():
    outputs, arguments, sizes, _ = _unsharp_mask()
    options = Options.from_env()
    built = {}
    for contract in (False, True, False, True):
        pipe = polyimage.compile(outputs, estimates=sizes, options=options, contract=contract)
        if contract in built:
            assert pipe.cached and pipe.build_info.cache_hit
            assert pipe.build_info.path == built[contract].build_info.path
        built[contract] = pipe
    exact, fused = built[False], built[True]
    assert exact.c_source == fused.c_source
    assert exact.build_info.key != fused.build_info.key
    assert exact.build_info.path.is_dir() and fused.build_info.path.is_dir()
    keys = {compile_key(p.compiled.request) for p in (exact, fused)}
    assert len(keys) == 2
    flags = {
        contract: json.loads((p.build_info.path / "meta.json").read_text())["flags"]
        for contract, p in built.items()
    }
    assert "-ffp-contract=fast" in flags[True] and "-ffp-contract=off" not in flags[True]
    assert "-ffp-contract=off" in flags[False] and "-ffp-contract=fast" not in flags[False]
    log = (fused.build_info.path / "build.log").read_text()
    assert "-ffp-contract=fast" in log


def test_the_report_says_contraction_is_on():
    outputs, _, sizes, _ = _unsharp_mask()
    fused = polyimage.compile(outputs, estimates=sizes, contract=True, build=False).report()
    exact = polyimage.compile(outputs, estimates=sizes, build=False).report()
    assert "contraction: on" in fused and "last bits" in fused
    assert "contraction" not in exact


@pytest.mark.parametrize("bad", ["yes", 1, 0.0])
def test_a_contract_that_is_not_a_bool_is_refused_naming_it(bad):
    outputs, *_ = _unsharp_mask()
    with pytest.raises(polyimage.ArgumentError, match="contract must be True or False"):
        polyimage.compile(outputs, contract=bad, build=False)


def test_the_options_read_contraction_off_the_flags():
    assert not Options().contract
    assert Options().for_contract(True).contract
    assert not Options().for_contract(True).for_contract(False).contract
    assert Options(cflags=("-O2",)).for_contract(True).flags == (
        "-O2",
        "-march=native",
        "-ffp-contract=fast",
    )
    assert Options().for_contract(True).flags.count("-ffp-contract=fast") == 1
    # a flag naming contraction in cflags moves into the typed field
    given = Options(cflags=DEFAULT_CFLAGS + ("-ffp-contract=fast",))
    assert given.contract and not any(f.startswith("-ffp-contract") for f in given.cflags)
    env = {"POLYIMAGE_CFLAGS": "-ffp-contract=fast", "POLYIMAGE_CACHE_DIR": "cache"}
    assert Options.from_env(env).contract


def test_an_export_of_a_contracted_compile_is_built_and_labelled_so(tmp_path):
    outputs, _, sizes, _ = _unsharp_mask()
    pipe = polyimage.compile(outputs, estimates=sizes, contract=True, build=False)
    exported = pipe.export(tmp_path / "lib")
    manifest = json.loads(exported.files["manifest"].read_text())
    assert "-ffp-contract=fast" in manifest["flags"]
    assert "multiply-add contraction" in exported.files["readme"].read_text()


def test_run_and_bench_take_contract():
    parser = build_parser()
    assert parser.parse_args(["run", "harris", "--contract"]).contract
    assert not parser.parse_args(["run", "harris"]).contract
    assert parser.parse_args(["bench", "harris", "--contract"]).contract
    assert not parser.parse_args(["bench", "harris"]).contract


def test_run_compiles_with_contraction(monkeypatch):
    asked = []

    def refuse(outputs, **arguments):
        asked.append(arguments)
        raise polyimage.ArgumentError("stop here")

    monkeypatch.setattr(polyimage, "compile", refuse)
    for contract in (True, False):
        with pytest.raises(polyimage.ArgumentError, match="stop here"):
            run_app("unsharp_mask", contract=contract)
    assert asked[0]["contract"] is True and asked[1]["contract"] is None


def test_a_batch_refuses_contraction(tmp_path):
    with pytest.raises(polyimage.ArgumentError, match="--contract"):
        run_app("unsharp_mask", ["a.png"], f"{tmp_path}/out/", contract=True)


def test_the_bench_times_contracted_and_reassociated_builds_beside_the_exact_one(monkeypatch):
    """bench --contract --reassociate: polyimage:auto+fma and polyimage:auto+reassoc, each
    against polyimage:auto on one line."""
    monkeypatch.setattr(bench, "app_schedules", lambda app: {"auto": "auto"})
    monkeypatch.setattr(bench, "compile_times", lambda *a, **k: {"cold": 0, "cached": 0})
    result = bench.bench_app(
        "unsharp_mask", "small", 1, 1, report=lambda text: None, contract=True, reassociate=True
    )
    timings = result["timings"]
    assert {"polyimage:auto", "polyimage:auto+fma", "polyimage:auto+reassoc"} <= set(timings)
    line = bench.contract_line(timings)
    auto = timings["polyimage:auto"]["median"]
    fused = timings["polyimage:auto+fma"]["median"] / auto
    loose = timings["polyimage:auto+reassoc"]["median"] / auto
    assert line == (
        f"  multiply-add contraction: polyimage:auto+fma / polyimage:auto: {fused:.2f}x; "
        f"float reassociation: polyimage:auto+reassoc / polyimage:auto: {loose:.2f}x"
    )
    assert not bench._schedule_of_app("polyimage:auto+fma")
    assert not bench._schedule_of_app("polyimage:auto+reassoc")
    assert bench.contract_line({"polyimage:auto": timings["polyimage:auto"]}) is None
