"""C trees (codegen.ctree) of a Reduction's updates under its strategy (schedule/reductions.py):
serial, owner (blocks of the owning variables in parallel) or privatized (fixed chunks into
copies of the target, combined in chunk order). Every Case whose condition holds applies its
own update, in the order of the Cases, at each point of the reduction domain in order
(PolyMage's semantics)."""

from __future__ import annotations

import copy
import itertools

from ..dsl import expr as E
from ..dsl.constructs import Op
from ..schedule.reduction_order import loop_order
from ..schedule.reductions import (
    MAX_CHUNKS,
    PARALLEL_MIN_POINTS,
    PRIVATE_BUDGET_BYTES,
    independent_inner,
    tile_owned,
    unrolled_variables,
)
from .cexpr import c_literal, wide_name
from .ctree import ONE_AT_A_TIME, Assign, Block, Declare, For, If, Line, Node, Seq, shared_schedule
from .names import PREFIX

P = PREFIX


def reduction_update(emitter, func, strategy, cells=None) -> Block:
    """The updates of Reduction `func` (its target already holds the default). With `cells`
    ((lo, hi) C texts per dimension: a tile's box), only those of the reduction points that
    own the box's cells, in order on the calling thread."""
    variables = func.reduction_variables
    names = [emitter.names[v] for v in variables]
    nodes = []
    for name, iv in zip(names, func.reduction_intervals):
        lo, hi = emitter.printer(iv.lb), emitter.printer(iv.ub)
        nodes.append(
            emitter.declare(
                "int64_t",
                [(f"{P}rlo_{name}", f"(int64_t)({lo})"), (f"{P}rhi_{name}", f"(int64_t)({hi})")],
            )
        )
    points = " * ".join(f"{P}extent({P}rlo_{n}, {P}rhi_{n})" for n in names) or "1"
    nodes.append(Declare("int64_t", ((f"{P}rpoints", points),), True))
    if cells is not None:
        nodes += _owned_cells(emitter, func, names, cells)
    elif strategy is not None and strategy.kind == "owner":
        nodes += _owner(emitter, func, strategy, names)
    elif strategy is not None and strategy.kind == "privatized":
        nodes += _privatized(emitter, func, strategy, names)
    else:
        nodes.append(_serial(emitter, func, names, {}))
    return Block(tuple(nodes))


def _owned_cells(emitter, func, names, cells) -> list:
    """The updates into the box `cells`: each owning variable runs over the points whose
    cells lie in the box (the other dimensions span the domain, schedule.regions), and
    nothing runs when the box is empty (a later inner tile found it computed)."""
    ranges, bounds = _owned_ranges(emitter, tile_owned(func), names, cells)
    nonempty = " && ".join(f"({lo}) <= ({hi})" for lo, hi in cells) or "1"
    return ranges + [If(nonempty, Block((_serial(emitter, func, names, bounds),)))]


def _serial(emitter, func, names, bounds, target=None):
    """The reduction domain in the loop order (schedule.reduction_order.loop_order), with
    `bounds` ({variable index: (lo, hi)}) replacing some variables' bounds, updating `target`
    (a StageStorage) instead of the buffer. The unrolled variables
    (schedule.reductions.unrolled_variables) run innermost, a copy of the update per value;
    an innermost variable owning cells runs by residues (_independent_loop)."""
    unrolled = unrolled_variables(func)
    looped = [k for k in loop_order(func) if k not in unrolled]
    variables = [func.reduction_variables[k] for k in looped]
    loop_bounds = [bounds.get(k, (f"{P}rlo_{names[k]}", f"{P}rhi_{names[k]}")) for k in looped]

    def update():
        return _unrolled_updates(emitter, func, unrolled, target)

    inner = independent_inner(func, variables[-1])
    if inner is None:
        return emitter._loops(variables, func.name, False, update, bounds=loop_bounds)
    return emitter._loops(
        variables[:-1],
        func.name,
        parallel=False,
        body=lambda: _independent_loop(emitter, variables[-1], inner, loop_bounds[-1], update),
        bounds=loop_bounds[:-1],
    )


