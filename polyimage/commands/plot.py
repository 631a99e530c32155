"""`polyimage bench --plot FILE.svg`: a bar chart per app of a bench run (what `--json` writes),
median times on a log scale, under a title naming the machine they were measured on; with
`--ratios`, one chart of polyimage:auto's time over Halide's, app by app, for one or more runs
(a panel each: the targets side by side). Drawn with matplotlib (the `tune` extra)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

from polyimage.apps.baselines.halide_runner import AUTOSCHEDULERS, MANUAL
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


class HalideRatios(NamedTuple):
    """polyimage:auto's median time over the best Halide autoscheduler's (`best` names it) and
    over the hand-written Halide schedule's; None where a run lacks that timing."""

    best: str | None
    autoscheduler: float | None
    manual: float | None


def halide_ratios(timings: dict) -> HalideRatios | None:
    """The HalideRatios of one app's timings in a bench run, or None without polyimage:auto or
    any Halide timing."""
    auto = timings.get("polyimage:auto", {}).get("median")
    scheduled = {
        s: timings[f"halide:{s}"]["median"] for s in AUTOSCHEDULERS if f"halide:{s}" in timings
    }
    manual = timings.get(f"halide:{MANUAL}", {}).get("median")
    if not auto or not (scheduled or manual):
        return None
    best = min(scheduled, key=scheduled.__getitem__) if scheduled else None
    return HalideRatios(
        best, auto / scheduled[best] if best else None, auto / manual if manual else None
    )


def draw(run: dict, path) -> None:
    """Write the chart of `run` (a bench JSON document) to `path`."""
    _save(lambda plt: _draw(plt, run), path, header(run["machine"]))


def draw_ratios(runs: list, path) -> None:
    """Write to `path` the chart of polyimage:auto's time over Halide's in `runs` ([(the name
    of its JSON file, a bench JSON document)], a panel each); the SVG's title names the
    files, so that a page can show where its chart came from."""
    sources = ", ".join(source for source, _ in runs)
    _save(lambda plt: _draw_ratios(plt, runs), path, f"polyimage auto / Halide, from {sources}")


def _save(figure_of, path, title: str) -> None:
    """Draw `figure_of(pyplot)` into `path` under the metadata `title`, the same bytes for
    the same chart (no date, a fixed hash salt)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metadata = {"Title": title, **({"Date": None} if Path(path).suffix == ".svg" else {})}
    with matplotlib.rc_context({"svg.hashsalt": "polyimage"}):
        figure = figure_of(plt)
        figure.savefig(path, metadata=metadata)
        plt.close(figure)


# the ratio chart's bars: (HalideRatios field, legend, note where the run lacks it, colour)
RATIO_BARS = (
    ("autoscheduler", "auto / best Halide autoscheduler", "no autoscheduler", "#1f77b4"),
    ("manual", "auto / hand-written Halide", "no hand-written", "#ff7f0e"),
)


def _draw_ratios(plt, runs: list):
    """A panel per run, a row per app with a bar per ratio from 1 (parity) on a log scale,
    each labelled with its value; sized so that its text reads at ~12 px on an 800-pixel-wide
    page column."""
    from matplotlib.patches import Patch
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    panels = []
    for source, run in runs:
        every = [(app, halide_ratios(res["timings"])) for app, res in run["apps"].items()]
        panels.append((source, run["machine"], [(app, r) for app, r in every if r is not None]))
    values = [v for *_, rows in panels for _, r in rows for v in (r.autoscheduler, r.manual) if v]
    if not values:
        raise ArgumentError("--ratios: no app of the run has polyimage:auto and a Halide time")
    reach = max(max(values), 1 / min(values)) * 1.8  # room for the value labels
    heights = [max(len(rows), 1) * 0.5 + 0.9 for *_, rows in panels]
    figure, axes = plt.subplots(
        len(panels),
        1,
        figsize=(8, sum(heights) + 1.0),
        gridspec_kw={"height_ratios": heights},
        squeeze=False,
    )
    for ax, (source, machine, rows) in zip(axes.flat, panels):
        for k, (field, _, missing, colour) in enumerate(RATIO_BARS):
            offset = (k - 0.5) * 0.4  # the first bar of a row above, the second below
            for y, (_, ratio) in enumerate(rows):
                value = getattr(ratio, field)
                if value is None:
                    ax.text(1.04, y + offset, missing, va="center", fontsize=10, color="gray")
                    continue
                ax.barh(y + offset, value - 1, left=1, height=0.38, color=colour)
                text, side = (f" {value:.2f}", "left") if value >= 1 else (f"{value:.2f} ", "right")
                ax.text(value, y + offset, text, ha=side, va="center", fontsize=11)
        ax.axvline(1, color="black", linewidth=1.2)
        ax.set_yticks(range(len(rows)), [app for app, _ in rows], fontsize=13)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_xscale("log")
        ax.set_xlim(1 / reach, reach)
        ticks = [2.0**k for k in range(-6, 7) if 1 / reach <= 2.0**k <= reach]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.tick_params(axis="x", labelsize=12)
        ax.grid(axis="x", color="#dddddd")
        ax.set_axisbelow(True)
        ax.set_xlabel(
            "\u2190 polyimage faster     auto's time / Halide's (log)     Halide faster \u2192",
            fontsize=12,
        )
        ax.set_title(_target_title(machine), loc="left", fontsize=14)
        ax.set_title(source, loc="right", fontsize=11, color="dimgray")
    machine, height = panels[0][1], figure.get_figheight()
    figure.suptitle(
        f"polyimage auto's time over Halide's: {machine.get('cpu', 'a CPU')}, "
        f"{machine.get('threads') or 'all'} threads",
        y=1 - 0.1 / height,
        va="top",
        fontsize=14,
    )
    handles = [Patch(color=colour, label=label) for _, label, _, colour in RATIO_BARS]
    figure.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 1 - 0.4 / height),
        ncol=2,
        fontsize=12,
        frameon=False,
    )
    figure.tight_layout(rect=(0, 0, 1, 1 - 0.75 / height))
    return figure


def _target_title(machine: dict) -> str:
    """`native: 512-bit vectors` from a bench run's machine record."""
    target = machine.get("target", "")
    bits = machine.get("vector_bytes", 0) * 8
    return f"{target}: {bits}-bit vectors" if bits else target


def _draw(plt, run):
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
    return figure
