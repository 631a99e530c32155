"""Code shapes chosen for the vectorizer: narrow tables read at data-dependent indices are
stored in int32 (gcc gathers no 8- or 16-bit elements), and Selects of branch-free stages
evaluate both sides (no masked loads). Both must leave every result unchanged."""

import numpy as np
import pytest
from oracle import assert_same

import polyimage
from polyimage import (
    Cast,
    Char,
    Function,
    Image,
    Int,
    Interval,
    Parameter,
    Select,
    Short,
    UChar,
    UShort,
    Variable,
)
from polyimage.codegen.storage import gathered_stages, storage_type
from polyimage.schedule.memory import buffer_lifetimes

R, C = Parameter(Int, "R"), Parameter(Int, "C")
x, y, v = Variable(Int, "x"), Variable(Int, "y"), Variable(Int, "v")


def lookup_pipeline(table_type, table_is_output=False):
    """out(x, y) = lut(img(x, y)) with lut a table of `table_type` over [0, 255]."""
    img = Image(UChar, "img", [R, C])
    lut = Function(([v], [Interval(Int, 0, 255)]), table_type, "lut")
    lut.defn = [Cast(table_type, v * 193 - 20000)]
    out = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), table_type, "out")
    out.defn = [lut(Cast(Int, img(x, y)))]
    return ([out, lut] if table_is_output else [out]), img


def widened_buffers(pipe) -> set:
    """Stages whose full buffer the generated C keeps in int32 rather than in their own type."""
    graph = pipe.stage_graph
    gathered = gathered_stages(graph)
    return {
        name
        for name in buffer_lifetimes(graph, pipe.group_plans)
        if storage_type(graph, graph.stage(name).func, gathered)
        != graph.stage(name).func.typ.c_name
    }


@pytest.mark.parametrize("table_type", [UChar, Char, UShort, Short], ids=lambda t: t.c_name)
def test_narrow_tables_are_stored_wide_and_read_back_exactly(table_type):
    outputs, _ = lookup_pipeline(table_type)
    pipe = polyimage.compile(outputs)
    assert widened_buffers(pipe) == {"lut"}
    image = np.random.default_rng(3).integers(0, 256, (7, 45), dtype=np.uint8)
    result = pipe(img=image)
    assert result.dtype == table_type.dtype
    assert_same(result, polyimage.interpret(outputs, img=image))


def test_a_table_that_is_an_output_keeps_its_type():
    outputs, _ = lookup_pipeline(UChar, table_is_output=True)
    pipe = polyimage.compile(outputs)
    assert widened_buffers(pipe) == set()
    image = np.arange(5 * 9, dtype=np.uint8).reshape(5, 9)
    for got, want in zip(pipe(img=image), polyimage.interpret(outputs, img=image)):
        assert_same(got, want)


def test_selects_of_branch_free_stages_evaluate_both_sides():
    img = Image(Short, "img", [R, C])
    f = Function(([x, y], [Interval(Int, 1, R - 2), Interval(Int, 1, C - 2)]), Short, "f")
    f.defn = [Select(img(x, y - 1) < img(x, y + 1), img(x - 1, y), img(x + 1, y))]
    pipe = polyimage.compile([f])
    assert "f" in pipe.branch_free
    assert "pim_blend_i16(" in pipe.c_source  # a select of reads blends their bits (cexpr)
    image = np.random.default_rng(5).integers(-300, 300, (6, 11), dtype=np.int16)
    assert_same(pipe(img=image), polyimage.interpret([f], img=image))


def test_a_select_guarding_an_outside_read_stays_a_branch():
    img = Image(Short, "img", [R, C])
    f = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Short, "f")
    f.defn = [Select(y >= 1, img(x, y - 1), img(x, y))]
    pipe = polyimage.compile([f])
    assert "f" not in pipe.branch_free
    assert "pim_select_" not in pipe.c_source
    image = np.random.default_rng(6).integers(-300, 300, (4, 9), dtype=np.int16)
    assert_same(pipe(img=image), polyimage.interpret([f], img=image))


@pytest.mark.parametrize(
    "schedule",
    [
        "naive",
        "group 0: lut, lut2 [7]\ngroup 1: out [3x16]",
        "group 0: lut, lut2 [300]\ngroup 1: out [2x5 then 1x5]",
    ],
)
def test_wide_tables_written_by_tiled_groups_and_read_by_tiles(schedule):
    """lut is a scratch live-out of a tiled group (copied out into its int32 buffer) and a
    live-in of the tiled group that looks it up; odd sizes leave partial tiles."""
    img = Image(UChar, "img", [R, C])
    lut = Function(([v], [Interval(Int, 0, 255)]), UChar, "lut")
    lut.defn = [Cast(UChar, v * 37 + 11)]
    lut2 = Function(([v], [Interval(Int, 0, 254)]), Short, "lut2")
    lut2.defn = [Cast(Short, lut(v + 1)) - lut(v)]
    out = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Short, "out")
    out.defn = [lut2(Cast(Int, img(x, y))) + lut(Cast(Int, img(x, y)))]
    pipe = polyimage.compile([out], schedule=schedule, inline=False)
    assert widened_buffers(pipe) == {"lut", "lut2"}
    rng = np.random.default_rng(9)
    for rows, cols in [(1, 1), (5, 7), (13, 31)]:
        image = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
        for threads in (1, 2):
            assert_same(
                pipe(img=image, threads=threads),
                polyimage.interpret([out], img=image),
                f"{rows}x{cols}",
            )
