"""The `polyimage` command's argument parser: the global flags, then each sub-command's options
and help from the module of its group (parser_run, parser_bench, parser_pipelines,
parser_machine)."""

from __future__ import annotations

import argparse

from polyimage.version import __version__

from .parser_bench import add_bench
from .parser_machine import add_cache, add_calibrate, add_tune
from .parser_pipelines import add_export, add_graph, add_report, add_tune_schedule
from .parser_run import add_run


class _Parser(argparse.ArgumentParser):
    """argparse's parser, reporting a usage error in one line (and `--help` for more)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The `polyimage` command's parser: the global flags and one sub-parser per command."""
    parser = _Parser(prog="polyimage", description="Compile and run image processing pipelines.")
    parser.add_argument("--version", action="version", version=f"polyimage {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the compiler does")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="log every compiler pass and show the full traceback of an error",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for add in (
        add_run,
        add_bench,
        add_export,
        add_report,
        add_graph,
        add_cache,
        add_calibrate,
        add_tune,
        add_tune_schedule,
    ):
        add(commands)
    return parser
