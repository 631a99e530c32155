"""The C tree of a Reduction computed by register blocks (schedule.blocking): blocks of rows
run in parallel, and each block of rows by columns accumulates in registers across the
reduction-only loops."""

from __future__ import annotations

from ..algebra.affine import linear_form
from ..dsl import expr as E
from ..dsl.constructs import Op
from ..schedule.blocking import (
    columns_shared,
    packed_column_read,
    packed_read,
    transposed_read,
    vector_ready,
)
from ..schedule.reductions import PARALLEL_MIN_POINTS
from .addresses import offset_of
from .cexpr import helper, wide_name
from .ctext import CText, Text, assign, cat, declare, writing
from .ctree import Assign, Block, Declare, For, If, Line, Node, Seq
from .names import BLOCK_CELLS, PREFIX, UPDATES
from .packing import (
    BUFFER,
    COLUMNS_BUFFER,
    POINTS,
    SHARED_COLUMNS,
    most_panel_points,
    pack_columns,
    pack_rows,
    packed_columns_element,
    packed_element,
    panel_points,
)
from .prelude import ONE_AT_A_TIME
from .vector_blocks import stage_point, vector_kernel
from .workspace import WORKSPACE, WORKSPACE_USE

P = PREFIX
# the most steps of a register block's innermost reduction loops unrolled together (a 3x3
# window of 3 channels)
UNROLLED_TAPS = 27


def combine(op: Op, typ, target: Text, value: Text) -> CText:
    """C of `target` combined with `value` by `op`."""
    if op in (Op.Min, Op.Max):
        return cat(helper(op.value, typ.c_name), "(", target, ", ", value, ")")
    return cat(f"({typ.c_name})(", target, f" {op.value} ", value, ")")


def unrolled_taps(func, block) -> dict:
    """{reduction-only variable index: its extent} for the innermost of them whose bounds are
    constants, while the product of their extents stays at most UNROLLED_TAPS (a 3x3
    window): unrolled, their steps run without loop overhead between them."""
    unrolled: dict = {}
    product = 1
    for k in reversed(block.inner[1:] if block.panel_depth else block.inner):
        interval = func.reduction_intervals[k]
        if not (isinstance(interval.lb, E.Const) and isinstance(interval.ub, E.Const)):
            break
        count = interval.ub.value - interval.lb.value + 1
        if count < 2 or product * count > UNROLLED_TAPS:
            break
        product *= count
        unrolled[k] = count
    return unrolled


