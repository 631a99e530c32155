"""The C tree of a Reduction computed by register blocks (schedule.blocking): blocks of rows
run in parallel, and each block of rows by columns accumulates in registers across the
reduction-only loops."""

from __future__ import annotations

from ..dsl import expr as E
from ..dsl.constructs import Op
from ..schedule.reductions import PARALLEL_MIN_POINTS
from .cexpr import wide_name
from .ctree import ONE_AT_A_TIME, Assign, Block, Declare, For, If, Node, Seq
from .names import PREFIX, UPDATES

P = PREFIX


def combine(printer, op: Op, typ, target: str, value: str) -> str:
    """C of `target` combined with `value` by `op`."""
    if op in (Op.Min, Op.Max):
        return f"{printer.helper(op.value, typ)}({target}, {value})"
    return f"({typ.c_name})({target} {op.value} {value})"


def blocked_updates(emitter, func, block, names) -> Node:
    """Register blocks (schedule.blocking.RegisterBlock), in parallel over the outer owned
    variables and chunks of rows. In a chunk, panels of columns and of the first
    reduction-only variable (sized for L2) run outside the register blocks, which then read
    the same panel for every block of rows. A full block loads its cells into a local array,
    which the compiler keeps in vector registers, updates them across the reduction-only loops
    (one `omp simd` loop over the columns per row) and stores them once; a partial block at
    the end of the rows or columns updates its cells in place. Every cell sees its updates in
    the written order: the panels of the reduction run in order."""
    variables = func.reduction_variables
    rows, cols = variables[block.rows], variables[block.columns]
    r, c = names[block.rows], names[block.columns]
    height, width = block.height, block.width
    acc = f"{P}acc"
    update = func.cases[0].value
    store = emitter.storage[func.name]
    smaller = emitter.printer.helper("min", E.Long)
    first = block.inner[0]
    depth_bounds = (f"{P}kc", f"{P}kc1") if block.panel_depth else None

    def at_row(u, body) -> Block:
        start = Declare("int64_t", ((wide_name(r), f"{P}r0 + {u}"),), True)
        return Block((start, *emitter.aliases([rows]), body()))

    def columns(body, count=str(width), simd=True) -> For:
        point = Declare("int64_t", ((wide_name(c), f"{P}c0 + {P}c"),), True)
        return For(
            f"{P}c",
            "0",
            count,
            Block((point, *emitter.aliases([cols]), body())),
            inclusive=False,
            simd=simd,
        )

    def cell() -> str:
        emitter.touch(store, True)
        return f"{store.buffer}[{emitter.offset(update.target, emitter.printer)}]"

    def combined(target: str) -> Assign:
        value = emitter.printer(update.value)
        emitter.touch(store, True)
        return emitter.assign(target, combine(emitter.printer, update.op, func.typ, target, value))

    def reduction_loops(body) -> Node:
        node = body()
        for k in reversed(block.inner):
            lo, hi = f"{P}rlo_{names[k]}", f"{P}rhi_{names[k]}"
            if k == first and depth_bounds:
                lo, hi = depth_bounds
            node = For(wide_name(names[k]), lo, hi, Block((*emitter.aliases([variables[k]]), node)))
        return node

    def each_row(body) -> Seq:
        return Seq(
            tuple(
                at_row(u, lambda u=u: columns(lambda: body(f"{acc}[{u}][{P}c]")))
                for u in range(height)
            )
        )

    loaded = each_row(lambda a: emitter.assign(a, cell()))
    updated = reduction_loops(lambda: each_row(combined))
    stored = each_row(lambda a: emitter.assign(cell(), a))
    declared = Declare(func.typ.c_name, ((f"{acc}[{height}][{width}]", None),))
    kernel = Block((declared, loaded, updated, stored))
    partial = For(
        wide_name(r),
        f"{P}r0",
        f"{P}r0 + {P}rn - 1",
        Block(
            (
                *emitter.aliases([rows]),
                reduction_loops(lambda: columns(lambda: combined(cell()), f"{P}cn", simd=False)),
            )
        ),
    )

    def stepped(var, lo, hi, step, end, body) -> For:
        """for var from lo to hi by step, with `end` the last of each step's values."""
        last = Declare("int64_t", ((end, f"{smaller}({var} + {step - 1}, {hi})"),), True)
        return For(var, lo, hi, Block((last, body)), step=str(step))

    full = If(f"{P}rn == {height} && {P}cn == {width}", kernel, Block((partial,)))
    count = Declare("int64_t", ((f"{P}cn", f"{P}c1 - {P}c0 + 1"),), True)
    blocks: Node = stepped(f"{P}c0", f"{P}jc", f"{P}jc1", width, f"{P}c1", Block((count, full)))
    blocks = For(
        f"{P}r0",
        f"{P}rc0",
        f"{P}rc1",
        Block(
            (
                Declare(
                    "int64_t",
                    ((f"{P}rn", f"{smaller}(INT64_C({height}), {P}rc1 - {P}r0 + 1)"),),
                    True,
                ),
                blocks,
            )
        ),
        step=str(height),
    )
    if block.panel_depth:
        k = names[first]
        blocks = stepped(
            f"{P}kc", f"{P}rlo_{k}", f"{P}rhi_{k}", block.panel_depth, f"{P}kc1", blocks
        )
    blocks = stepped(f"{P}jc", f"{P}rlo_{c}", f"{P}rhi_{c}", block.panel_columns, f"{P}jc1", blocks)
    chunk0 = f"{P}rlo_{r} + {P}rb * {block.chunk}"
    task = Block(
        (
            *emitter.aliases([variables[k] for k in block.outer]),
            Declare(
                "int64_t",
                (
                    (f"{P}rc0", chunk0),
                    (f"{P}rc1", f"{smaller}({chunk0} + {block.chunk - 1}, {P}rhi_{r})"),
                ),
                True,
            ),
            blocks,
        )
    )
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
    return Block((node,), note=UPDATES)