def _unrolled_updates(emitter, func, unrolled, target) -> Seq:
    """The updates at every value of the `unrolled` variables (indices), in order. Without
    Case conditions, every offset and value is computed before the first update (they never
    read the target): the compiler, which cannot tell the target from the buffers read
    (outlined OpenMP regions drop `restrict`), can then share their loads and arithmetic. A
    conditional update computes its offset and value only where its condition holds."""
    variables = [func.reduction_variables[k] for k in unrolled]
    ranges = [
        range(func.reduction_intervals[k].lb.value, func.reduction_intervals[k].ub.value + 1)
        for k in unrolled
    ]
    copies = list(itertools.product(*ranges))
    hoisted = all(case.cond is None for case in func.cases)
    count = len(copies) * len(func.cases)
    nodes: list = []
    if hoisted:
        typ = func.typ.c_name
        for u in range(count):
            nodes += [
                Declare("int64_t", ((f"{P}o{u}", None),)),
                Declare(typ, ((f"{P}v{u}", None),)),
            ]
    saved = emitter.storage[func.name]
    store = target or saved
    emitter.storage[func.name] = store
    try:
        for k, values in enumerate(copies):
            block: list = [
                Declare("int64_t", ((wide_name(emitter.names[v]), str(value)),), True)
                for v, value in zip(variables, values)
            ]
            block += emitter.aliases(variables)
            for i, case in enumerate(func.cases):
                red = case.value
                offset = emitter.offset(red.target, emitter.printer)
                if hoisted:
                    u = k * len(func.cases) + i
                    block.append(emitter.assign(f"{P}o{u}", offset))
                    block.append(emitter.assign(f"{P}v{u}", emitter.printer(red.value)))
                    continue
                cell = f"{store.buffer}[{offset}]"
                value = emitter.printer(red.value)
                test = None if case.cond is None else emitter.printer(case.cond)
                combined = combine(emitter.printer, red.op, func.typ, cell, value)
                emitter.touch(store, True)
                update = Block((emitter.assign(cell, combined),))
                block.append(update if test is None else If(test, update))
            nodes.append(Block(tuple(block)))
    finally:
        emitter.storage[func.name] = saved
    for u in range(count) if hoisted else ():
        cell = f"{store.buffer}[{P}o{u}]"
        op = func.cases[u % len(func.cases)].value.op
        emitter.touch(store, True)
        nodes.append(emitter.assign(cell, combine(emitter.printer, op, func.typ, cell, f"{P}v{u}")))
    return Seq(tuple(nodes))


def _independent_loop(emitter, var, inner, bounds, body) -> Block:
    """Loop `var` by residues r of var + offset modulo size, each an `omp simd` loop over
    points that update distinct cells (schedule.reductions.independent_inner): every cell
    still sees its updates in the serial order."""
    size, offset = inner
    n = emitter.names[var]
    w, lo, hi = wide_name(n), f"{P}ilo_{n}", f"{P}ihi_{n}"
    res = f"{P}res_{n}"
    start = _floordiv(emitter, f"{lo} + {offset} - {res} + {size - 1}", size)
    end = _floordiv(emitter, f"{hi} + {offset} - {res}", size)
    ends = emitter.declare("int64_t", [(f"{P}qlo_{n}", start), (f"{P}qhi_{n}", end)])
    position = Declare("int64_t", ((w, f"{P}q_{n} * {size} - {offset} + {res}"),), True)
    points = For(
        f"{P}q_{n}",
        f"{P}qlo_{n}",
        f"{P}qhi_{n}",
        Block((position, *emitter.aliases([var]), body())),
        simd=True,
    )
    by_residue = For(res, "0", str(size), Block((ends, points)), inclusive=False)
    limits = Declare("int64_t", ((lo, bounds[0]), (hi, bounds[1])), True)
    return Block((limits, by_residue))


def _owner(emitter, func, strategy, names) -> list:
    owned = strategy.owned
    nodes = []
    for o in owned:
        n = names[o.index]
        first = _floordiv(emitter, f"{P}rlo_{n} + {o.offset}", o.size)
        last = _floordiv(emitter, f"{P}rhi_{n} + {o.offset}", o.size)
        nodes.append(emitter.declare("int64_t", [(f"{P}klo_{n}", first), (f"{P}khi_{n}", last)]))
    blocks = {o.dim: (f"{P}k_{names[o.index]}",) * 2 for o in owned}
    ranges, bounds = _owned_ranges(emitter, owned, names, blocks)
    node: Node = Block((*ranges, _serial(emitter, func, names, bounds)))
    for k, o in reversed(list(enumerate(owned))):
        n = names[o.index]
        clauses: dict = {}
        if k == 0:
            clauses = dict(
                parallel="parallel for",
                collapse=len(owned),
                threads=f"{P}nthreads",
                schedule=ONE_AT_A_TIME,
                condition=f"{P}rpoints >= {PARALLEL_MIN_POINTS}",
            )
        node = For(f"{P}k_{n}", f"{P}klo_{n}", f"{P}khi_{n}", node, **clauses)
    return nodes + [node]


def _owned_ranges(emitter, owned, names, cells) -> tuple:
    """(declarations, {variable index: (first, last) C names}) for each of the OwnedVariables
    `owned`: its points, within the reduction domain, whose cells lie in `cells[dim]` ((lo,
    hi) C texts along the dimension it owns)."""
    bigger, smaller = emitter.printer.helper("max", E.Long), emitter.printer.helper("min", E.Long)
    nodes, bounds = [], {}
    for o in owned:
        n = names[o.index]
        lo, hi = cells[o.dim]
        nodes.append(
            emitter.declare(
                "int64_t",
                [
                    (f"{P}ba_{n}", f"{bigger}({P}rlo_{n}, ({lo}) * {o.size} - {o.offset})"),
                    (
                        f"{P}bb_{n}",
                        f"{smaller}({P}rhi_{n}, ({hi}) * {o.size} + {o.size - 1 - o.offset})",
                    ),
                ],
            )
        )
        bounds[o.index] = (f"{P}ba_{n}", f"{P}bb_{n}")
    return nodes, bounds


