"""The arguments of the sub-commands about this machine: the build cache, the calibration of
operation costs and the fit of the cost weights."""

from __future__ import annotations

from .parser_types import COUNT, SEED


def add_cache(commands) -> None:
    """The `cache` sub-command: show or empty the build cache."""
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


def add_calibrate(commands) -> None:
    """The `calibrate` sub-command: what an operation costs on this CPU."""
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


def add_tune(commands) -> None:
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
