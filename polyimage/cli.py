"""The `polyimage` command: `polyimage run APP [INPUT...] -o OUTPUT [--param NAME=VALUE]`."""
from __future__ import annotations

import argparse
import logging
import sys


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="polyimage", description="Compile and run image "
                                     "processing pipelines.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the compiler does")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a benchmark app on photos")
    run.add_argument("app", help="app name, e.g. unsharp_mask")
    run.add_argument("inputs", nargs="*", help="input photos (default: a bundled photo)")
    run.add_argument("-o", "--output", help="where to write the result (PNG or JPEG)")
    run.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                     help="set a parameter (repeatable)")
    run.add_argument("--threads", type=int, default=None, help="OpenMP threads for the run")
    run.add_argument("--runs", type=int, default=3, help="timed runs after one warm-up")
    run.add_argument("--check", action="store_true", help="compare with the NumPy reference")
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(name)s: %(message)s")
    from apps.runner import run_app
    try:
        run_app(args.app, args.inputs, args.output, args.param, args.threads, args.runs,
                args.check)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        print(f"polyimage: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
