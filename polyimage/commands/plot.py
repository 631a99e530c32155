"""`polyimage bench --plot FILE.svg`: a bar chart per app of a bench run (what `--json` writes),
median times on a log scale, under a title naming the machine they were measured on. Drawn
with matplotlib (the `tune` extra)."""

from __future__ import annotations

import json
from pathlib import Path

from polyimage.errors import ArgumentError

from .cli_arguments import check_folder
from .targets import header

PLOT_SUFFIXES = (".svg", ".png", ".pdf")
# in the order drawn; variants of a run that are not listed (greedy, numpy) are left out
SHOWN = (
    "polyimage:auto",
    "polyimage:auto+fma",
    "polyimage:auto (luma only)",
    "polyimage:naive",
    "halide:Mullapudi2016",
    "halide:Adams2019",
    "halide:Li2018",
    "halide:manual",
    "opencv",
    "opencv equalizeHist (luma only)",
    "copy floor",
)
COLOURS = {"polyimage": "#1f77b4", "halide": "#ff7f0e", "opencv": "#2ca02c", "copy": "#7f7f7f"}
MISSING = (
    'drawing --plot needs matplotlib: pip install "polyimage[tune]" (in a checkout, pip '
    'install -e ".[tune]")'
)


def check_plot(path) -> Path:
    """`path` as a Path, or ArgumentError naming --plot: a kind of file not drawn, a folder
    that does not exist, or no matplotlib (said before a run of many minutes, not after)."""
    path = Path(path)
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise ArgumentError(f"--plot {path}: give a {', '.join(PLOT_SUFFIXES)} file")
    check_folder("--plot", path)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ArgumentError(MISSING) from None
    return path


def load_run(path) -> dict:
    """The whole of a JSON file `polyimage bench --json` wrote."""
    try:
        with open(path) as fh:
            run = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ArgumentError(f"--from {path}: not a bench JSON file ({exc})") from None
    if not (isinstance(run, dict) and isinstance(run.get("apps"), dict) and "machine" in run):
        raise ArgumentError(f"--from {path}: not a bench JSON file (no apps and machine)")
    return run


def draw(run: dict, path) -> None:
    """Write the chart of `run` (a bench JSON document) to `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"svg.hashsalt": "polyimage"}):  # the same SVG for a run
        _draw(plt, run, path)


def _draw(plt, run, path) -> None:
    from matplotlib.ticker import FuncFormatter, NullFormatter

    apps = list(run["apps"])
    # one chart a row, about as wide as a page's column, so that its labels read at ~10 px
    figure, axes = plt.subplots(len(apps), 1, figsize=(7.5, 2.2 * len(apps) + 0.8), squeeze=False)
    for ax, app in zip(axes.flat, apps):
        timings = run["apps"][app]["timings"]
        shown = [v for v in SHOWN if v in timings]
        ms = [timings[v]["median"] * 1e3 for v in shown]
        ax.barh(range(len(shown)), ms, color=[COLOURS[v.split(":")[0].split()[0]] for v in shown])
        ax.set_yticks(range(len(shown)), shown, fontsize=10)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("median ms (log scale)", fontsize=10)
        size = run["apps"][app].get("size", {})
        ax.set_title(f"{app} {' x '.join(str(v) for v in size.values())}", fontsize=12)
        for y, value in enumerate(ms):
            ax.text(value, y, f" {value:.1f}", va="center", fontsize=9)
    for ax in list(axes.flat)[len(apps) :]:
        ax.set_visible(False)
    figure.suptitle(header(run["machine"]), fontsize=10, wrap=True)
    figure.tight_layout()
    figure.savefig(path, metadata={"Date": None} if Path(path).suffix == ".svg" else None)
    plt.close(figure)
