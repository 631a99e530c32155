"""What a tuning prints: a table per pipeline of `auto` under the default and the tuned
weights, held out and the best candidate; and, with `--plot`, model cost against measured
time before and after (matplotlib, an optional extra)."""

from __future__ import annotations

import dataclasses
import math

from .fit import geometric_mean
from .store import TuneError

MISSING_MATPLOTLIB = (
    "note: --plot {path} is skipped: matplotlib is not installed (pip install "
    '"polyimage[tune]", in a checkout pip install -e ".[tune]")'
)
PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def check_plot_path(path) -> None:
    """An error now, not after the tuning, for a plot file of a kind not drawn."""
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise TuneError(f"--plot {path}: give a {', '.join(PLOT_SUFFIXES)} file")


def plot_unavailable(path) -> str | None:
    """The one-line note saying why the plot is skipped, or None when it can be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return MISSING_MATPLOTLIB.format(path=path)
    return None


def _ms(seconds, best) -> str:
    if seconds is None:
        return f"{'-':>16}"
    if math.isinf(seconds):
        return f"{'failed':>16}"
    return f"{seconds * 1e3:>9.3f} {seconds / best:>5.2f}x"


def summary(result: dict, new_measurements: int, seconds: float) -> str:
    """The table, the geometric means of time / best, the weights and the tuning time."""
    rows = result["rows"]
    width = max(len(k) for k in rows) + 2
    header = f"{'pipeline':<{width}}" + "".join(
        f"{title:>17}" for title in ("naive ms", "defaults ms", "tuned ms", "held out ms")
    )
    lines = ["", header + f"{'best ms':>10}  best candidate"]
    ratios = {"naive": [], "defaults": [], "tuned": [], "held_out": []}
    for key, row in rows.items():
        best = row["best"]
        line = f"{key:<{width}}"
        for column in ratios:
            line += " " + _ms(row[column], best)
            if row[column] is not None:
                ratios[column].append(row[column] / best)
        lines.append(line + f"{best * 1e3:>10.3f}  {row['best_schedule']}")
    means = ", ".join(
        f"{name.replace('_', ' ')} {geometric_mean(values):.2f}x"
        for name, values in ratios.items()
        if values
    )
    lines.append(f"geometric mean of time / best candidate: {means}")
    weights = ", ".join(f"{k}={v:.3g}" for k, v in dataclasses.asdict(result["weights"]).items())
    lines.append(f"tuned weights: {weights}")
    lines.append(
        f"tuning took {seconds:.0f} s; {new_measurements} schedules measured in this run, "
        f"{len(result['metadata']['measurements'])} in the table"
    )
    return "\n".join(lines)


def plot_costs(path, points) -> None:
    """Two scatter plots, default and tuned weights: each measured schedule's model cost
    against its time, both relative to the best of its pipeline."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(1, 2, figsize=(10, 4.5), sharey=True)
    pipelines = sorted({p[0] for p in points})
    for column, (axis, title) in enumerate(zip(axes, ("default weights", "tuned weights"))):
        for pipeline in pipelines:
            mine = [p for p in points if p[0] == pipeline and math.isfinite(p[2 + column])]
            if not mine:
                continue
            best_time = min(p[1] for p in mine)
            best_cost = min(p[2 + column] for p in mine) or 1.0
            axis.scatter(
                [p[2 + column] / best_cost for p in mine],
                [p[1] / best_time for p in mine],
                label=pipeline,
                s=14,
            )
        axis.set(xscale="log", yscale="log", title=title, xlabel="model cost / lowest")
    axes[0].set_ylabel("measured time / best")
    axes[1].legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)
