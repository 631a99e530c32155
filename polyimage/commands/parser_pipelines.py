"""The arguments of the sub-commands that take an app or a user's pipeline (APP|FILE.py:function)
and compile it: export, report, graph and tune-schedule."""

from __future__ import annotations

from .parser_types import COUNT


def add_export(commands) -> None:
    """The `export` sub-command: a pipeline as a C library."""
    export = commands.add_parser(
        "export",
        help="write an app or your pipeline as a C library (header, static and shared library)",
        description="Compile an app, or the pipeline a function of your file returns "
        "(FILE.py:function), and write it into a folder as a C library that needs no Python: "
        "NAME.c, NAME.h, libNAME.a, libNAME.so, a README with the line that links it, and a "
        "manifest from which polyimage.load(DIR) calls it. CC picks the compiler (a cross "
        "compiler too, with --march for its CPU).",
    )
    export.add_argument("pipeline", metavar="APP|FILE.py:function", help="what to export")
    export.add_argument("-o", "--output", required=True, metavar="DIR", help="the folder to write")
    export.add_argument("--schedule", metavar="NAME|FILE", help="as for run (default: auto)")
    export.add_argument(
        "--estimates",
        action="append",
        metavar="K=V,...",
        help="typical parameter values for the optimizer (default: the app's paper size)",
    )
    export.add_argument("--name", help="the entry function's name (default: the pipeline's)")
    export.add_argument(
        "--target",
        choices=("native", "avx2"),
        default="native",
        help="build for this CPU, as for bench (default: native)",
    )
    export.add_argument(
        "--march",
        metavar="CPU",
        help="build for any -march value instead (e.g. armv8-a with CC=aarch64-linux-gnu-gcc)",
    )


def add_report(commands) -> None:
    """The `report` sub-command: what the compiler made of a pipeline."""
    report = commands.add_parser(
        "report", help="print what the compiler made of an app or your pipeline"
    )
    report.add_argument(
        "app",
        nargs="?",
        metavar="APP|FILE.py:function",
        help="an app, or the function of your file that returns the pipeline's outputs",
    )
    report.add_argument(
        "--all",
        action="store_true",
        help="Table 1 of the TOPLAS 2020 paper for "
        "every app: stages, most successors, states and time of the grouping "
        "search for several group limits",
    )
    report.add_argument("--no-inline", action="store_true", help="compile without inlining")
    report.add_argument(
        "--vec",
        action="store_true",
        help="also say which innermost loops the C compiler vectorized, and why not",
    )
    report.add_argument("--schedule", metavar="NAME|FILE", help="as for run")
    report.add_argument(
        "--estimates",
        action="append",
        metavar="K=V,...",
        help="typical parameter values the optimizer plans for (default: an app's paper size)",
    )


def add_graph(commands) -> None:
    """The `graph` sub-command: a pipeline's stage graph, as Graphviz text or rendered."""
    graph = commands.add_parser(
        "graph",
        help="draw the stage graph of an app or your pipeline",
        description="Draw the stages of an app, or of the pipeline a function of your file "
        "returns (FILE.py:function), as compiled under the schedule run and compile use "
        "(auto, unless --schedule), each group in a box of its own colour titled with its "
        "tiles; --as-written draws the stages as written instead, before inlining. -o "
        "FILE.dot writes Graphviz text and needs nothing else; -o FILE.svg, .png or .pdf "
        "renders it with Graphviz's dot program (the graphviz package: apt install graphviz, "
        "brew install graphviz).",
    )
    graph.add_argument(
        "app",
        metavar="APP|FILE.py:function",
        help="an app, or the function of your file that returns the pipeline's outputs",
    )
    graph.add_argument(
        "--estimates",
        action="append",
        metavar="K=V,...",
        help="typical parameter values the groups are planned for (default: an app's paper "
        "size; a parameter of your pipeline without one is assumed 1024)",
    )
    graph.add_argument(
        "-o",
        "--output",
        required=True,
        help="FILE.dot, or FILE.svg, .png or .pdf (rendered by Graphviz's dot)",
    )
    drawn = graph.add_mutually_exclusive_group()
    drawn.add_argument(
        "--schedule",
        metavar="NAME|FILE",
        help="draw the groups of this schedule, as for run (default: auto)",
    )
    drawn.add_argument(
        "--as-written",
        action="store_true",
        help="draw the stages as written, before inlining and grouping (nothing is compiled)",
    )


def add_tune_schedule(commands) -> None:
    """The `tune-schedule` sub-command's options (commands/tune_schedule.py)."""
    tune_schedule = commands.add_parser(
        "tune-schedule",
        help="time candidate schedules of an app or your pipeline and keep the fastest",
        description="Compile an app, or the pipeline a function of your file returns "
        "(FILE.py:function), under each candidate of schedule='measured' (auto's choice, "
        "greedy-cost, greedy, naive, auto's tiles halved and doubled), time them on random "
        "inputs of the estimates' sizes, print each one's median and the fastest, and keep the "
        "choice in the build cache for this CPU, target and thread count: a compile with "
        "schedule='measured' (the same pipeline, name and estimates) called on inputs of "
        "those sizes then runs the fastest at once, without timing. A progress bar on stderr "
        "shows the compiles and rounds of calls. Run it on a quiet machine.",
    )
    tune_schedule.add_argument(
        "pipeline",
        metavar="APP|FILE.py:function",
        help="an app, or the function of your file that returns the pipeline's outputs",
    )
    tune_schedule.add_argument(
        "--estimates",
        action="append",
        metavar="K=V,...",
        help="the sizes to compile for and time at (default: the app's paper size; a "
        "parameter of your pipeline without one is assumed 1024)",
    )
    tune_schedule.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a parameter the sizes do not give (repeatable; default: the app's)",
    )
    tune_schedule.add_argument(
        "--threads",
        type=COUNT,
        default=None,
        help="threads of the timed calls, the choice kept for that count (default: a "
        "call's default, the cores)",
    )
    tune_schedule.add_argument(
        "--force", action="store_true", help="time again even when a choice is kept"
    )
