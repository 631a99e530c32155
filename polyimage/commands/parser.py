"""The `polyimage` command's argument parser: its sub-commands, their options and help (the
apps listed in `run --help` are imported only when that help is asked for)."""

from __future__ import annotations

import argparse
import textwrap

from polyimage.version import __version__

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


class _Parser(argparse.ArgumentParser):
    """argparse's parser, reporting a usage error in one line (and `--help` for more)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _at_least(minimum: int):
    """An argparse type: an integer of at least `minimum`."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


COUNT, SEED = _at_least(1), _at_least(0)


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

    bench = commands.add_parser(
        "bench",
        help="time the apps against NumPy, OpenCV, Halide",
        description="Time every schedule of the apps against their NumPy references, OpenCV, "
        "Halide's autoschedulers and hand-written Halide schedules (halide:manual), and a "
        "memory copy. OpenCV and Halide are optional; "
        "without them their timings are left out (a note says so). Install them with "
        'pip install "polyimage[bench]", or pip install -e ".[bench]" in a checkout.',
    )
    bench.add_argument(
        "apps", nargs="*", default=[], metavar="APP", help="apps to time (default: all)"
    )
    bench.add_argument(
        "--size",
        type=_bench_size,
        default="paper",
        help="the paper's image sizes or small ones (default: paper); with --groups, also RxC",
    )
    bench.add_argument("--threads", type=COUNT, default=None, help="threads for every variant")
    bench.add_argument("--runs", type=COUNT, default=5, help="timed runs after one warm-up")
    bench.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    bench.add_argument(
        "--contract",
        action="store_true",
        help="also time the default schedule built with multiply-add contraction "
        "(-ffp-contract=fast), as polyimage:auto+fma beside polyimage:auto",
    )
    bench.add_argument(
        "--reassociate",
        action="store_true",
        help="also time the default schedule built with float reassociation "
        "(compile(..., reassociate=True)), as polyimage:auto+reassoc",
    )
    bench.add_argument(
        "--compare", metavar="OLD.json", help="print each time beside a saved --json run"
    )
    bench.add_argument(
        "--plot",
        metavar="FILE.svg",
        help="also draw a bar chart per app (.svg, .png or .pdf; needs matplotlib)",
    )
    bench.add_argument(
        "--from",
        dest="saved_run",
        metavar="RUN.json",
        help="with --plot: draw a saved --json run instead of running the bench",
    )
    bench.add_argument(
        "--dask",
        action="store_true",
        help="time the apps that take one large image block by block on Dask, against "
        "reading the same Zarr alone and copying it Zarr to Zarr, with peak memory "
        "(needs the dask extra)",
    )
    bench.add_argument(
        "--dask-size",
        type=COUNT,
        default=4096,
        metavar="N",
        help="with --dask: the side of the square test image (default 4096)",
    )
    bench.add_argument(
        "--chunks",
        type=COUNT,
        default=1024,
        metavar="N",
        help="with --dask: the side of each Zarr chunk and Dask block (default 1024)",
    )
    bench.add_argument(
        "--target",
        choices=("native", "avx2"),
        default="native",
        help="build polyimage and Halide for this CPU: the host, or AVX2 without AVX-512 "
        "(-march=x86-64-v3) on any x86-64 host (default: native)",
    )
    bench.add_argument(
        "--machine",
        metavar="KEY=SIZE,...",
        default="",
        help="cache sizes the cost model (and Mullapudi2016) plan for instead of the host's: "
        "l1, l2, llc with K, M, G suffixes, and cores (e.g. l2=512K,llc=8M)",
    )
    _contention_options(bench)
    _group_bench_options(bench)

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

    graph = commands.add_parser("graph", help="draw the stage graph of an app or your pipeline")
    graph.add_argument(
        "app",
        metavar="APP|FILE.py:function",
        help="an app, or the function of your file that returns the pipeline's outputs",
    )
    graph.add_argument(
        "--estimates",
        action="append",
        metavar="K=V,...",
        help="with --schedule: typical parameter values the groups are planned for (default: an "
        "app's paper size)",
    )
    graph.add_argument(
        "-o", "--output", required=True, help="FILE.dot, or FILE.svg/.png (needs Graphviz's dot)"
    )
    graph.add_argument(
        "--schedule",
        metavar="NAME|FILE",
        help="draw the stages as compiled under this schedule (as for run), a colour per group",
    )

    cache = commands.add_parser(
        "cache",
        help="show or empty the build cache",
        description="The cache of built pipelines: POLYIMAGE_CACHE_DIR, else "
        "$XDG_CACHE_HOME/polyimage or ~/.cache/polyimage. It holds at most POLYIMAGE_CACHE_MAX "
        "(default 1G; 500M, 2G, or bytes): after each build the least recently used entries go.",
    )
    cache.add_argument(
        "action",
        choices=("info", "clear"),
        help="info: the location, number of entries and size; clear: remove every entry "
        "(safe while other processes use the cache)",
    )
    calibrate = commands.add_parser(
        "calibrate",
        help="measure what an operation costs against memory traffic on this CPU",
        description="Run a micro-benchmark of about a second (stencils, a table lookup, a "
        "memory stream) built for the target, and keep its figures beside the build cache "
        "for this CPU and target: schedule='auto' prices operations by them from then on "
        "(polyimage report shows them). `polyimage bench` runs it once when they are missing. "
        "Run it on a quiet machine.",
    )
    calibrate.add_argument(
        "--target",
        choices=("native", "avx2"),
        default="native",
        help="the CPU to build the kernels for, as for bench (default: native)",
    )
    calibrate.add_argument(
        "--force", action="store_true", help="measure again even when figures are kept"
    )
    _tune_parser(commands)
    _tune_schedule_parser(commands)
    return parser


