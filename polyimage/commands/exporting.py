"""`polyimage export`: an app, or a pipeline from a user's file (`FILE.py:function`), compiled
(the passes only: nothing is built for this machine, unless `--schedule measured` times its
candidates here) and exported as a C library."""

from __future__ import annotations

import polyimage
from polyimage.config import Options
from polyimage.errors import ArgumentError
from polyimage.tools.export import check_export

from .cli_arguments import parse_estimates, pipeline_source, resolve_schedule
from .targets import TARGETS
from .tune_schedule import settle_measured


def export_command(
    target, output, schedule=None, estimates=(), cpu="native", march=None, name=None, report=print
):
    """Compile `target` (an app or FILE.py:function) for `cpu` (a --target name) or `march`
    (any -march value: with a cross compiler as CC, its CPU) and export it into `output`."""
    outputs, default_estimates, app = pipeline_source(target)
    check_export(output, name or (app.NAME if app is not None else None) or "pipeline")
    chosen = resolve_schedule(app, schedule)
    if chosen == "measured" and (cpu != "native" or march):
        raise ArgumentError(
            "--schedule measured times the candidates on this machine: export it for "
            "--target native, or export another schedule for another CPU"
        )
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
        build=chosen == "measured",
    )
    settle_measured(pipe, app)
    exported = pipe.export(output, name)
    report(exported.describe())
    return exported
