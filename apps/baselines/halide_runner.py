"""Halide versions of the apps under Halide's autoschedulers (used only when halide imports).

A Halide version lives in `apps/baselines/halide_<app>.py` and defines
`build(hl, inputs, params) -> (output Funcs with estimates set, output Buffers)`, building fresh
Funcs on every call (an autoscheduler schedules the Funcs it is given). Halide's x is NumPy's
last axis: a NumPy array (c, rows, cols) is the Halide buffer (cols, rows, c).

A version whose `build` also takes `schedule=None` has a schedule written by hand after the CPU
schedule of Halide's own app: given a Halide Target as `schedule`, it schedules its Funcs for
that target (vector widths from `target.natural_vector_size`) before returning them; left None,
the Funcs come back unscheduled for the autoschedulers. That is the variant "halide:manual".
"""

from __future__ import annotations

import importlib
import inspect
import os

import numpy as np

from polyimage.commands.targets import halide_target
from polyimage.grouping.machine import Machine

AUTOSCHEDULERS = ("Mullapudi2016", "Adams2019", "Li2018")
MANUAL = "manual"  # the hand-written schedule, beside the autoschedulers


def _load_plugins(hl) -> None:
    lib = os.path.join(os.path.dirname(hl.__file__), "lib64")
    for name in ("mullapudi2016", "adams2019", "li2018"):
        path = os.path.join(lib, f"libautoschedule_{name}.so")
        if os.path.exists(path):
            hl.load_plugin(path)


def halide_version(name: str):
    """The module of the Halide version of app `name`, or None."""
    try:
        return importlib.import_module(f"{__package__}.halide_{name}")
    except ModuleNotFoundError:
        return None


def has_manual_schedule(version) -> bool:
    """Whether the Halide version `version` (a module) has a hand-written schedule."""
    return "schedule" in inspect.signature(version.build).parameters


def halide_variants(
    name: str,
    inputs: dict,
    params: dict,
    threads,
    report=print,
    expected=None,
    target="native",
    llc_bytes=None,
    schedulers=AUTOSCHEDULERS + (MANUAL,),
) -> dict:
    """{"halide:<scheduler>": callable} for each of `schedulers` (the autoschedulers and
    "manual", the hand-written schedule where the app has one) that schedules the app; when
    `expected` (the polyimage outputs) is given, each schedule's result is compared with it.
    `target`: polyimage.commands.targets.TARGETS (avx2 drops AVX-512); `llc_bytes`: the
    last-level cache Mullapudi2016 plans for (default: the host's)."""
    try:
        import halide as hl
    except ImportError:
        return {}
    version = halide_version(name)
    if version is None:
        return {}
    _load_plugins(hl)
    target = halide_target(hl, target)
    parallelism = str(threads or os.cpu_count())
    llc = str(llc_bytes or Machine.detect().llc_bytes)
    variants = {}
    for scheduler in schedulers:
        if scheduler == MANUAL and not has_manual_schedule(version):
            continue
        try:
            if scheduler == MANUAL:
                funcs, buffers = version.build(hl, inputs, params, schedule=target)
                pipeline = hl.Pipeline(funcs)
            else:
                options = {"parallelism": parallelism}
                if scheduler == "Mullapudi2016":  # the only one with a cache model
                    options["last_level_cache_size"] = llc
                funcs, buffers = version.build(hl, inputs, params)
                pipeline = hl.Pipeline(funcs)
                pipeline.apply_autoscheduler(target, hl.AutoschedulerParams(scheduler, options))
            pipeline.compile_jit(target)
            pipeline.realize(buffers)
        except Exception as exc:  # a schedule may be rejected; report, go on
            report(f"  {name}: halide {scheduler} failed: {str(exc).strip()[:200]}")
            continue
        if expected is not None:
            _report_difference(name, scheduler, buffers, expected, report)
        variants[f"halide:{scheduler}"] = lambda p=pipeline, b=buffers: p.realize(b)
    return variants


def _report_difference(name, scheduler, buffers, expected, report):
    expected = expected if isinstance(expected, tuple) else (expected,)
    worst = max(
        float(np.max(np.abs(np.asarray(b, np.float64) - e.astype(np.float64))))
        for b, e in zip(buffers, expected)
    )
    report(f"  {name}: halide {scheduler} max abs difference from polyimage {worst:.3g}")
