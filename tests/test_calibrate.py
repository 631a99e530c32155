"""What an operation costs on this CPU and target: `polyimage calibrate` measures it once and
keeps it beside the build cache, compile prices operations by it (the report says where the
figure came from), a damaged file is measured again, and the model's costs follow it."""

import dataclasses
import json
import math

import pytest
from helpers import MACHINE

import polyimage
from polyimage.apps import unsharp_mask
from polyimage.commands.cli import main
from polyimage.config import Options
from polyimage.driver.request import resolve_estimates
from polyimage.graph.dag import build_graph
from polyimage.grouping.cost import CostModel
from polyimage.grouping.machine import REFERENCE_GATHER_OPS, REFERENCE_OP_BYTES, Machine
from polyimage.jit import calibrate as cal


@pytest.fixture
def options(tmp_path):
    return dataclasses.replace(Options.from_env(), cache_dir=tmp_path)


def figures(op_bytes, gather_ops=REFERENCE_GATHER_OPS):
    """What measure() returns for a machine whose op_bytes and gather_ops are these (2
    threads; the lookup kernel does 6 operations a point, its read counted as one)."""
    ops = 1e10
    lookups = ops / (gather_ops + 5)
    return {
        "ops_per_second": [ops] * 4 + [6 * lookups],
        "stream_bytes_per_second": 2 * ops * op_bytes,
        "threads": 2,
    }


def test_calibration_is_measured_once_and_kept(options, monkeypatch):
    measured = cal.calibrate(options)
    assert measured.op_bytes > 0 and measured.ops_per_second > 1e8
    assert measured.stream_bytes_per_second > 1e8 and measured.cpu
    path = cal.calibration_path(options)
    assert path.is_file() and path.parent.name == cal.MACHINES

    def refuse(*args):
        raise AssertionError("measured again")

    monkeypatch.setattr(cal, "measure", refuse)
    assert cal.calibrate(options) == measured
    monkeypatch.setattr(cal, "measure", lambda *args: figures(0.9, 40.0))
    again = cal.calibrate(options, force=True)
    assert math.isclose(again.op_bytes, 0.9) and math.isclose(again.gather_ops, 40.0)
    assert again.machine_fields()["gather_ops"] == pytest.approx(2 ** (5 / 4) * 16)
    # another target is measured apart
    other = next(m for m in ("x86-64-v3", "x86-64-v2") if m != options.march)
    assert cal.calibration_path(options.for_march(other)) != path


def test_figures_are_rounded_to_quarter_octaves_of_the_reference(options, monkeypatch):
    for measured, expected in [
        (1.05, 1.0),
        (0.96, 1.0),
        (2.0, 2.0),
        (0.5, 0.5),
        (1.2, 2**0.25),
        (1.45, 2**0.5),
    ]:
        monkeypatch.setattr(
            cal, "measure", lambda *args, m=measured: figures(m * REFERENCE_OP_BYTES)
        )
        got = cal.calibrate(options, force=True).model_op_bytes
        assert math.isclose(got, expected * REFERENCE_OP_BYTES), (measured, got)


def test_compile_prices_operations_by_the_kept_figures(options, monkeypatch):
    outputs, _ = unsharp_mask.build()
    plain = polyimage.compile(outputs, estimates=unsharp_mask.PAPER_SIZE, options=options)
    assert plain.machine.op_bytes == REFERENCE_OP_BYTES
    assert "run `polyimage calibrate`" in plain.report()
    monkeypatch.setattr(cal, "measure", lambda *args: figures(4 * REFERENCE_OP_BYTES))
    cal.calibrate(options)
    costly = polyimage.compile(outputs, estimates=unsharp_mask.PAPER_SIZE, options=options)
    assert math.isclose(costly.machine.op_bytes, 4 * REFERENCE_OP_BYTES)
    line = next(x for x in costly.report().splitlines() if x.startswith("machine:"))
    assert "op cost measured" in line and str(cal.calibration_path(options)) in line
    assert not costly.cached  # the figures are part of the compile key
    assert sum(c.cost for c in costly.auto.costs) > sum(c.cost for c in plain.auto.costs)


