"""Gathers with 32-bit offsets (codegen.cexpr.narrow_gather, LoopEmitter._narrow_or_wide): a
read whose data-dependent indices are integers of at most 32 signed bits computes its offset
in int32 where the buffer fits int32, and in int64 otherwise. Lookups by every index type,
with indices far outside the table, under naive, auto and tiled schedules on 1 and 2 threads
equal the interpreter; 64-bit and unsigned 32-bit indices stay wide; a table whose bounds do
not fit int32 takes the wide copy; one of constant bounds within int32 needs no guard."""

import numpy as np
import pytest
from helpers import stage_trees

import polyimage
from polyimage import (
    Cast,
    Char,
    Float,
    Function,
    Image,
    Int,
    Interval,
    Long,
    Parameter,
    Short,
    UChar,
    UInt,
    UShort,
    Variable,
)
from polyimage.codegen.ctree import Block, names_used, walk
from polyimage.codegen.loops import WIDE_COPY

TYPES = {"int8": Char, "uint8": UChar, "int16": Short, "uint16": UShort, "int32": Int}
WIDE_TYPES = {"int64": Long, "uint32": UInt}


def _lookup(index_type):
    """out(x, y) = table(k(x, y) + 3, y % 4) * 2 + table(k(x, y) - 1, 0): a 2-D table with a
    data-dependent first index (its domain starts at -5, its size a parameter, so that a
    run-time guard picks the int32 copy) and an affine second one."""
    R, C, T = Parameter(Int, "R"), Parameter(Int, "C"), Parameter(Int, "T")
    x, y, t, u = (Variable(Int, n) for n in "xytu")
    keys = Image(index_type, "keys", [R, C])
    values = Image(Float, "values", [T, 4])
    table = Function(([t, u], [Interval(Int, -5, T - 6), Interval(Int, 0, 3)]), Float, "table")
    table.defn = [values(t + 5, u) + Cast(Float, t)]
    out = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Float, "out")
    key = keys(x, y)
    out.defn = [table(key + 3, y % 4) * 2.0 + table(key - 1, 0)]
    return out


def _keys(rng, dtype, shape):
    info = np.iinfo(dtype)
    near = rng.integers(max(info.min, -12), min(info.max, 20) + 1, shape)
    far = rng.choice([info.min, info.max, info.min + 1, info.max - 1], shape)
    return np.where(rng.random(shape) < 0.2, far, near).astype(dtype)


def _offsets(pipe, name) -> tuple:
    """(whether the loops computing `name` gather with int32 offsets, clamped in int32;
    whether an int64 copy of them stands beside, in a block noted WIDE_COPY)."""
    trees = stage_trees(pipe, name)
    narrow = any(("helper", ("clamp", "int32_t")) in names_used(tree) for tree in trees)
    wide = [n for tree in trees for n in walk(tree) if isinstance(n, Block) and n.note == WIDE_COPY]
    return narrow, bool(wide)


@pytest.mark.parametrize("type_name", sorted(TYPES) + sorted(WIDE_TYPES))
def test_lookups_match_the_interpreter(type_name):
    typ = {**TYPES, **WIDE_TYPES}[type_name]
    out = _lookup(typ)
    rng = np.random.default_rng(len(type_name))
    values = rng.random((20, 4), dtype=np.float32)
    schedules = ["naive", "auto", "group 0: table, out [3x17]"]
    for schedule in schedules:
        pipe = polyimage.compile(
            [out], schedule=schedule, inline=False, estimates={"R": 64, "C": 64, "T": 20}
        )
        narrow, guarded = _offsets(pipe, "out")
        assert narrow == (type_name in TYPES), schedule
        if narrow:
            assert guarded  # beside an int64 copy, chosen by a guard
        for shape in [(1, 1), (3, 5), (9, 70)]:
            keys = _keys(rng, typ.dtype, shape)
            want = polyimage.interpret([out], keys=keys, values=values)
            for threads in (1, 2):
                got = pipe(keys=keys, values=values, threads=threads)
                np.testing.assert_array_equal(got, want, err_msg=f"{schedule} {shape}")


def test_a_table_beyond_int32_takes_the_wide_copy():
    """A table whose domain starts at 2^40 cannot take int32 offsets: the guard picks the int64
    copy, whose clamps keep every lookup inside it."""
    start = 1 << 40
    n = Parameter(Int, "n")
    x, t = Variable(Int, "x"), Variable(Long, "t")
    keys = Image(Int, "keys", [n])
    table = Function(([t], [Interval(Long, start, start + 9)]), Int, "table")
    table.defn = [Cast(Int, t - start) * 3 + 1]
    out = Function(([x], [Interval(Int, 0, n - 1)]), Int, "out")
    out.defn = [table(keys(x)) + table(Cast(Long, keys(x)) + start)]
    pipe = polyimage.compile([out], inline=False, estimates={"n": 100})
    assert _offsets(pipe, "out") == (True, True)
    keys_in = np.array([-(2**31), -1, 0, 3, 9, 10, 2**31 - 1] * 5, np.int32)
    want = polyimage.interpret([out], keys=keys_in)
    np.testing.assert_array_equal(pipe(keys=keys_in), want)
    np.testing.assert_array_equal(want[:7], [2, 2, 2, 11, 29, 29, 29])


@pytest.mark.parametrize("schedule", ["naive", "auto", "group 0: table, out [4x16]"])
def test_the_wide_copy_of_a_split_loop_computes_every_point(schedule):
    """The int64 copy of an innermost loop is one plain loop (no residue blocks, no interior
    split): with a table beyond int32 it runs, beside clamped and down-sampled reads, and
    matches the interpreter on odd sizes and threads."""
    start = 1 << 40
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y, t = Variable(Int, "x"), Variable(Int, "y"), Variable(Long, "t")
    keys = Image(Int, "keys", [R, C])
    half = Image(Float, "half", [R, (C + 1) // 2])
    table = Function(([t], [Interval(Long, start, start + 9)]), Float, "table")
    table.defn = [Cast(Float, t - start) * 0.5 + 1]
    out = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Float, "out")
    out.defn = [
        table(keys(x, y))
        + table(Cast(Long, keys(x, y)) + start)
        + keys(x, polyimage.Clamp(y + 1, 0, C - 1)) * half(x, y // 2)
        - half(x, y // 2) * (y % 2)
    ]
    pipe = polyimage.compile([out], schedule=schedule, estimates={"R": 64, "C": 64})
    assert _offsets(pipe, "out") == (True, True)
    rng = np.random.default_rng(3)
    for rows, cols in ((1, 1), (5, 37), (17, 8)):
        keys_in = rng.integers(-3, 13, (rows, cols)).astype(np.int32)
        half_in = rng.random((rows, (cols + 1) // 2), dtype=np.float32)
        want = polyimage.interpret([out], keys=keys_in, half=half_in)
        for threads in (1, 2):
            got = pipe(keys=keys_in, half=half_in, threads=threads)
            np.testing.assert_allclose(got, want, rtol=1e-6)
