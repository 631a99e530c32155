"""`polyimage export`: an app, or a pipeline from a user's file (`FILE.py:function`), compiled
(the passes only; nothing is built for this machine) and exported as a C library."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import polyimage
from polyimage.apps import APP_NAMES, load_app
from polyimage.config import Options
from polyimage.errors import ArgumentError
from polyimage.export import check_export

from .cli_arguments import resolve_schedule
from .targets import TARGETS


def pipeline_source(target: str):
    """(outputs, default estimates, the app module or None) of an app name or `FILE.py:function`
    (a function of no arguments returning the outputs: a Function or a list of them)."""
    path, sep, function = target.rpartition(":")
    if not sep or not path.endswith(".py"):
        app = load_app(target)
        return app.build()[0], dict(app.PAPER_SIZE), app
    if not os.path.isfile(path):
        raise ArgumentError(
            f"{target}: no file {path!r} (give an app, {', '.join(APP_NAMES)}, or FILE.py:function)"
        )
    spec = importlib.util.spec_from_file_location(f"_polyimage_user_{Path(path).stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(Path(path).resolve().parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    make = getattr(module, function, None)
    if not callable(make):
        raise ArgumentError(f"{target}: {path} has no function {function!r}")
    outputs = make()
    if isinstance(outputs, polyimage.Function):
        outputs = [outputs]
    if not (
        isinstance(outputs, (list, tuple))
        and outputs
        and all(isinstance(f, polyimage.Function) for f in outputs)
    ):
        raise ArgumentError(
            f"{target}: {function}() must return the pipeline's outputs (a Function or a list "
            f"of them), got {type(outputs).__name__}"
        )
    return list(outputs), {}, None


def parse_estimates(pairs) -> dict:
    """`["R=2048,C=3072", "K=4"]` -> {"R": 2048, "C": 3072, "K": 4}."""
    estimates = {}
    for pair in ",".join(pairs or ()).split(","):
        if not pair:
            continue
        name, sep, text = pair.partition("=")
        try:
            value = int(text)
        except ValueError:
            value = None
        if not sep or not name or value is None or value < 1:
            raise ArgumentError(
                f"--estimates {pair!r}: expected NAME=VALUE with a positive integer VALUE"
            )
        estimates[name] = value
    return estimates


def export_command(
    target, output, schedule=None, estimates=(), cpu="native", march=None, name=None, report=print
):
    """Compile `target` (an app or FILE.py:function) for `cpu` (a --target name) or `march`
    (any -march value: with a cross compiler as CC, its CPU) and export it into `output`."""
    outputs, default_estimates, app = pipeline_source(target)
    check_export(output, name or (app.NAME if app is not None else None) or "pipeline")
    chosen = resolve_schedule(app, schedule)
    try:
        options = Options.from_env().for_march(march or TARGETS[cpu][0])
    except ValueError as exc:
        raise ArgumentError(f"--{exc}") from None
    pipe = polyimage.compile(
        outputs,
        estimates={**default_estimates, **parse_estimates(estimates)},
        name=name or (app.NAME if app is not None else None),
        schedule=chosen,
        options=options,
        build=False,
    )
    exported = pipe.export(output, name)
    report(exported.describe())
    return exported