def test_a_damaged_file_is_measured_again(options, monkeypatch):
    path = cal.calibration_path(options)
    path.parent.mkdir(parents=True)
    path.write_text('{"op_bytes": ')
    assert cal.load_calibration(options) is None
    outputs, _ = unsharp_mask.build()
    pipe = polyimage.compile(outputs, estimates=unsharp_mask.PAPER_SIZE, options=options)
    assert pipe.machine.op_bytes == REFERENCE_OP_BYTES
    monkeypatch.setattr(cal, "measure", lambda *args: figures(0.7))
    assert math.isclose(cal.calibrate(options).op_bytes, 0.7)
    assert json.loads(path.read_text())["op_bytes"] == pytest.approx(0.7)


def test_operations_cost_in_proportion_to_op_bytes():
    outputs, _ = unsharp_mask.build()
    graph = build_graph(outputs)
    values = resolve_estimates(graph, unsharp_mask.PAPER_SIZE)[0]
    stages = tuple(s.name for s in graph.stages)
    costs = [
        CostModel(graph, values, dataclasses.replace(MACHINE, op_bytes=m))(stages).cost
        for m in (REFERENCE_OP_BYTES, 2 * REFERENCE_OP_BYTES)
    ]
    assert costs[1] > costs[0]
    with pytest.raises(ValueError, match="op_bytes"):
        Machine.detect(op_bytes=-1.0)


def test_the_calibrate_command_prints_its_figures(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(tmp_path))
    assert main(["calibrate"]) == 0
    first = capsys.readouterr().out
    assert first.startswith("op cost measured") and str(tmp_path) in first
    assert main(["calibrate"]) == 0
    assert capsys.readouterr().out == first  # kept, not measured again
    assert main(["calibrate", "--target", "fast"]) == 2


def test_a_read_at_data_dependent_indices_costs_gather_ops():
    rows, cols = polyimage.Parameter(polyimage.Int, "R"), polyimage.Parameter(polyimage.Int, "C")
    x, y, v = (polyimage.Variable(polyimage.Int, n) for n in "xyv")
    img = polyimage.Image(polyimage.UShort, "img", [rows, cols])
    table = polyimage.Function(
        ([v], [polyimage.Interval(polyimage.Int, 0, 255)]), polyimage.Float, "table"
    )
    table.defn = [v * 0.5]
    box = [
        polyimage.Interval(polyimage.Int, 0, rows - 1),
        polyimage.Interval(polyimage.Int, 0, cols - 1),
    ]
    looked = polyimage.Function(([x, y], box), polyimage.Float, "looked")
    looked.defn = [table(img(x, y) % 256) + 1.0]
    shifted = polyimage.Function(([x, y], box), polyimage.Float, "shifted")
    shifted.defn = [table(y % 256) + 1.0]
    graph = build_graph([looked, shifted])
    values = resolve_estimates(graph, {"R": 64, "C": 64})[0]
    ops = {
        g: CostModel(graph, values, dataclasses.replace(MACHINE, gather_ops=g)) for g in (4.0, 20.0)
    }
    assert ops[20.0].ops("looked") - ops[4.0].ops("looked") == pytest.approx(16.0)
    assert ops[20.0].ops("shifted") == ops[4.0].ops("shifted")  # an affine read is no gather


def test_threads_calibrating_at_once_leave_one_whole_file(options, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(cal, "measure", lambda *args: figures(0.8))
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: cal.calibrate(options, force=True), range(16)))
    assert all(math.isclose(r.op_bytes, 0.8) for r in results)
    assert math.isclose(cal.load_calibration(options).op_bytes, 0.8)
    assert [p.name for p in cal.calibration_path(options).parent.iterdir()] == [
        cal.calibration_path(options).name
    ]  # no partial file left
