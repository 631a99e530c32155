"""The `polyimage` command.

polyimage run APP [INPUT...] -o OUTPUT [--param NAME=VALUE] [--schedule NAME|FILE]
polyimage bench [APP...] [--size paper|small] [--threads N]   time the apps
polyimage report APP | --all                                  stages, domains, inlining;
                                                              --all: the grouping search
polyimage graph APP -o graph.svg|graph.dot [--schedule S]     draw an app's stage graph
"""
from __future__ import annotations

import argparse
import logging
import os
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
    run.add_argument("--schedule", metavar="NAME|FILE", help="auto, naive, greedy, "
                     "greedy-cost, one of the app's own schedules, or a file with a schedule "
                     "(default: the app's first, else auto)")

    bench = commands.add_parser("bench", help="time the apps against NumPy, OpenCV, Halide")
    bench.add_argument("apps", nargs="*", help="apps to time (default: all)")
    bench.add_argument("--size", choices=("paper", "small"), default="paper",
                       help="the paper's image sizes or small ones (default: paper)")
    bench.add_argument("--threads", type=int, default=None, help="threads for every variant")
    bench.add_argument("--runs", type=int, default=5, help="timed runs after one warm-up")
    bench.add_argument("--json", metavar="FILE", help="also write the results as JSON")

    report = commands.add_parser("report", help="print what the compiler made of an app")
    report.add_argument("app", nargs="?", help="app name")
    report.add_argument("--all", action="store_true", help="Table 1 of the TOPLAS 2020 paper for "
                        "every app: stages, most successors, states and time of the grouping "
                        "search for several group limits")
    report.add_argument("--no-inline", action="store_true", help="compile without inlining")
    report.add_argument("--schedule", metavar="NAME|FILE", help="as for run")

    graph = commands.add_parser("graph", help="draw an app's stage graph")
    graph.add_argument("app", help="app name")
    graph.add_argument("-o", "--output", required=True, help="FILE.dot, or FILE.svg/.png "
                       "(needs Graphviz's dot)")
    graph.add_argument("--schedule", metavar="NAME|FILE", help="draw the stages as compiled "
                       "under this schedule (as for run), a colour per group")
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(name)s: %(message)s")
    try:
        if args.command == "run":
            from apps.runner import run_app
            run_app(args.app, args.inputs, args.output, args.param, args.threads, args.runs,
                    args.check, schedule=args.schedule)
        elif args.command == "bench":
            from apps.bench import run_bench
            run_bench(args.apps, args.size, args.threads, args.runs, args.json,
                      report=lambda text: print(text, flush=True))
        elif args.command == "report":
            from apps.runner import grouping_table, report_app
            if args.all:
                print(grouping_table(report=lambda text: print(text, flush=True)))
            elif args.app:
                print(report_app(args.app, inline=not args.no_inline, schedule=args.schedule))
            else:
                raise ValueError("report needs an app name, or --all")
        else:
            from apps.runner import draw_graph
            draw_graph(args.app, args.output, schedule=args.schedule)
    except BrokenPipeError:
        sys.stdout = open(os.devnull, "w")
        return 0
    except (ValueError, TypeError, FileNotFoundError, RuntimeError) as exc:
        print(f"polyimage: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
