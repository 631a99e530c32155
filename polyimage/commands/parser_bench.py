"""The `bench` sub-command's arguments: the apps against the baselines, on Dask (--dask), under
load (--load, --callers), and random pipelines (--groups)."""

from __future__ import annotations

import argparse

from .parser_types import COUNT, SEED


def add_bench(commands) -> None:
    """The `bench` sub-command: time the apps against NumPy, OpenCV and Halide."""
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
        action="append",
        metavar="RUN.json",
        help="with --plot: draw a saved --json run instead of running the bench (with "
        "--ratios, repeat it to draw several runs, e.g. one per --target)",
    )
    bench.add_argument(
        "--ratios",
        action="store_true",
        help="with --plot: draw polyimage:auto's time over the best Halide autoscheduler's "
        "and over halide:manual's, app by app on a log scale, a panel per run",
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
