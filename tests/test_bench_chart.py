"""The chart that opens the benchmarks page and the README comes from the same bench JSON as
their tables: the SVG's title names the files, the page's sentence and redraw command name the
same ones, and a table holds each file's medians as rounded; `bench --ratios` draws it."""

import json
import re

import pytest
from helpers import ROOT

from polyimage.commands.cli import main
from polyimage.commands.plot import halide_ratios

DOCS = ROOT / "docs"
CHART = DOCS / "bench-ratios.svg"
PAGE = DOCS / "benchmarks.md"
# the headings of the tables' columns -> the timing each shows (None: the best autoscheduler's)
COLUMNS = {
    "auto": "polyimage:auto",
    "polyimage auto": "polyimage:auto",
    "naive": "polyimage:naive",
    "best autoscheduler": None,
    "best Halide autoscheduler": None,
    "hand-written": "halide:manual",
    "Halide, hand-written": "halide:manual",
}


def _chart_sources() -> list:
    """The names of the JSON files the committed chart was drawn from, as its title says."""
    title = re.search(r"<title>polyimage auto / Halide, from (.*?)</title>", CHART.read_text())
    assert title, "the chart's SVG has no title naming its JSON files"
    return title.group(1).split(", ")


def _tables(text: str) -> list:
    """Every markdown table in `text`, as a list of {heading: cell} rows."""
    tables = []
    for block in re.findall(r"(?:^\|.*\|\n)+", text, re.M):
        cells = [[c.strip() for c in line.strip("|").split("|")] for line in block.splitlines()]
        tables.append([dict(zip(cells[0], row)) for row in cells[2:]])
    return tables


def _shows(cell: str, seconds) -> bool:
    """Whether `cell` ("30.92 (Mullapudi2016)", "-") is `seconds` in ms as rounded there."""
    number = re.match(r"\d+(\.\d*)?", cell)
    if seconds is None or number is None:
        return seconds is None and cell == "-"
    digits = len(number.group().partition(".")[2])
    return abs(float(number.group()) - seconds * 1e3) <= 0.5 * 10**-digits + 1e-9


def _mismatches(table: list, run: dict) -> list:
    """The cells of `table` that do not show `run`'s medians, or the table's apps where they
    are not the run's in its order."""
    apps = [row.get("app") for row in table]
    if apps != list(run["apps"]):
        return [f"apps {apps}"]
    wrong = []
    for row in table:
        timings = run["apps"][row["app"]]["timings"]
        best = halide_ratios(timings).best
        for heading, variant in COLUMNS.items():
            if heading not in row:
                continue
            variant = variant or f"halide:{best}"
            median = timings.get(variant, {}).get("median")
            named = re.search(r"\((\w+)\)", row[heading])
            if not _shows(row[heading], median) or (named and f"halide:{named[1]}" != variant):
                wrong.append(f"{row['app']} {heading} {row[heading]!r}: {variant} {median}")
    return wrong


def _table_of(run: dict, text: str) -> list:
    """The mismatches of the table in `text` with `run`'s apps (none where it agrees)."""
    candidates = [_mismatches(t, run) for t in _tables(text) if "app" in t[0]]
    return min(candidates, key=len, default=["no table"])


def test_the_chart_opens_the_benchmarks_page_under_its_sources_and_command():
    text = PAGE.read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert images == ["bench-ratios.svg"]  # no older chart that disagrees with the tables
    chart_at = text.index("](bench-ratios.svg)")
    assert chart_at < text.index("\n## ") and chart_at < text.index("\n| app |")
    opening = text[:chart_at]
    command = re.search(r"```sh\n(.*?)```", opening, re.S)[1].replace("\\\n", " ")
    assert "polyimage bench --ratios --plot docs/bench-ratios.svg" in command
    for source in _chart_sources():
        assert (DOCS / "bench" / source).is_file(), source
        assert f"`bench/{source}`" in opening, source
        assert f"--from docs/bench/{source}" in command, source


@pytest.mark.parametrize("page", ["docs/benchmarks.md", "README.md"])
def test_a_table_holds_the_medians_of_the_charts_json(page):
    text = (ROOT / page).read_text()
    runs = {s: json.loads((DOCS / "bench" / s).read_text()) for s in _chart_sources()}
    if page == "README.md":  # its table is the first run's, beside the chart
        assert "![" in text and "](docs/bench-ratios.svg)" in text
        runs = dict(list(runs.items())[:1])
    for source, run in runs.items():
        assert _table_of(run, text) == [], f"{page} has no table of {source}"


def test_halide_ratios_divide_auto_by_the_fastest_autoscheduler_and_the_manual_schedule():
    timing = {
        "polyimage:auto": {"median": 2.0},
        "halide:Mullapudi2016": {"median": 4.0},
        "halide:Adams2019": {"median": 2.5},
        "halide:manual": {"median": 1.0},
    }
    assert halide_ratios(timing) == ("Adams2019", 0.8, 2.0)
    assert halide_ratios({"polyimage:auto": {"median": 2.0}, "halide:manual": {"median": 4.0}}) == (
        None,
        None,
        0.5,
    )
    assert halide_ratios({"polyimage:auto": {"median": 2.0}}) is None


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--ratios"], "--ratios draws a chart: give --plot"),
        (["--from", "a.json", "--from", "b.json", "--plot", "r.svg"], "give --ratios too"),
    ],
)
def test_ratios_need_a_plot_and_several_runs_need_ratios(argv, message, capsys):
    assert main(["bench", *argv]) == 2
    assert message in capsys.readouterr().err


def test_bench_ratios_redraws_the_chart_from_its_json(tmp_path, capsys):
    """The redraw command draws a panel per run, each app's ratios labelled, under the title
    the committed chart has, the same bytes each time."""
    pytest.importorskip("matplotlib", reason="bench --plot needs matplotlib")
    sources = _chart_sources()
    runs = [json.loads((DOCS / "bench" / s).read_text()) for s in sources]
    charts = [tmp_path / "a.svg", tmp_path / "b.svg"]
    for chart in charts:
        argv = ["bench", "--ratios", "--plot", str(chart)]
        for source in sources:
            argv += ["--from", str(DOCS / "bench" / source)]
        assert main(argv) == 0
    assert f"wrote {charts[0]}" in capsys.readouterr().out
    svg = charts[0].read_text()
    assert charts[0].read_bytes() == charts[1].read_bytes()
    assert (
        re.search(r"<title>(.*?)</title>", svg)[1]
        == re.search(r"<title>(.*?)</title>", CHART.read_text())[1]
    )
    for source, run in zip(sources, runs):
        assert f"<!-- {source} -->" in svg
        for app, res in run["apps"].items():
            assert f"<!-- {app} -->" in svg
            ratios = halide_ratios(res["timings"])
            for value in (ratios.autoscheduler, ratios.manual):
                assert value is None or f"{value:.2f}" in svg, (source, app, value)
