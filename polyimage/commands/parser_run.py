"""The `run` sub-command's arguments, and the apps its `--help` lists (imported only when that
help is asked for)."""

from __future__ import annotations

import argparse
import textwrap

from .parser_types import COUNT

HELP_WIDTH = 79
NAME_COLUMN = 18


def apps_listing() -> str:
    """Every app, what its output shows and its default input photos, for `run --help`."""
    from polyimage.apps import app_descriptions

    lines = ["APP, and what its output shows [the bundled photos it reads without INPUT]:"]
    apps = app_descriptions()
    column = max([NAME_COLUMN] + [len(name) + 3 for name in apps])
    for name, (description, photos) in apps.items():
        text = f"{description} [{', '.join(photos) or 'no photo'}]"
        lines.extend(
            textwrap.wrap(
                text,
                HELP_WIDTH,
                initial_indent=f"  {name:<{column - 2}}",
                subsequent_indent=" " * column,
            )
        )
    return "\n".join(lines)


class _HelpWithApps(argparse.Action):
    """-h/--help of `run`: the usual help, then the apps (imported only when asked for)."""

    def __init__(
        self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None
    ):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.epilog = apps_listing()
        parser.print_help()
        parser.exit()


def add_run(commands) -> None:
    """The `run` sub-command: an app or a user's pipeline on photos."""
    run = commands.add_parser(
        "run",
        help="run a benchmark app on photos",
        add_help=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compile an app, run it on photos, time it and optionally save its output.",
    )
    run.add_argument(
        "-h", "--help", action=_HelpWithApps, help="show this help and the apps, then exit"
    )
    run.add_argument(
        "app",
        metavar="APP",
        help="app name (listed below), or FILE.py:function, a function of your file that "
        "returns the pipeline's outputs (each input image gets a photo: grey for a 2-D image, "
        "channels first for a 3-D one; the first output is saved)",
    )
    run.add_argument(
        "inputs",
        nargs="*",
        default=[],
        metavar="INPUT",
        help="input photos (default: the app's bundled photos)",
    )
    run.add_argument(
        "-o",
        "--output",
        help="where to write the result: a .png, .jpg or .jpeg file (checked before compiling); "
        "a folder (existing, or ending in /) runs a batch of photos on Dask; a .zarr (or a "
        ".tif, from a .zarr or .tif INPUT) streams one large image block by block",
    )
    run.add_argument(
        "--chunks",
        type=COUNT,
        metavar="N",
        help="compute one large image in blocks of N x N output points on Dask",
    )
    run.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="the dask.distributed scheduler for a batch or a large image (default: local)",
    )
    run.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a parameter (repeatable)",
    )
    run.add_argument("--threads", type=COUNT, default=None, help="OpenMP threads for the run")
    run.add_argument("--runs", type=COUNT, default=3, help="timed runs after one warm-up")
    run.add_argument("--check", action="store_true", help="compare with the NumPy reference")
    run.add_argument(
        "--profile",
        action="store_true",
        help="also time each group and stage (a separate build with timers)",
    )
    run.add_argument(
        "--schedule",
        metavar="NAME|FILE",
        help="auto, naive, greedy, "
        "greedy-cost, measured (the fastest of several candidates timed on this machine, the "
        "choice kept in the cache: see tune-schedule), one of the app's own schedules, or a "
        "file with a schedule (default: auto)",
    )
    run.add_argument(
        "--contract",
        action="store_true",
        help="let the C compiler fuse multiply-adds (-ffp-contract=fast): faster on CPUs with "
        "FMA, results may differ from the interpreter's in the last bits",
    )
