"""A register block's rows read from a packed copy (schedule.blocking.packed_read): the one
read that moves with the rows (a matrix product's `A(i, k)`, rows `K` apart, a step known
only at run time) is copied, per panel of the reduction, into a buffer of each thread's where
a block's rows lie next to each other at every point of the panel. Its rows are then a
constant step apart: each row's broadcast is read at a constant offset from one pointer and
folds into its multiply, where a pointer per row spilled."""

from __future__ import annotations

from .cexpr import wide_name
from .ctext import assign
from .ctree import Block, Declare, For, Node, Seq
from .names import PACKED_ROWS, PREFIX

P = PREFIX
BUFFER = f"{P}pk"
COLUMNS_BUFFER = f"{P}pb"  # a block of columns' slice of the columns' read
SHARED_COLUMNS = f"{P}pbs"  # a panel's blocks of columns, copied once for all the tasks
POINTS = f"{P}pp"  # points of the reduction-only loops in one panel


def panel_points(block, names, depth_bounds) -> str:
    """C text of the points of the reduction-only loops in a panel: the first's values in
    the panel (between `depth_bounds`, or all of them) times the others' extents."""
    first = names[block.inner[0]]
    lo, hi = depth_bounds or (f"{P}rlo_{first}", f"{P}rhi_{first}")
    extents = [f"{P}extent({P}rlo_{names[k]}, {P}rhi_{names[k]})" for k in block.inner[1:]]
    return " * ".join([f"{P}extent({lo}, {hi})", *extents])


def most_panel_points(block, names) -> str:
    """C text of the most points a panel of the reduction-only loops may hold (a buffer's):
    block.panel_depth values of the first, or all of them, times the others' extents."""
    if not block.panel_depth:
        return panel_points(block, names, None)
    extents = [f"{P}extent({P}rlo_{names[k]}, {P}rhi_{names[k]})" for k in block.inner[1:]]
    return " * ".join([str(block.panel_depth), *extents])


def point_index(block, names, depth_bounds) -> str:
    """C text of the current point's index among the panel's points, in loop order."""
    index = ""
    for k in block.inner:
        lo = f"{P}rlo_{names[k]}"
        if k == block.inner[0] and depth_bounds:
            lo = depth_bounds[0]
        term = f"({wide_name(names[k])} - {lo})"
        if not index:
            index = term
        else:
            index = f"({index} * {P}extent({P}rlo_{names[k]}, {P}rhi_{names[k]}) + {term})"
    return index


def packed_element(block, names, depth_bounds, height: int, u: int) -> str:
    """C text of row u's packed value at the current point, in a block of `height` rows from
    {P}r0 whose values lie from ({P}r0 - {P}rc0) * {P}pp in the buffer."""
    index = point_index(block, names, depth_bounds)
    return f"{BUFFER}[({P}r0 - {P}rc0) * {POINTS} + {index} * {height} + {u}]"


def pack_rows(emitter, printer, read, rows, block, names, depth_bounds, height, loops) -> Node:
    """The `height` rows from {P}r0 of `read` (rows: the rows' Variable) at every point of
    the panel (inside `loops(body)`, the reduction-only loops), each at packed_element."""
    r = names[block.rows]

    def copy(u: int) -> Block:
        start = Declare("int64_t", ((wide_name(r), f"{P}r0 + {u}"),), True)
        element = packed_element(block, names, depth_bounds, height, u)
        return Block((start, *emitter.aliases([rows]), assign(element, printer(read))))

    # a row at a time: each reads its row of the operand in order
    return Block((Seq(tuple(loops(lambda u=u: copy(u)) for u in range(height))),), note=PACKED_ROWS)


def packed_columns_element(block, names, depth_bounds, width: int, offset: int | str) -> str:
    """C text of the columns' packed value `offset` columns into a block of `width`, at the
    current point."""
    index = point_index(block, names, depth_bounds)
    return f"{COLUMNS_BUFFER}[{index} * {width} + {offset}]"


def pack_columns(emitter, printer, read, columns, block, names, depth_bounds, loops) -> Node:
    """The block.width columns from {P}c0 of `read` (columns: the columns' Variable) at every
    point of the panel (inside `loops(body)`), each at packed_columns_element: one `omp simd`
    loop over the columns per point."""
    c = names[block.columns]
    width = block.width

    def copy() -> For:
        start = Declare("int64_t", ((wide_name(c), f"{P}c0 + {P}c"),), True)
        element = packed_columns_element(block, names, depth_bounds, width, f"{P}c")
        body = Block((start, *emitter.aliases([columns]), assign(element, printer(read))))
        return For(f"{P}c", "0", str(width), body, inclusive=False, simd=True)

    return Block((loops(copy),), note=PACKED_ROWS)