def _bench_size(text):
    """An argparse type for `bench --size`: paper, small, or RxC (for --groups)."""
    rows, _, columns = text.lower().partition("x")
    if text in ("paper", "small") or (rows.isdigit() and columns.isdigit()):
        return text
    raise argparse.ArgumentTypeError(f"must be paper, small or RxC (with --groups), got {text!r}")


def _group_bench_options(bench) -> None:
    """`bench --groups` (commands/bench_groups.py): random pipelines, auto against naive and
    each fused group against its stages apart."""
    bench.add_argument(
        "--groups",
        action="store_true",
        help="time random pipelines under auto and naive, and each fused group of auto "
        "against its stages run apart, instead of the apps (sizes: --size RxC, default "
        "1536x2560; small: 96x128)",
    )
    bench.add_argument(
        "--count", type=COUNT, default=20, help="with --groups: pipelines to draw (default 20)"
    )
    bench.add_argument(
        "--seed", type=SEED, default=0, help="with --groups: the first pipeline's seed (0)"
    )


def _contention_options(bench) -> None:
    """`bench --load` and `--callers` (commands/contention.py): timing beside busy processes
    and from several threads at once."""
    bench.add_argument(
        "--load",
        type=SEED,
        default=0,
        metavar="N",
        help="also time every variant while N busy processes each spin on a core, in blocks "
        "alternating with the usual timing: adds the p90, and the median, p90 and worst call "
        "under load with its ratio to the unloaded median. With --load or --callers each "
        "variant is called --runs times, at least 20 (200 at --size small)",
    )
    bench.add_argument(
        "--callers",
        type=COUNT,
        default=None,
        metavar="K",
        help="also call each polyimage schedule from K threads at once, each into its own "
        "outputs, at the pipeline's default thread count (threads=None) unless --threads: "
        "calls per second against one caller alone, and the median, p90 and worst call",
    )


def _tune_parser(commands) -> None:
    """The `tune` sub-command's options (polyimage.autotune)."""
    tune = commands.add_parser(
        "tune",
        help="fit the cost model's weights to this machine",
        description="Measure candidate schedules of the apps, fit the cost weights so that "
        "schedule='auto' picks the fastest, check them on each app left out, and write the "
        "weights file compile reads. Every measurement is stored as it is made: --resume "
        "after an interruption measures nothing twice.",
    )
    tune.add_argument("apps", nargs="*", default=[], metavar="APP", help="default: all apps")
    tune.add_argument(
        "--size",
        choices=("small", "medium", "paper"),
        default="medium",
        help="image sizes: the tests' small ones, half the paper's (default), the paper's",
    )
    tune.add_argument("--budget", default="20m", help="time to spend: 90s, 20m, 1h (default 20m)")
    tune.add_argument("--threads", type=COUNT, default=None, help="default: every core")
    tune.add_argument(
        "--target",
        choices=("native", "avx2"),
        default=None,
        help="the CPU to build for, as for bench (default: POLYIMAGE_MARCH, else native)",
    )
    tune.add_argument(
        "--out", metavar="FILE", help="the weights file (default: where compile reads it)"
    )
    tune.add_argument(
        "--store",
        metavar="FILE",
        help="the measurement store (default: beside the weights file, .measurements.jsonl)",
    )
    tune.add_argument("--resume", action="store_true", help="reuse the measurements in the store")
    tune.add_argument(
        "--plot", metavar="FILE.png", help="draw model cost against time (.png, .svg, .pdf)"
    )
    tune.add_argument("--seed", type=SEED, default=0, help="seed of the sampled weights")
    tune.add_argument(
        "--random", type=SEED, default=0, metavar="K", help="also tune on K random pipelines"
    )
    tune.add_argument("--runs", type=COUNT, default=7, help="timed runs per schedule (default 7)")
    tune.add_argument(
        "--samples", type=SEED, default=16, help="weight vectors sampled for candidates (16)"
    )


def _tune_schedule_parser(commands) -> None:
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
