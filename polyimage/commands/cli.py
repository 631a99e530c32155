"""The `polyimage` command.

polyimage run APP [INPUT ...] [-o OUTPUT] [--param NAME=VALUE] [--schedule NAME|FILE]
polyimage bench [APP ...] [--size paper|small] [--threads N] [--target avx2]  time the apps
polyimage report APP | --all                                  stages, domains, inlining;
                                                              --all: the grouping search
polyimage graph APP -o graph.svg|graph.dot [--schedule S]     draw an app's stage graph, its
                                                              groups under auto or S
polyimage cache info|clear                                    the build cache: where it is, its
                                                              entries and size; empty it
polyimage calibrate [--target avx2] [--force]                measure what an operation costs on
                                                              this CPU (kept; the model reads it)
polyimage tune [APP ...] [--size S] [--budget 20m] [--target T] fit the cost weights to this
                                                              machine (polyimage.autotune)
polyimage tune-schedule APP [--estimates K=V,...] [--threads N]  time candidate schedules on
                                                              random inputs, keep the fastest
                                                              for schedule="measured"
polyimage --version

The parser (polyimage.commands.parser, each group of commands' options in a parser_* module)
and a handler per command (polyimage.commands.handlers) live in polyimage.commands; this module
is the entry point, turning errors into exit statuses.
"""

from __future__ import annotations

import logging
import os
import sys

from ..config import Options
from ..errors import PolyimageError
from .handlers import HANDLERS
from .parser import build_parser


def _one_line(exc: OSError) -> str:
    """An OSError as `FILE: reason`, without Python's [Errno N] prefix."""
    if exc.filename is not None and exc.strerror:
        return f"{os.fspath(exc.filename)}: {exc.strerror}"
    return str(exc)


def main(argv=None) -> int:
    """Run the command in `argv` (default: sys.argv[1:]); returns the exit status: 0, or 2 for
    a user error, reported in one line on stderr."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error argparse has printed
        return int(exc.code or 0)  # argparse exits with 0 or 2
    level = logging.DEBUG if args.debug else logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(name)s: %(message)s")
    # long compiles say what they are doing (tune and tune-schedule show a progress bar)
    if not args.debug and not args.verbose and args.command not in ("tune", "tune-schedule"):
        logging.getLogger("polyimage.progress").setLevel(logging.INFO)
    try:
        options = Options.from_env()  # a bad POLYIMAGE_* variable stops every command first
    except ValueError as exc:
        print(f"polyimage: error: {exc}", file=sys.stderr)
        return 2
    try:
        HANDLERS[args.command](args, options)
    except BrokenPipeError:
        sys.stdout = open(os.devnull, "w")
        return 0
    except (PolyimageError, OSError) as exc:  # ours, or a file missing, a folder, unwritable
        if args.debug:
            raise
        message = _one_line(exc) if isinstance(exc, OSError) else str(exc)
        print(f"polyimage: error: {message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
