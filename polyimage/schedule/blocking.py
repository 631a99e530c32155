"""Register blocking of a Reduction (issue 52): a block of BLOCK_ROWS values of one owned
variable (the rows) by a few vectors of the contiguous one (the columns) accumulates in
registers across every reduction-only loop and is stored once, so that each read along the
columns serves all the rows of the block (a matrix product's row of B, a convolution's input
row under every output channel) and each read along the rows is one broadcast.

Legality: the target is the owned variables themselves (`r + c`, one per dimension), so
moving them outside the reduction-only variables, which keep their written order, gives every
cell its updates in the written sequence (schedule.reduction_order's proof): results equal
the interpreter's bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..algebra.affine import coefficient, is_affine, linear_form
from ..algebra.evaluate import extent
from ..dsl import expr as E
from ..dsl.cases import Op
from ..dsl.reduction import Reduction
from .reduction_order import (
    cell_fixed,
    contiguous_variable,
    owned_forms,
    single_update,
    unit_stride,
)

# rows of a register block, and vectors of the contiguous dimension per row: 8 accumulators
# leave registers for the broadcasts and loads with AVX2's 16 vector registers (gcc reads the
# columns' operand once per row, folded into the multiply); with AVX-512's 32 registers, 12
# rows of one vector where the rows lie a constant step apart (each row's broadcast then
# feeds one multiply and folds into it, at a constant offset from one pointer, where a
# broadcast shared by several vectors is an instruction of its own that takes a
# floating-point slot on some cores: a 3x3 conv layer 1.3x slower in blocks of 8 rows by 2
# vectors on Zen 4), else 4 rows of 4 vectors (rows a step apart known only at run time take
# an address register each: 12 of them spill). A block whose columns hold fewer vectors
# takes more rows, to keep as many accumulators
BLOCK_ROWS = 4
BLOCK_VECTORS = 2
WIDE_BLOCK_ROWS = 12  # with vectors of 64 bytes (AVX-512: 32 registers), rows a constant apart
WIDE_BLOCK_VECTORS = 1
WIDE_RUNTIME_VECTORS = 4  # with vectors of 64 bytes, rows a step apart known at run time
# a block of columns' slice of a panel is copied only where this many blocks of rows read it
PACKED_REUSE = 4
# blocking pays where the reduction-only loops run at least this many points per cell
MIN_UPDATES = 8
# the most register blocks of rows a parallel task takes, and the tasks per core to aim for
CHUNK_BLOCKS = 16
TASKS_PER_CORE = 4
# the most values of the first reduction-only variable in one panel; fewer where a block's
# slice of the panel would not fit in half the L1
PANEL_DEPTH = 256
# the span of memory within which a block's rows are stored from its accumulators
PAGE_BYTES = 4096
# the operations a register block runs on vectors, and the updates it combines
ARITHMETIC = ("+", "-", "*", "/")
COMBINED = (Op.Sum, Op.Mul)


@dataclass(frozen=True)
class RegisterBlock:
    """Reduction variable indices: `rows` (blocked by `height`, and by `chunk` rows per
    parallel task), `columns` (the contiguous one, blocked by `width` elements, and by
    `panel_columns` per panel), `outer` (the other owned ones, outermost) and `inner` (the
    reduction-only ones, in their written order; the first in panels of `panel_depth` values,
    0: whole)."""

    rows: int
    columns: int
    outer: tuple
    inner: tuple
    height: int
    width: int
    chunk: int
    panel_columns: int
    panel_depth: int
    lanes: int = 1  # elements of one vector: the narrowest block at the end of the columns
    panel_bytes: int = 0  # a panel of the operands read along the columns
    slice_bytes: int = 0  # a block's slice of that panel
    initializes: bool = False  # each task sets its cells to the default (initialized_by_tasks)
    epilogue: tuple = ()  # stages each task computes from its cells (folds_into_tasks)
    # the epilogue computed from each block's accumulators as it ends (epilogue_on_vectors)
    in_registers: bool = False
    scratch: bool = False  # the cells live in a buffer of each thread's, a task's at a time
    packed: bool = False  # the rows' read copied per panel, rows a constant step apart
    packed_columns: bool = False  # the columns' read copied per block of columns and panel
    # a read along the columns moves with the rows too (a window's taps): each row loads its
    # own vectors, no read is shared down the block
    rows_read_own: bool = False

    def describe(self, func) -> str:
        """The blocks and why: what a step of the reduction loads for how many vector
        updates (the block's intensity), where the accumulators live, and which cache holds
        the panel of the operands read along the columns and a block's slice of it."""
        names = [v.name for v in func.reduction_variables]
        depth = f" in panels of {self.panel_depth}" if self.panel_depth else ""
        vectors = max(1, self.width // max(1, self.lanes))
        held = "vector variables" if vector_ready(func) else "an array under omp simd"
        along = sorted({ref.func.name for ref in reads_along(func, self.columns)})
        return (
            f"register blocks of {self.height} {names[self.rows]} by {self.width} "
            f"{names[self.columns]}, accumulated across {', '.join(names[k] for k in self.inner)}"
            f" in {held}: a step loads {self._step_loads(vectors)} "
            f"for {self.height * vectors} vector updates; tasks of {self.chunk} "
            f"{names[self.rows]}, panels of {self.panel_columns} {names[self.columns]} by "
            f"{names[self.inner[0]]}{depth}: a panel of {', '.join(along)} "
            f"({_kib(self.panel_bytes)}) stays in L2, a block's slice ({_kib(self.slice_bytes)}) "
            "in L1"
            + (
                f"; {', '.join(self.epilogue)} computed from each block's accumulators as it "
                "ends, in registers"
                if self.epilogue and self.in_registers
                else f"; {', '.join(self.epilogue)} computed by each task from its cells, in cache"
                if self.epilogue
                else ""
            )
            + ("; the cells kept per task in a buffer of each thread's" if self.scratch else "")
            + (
                f"; {_packed_name(func, self)} copied per panel, its rows a constant step apart"
                if self.packed
                else ""
            )
            + (
                f"; {_packed_column_name(func, self)} copied per block of columns and panel"
                if self.packed_columns
                else ""
            )
        )

    def _step_loads(self, vectors: int) -> str:
        """What one step of the reduction loads for the block's updates."""
        if self.rows_read_own:
            return f"{self.height * vectors} vectors (each row its own)"
        return f"{self.height} values (broadcast) and {vectors} vector{'s' if vectors > 1 else ''}"


def _packed_name(func, block) -> str:
    read = packed_read(func, func.reduction_variables[block.rows])
    return read.func.name if read is not None else "?"


def _packed_column_name(func, block) -> str:
    read = packed_column_read(func, block.columns, block.inner)
    return read.func.name if read is not None else "?"


def _kib(count: int) -> str:
    return f"{count / 1024:.0f} KiB" if count >= 1024 else f"{count} B"


def constant_row_steps(func, rows) -> bool:
    """Whether every read of Reduction `func`'s update that moves with `rows` (its rows'
    variable) moves a step known at compile time: the dimensions after each it moves along
    have constant bounds."""
    update = func.cases[0].value
    for ref in (n for n in E.walk(update.value) if isinstance(n, E.Reference)):
        for d, arg in enumerate(ref.args):
            if _moves_arg(arg, rows) and _runtime_step(ref, d):
                return False
    return True


def _runtime_step(ref, d: int) -> bool:
    """Whether moving `ref` along its dimension `d` steps a number of elements known only at
    run time: some dimension after it has bounds that read a Parameter."""
    return any(
        isinstance(n, E.Symbol)
        for iv in ref.func.intervals[d + 1 :]
        for n in (*E.walk(iv.lb), *E.walk(iv.ub))
    )


def packed_read(func, rows):
    """The one read of Reduction `func`'s update that moves with `rows` (its rows' variable),
    where it is the only one and the update runs on vector variables: copied per panel into a
    buffer whose rows lie a constant step apart (a matrix product's `A(i, k)`, rows `K`
    apart), it then takes the blocks of rows a constant step apart. None otherwise."""
    update = func.cases[0].value
    moving = [n for n in E.walk(update.value) if isinstance(n, E.Reference) and _moves(n, rows)]
    if len(moving) != 1 or not vector_ready(func):
        return None
    return moving[0]


def packed_column_read(func, columns: int, inner) -> E.Reference | None:
    """The one read of Reduction `func`'s update that moves with its columns (index
    `columns`), where it is the only one, the update runs on vector variables, and it moves
    with a reduction-only variable (`inner`: their indices) a step known only at run time (a
    matrix product's `B(k, j)`, rows `N` apart: a block's slice of its panel, one line per
    row 4 KiB apart where N is 1024, falls into one set of the L1); copied per block of
    columns and panel of the reduction, its slice then lies in consecutive lines. None
    otherwise."""
    column = func.reduction_variables[columns]
    moving = reads_along(func, columns)
    if len(moving) != 1 or not vector_ready(func):
        return None
    read = moving[0]
    if read is transposed_read(func, columns):
        return read
    for k in inner:
        var = func.reduction_variables[k]
        for d, arg in enumerate(read.args):
            if _moves_arg(arg, var) and _runtime_step(read, d):
                return read if not _moves_arg(arg, column) else None
    return None


def columns_shared(func, block) -> bool:
    """Whether the copies of the columns' read (packed_column_read) of Reduction `func`'s
    `block` serve every task, a panel copied once outside them: the read reads none of the
    outer variables and the cells live in memory (not in a task's buffer, which cannot wait
    for the next panel)."""
    read = packed_column_read(func, block.columns, block.inner) if block.packed_columns else None
    outer = [func.reduction_variables[k] for k in block.outer]
    return (
        read is not None
        and not block.scratch
        and not any(_moves_arg(a, v) for v in outer for a in read.args)
    )


def buffer_bytes(func, block, evaluate) -> tuple:
    """(bytes of each thread's buffers, bytes shared by the threads) that Reduction `func`'s
    `block` takes at the sizes of `evaluate`: a task's cells, its copy of the rows' read,
    its copy of a block of columns, or the shared copy of a panel of columns."""
    extents = [extent(evaluate, iv) for iv in func.reduction_intervals]
    inner = block.inner
    depth = (
        extents[inner[0]] if not block.panel_depth else min(block.panel_depth, extents[inner[0]])
    )
    points = depth * math.prod(extents[k] for k in inner[1:])
    itemsize = func.typ.dtype.itemsize
    per_thread = block.chunk * extents[block.columns] * itemsize if block.scratch else 0
    if block.packed:
        per_thread += block.chunk * points * itemsize
    shared = 0
    if block.packed_columns and columns_shared(func, block):
        shared = block.panel_columns * points * itemsize
    elif block.packed_columns:
        per_thread += block.width * points * itemsize
    return per_thread, shared


def _moves_arg(arg, var) -> bool:
    return any(n is var for n in E.walk(arg))


def reads_along(func, columns) -> list:
    """The reads of the update that move with the variable at index `columns`."""
    column = func.reduction_variables[columns]
    update = func.cases[0].value
    return [n for n in E.walk(update.value) if isinstance(n, E.Reference) and _moves(n, column)]


def register_block(func, evaluate, machine) -> RegisterBlock | None:
    """The RegisterBlock of Reduction `func` at the sizes of `evaluate` for `machine` (its
    vector width, L2 and cores), or None where blocking does not apply or does not pay."""
    form = _blocked_form(func)
    if form is None:
        return None
    rows, columns, owned, inner = form
    extents = [extent(evaluate, iv) for iv in func.reduction_intervals]
    itemsize = func.typ.dtype.itemsize
    lanes = max(1, machine.vector_bytes // itemsize)
    wide = machine.vector_bytes >= 64
    own = any(_moves(r, func.reduction_variables[rows]) for r in reads_along(func, columns))
    # a transposed read runs on vectors only from its copy, which serves every row: one that
    # moves with the rows too, or off vectors, is left to the other strategies
    must_pack = transposed_read(func, columns) is not None
    if must_pack and (own or not vector_ready(func)):
        return None
    constant = wide and constant_row_steps(func, func.reduction_variables[rows])
    packed = (
        wide
        and not constant
        and not own
        and packed_read(func, func.reduction_variables[rows]) is not None
    )
    constant = constant or packed
    most = (WIDE_BLOCK_VECTORS if constant else WIDE_RUNTIME_VECTORS) if wide else BLOCK_VECTORS
    vectors = max(1, min(most, extents[columns] // lanes))
    width = vectors * lanes
    updates = math.prod(extents[k] for k in inner)
    if extents[rows] < BLOCK_ROWS or extents[columns] < width or updates < MIN_UPDATES:
        return None
    # narrower blocks take more rows, as many accumulators as a block of full width
    height = min((WIDE_BLOCK_ROWS if constant else BLOCK_ROWS) * (most // vectors), extents[rows])
    outer = tuple(k for k in sorted(owned) if k not in (rows, columns))
    depth = extents[inner[0]]
    below = math.prod(extents[k] for k in inner[1:])  # points per value of the first
    fits_l1 = machine.l1_bytes // 2 // max(1, below * width * itemsize)
    limit = max(1, min(PANEL_DEPTH, fits_l1))
    panel_depth = limit if depth > limit else 0
    # one panel of the operand read along the columns: its rows (the reduction-only points of
    # one panel) by panel_columns, in half the L2
    panel_points = min(depth, limit) * below
    fit = machine.l2_bytes // 2 // max(1, panel_points * itemsize) // width * width
    whole = -(-extents[columns] // width) * width
    panel_columns = max(width, min(fit, whole))
    tasks_outer = math.prod(extents[k] for k in outer)
    blocks = CHUNK_BLOCKS
    while blocks > 1 and tasks_outer * -(-extents[rows] // (blocks * height)) < (
        TASKS_PER_CORE * machine.cores
    ):
        blocks //= 2
    return RegisterBlock(
        rows,
        columns,
        outer,
        tuple(inner),
        height,
        width,
        blocks * height,
        panel_columns,
        panel_depth,
        lanes,
        panel_points * panel_columns * itemsize,
        panel_points * width * itemsize,
        initialized_by_tasks(func, owned),
        packed=packed,
        packed_columns=not own
        and (must_pack or min(blocks, -(-extents[rows] // height)) >= PACKED_REUSE)
        and packed_column_read(func, columns, inner) is not None,
        rows_read_own=own,
    )


def initialized_by_tasks(func, owned) -> bool:
    """Whether each task of the blocks can set its cells to the default just before its
    panels (in cache for their first loads) instead of a pass over the whole buffer first:
    the default reads no variable or stage, and the tasks cover the cells (tasks_cover_cells)."""
    if any(isinstance(n, (E.Variable, E.Reference)) for n in E.walk(func.default)):
        return False
    return tasks_cover_cells(func, owned)


def tasks_cover_cells(func, owned) -> bool:
    """Whether the tasks of the blocks (all columns of a chunk of rows at one point of the
    outer variables) cover the cells of Reduction `func` exactly, each once: the target is
    the owned variables themselves ({reduction variable index: dimension}) and they span the
    stage's domain."""
    target = func.cases[0].value.target
    variables = func.reduction_variables
    for k, dim in owned.items():
        form = linear_form(target.args[dim])
        if form is None or form[0] is not variables[k] or form[1:] != (1, 0):
            return False
        mine, domain = func.reduction_intervals[k], func.intervals[dim]
        if (str(mine.lb), str(mine.ub)) != (str(domain.lb), str(domain.ub)):
            return False
    return True


def folds_into_tasks(graph, reduction: str, consumer: str) -> bool:
    """Whether stage `consumer` of `graph` can be computed by the tasks of Reduction
    `reduction`'s register blocks, from each task's cells while they are in cache (a conv
    layer's bias and ReLU): a Function over the same domain, not a scan, reading the
    Reduction only at its own point, where the tasks cover the Reduction's cells."""
    func, stage = graph.stage(reduction).func, graph.stage(consumer).func
    form = _blocked_form(func)
    if form is None or not tasks_cover_cells(func, form[2]):
        return False
    if isinstance(stage, Reduction) or stage.kind != "function" or graph.scan(consumer):
        return False
    if len(stage.intervals) != len(func.intervals) or any(
        (str(a.lb), str(a.ub)) != (str(b.lb), str(b.ub))
        for a, b in zip(stage.intervals, func.intervals)
    ):
        return False
    reads = [r for r in graph.reads(consumer) if r.func is func]
    return bool(reads) and all(all(a is v for a, v in zip(r.args, stage.variables)) for r in reads)


def epilogue_on_vectors(graph, reduction: str, consumer: str) -> bool:
    """Whether folded stage `consumer` (folds_into_tasks) can be computed on vectors from the
    accumulators of Reduction `reduction`'s register blocks: one Case without a condition, in
    the Reduction's float type, whose value, where it moves with the stage's last variable
    (the columns), is + - * /, Min, Max and negation in that type over the Reduction at its
    own point and reads that step one element per column (vector_ready's rule); what does
    not move is one value for every lane."""
    func, stage = graph.stage(reduction).func, graph.stage(consumer).func
    typ = func.typ
    cases = stage.cases
    if stage.typ != typ or len(cases) != 1 or cases[0].cond is not None or not vector_ready(func):
        return False
    column = stage.variables[-1]

    def lanes(e) -> bool:
        if e.typ != typ:
            return False
        if not any(n is column for n in E.walk(e)):
            return True
        if isinstance(e, E.Reference):
            return e.func is func or _vector_read(e, column, typ)
        if isinstance(e, E.BinOp):
            return e.op in (*ARITHMETIC, "min", "max") and lanes(e.a) and lanes(e.b)
        if isinstance(e, (E.Neg, E.Cast)):
            return lanes(e.a)
        return False

    return lanes(cases[0].value)


def rows_adjacent(func, block, evaluate) -> bool:
    """Whether a register block's rows of a stage over Reduction `func`'s domain lie within
    one page at the sizes of `evaluate` (rows a few vectors apart, as a conv layer's pixels
    in NHWC): stored from the accumulators as each block ends, a block's rows a page or
    more apart (the output channels of NCHW) scatter its stores over as many pages, where
    each task's pass over its cells writes them row after row (a conv layer in NCHW 11%
    slower on Zen 4, one thread)."""
    dims = _blocked_form(func)[2]
    after = func.intervals[dims[block.rows] + 1 :]
    step = math.prod(extent(evaluate, iv) for iv in after)
    return ((block.height - 1) * step + block.width) * func.typ.dtype.itemsize <= PAGE_BYTES


def _blocked_form(func):
    """(rows, columns, {owned index: dim}, reduction-only indices) where one unconditional
    update writes the cell of the owned variables (`v + c` along its own dimension each, all
    dimensions owned), every bound depends on parameters alone, the value does not read the
    target, the columns are the contiguous variable and another owned variable is the rows:
    the one of the highest dimension among those that move no read that moves with the
    columns, else among all (a window's taps, `img(x + dx, y + dy)`: each row then reads its
    own vectors, still accumulated in registers across the window). Else None."""
    update = single_update(func)
    if update is None:
        return None
    variables = func.reduction_variables
    ids = {id(v): k for k, v in enumerate(variables)}
    bounds = [e for iv in func.reduction_intervals for e in (iv.lb, iv.ub)]
    if any(id(n) in ids for e in bounds for n in E.walk(e)):
        return None
    owned = {}
    for dim, arg in enumerate(update.target.args):
        form = linear_form(arg)
        if form is None or form[1] != 1 or id(form[0]) not in ids or ids[id(form[0])] in owned:
            return None
        owned[ids[id(form[0])]] = dim
    inner = [k for k in range(len(variables)) if k not in owned]
    columns = blocked_columns(func)
    if not inner or columns is None or owned.get(columns) != func.ndim - 1:
        return None
    along = reads_along(func, columns)
    others = [k for k in owned if k != columns]
    apart = [k for k in others if not any(_moves(r, variables[k]) for r in along)]
    candidates = apart or others
    if not candidates:
        return None
    return max(candidates, key=owned.get), columns, owned, inner


def _moves(ref, var) -> bool:
    return any(n is var for a in ref.args for n in E.walk(a))


def vector_ready(func) -> bool:
    """Whether the single update of Reduction `func` can run on vectors of its columns
    (its contiguous variable): a float sum or product whose value, where it moves with the
    columns, is + - * / and negation in the Reduction's own type over reads that step one
    element per column (affine in their last index)."""
    typ = func.typ
    k = blocked_columns(func)
    if k is None:
        return False
    column = func.reduction_variables[k]
    copied = transposed_read(func, k)
    update = func.cases[0].value
    if not typ.is_float or typ.c_name not in ("float", "double") or update.op not in COMBINED:
        return False

    def lanes(e) -> bool:
        if not any(n is column for n in E.walk(e)):
            return e.typ == typ
        if e.typ != typ:
            return False
        if isinstance(e, E.Reference):
            return e is copied or _vector_read(e, column, typ)
        if isinstance(e, E.BinOp):
            return e.op in ARITHMETIC and lanes(e.a) and lanes(e.b)
        if isinstance(e, E.Neg):
            return lanes(e.a)
        if isinstance(e, E.Cast):
            return e.a.typ == typ and lanes(e.a)
        return False

    return lanes(update.value)


def blocked_columns(func) -> int | None:
    """The index of Reduction `func`'s columns: its contiguous variable (reduction_order),
    else the variable of the target's last dimension where one read alone moves with it
    off one element per column (a product with a transposed operand, `A(i, k) * B(j, k)`):
    that read is copied per block of columns and panel, its columns side by side
    (transposed_read). None otherwise."""
    k = contiguous_variable(func)
    last = func.ndim - 1
    if k is not None or last < 0:
        return k
    fixed = cell_fixed(func)
    for k, var in enumerate(func.reduction_variables):
        form = owned_forms(func, var)[last]
        if (
            k in fixed
            and form is not None
            and form[0] == 1
            and transposed_read(func, k) is not None
        ):
            return k
    return None


def transposed_read(func, columns: int) -> E.Reference | None:
    """The read of Reduction `func`'s update that its columns (index `columns`) move along
    an index before its last one, with coefficient 1 and through affine indices, where it is
    the only reference that does not step one element per column (or none) and the columns
    are not the contiguous variable. None otherwise."""
    if contiguous_variable(func) is not None or len(func.cases) != 1:
        return None
    var = func.reduction_variables[columns]
    update = func.cases[0].value
    refs = [update.target, *(n for n in E.walk(update.value) if isinstance(n, E.Reference))]
    off = [r for r in refs if not unit_stride(r, var)]
    if len(off) != 1 or off[0] is update.target or off[0].func is func:
        return None
    read = off[0]
    steps = [coefficient(a, var) for a in read.args]
    if None in steps or steps[-1] != 0 or sorted(steps) != [0] * (len(steps) - 1) + [1]:
        return None
    return read if all(is_affine(a) for a in read.args) else None


def _vector_read(ref, column, typ) -> bool:
    """Whether read `ref`, which moves with `column`, is a vector of `typ` along it: one
    element per column, through affine indices."""
    return (
        ref.func.typ == typ
        and unit_stride(ref, column)
        and all(is_affine(a) for a in ref.args if any(n is column for n in E.walk(a)))
    )
