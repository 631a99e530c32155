"""`polyimage bench` and `polyimage graph`: the table, the JSON and the Graphviz text."""

import json
import shutil

import pytest

import polyimage
from polyimage.apps import unsharp_mask
from polyimage.commands.bench import format_table, measure, run_bench
from polyimage.commands.cli import main


def test_bench_small_writes_table_and_json(tmp_path, monkeypatch):
    # the bench calibrates this CPU: into a cache of its own, not the session's, whose
    # compiles would otherwise be priced by a figure measured under the suite's load
    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(tmp_path / "cache"))
    lines = []
    path = tmp_path / "bench.json"
    results = run_bench(
        ["unsharp_mask"], size="small", threads=1, runs=2, json_path=path, report=lines.append
    )
    timings = results["unsharp_mask"]["timings"]
    assert {"polyimage:naive", "numpy", "copy floor"} <= set(timings)
    for t in timings.values():
        assert 0 < t["min"] <= t["median"] <= t["max"] and len(t["runs"]) == 2
    compile_info = results["unsharp_mask"]["compile"]
    assert compile_info["cached"] < compile_info["cold"]
    saved = json.loads(path.read_text())
    assert saved["apps"]["unsharp_mask"]["size"] == unsharp_mask.SMALL_SIZE
    table = "\n".join(lines)
    assert "polyimage:naive" in table and "1.00x" in table and "compile:" in table


def _fake_results(other: str, other_timing: dict) -> dict:
    """Results of one 4x5 app: polyimage:naive at 2 ms and `other` at `other_timing` (s)."""
    return {
        "app": {
            "size": {"R": 4, "C": 5},
            "compile": {"cold": 1.0, "cached": 0.01},
            "timings": {
                "polyimage:naive": {"median": 0.002, "min": 0.001, "max": 0.003},
                other: other_timing,
            },
        }
    }


def test_format_table_ratios():
    fake = _fake_results("numpy", {"median": 0.008, "min": 0.008, "max": 0.009})
    table = format_table(fake)
    assert "app (4x5)" in table
    assert "4.00x" in table and "1.00x" in table
    assert table.index("polyimage:naive") < table.index("numpy"), "sorted fastest first"


def test_format_table_keeps_columns_aligned_past_long_labels():
    long = "opencv equalizeHist (luma only)"
    fake = _fake_results(long, {"median": 0.004, "min": 0.004, "max": 0.005})
    rows = format_table(fake).splitlines()[1:4]
    ends = [rows[0].index("median ms") + len("median ms")]
    ends += [row.index(value) + len(value) for row, value in zip(rows[1:], ("2.00", "4.00"))]
    assert len(set(ends)) == 1, rows
    assert long + " " in rows[2]


def test_measure_counts_runs():
    calls = []
    timing = measure(lambda: calls.append(1), runs=4)
    assert len(calls) == 6, "one warm-up, one untimed round and four timed runs"
    assert len(timing["runs"]) == 4


def test_graph_dot(tmp_path):
    target = tmp_path / "g.dot"
    assert main(["graph", "unsharp_mask", "-o", str(target), "--as-written"]) == 0
    text = target.read_text()
    assert text.startswith('digraph "unsharp_mask"')
    assert (
        '"blurx" -> "blury";' in text
        and '"mask" [shape=ellipse, label="mask", peripheries=2];' in text
    )


def test_graph_svg_needs_dot(tmp_path, capsys):
    target = tmp_path / "g.svg"
    code = main(["graph", "unsharp_mask", "-o", str(target)])
    if shutil.which("dot"):
        assert code == 0 and target.read_text().lstrip().startswith("<?xml")
    else:
        assert code == 2 and "needs Graphviz" in capsys.readouterr().err


def test_graph_draws_the_groups_of_the_default_schedule(tmp_path):
    """Without --schedule the graph is the pipeline as compile and run build it by default
    (auto): the stages after inlining, each group in its box."""
    default, auto = tmp_path / "default.dot", tmp_path / "auto.dot"
    assert main(["graph", "unsharp_mask", "-o", str(default)]) == 0
    assert main(["graph", "unsharp_mask", "-o", str(auto), "--schedule", "auto"]) == 0
    text = default.read_text()
    assert text == auto.read_text()
    assert 'subgraph "cluster_0"' in text and 'label="group 0: ' in text
    assert '"blurx" -> "blury";' not in text, "blury is inlined"