def _privatized(emitter, func, strategy, names) -> list:
    store = emitter.storage[func.name]
    typ, c = func.typ, store.c_type
    chunk = names[strategy.chunk_variable]
    cells = " * ".join(store.n) or "1"
    budget = f"{PRIVATE_BUDGET_BYTES} / ({P}cells * (int64_t)sizeof({c}))"
    nodes = [
        Declare(
            "int64_t",
            ((f"{P}cells", cells), (f"{P}cext", f"{P}extent({P}rlo_{chunk}, {P}rhi_{chunk})")),
            True,
        ),
        Declare("int64_t", ((f"{P}nchunks", f"{P}cext < {MAX_CHUNKS} ? {P}cext : {MAX_CHUNKS}"),)),
        If(f"{P}cells > 0 && {P}nchunks > {budget}", Assign(f"{P}nchunks", budget)),
        Declare(
            f"{c} *",
            (
                (
                    f"{P}priv",
                    f"({P}nchunks >= 2 && {P}rpoints >= {PARALLEL_MIN_POINTS}) ? "
                    f"({c} *)malloc(sizeof({c}) * (size_t)({P}nchunks * {P}cells)) : NULL",
                ),
            ),
        ),
    ]
    op = func.cases[0].value.op
    identity = _identity(op, typ)
    part = copy.copy(store)
    part.buffer = f"{P}part"
    fill = For(f"{P}i", "0", f"{P}cells", Assign(f"{P}part[{P}i]", identity), inclusive=False)
    ends = Declare(
        "int64_t",
        (
            (f"{P}ca", f"{P}rlo_{chunk} + {P}cext * {P}k / {P}nchunks"),
            (f"{P}cb", f"{P}rlo_{chunk} + {P}cext * ({P}k + 1) / {P}nchunks - 1"),
        ),
        True,
    )
    chunk_loop = For(
        f"{P}k",
        "0",
        f"{P}nchunks",
        Block(
            (
                Declare(f"{c} *restrict", ((f"{P}part", f"{P}priv + {P}k * {P}cells"),)),
                fill,
                ends,
                _serial(
                    emitter, func, names, {strategy.chunk_variable: (f"{P}ca", f"{P}cb")}, part
                ),
            )
        ),
        inclusive=False,
        parallel="parallel for",
        threads=f"{P}nthreads",
        schedule=ONE_AT_A_TIME,
    )
    merged = combine(emitter.printer, op, typ, f"{P}t", f"{P}priv[{P}k * {P}cells + {P}i]")
    emitter.touch(store, False)
    start = emitter.declare(c, [(f"{P}t", f"{store.buffer}[{P}i]")], const=False)
    gather = For(f"{P}k", "0", f"{P}nchunks", emitter.assign(f"{P}t", merged), inclusive=False)
    emitter.touch(store, True)
    merge_loop = For(
        f"{P}i",
        "0",
        f"{P}cells",
        Block((start, gather, emitter.assign(f"{store.buffer}[{P}i]", f"{P}t"))),
        inclusive=False,
        parallel="parallel for",
        threads=f"{P}nthreads",
        schedule=shared_schedule(f"{P}cells", f"{P}nthreads"),
        condition=f"{P}cells >= {PARALLEL_MIN_POINTS}",
    )
    parallel = Block((chunk_loop, merge_loop, Line(f"free({P}priv);")))
    serial = Block((_serial(emitter, func, names, {}),))
    return nodes + [If(f"{P}priv != NULL", parallel, serial)]


def combine(printer, op: Op, typ, target: str, value: str) -> str:
    """C of `target` combined with `value` by `op`."""
    if op in (Op.Min, Op.Max):
        return f"{printer.helper(op.value, typ)}({target}, {value})"
    return f"({typ.c_name})({target} {op.value} {value})"


def _identity(op: Op, typ) -> str:
    """The value `op` leaves any other unchanged with, in `typ`."""
    if op in (Op.Sum, Op.Mul):
        unit = 0 if op is Op.Sum else 1
        return c_literal(unit if typ.is_int else float(unit), typ)
    if typ.is_float:
        return c_literal(float("inf") if op is Op.Min else float("-inf"), typ)
    return c_literal(typ.max_value() if op is Op.Min else typ.min_value(), typ)


def _floordiv(emitter, text: str, size: int) -> str:
    if size == 1:
        return f"({text})"
    return f"{emitter.printer.helper('floordiv', E.Long)}({text}, INT64_C({size}))"