def blocked_updates(emitter, printer, func, block, names) -> Node:
    """Register blocks (schedule.blocking.RegisterBlock) printed by `printer`, in parallel
    over the outer owned variables and chunks of rows. In a chunk, panels of columns and of
    the first reduction-only variable (sized for L2) run outside the register blocks; in a
    panel, each block of columns runs down every block of rows of the chunk, reading the same
    slice of the panel (kept in L1) while the rows' operands come from L2. A full block loads
    its cells into vector variables (codegen.vector_blocks) where its update allows, else into
    a local array (one `omp simd` loop over the columns, every row in its body), updates them
    across the reduction-only loops (the innermost unrolled where their extents are small
    constants: unrolled_taps) and stores them once; the rows a chunk's full blocks leave run
    in blocks of the powers of two below, the columns left in narrower blocks, then in place.
    A task may set its cells to the default first, keep them in a buffer of its thread's,
    compute the stages folded into it last, and read packed copies of the rows' and
    columns' operands (codegen.packing; a shared panel of the columns' copies runs outside
    the tasks). Every cell sees its updates in the written order: the panels of the
    reduction run in order."""
    variables = func.reduction_variables
    rows, cols = variables[block.rows], variables[block.columns]
    r, c = names[block.rows], names[block.columns]
    height, width = block.height, block.width
    acc = f"{P}acc"
    update = func.cases[0].value
    store = emitter.storage[func.name]
    smaller = helper("min", "int64_t")
    first = block.inner[0]
    depth_bounds = (f"{P}kc", f"{P}kc1") if block.panel_depth else None

    def at_row(u, body) -> Block:
        start = Declare("int64_t", ((wide_name(r), f"{P}r0 + {u}"),), True)
        return Block((start, *emitter.aliases([rows]), body()))

    def columns(body, count=str(width), simd=True, start=f"{P}c0") -> For:
        point = Declare("int64_t", ((wide_name(c), f"{start} + {P}c"),), True)
        return For(
            f"{P}c",
            "0",
            count,
            Block((point, *emitter.aliases([cols]), body())),
            inclusive=False,
            simd=simd,
        )

    def cell() -> CText:
        offset = offset_of(update.target, printer)
        return cat(store.buffer, "[", offset, "]", writing(store.buffer))

    def combined(target: Text) -> Assign:
        value = printer(update.value)
        updated = combine(update.op, func.typ, target, value)
        return assign(target, cat(updated, writing(store.buffer)))

    # the checked build checks every index: unrolled, its taps' checks would multiply
    unrolled = unrolled_taps(func, block) if emitter.check_group is None else {}

    def reduction_loops(body, unroll=False) -> Node:
        """The reduction-only loops around `body()`, the small ones unrolled where `unroll`:
        in every register block, the narrower ones at the end of the columns too (left as
        loops of vector statements, they took gcc -O3 with AddressSanitizer minutes); not
        around the cells updated in place."""
        node = body()
        for k in reversed(block.inner):
            lo, hi = f"{P}rlo_{names[k]}", f"{P}rhi_{names[k]}"
            if k == first and depth_bounds:
                lo, hi = depth_bounds
            inner = Block((*emitter.aliases([variables[k]]), node))
            times = unrolled.get(k, 0) if unroll else 0
            node = For(wide_name(names[k]), lo, hi, inner, unroll=times)
        return node

    in_vectors = vector_ready(func)
    # the folded stages computed from each block's accumulators (not in the checked build,
    # which checks each index of a scalar read), once the last panel of the reduction is in
    in_registers = block.in_registers and in_vectors and emitter.check_group is None
    finishing = tuple(emitter.graph.stage(n).func for n in block.epilogue) if in_registers else ()
    last_panel = f"{P}kc1 == {P}rhi_{names[first]}" if depth_bounds else None
    # the checked build reads the rows where they are, every index checked
    read = packed_read(func, rows) if block.packed and emitter.check_group is None else None
    # a transposed read runs on vectors only from its copy, in the checked build too
    transposed = transposed_read(func, block.columns) is not None
    column_read = (
        packed_column_read(func, block.columns, block.inner)
        if block.packed_columns and (emitter.check_group is None or transposed)
        else None
    )
    column_type = column_read.typ.c_name if column_read is not None else ""
    cells_slot, pack_slot = 0, int(block.scratch)
    columns_slot = pack_slot + int(block.packed)

    def packed_columns(w: int):
        if column_read is None or w != width:
            return None
        return column_read, lambda v: packed_columns_element(
            block, names, depth_bounds, width, v * block.lanes
        )

    def packed(height: int):
        if read is None:
            return None
        return read, lambda u: packed_element(block, names, depth_bounds, height, u)

    def kernel(w: int, start: str, height: int) -> Block:
        """The register block of `height` rows by `w` columns from `start`."""

        def loops(body) -> Node:
            return reduction_loops(body, unroll=True)

        if in_vectors:
            return vector_kernel(
                emitter,
                printer,
                func,
                block,
                names,
                (w // block.lanes, start, height),
                loops,
                packed(height),
                packed_columns(w),
                (finishing, last_panel, not block.scratch) if finishing else None,
            )

        def each_row(body) -> Seq:
            return Seq(
                tuple(
                    at_row(
                        u,
                        lambda u=u: columns(lambda: body(f"{acc}[{u}][{P}c]"), str(w), True, start),
                    )
                    for u in range(height)
                )
            )

        loaded = Block((each_row(lambda a: assign(a, cell())),), note=BLOCK_CELLS)
        updated = loops(
            lambda: columns(
                lambda: Seq(
                    tuple(
                        at_row(u, lambda u=u: combined(f"{acc}[{u}][{P}c]")) for u in range(height)
                    )
                ),
                str(w),
                True,
                start,
            )
        )
        stored = Block((each_row(lambda a: assign(cell(), a)),), note=BLOCK_CELLS)
        declared = Declare(func.typ.c_name, ((f"{acc}[{height}][{w}]", None),))
        return Block((declared, loaded, updated, stored))

    def partial(start: str, count: str) -> Node:
        """The cells of the rows left by `count` columns from `start`, updated in place (and
        the epilogue computed from them once their last panel is in)."""
        inner = columns(lambda: combined(cell()), count, False, start)
        updated = For(
            wide_name(r),
            f"{P}r0",
            f"{P}r0 + {P}rn - 1",
            Block((*emitter.aliases([rows]), reduction_loops(lambda: inner)), note=BLOCK_CELLS),
        )
        if not finishing:
            return updated

        def cells(body) -> For:
            fill = columns(body, count, True, start)
            point = Block((*emitter.aliases([rows]), fill))
            return For(wide_name(r), f"{P}r0", f"{P}r0 + {P}rn - 1", point)

        finished = Block(tuple(folded(stage, cells) for stage in finishing))
        return Seq((updated, If(last_panel, finished) if last_panel else finished))

    def row_block(height: int) -> If:
        """The `height` rows from {P}r0 by the columns from {P}c0: a full block, else
        blocks of half its width, a quarter, ... down to one vector, then the rest in place."""
        tail: list = [Declare("int64_t", ((f"{P}cs", f"{P}c0"),), False)]
        w = 0 if transposed else width // 2  # narrower blocks would read it uncopied
        while w >= block.lanes and w % block.lanes == 0:
            tail.append(
                If(
                    f"{P}c1 - {P}cs + 1 >= {w}",
                    Block((kernel(w, f"{P}cs", height), Assign(f"{P}cs", str(w), "+="))),
                )
            )
            w //= 2
        tail.append(If(f"{P}cs <= {P}c1", Block((partial(f"{P}cs", f"{P}c1 - {P}cs + 1"),))))
        return If(f"{P}cn == {width}", kernel(width, f"{P}c0", height), Block(tuple(tail)))

    def by_row_blocks(body) -> Seq:
        """`body(h)` for each block of h rows from {P}r0 ({P}rn = h): the full blocks of the
        task, then the rows they leave in blocks of the powers of two below, each once."""
        rest: list = [Declare("int64_t", ((f"{P}rs", f"{P}rc0 + {P}rfull"),), False)]
        h = 1 << (height - 1).bit_length() >> 1
        while h >= 1:
            start = Declare("int64_t", ((f"{P}r0", f"{P}rs"), (f"{P}rn", str(h))), True)
            rest.append(
                If(
                    f"{P}rc1 - {P}rs + 1 >= {h}",
                    Block((start, body(h), Assign(f"{P}rs", str(h), "+="))),
                )
            )
            h >>= 1
        full = For(
            f"{P}r0",
            f"{P}rc0",
            f"{P}rc0 + {P}rfull - 1",
            Block((Declare("int64_t", ((f"{P}rn", str(height)),), True), body(height))),
            step=str(height),
        )
        return Seq((full, *rest))

    all_columns = f"{P}rhi_{c} - {P}rlo_{c} + 1"

    def over_task_cells(body) -> For:
        """`body()` at each of the task's cells: its rows by every column, `omp simd`."""
        fill = columns(body, all_columns, True, f"{P}rlo_{c}")
        return For(wide_name(r), f"{P}rc0", f"{P}rc1", Block((*emitter.aliases([rows]), fill)))

    def initialized() -> For:
        """The task's cells set to the Reduction's default."""
        value = printer(func.default)
        return over_task_cells(lambda: assign(cell(), value))

    scratch_cells = f"{block.chunk} * ({all_columns})"
    fail = Line(f"goto {P}fail;")

    def slot(thread: str, k: int) -> str:
        return f"{WORKSPACE}->scratch[{thread} * {emitter.scratch_slots} + {k}]"

    def reserved() -> Seq:
        """Each thread's buffers (a task's cells, the packed rows), reserved before the tasks
        start."""
        thread = f"{P}t"
        wanted = []
        if block.scratch:
            wanted.append((cells_slot, f"sizeof({store.c_type}) * (size_t)({scratch_cells})"))
        points = most_panel_points(block, names)
        if read is not None:
            size = f"sizeof({read.typ.c_name}) * (size_t)({block.chunk} * {points})"
            wanted.append((pack_slot, size))
        if column_read is not None:
            across = block.panel_columns if shared else block.width
            size = f"sizeof({column_type}) * (size_t)({across} * {points})"
            wanted.append((columns_slot, size))

        def reserve(thread: str, k: int, size: str) -> If:
            bytes_held = f"{WORKSPACE}->scratch_bytes[{thread} * {emitter.scratch_slots} + {k}]"
            reserved = f"!{P}reserve(&{slot(thread, k)}, &{bytes_held}, {size})"
            return If(reserved, fail, uses=WORKSPACE_USE)

        each = [
            reserve(thread, k, size) for k, size in wanted if not (shared and k == columns_slot)
        ]
        nodes: list = [
            For(thread, "0", f"{P}nthreads", Block(tuple(each)), c_type="int", inclusive=False)
        ]
        if shared:
            buffer = f"({column_type} *){slot('0', columns_slot)}"
            nodes.append(reserve("0", columns_slot, wanted[-1][1]))
            shared_buffer = ((SHARED_COLUMNS, buffer),)
            nodes.append(Declare(f"{column_type} *restrict", shared_buffer, uses=WORKSPACE_USE))
        return Seq(tuple(nodes))

    def shared_columns() -> For:
        """The panel's full blocks of columns of the columns' read, copied once, in parallel
        over the blocks, into the buffer all the tasks read (thread 0's)."""
        block_start = (
            Declare("int64_t", ((f"{P}c0", f"{P}jc + {P}cb * {width}"),), True),
            shared_slice(),
        )
        copied = pack_columns(
            emitter, printer, column_read, cols, block, names, depth_bounds, reduction_loops
        )
        return For(
            f"{P}cb",
            "0",
            f"({P}jc1 - {P}jc + 1) / {width}",
            Block((*block_start, copied)),
            inclusive=False,
            parallel="parallel for",
            threads=f"{P}nthreads",
            schedule=ONE_AT_A_TIME,
            condition=f"{P}rpoints >= {PARALLEL_MIN_POINTS}",
        )

    def shared_slice() -> Declare:
        """The block of columns from {P}c0's slice of the shared panel of copies."""
        start = f"{SHARED_COLUMNS} + ({P}c0 - {P}jc) * {POINTS}"
        return Declare(f"{column_type} *restrict", ((COLUMNS_BUFFER, start),))

    def pack_buffer(name, what, k) -> Declare:
        typ = what.typ.c_name
        buffer = f"({typ} *){slot('omp_get_thread_num()', k)}"
        return Declare(f"{typ} *restrict", ((name, buffer),), uses=WORKSPACE_USE)

    def in_scratch() -> tuple:
        """The Reduction's buffer and bounds, for this task: its cells in the thread's buffer
        (the names shadow those of a full buffer, so its references print alike)."""
        target = update.target
        bounds = []
        for d, arg in enumerate(target.args):
            k = next(k for k, v in enumerate(variables) if v is linear_form(arg)[0])
            if k == block.rows:
                lo, n = f"{P}rc0", str(block.chunk)
            elif k == block.columns:
                lo, n = f"{P}rlo_{c}", all_columns
            else:
                lo, n = wide_name(names[k]), "1"
            bounds += [(store.lb[d], lo), (store.n[d], n)]
        buffer = f"({store.c_type} *){slot('omp_get_thread_num()', cells_slot)}"
        return (
            Declare(f"{store.c_type} *restrict", ((store.buffer, buffer),), False, WORKSPACE_USE),
            Declare("int64_t", tuple(bounds), True),
        )

    def folded(stage, cells=over_task_cells) -> For:
        """Stage `stage` (schedule.blocking.folds_into_tasks) at the task's cells (at those
        `cells` runs its body), from the Reduction's while they are in cache: its variables
        are the owned ones, dimension by dimension."""
        point = stage_point(emitter, func, stage)
        return cells(lambda: Block((*point, emitter.cases(stage, printer))))

    def stepped(var, lo, hi, step, end, body) -> For:
        """for var from lo to hi by step, with `end` the last of each step's values."""
        last = declare("int64_t", [(end, cat(smaller, f"({var} + {step - 1}, {hi})"))])
        return For(var, lo, hi, Block((last, body)), step=str(step))

    full_rows = f"({P}rc1 - {P}rc0 + 1) / {height} * {height}"
    count = Declare("int64_t", ((f"{P}cn", f"{P}c1 - {P}c0 + 1"),), True)
    # a matrix product's panels of B run outside the tasks: each is copied once per panel,
    # all the tasks reading the copy (schedule.blocking.columns_shared)
    shared = column_read is not None and columns_shared(func, block)
    column_start: list = []
    if shared:
        column_start.append(shared_slice())
    elif column_read is not None:
        copied = pack_columns(
            emitter, printer, column_read, cols, block, names, depth_bounds, reduction_loops
        )
        column_start.append(If(f"{P}cn == {width}", copied))
    blocks: Node
    if block.rows_read_own:  # no slice shared down the rows: each block of rows sweeps along
        blocks = by_row_blocks(
            lambda h: stepped(
                f"{P}c0", f"{P}jc", f"{P}jc1", width, f"{P}c1", Block((count, row_block(h)))
            )
        )
    else:
        blocks = stepped(
            f"{P}c0",
            f"{P}jc",
            f"{P}jc1",
            width,
            f"{P}c1",
            Block((count, *column_start, by_row_blocks(row_block))),
        )
    points = Declare("int64_t", ((POINTS, panel_points(block, names, depth_bounds)),), True)
    if read is not None:

        def pack(h: int) -> Node:
            return pack_rows(
                emitter, printer, read, rows, block, names, depth_bounds, h, reduction_loops
            )

        blocks = Block(((points,) if not shared else ()) + (by_row_blocks(pack), blocks))

    def panels(body) -> Node:
        """`body` in the panels of columns and of the first reduction-only variable."""
        if block.panel_depth:
            k = names[first]
            body = stepped(
                f"{P}kc", f"{P}rlo_{k}", f"{P}rhi_{k}", block.panel_depth, f"{P}kc1", body
            )
        return stepped(f"{P}jc", f"{P}rlo_{c}", f"{P}rhi_{c}", block.panel_columns, f"{P}jc1", body)

    def in_panel(edge: str) -> str:
        """C condition: the first panel (`edge` "lo") or the last ("hi")."""
        k = names[first]
        ends = {"lo": (f"{P}jc", f"{P}kc"), "hi": (f"{P}jc1", f"{P}kc1")}[edge]
        tests = [f"{ends[0]} == {P}r{edge}_{c}"]
        if block.panel_depth:
            tests.append(f"{ends[1]} == {P}r{edge}_{k}")
        return " && ".join(tests)

    chunk0 = f"{P}rlo_{r} + {P}rb * {block.chunk}"
    starts = (
        *emitter.aliases([variables[k] for k in block.outer]),
        declare(
            "int64_t",
            [
                (f"{P}rc0", chunk0),
                (f"{P}rc1", cat(smaller, f"({chunk0} + {block.chunk - 1}, {P}rhi_{r})")),
            ],
        ),
        Declare("int64_t", ((f"{P}rfull", full_rows),), True),
        *(in_scratch() if block.scratch else ()),
        *([pack_buffer(BUFFER, read, pack_slot)] if read is not None else []),
        *(
            [pack_buffer(COLUMNS_BUFFER, column_read, columns_slot)]
            if column_read is not None and not shared
            else []
        ),
    )
    first_cells: list[Node] = [initialized()] if block.initializes else []
    last_cells: list[Node] = [
        folded(emitter.graph.stage(name).func) for name in block.epilogue if not finishing
    ]
    if shared:
        first_cells = [If(in_panel("lo"), Block(tuple(first_cells)))] if first_cells else []
        last_cells = [If(in_panel("hi"), Block(tuple(last_cells)))] if last_cells else []
        task = Block((*starts, *first_cells, blocks, *last_cells))
    else:
        task = Block((*starts, *first_cells, panels(blocks), *last_cells))
    chunks = f"({P}extent({P}rlo_{r}, {P}rhi_{r}) + {block.chunk - 1}) / {block.chunk}"
    loops = [
        (wide_name(names[k]), f"{P}rlo_{names[k]}", f"{P}rhi_{names[k]}", True) for k in block.outer
    ] + [(f"{P}rb", "0", chunks, False)]
    node: Node = task
    for depth, (var, lo, hi, inclusive) in reversed(list(enumerate(loops))):
        clauses: dict = {}
        if depth == 0:
            clauses = dict(
                parallel="parallel for",
                collapse=len(loops),
                threads=f"{P}nthreads",
                schedule=ONE_AT_A_TIME,
                condition=f"{P}rpoints >= {PARALLEL_MIN_POINTS}",
            )
        node = For(var, lo, hi, node, inclusive=inclusive, **clauses)
    if shared:
        node = panels(Block((points, shared_columns(), node)))
    reserving = block.scratch or read is not None or column_read is not None
    # the reservation is no update loop: the vectorization report leaves it out
    return Seq((*([reserved()] if reserving else []), Block((node,), note=UPDATES)))