def test_rendering_without_dot_says_what_to_install_before_compiling(tmp_path, capsys, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("compiled before the output was checked")

    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(polyimage, "compile", refuse)
    target = tmp_path / "graph.svg"
    assert main(["graph", "unsharp_mask", "-o", str(target)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "needs Graphviz's `dot` program" in lines[0], lines
    assert "install the graphviz package" in lines[0]
    assert f"or write -o {tmp_path / 'graph.dot'}, which needs no Graphviz" in lines[0]
    assert not target.exists()


def test_pipeline_to_dot_matches_graph():
    outputs, _ = unsharp_mask.build()
    assert polyimage.compile(outputs, inline=False).to_dot().count("->") == 7
    assert polyimage.compile(outputs).to_dot().count("->") == 3, "img->blurx->mask, img->mask"


def test_the_graph_has_a_box_per_group_titled_with_its_tiles():
    outputs, _ = unsharp_mask.build()
    schedule = "group 0: blurx, mask [1x16x256 then 1x4x256]"
    text = polyimage.compile(outputs, schedule=schedule, build=False).to_dot()
    assert text.count("subgraph") == 1 and 'label="group 0: 1x16x256 then 1x4x256"' in text
    inside = text[text.index("subgraph") : text.index("    }")]
    assert '"blurx"' in inside and '"mask"' in inside and '"img"' not in inside
    naive = polyimage.compile(outputs, schedule="naive", build=False).to_dot()
    assert 'label="group 0: untiled"' in naive and 'label="group 1: untiled"' in naive


def test_report_lists_stages_domains_and_inlining():
    outputs, _ = unsharp_mask.build()
    pipe = polyimage.compile(outputs, estimates={"R": 2848, "C": 4256}, constraints=[])
    text = pipe.report()
    assert "4 stages as written, 2 after inlining" in text
    assert "blurx[c, x, y] : " in text and "2 <= x <= 1 + R" in text
    assert "sharpen into mask (pointwise producer)" in text
    assert "estimates: R=2848, C=4256" in text and "warnings: none" in text
    passes, compiled = text.splitlines()[-2:]
    assert passes.startswith("passes: ") and "build " in passes
    assert compiled.startswith("C compile: ") and "main " in compiled


def test_report_cli(capsys):
    assert main(["report", "harris"]) == 0
    out = capsys.readouterr().out
    assert "harris: 11 stages as written, 3 after inlining" in out
    assert main(["report", "harris", "--no-inline"]) == 0
    assert "11 stages as written, 11 after inlining" in capsys.readouterr().out


def test_graph_colours_the_groups_of_a_schedule(tmp_path):
    target = tmp_path / "groups.dot"
    assert main(["graph", "harris", "-o", str(target), "--schedule", "greedy"]) == 0
    text = target.read_text()
    assert text.count("fillcolor") == 3  # the 3 stages after inlining, in one group
    assert (
        len(set(line.split("fillcolor=")[1] for line in text.splitlines() if "fillcolor" in line))
        == 1
    )


def test_grouping_table_lists_states_and_times():
    from polyimage.commands.runner import grouping_table

    text = grouping_table(["harris"], limits=(2, 4), report=lambda _: None)
    header, units, row = text.splitlines()
    assert "limit 2" in header and "limit 4" in header
    cells = row.split()
    assert cells[:4] == ["harris", "11", "3", "1"]
    assert cells[4:].count("/") == 4


def test_bench_plot_draws_every_app_under_the_machine(tmp_path, capsys):
    """`polyimage bench --plot FILE --from RUN.json` draws a saved run: a panel per app with
    its variants, the machine's header as the title, the same file for the same run."""
    pytest.importorskip("matplotlib", reason="bench --plot needs matplotlib")
    machine = {
        "cpu": "Test CPU",
        "target": "native",
        "march": "native",
        "isa": "testisa",
        "l1_bytes": 32768,
        "l2_bytes": 1 << 20,
        "llc_bytes": 8 << 20,
        "overrides": {},
        "vector_bytes": 32,
        "op_bytes": 0.4,
        "threads": 2,
    }
    timing = {"median": 0.012, "min": 0.011, "max": 0.013}
    apps = {
        name: {
            "size": {"R": 64, "C": 96},
            "timings": {"polyimage:auto": timing, "halide:manual": timing, "numpy": timing},
        }
        for name in ("unsharp_mask", "harris", "interpolate")
    }
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"machine": machine, "apps": apps}))
    charts = [tmp_path / "a.svg", tmp_path / "b.svg"]
    for chart in charts:
        assert main(["bench", "--plot", str(chart), "--from", str(run)]) == 0
    svg = charts[0].read_text()
    assert all(name in svg for name in apps) and "Test CPU; target native" in svg
    assert "halide:manual" in svg and "numpy" not in svg  # numpy is left out of the chart
    assert charts[0].read_bytes() == charts[1].read_bytes()
    assert f"wrote {charts[1]}" in capsys.readouterr().out
