"""C trees (codegen.ctree) of a Reduction's updates under its strategy (schedule/reductions.py):
serial, owner (blocks of the owning variables in parallel), blocked (register blocks,
schedule.blocking) or privatized (fixed chunks into copies of the target, combined in chunk
order). Every Case whose condition holds applies its
own update, in the order of the Cases, at each point of the reduction domain in order
(PolyMage's semantics)."""

from __future__ import annotations

import copy
import dataclasses
import functools
import itertools

from ..algebra.affine import is_affine
from ..dsl import expr as E
from ..dsl.constructs import Op
from ..dsl.types import Half
from ..grouping.facts import arithmetic_ops, scatters
from ..schedule.reduction_order import loop_order, single_update
from ..schedule.reductions import (
    JAM_LINES,
    MAX_CHUNKS,
    PARALLEL_MIN_POINTS,
    PRIVATE_BUDGET_BYTES,
    independent_inner,
    jammed_chains,
    tile_owned,
    unrolled_variables,
)
from .addresses import offset_of, storing
from .blocked import blocked_updates, combine
from .cexpr import c_literal, helper, wide_name
from .ctext import CText, assign, cat, declare, if_chain, reading, writing
from .ctree import Assign, Block, Declare, For, If, Line, Node, Seq
from .names import LANE_LOOPS, PREFIX, STAGED_UPDATES, UPDATES
from .prelude import ONE_AT_A_TIME, shared_schedule

P = PREFIX
# a scatter's points staged at a time, the most updates per point staged, and the least
# operations per point that pay for the staging buffers' stores and loads (staged_scatter)
STAGED_STRIP = 64
MOST_STAGED = 8
STAGED_MIN_OPS = 3
# the C variable holding a cell from before the loops that update it to after them
ACCUMULATOR = f"{P}acc"
ACCUMULATOR_NAN = f"{ACCUMULATOR}_nan"  # whether a NaN came into ACCUMULATOR (_nan_flagged)
# OpenMP's reduction operators of Op
_CLAUSE_OPERATORS = {Op.Sum: "+", Op.Mul: "*", Op.Min: "min", Op.Max: "max"}


def reduction_update(emitter, func, strategy, cells=None) -> Block:
    """The updates of Reduction `func` (its target already holds the default). With `cells`
    ((lo, hi) C texts per dimension: a tile's box), only those of the reduction points that
    own the box's cells, in order on the calling thread."""
    variables = func.reduction_variables
    names = [emitter.names[v] for v in variables]
    printer = emitter.printer
    nodes: list[Node] = []
    for name, iv in zip(names, func.reduction_intervals):
        lo, hi = printer(iv.lb), printer(iv.ub)
        nodes.append(
            declare(
                "int64_t",
                [
                    (f"{P}rlo_{name}", cat("(int64_t)(", lo, ")")),
                    (f"{P}rhi_{name}", cat("(int64_t)(", hi, ")")),
                ],
            )
        )
    points = " * ".join(f"{P}extent({P}rlo_{n}, {P}rhi_{n})" for n in names) or "1"
    nodes.append(Declare("int64_t", ((f"{P}rpoints", points),), True))
    if cells is not None:
        nodes += _owned_cells(emitter, func, names, cells)
    elif strategy is not None and strategy.kind == "owner":
        nodes += _owner(emitter, func, strategy, names)
    elif strategy is not None and strategy.kind == "blocked":
        nodes.append(blocked_updates(emitter, printer, func, strategy.block, names))
    elif strategy is not None and strategy.kind == "privatized":
        nodes += _privatized(emitter, func, strategy, names)
    else:
        nodes.append(_serial(emitter, func, names, {}, jam=_lines(func)))
    return Block(tuple(nodes))


def _lines(func) -> int:
    """The lines a Reduction run serially or per tile runs side by side: JAM_LINES where its
    float chains allow (schedule.reductions.jammed_chains), else none."""
    return JAM_LINES if jammed_chains(func) else 0


def _owned_cells(emitter, func, names, cells) -> list:
    """The updates into the box `cells`: each owning variable runs over the points whose
    cells lie in the box (the other dimensions span the domain, schedule.regions), and
    nothing runs when the box is empty (a later inner tile found it computed)."""
    ranges, bounds = _owned_ranges(emitter, tile_owned(func), names, cells)
    nonempty = " && ".join(f"({lo}) <= ({hi})" for lo, hi in cells) or "1"
    updates = _serial(emitter, func, names, bounds, jam=_lines(func))
    return ranges + [If(nonempty, Block((updates,)))]


def _serial(emitter, func, names, bounds, target=None, jam=0, first=None):
    """The reduction domain in the loop order (schedule.reduction_order.loop_order), with
    `bounds` ({variable index: (lo, hi)}) replacing some variables' bounds, updating `target`
    (a StageStorage) instead of the buffer. The unrolled variables
    (schedule.reductions.unrolled_variables) run innermost, a copy of the update per value;
    an innermost variable owning cells runs by residues (_independent_loop). With `jam`
    (schedule.reductions.jammed_chains), the loop outside the innermost runs `jam` of its
    values side by side (_jammed), each cell starting from `first` (C text) where given,
    else from its buffer."""
    unrolled = unrolled_variables(func)
    looped = [k for k in loop_order(func) if k not in unrolled]
    variables = [func.reduction_variables[k] for k in looped]
    loop_bounds = [bounds.get(k, (f"{P}rlo_{names[k]}", f"{P}rhi_{names[k]}")) for k in looped]

    def update(printer, accumulator=None):
        return _unrolled_updates(emitter, printer, func, unrolled, target, accumulator)

    inner = independent_inner(func, variables[-1])
    last, last_bounds = variables[-1], loop_bounds[-1]
    staged = staged_scatter(func)

    def strips(printer, iterator, lo, hi, prologue) -> Node:
        return _staged_strips(emitter, printer, func, unrolled, target, iterator, lo, hi, prologue)

    def innermost(printer) -> Node:
        if inner is not None:
            by_strips = functools.partial(strips, printer) if staged else None
            body = None if staged else update(printer)
            return _independent_loop(emitter, last, inner, last_bounds, body, by_strips)
        if staged:
            lo, hi = last_bounds
            return strips(printer, wide_name(emitter.names[last]), lo, hi, emitter.aliases([last]))
        return _accumulated(emitter, printer, func, last, last_bounds, target, update)

    if jam and inner is None and not staged and _accumulates(func, last, unrolled):

        def jammed(printer) -> Node:
            lines = (variables[-2], loop_bounds[-2], jam)
            return _jammed(emitter, printer, func, lines, last_bounds, target, update, first)

        nest = emitter._loops(
            variables[:-2], func.name, parallel=False, body=jammed, bounds=loop_bounds[:-2]
        )
    elif inner is None and not staged and not _accumulates(func, last, unrolled):
        nest = emitter._loops(variables, func.name, False, update, bounds=loop_bounds)
    else:
        nest = emitter._loops(
            variables[:-1], func.name, parallel=False, body=innermost, bounds=loop_bounds[:-1]
        )
    return Block((nest,), note=UPDATES)


def staged_scatter(func) -> bool:
    """Whether the updates of `func` go through staging buffers (_staged_strips): a scatter
    (grouping.facts.scatters: no vector stores it, so gcc leaves the whole loop scalar) whose
    offsets and values take at least STAGED_MIN_OPS operations a point, every Case
    unconditional (each point's offsets and values are computed before its updates), nothing
    computed reads the Reduction itself (an update may not change a later point's value), at
    most MOST_STAGED updates a point."""
    if any(case.cond is not None for case in func.cases):
        return False
    unrolled = unrolled_variables(func)
    computed = [part for c in func.cases for part in (c.value.value, *c.value.target.args)]
    return (
        scatters(func) > 0
        and arithmetic_ops(computed) >= STAGED_MIN_OPS
        and _update_count(func, unrolled) <= MOST_STAGED
        and not any(
            isinstance(n, E.Reference) and n.func is func for part in computed for n in E.walk(part)
        )
    )


def _update_count(func, unrolled) -> int:
    """The updates at each point of the loops: one per Case and value of the `unrolled`
    variables (indices)."""
    count = len(func.cases)
    for k in unrolled:
        interval = func.reduction_intervals[k]
        count *= interval.ub.value - interval.lb.value + 1
    return count


def _staged_strips(emitter, printer, func, unrolled, target, iterator, lo, hi, prologue):
    """The loop of `iterator` from `lo` to `hi` by strips of STAGED_STRIP points: an `omp simd`
    loop computes each point's offsets and values (`prologue`, then _unrolled_updates) into
    small buffers, then a plain loop applies them in order. A scatter's arithmetic (data
    read, index computed, converted, clamped) then runs in vectors; only its loads and
    stores of cells stay scalar, and every cell still sees its updates in the serial order."""
    tag = iterator.removeprefix(P)
    start, end, slot = f"{P}s_{tag}", f"{P}se_{tag}", f"{P}i_{tag}"
    staged = _unrolled_updates(
        emitter, printer, func, unrolled, target, slot=f"{iterator} - {start}"
    )
    count = _update_count(func, unrolled)
    store = target or emitter.storage[func.name]
    buffers, applied = [], []
    for u in range(count):
        buffers.append(Declare("int64_t", ((f"{P}bo{u}[{STAGED_STRIP}]", None),)))
        buffers.append(Declare(func.typ.c_name, ((f"{P}bv{u}[{STAGED_STRIP}]", None),)))
        applied.append(_applied(func, store, u, f"{P}bo{u}[{slot}]", f"{P}bv{u}[{slot}]"))
    last = f"{start} + {STAGED_STRIP - 1}"
    ends = Declare("int64_t", ((end, f"{last} < {hi} ? {last} : {hi}"),), True)
    computing = For(iterator, start, end, Block((*prologue, staged)), simd=True)
    applying = For(slot, "0", f"{end} - {start}", Block(tuple(applied)))
    strip = Block((ends, *buffers, computing, Block((applying,), note=STAGED_UPDATES)))
    return For(start, lo, hi, strip, step=str(STAGED_STRIP))


def _accumulates(func, var, unrolled) -> bool:
    """Whether every point of the innermost loop over `var` updates one cell: a single
    unconditional update whose target moves with neither `var` nor the unrolled variables,
    and whose value does not read the Reduction (so the cell may stay in a variable)."""
    red = single_update(func)
    if red is None:
        return False
    fixed = {id(var)} | {id(func.reduction_variables[k]) for k in unrolled}
    return all(is_affine(a) and not any(id(n) in fixed for n in E.walk(a)) for a in red.target.args)


def _accumulated(emitter, printer, func, var, bounds, target, update, first=None) -> Block:
    """The innermost loop over `var` (printed by `printer`, `update(printer, accumulator)`)
    updating one cell (_accumulates) kept in a variable from before the loop to after it: the
    compiler, which cannot tell the cell from the buffers read, would store and load it at
    every point, and vectorizes none of it. Integers combine under `omp simd` with a reduction
    clause (their operators are associative, wrapping: the same result in any order; gcc's
    cost model at -O2 would leave the loop scalar); floats in order, as written."""
    loop = emitter.innermost(var, bounds[0], bounds[1], update(printer, ACCUMULATOR), simd=False)
    if func.typ.is_int:
        clause = f"{_CLAUSE_OPERATORS[func.cases[0].value.op]}:{ACCUMULATOR}"
        loop = dataclasses.replace(loop, simd=True, reduction=clause)
    return _in_a_variable(emitter, printer, func, target, loop, first)


def _jammed(emitter, printer, func, lines, bounds, target, update, first=None) -> Block:
    """The innermost two loops of a Reduction whose cells sum in order along the innermost
    (schedule.reductions.jammed_chains): `lines` = (the outer loop's Variable, its (lo, hi),
    how many of its values run side by side). Each set of lines loads its cells into
    variables, runs one loop along the innermost (`bounds`) updating each in turn
    (`update(printer, accumulator)`, each line under its own value of the variable) and
    stores them: their chains overlap, every cell still summed in order. The values past the
    last whole set run one at a time (_accumulated)."""
    var, (lo, hi), count = lines
    it = emitter.names[var]
    w, start, rest = wide_name(it), f"{P}jl_{it}", f"{P}jr_{it}"
    chain = func.reduction_variables[loop_order(func)[-1]]
    store = target or emitter.storage[func.name]
    typ = func.typ.c_name
    flagged = _nan_flagged(func)

    def at(k: int, node: Node) -> Block:
        point = Declare("int64_t", ((w, f"{start} + {k}"),), True)
        return Block((point, *emitter.aliases([var]), node))

    def cell(k: int) -> CText:
        return cat(f"{store.buffer}[{P}acc_o{k}]", writing(store.buffer))

    def load(k: int) -> Node:
        offset = offset_of(func.cases[0].value.target, storing(printer, func.name, store))
        initial = cell(k) if first is None else first
        nodes = [assign(f"{P}acc_o{k}", offset), assign(f"{ACCUMULATOR}{k}", initial)]
        if flagged:
            nodes.append(assign(f"{ACCUMULATOR}{k}_nan", _is_nan(f"{ACCUMULATOR}{k}")))
        return at(k, Seq(tuple(nodes)))

    def stored(k: int) -> Node:
        return assign(cell(k), _held_value(func, f"{ACCUMULATOR}{k}"))

    held = [Declare("int64_t", tuple((f"{P}acc_o{k}", None) for k in range(count)))]
    held.append(Declare(typ, tuple((f"{ACCUMULATOR}{k}", None) for k in range(count))))
    if flagged:
        held.append(Declare("int", tuple((f"{ACCUMULATOR}{k}_nan", None) for k in range(count))))
    steps = Block(
        (
            *emitter.aliases([chain]),
            *(at(k, update(printer, f"{ACCUMULATOR}{k}")) for k in range(count)),
        )
    )
    chains = For(wide_name(emitter.names[chain]), bounds[0], bounds[1], steps)
    sets = For(
        start,
        lo,
        f"{rest} - 1",
        Block((*held, *map(load, range(count)), chains, *map(stored, range(count)))),
        step=str(count),
    )
    alone = _accumulated(emitter, printer, func, chain, bounds, target, update, first)
    after = For(w, rest, hi, Block((*emitter.aliases([var]), alone)))
    limits = Declare("int64_t", ((rest, f"{lo} + ({hi} - {lo} + 1) / {count} * {count}"),), True)
    return Block((limits, sets, after))


def _in_a_variable(emitter, printer, func, target, loops: Node, first=None) -> Block:
    """`loops`, which update the one cell of Reduction `func` at the point of `printer`
    (of `target`, a StageStorage, or its buffer) through ACCUMULATOR: the cell loaded into
    that variable before them (or `first`, C text: _first_value) and stored after them. A
    float Min or Max keeps whether a NaN came in a flag of its own (_nan_flagged)."""
    store = target or emitter.storage[func.name]
    offset = offset_of(func.cases[0].value.target, storing(printer, func.name, store))
    cell = cat(f"{store.buffer}[{P}acc_o]", writing(store.buffer))
    at = declare("int64_t", [(f"{P}acc_o", offset)])
    start = declare(func.typ.c_name, [(ACCUMULATOR, cell if first is None else first)], const=False)
    stored = assign(cell, _held_value(func, ACCUMULATOR))
    if not _nan_flagged(func):
        return Block((at, start, loops, stored))
    flag = declare("int", [(ACCUMULATOR_NAN, _is_nan(ACCUMULATOR))], const=False)
    return Block((at, start, flag, loops, stored))


def _is_nan(accumulator: str) -> str:
    """C text of whether the value in `accumulator` is a NaN (its flag's first value)."""
    return f"{accumulator} != {accumulator}"


def _held_value(func, accumulator: str) -> str:
    """C text of the value stored from `accumulator`: NaN where its flag noted one
    (_nan_flagged)."""
    if not _nan_flagged(func):
        return accumulator
    return f"{accumulator}_nan ? ({func.typ.c_name})NAN : {accumulator}"


def _first_value(emitter, func) -> CText:
    """C text of the constant default a cell starts from in its variable where no pass sets
    the buffer first (schedule.reductions: ReductionStrategy.initializes)."""
    return cat(f"({func.typ.c_name})(", emitter.printer(func.default), ")")


def _nan_flagged(func) -> bool:
    """Whether a float Reduction by Min or Max held in ACCUMULATOR combines by plain selects
    (one `vmaxps` each), a NaN among its values noted in ACCUMULATOR_NAN and restored at the
    end: the value of the NaN-propagating helper chain (NaN payloads aside), whose compares
    and blends made each step's latency several times a select's (3x3 max pooling in lanes:
    a chain of nine)."""
    ops = {case.value.op for case in func.cases}
    return func.typ.is_float and func.typ is not Half and ops <= {Op.Min, Op.Max}


def _unrolled_updates(emitter, printer, func, unrolled, target, accumulator=None, slot=None) -> Seq:
    """The updates at every value of the `unrolled` variables (indices), in order, printed by
    `printer` with `target` (a StageStorage, or None: the buffer) for the Reduction's. Without
    Case conditions, every offset and value is computed before the first update (they never
    read the target): the compiler, which cannot tell the target from the buffers read
    (outlined OpenMP regions drop `restrict`), can then share their loads and arithmetic. A
    conditional update computes its offset and value only where its condition holds. With
    an `accumulator` (a C variable holding the one cell updated, _accumulated) the updates
    combine into it; with a `slot` (a C text, _staged_strips) the offsets and values are
    stored there in the staging buffers instead."""
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
            offsets = [] if accumulator else [Declare("int64_t", ((f"{P}o{u}", None),))]
            nodes += [*offsets, Declare(typ, ((f"{P}v{u}", None),))]
    store = target or emitter.storage[func.name]
    printer = storing(printer, func.name, store)
    for k, values in enumerate(copies):
        block: list = [
            Declare("int64_t", ((wide_name(emitter.names[v]), str(value)),), True)
            for v, value in zip(variables, values)
        ]
        block += emitter.aliases(variables)
        for i, case in enumerate(func.cases):
            red = case.value
            offset = None if accumulator else offset_of(red.target, printer)
            if hoisted:
                u = k * len(func.cases) + i
                if offset is not None:
                    block.append(assign(f"{P}o{u}", offset))
                block.append(assign(f"{P}v{u}", printer(red.value)))
                continue
            assert offset is not None, "only unconditional updates accumulate"
            cell = cat(store.buffer, "[", offset, "]", writing(store.buffer))
            value = printer(red.value)
            test = None if case.cond is None else printer(case.cond)
            update = Block((assign(cell, combine(red.op, func.typ, cell, value)),))
            block.append(update if test is None else if_chain([(test, update)]))
        nodes.append(Block(tuple(block)))
    for u in range(count) if hoisted else ():
        if slot is not None:
            nodes.append(Assign(f"{P}bo{u}[{slot}]", f"{P}o{u}"))
            nodes.append(Assign(f"{P}bv{u}[{slot}]", f"{P}v{u}"))
        else:
            nodes.append(_applied(func, store, u, f"{P}o{u}", f"{P}v{u}", accumulator))
    return Seq(tuple(nodes))


def _applied(func, store, u: int, offset: str, value: str, accumulator=None) -> Node:
    """Update `u` of a point (its Case: u modulo the Cases) applied: `value` combined into the
    cell of `store` at `offset`, or into `accumulator` (a C variable holding that cell)."""
    cell = accumulator or cat(f"{store.buffer}[{offset}]", writing(store.buffer))
    op = func.cases[u % len(func.cases)].value.op
    if accumulator is not None and _nan_flagged(func):
        flag = f"{accumulator}_nan"  # ACCUMULATOR_NAN, or a jammed line's (_jammed)
        plain = cat(helper("p" + op.value, func.typ.c_name), f"({cell}, {value})")
        noted = assign(flag, f"{flag} | ({value} != {value})")
        return Seq((assign(cell, plain), noted))
    return assign(cell, combine(op, func.typ, cell, value))


def _independent_loop(emitter, var, inner, bounds, body, strips=None) -> Block:
    """Loop `var` by residues r of var + offset modulo size, each an `omp simd` loop (of
    `body`) over points that update distinct cells (schedule.reductions.independent_inner):
    every cell still sees its updates in the serial order. With `strips` (a function of
    iterator, lo, hi, prologue: _staged_strips) each residue's points run by it instead."""
    size, offset = inner
    n = emitter.names[var]
    w, lo, hi = wide_name(n), f"{P}ilo_{n}", f"{P}ihi_{n}"
    res = f"{P}res_{n}"
    start = _floordiv(f"{lo} + {offset} - {res} + {size - 1}", size)
    end = _floordiv(f"{hi} + {offset} - {res}", size)
    ends = declare("int64_t", [(f"{P}qlo_{n}", start), (f"{P}qhi_{n}", end)])
    position = Declare("int64_t", ((w, f"{P}q_{n} * {size} - {offset} + {res}"),), True)
    prologue = (position, *emitter.aliases([var]))
    if strips is not None:
        points = strips(f"{P}q_{n}", f"{P}qlo_{n}", f"{P}qhi_{n}", prologue)
    else:
        points = For(f"{P}q_{n}", f"{P}qlo_{n}", f"{P}qhi_{n}", Block((*prologue, body)), simd=True)
    by_residue = For(res, "0", str(size), Block((ends, points)), inclusive=False)
    limits = Declare("int64_t", ((lo, bounds[0]), (hi, bounds[1])), True)
    return Block((limits, by_residue))


def _owner(emitter, func, strategy, names) -> list:
    owned = strategy.owned
    nodes = []
    for o in owned:
        n = names[o.index]
        first = _floordiv(f"{P}rlo_{n} + {o.offset}", o.size)
        last = _floordiv(f"{P}rhi_{n} + {o.offset}", o.size)
        nodes.append(declare("int64_t", [(f"{P}klo_{n}", first), (f"{P}khi_{n}", last)]))
    blocks = {o.dim: (f"{P}k_{names[o.index]}",) * 2 for o in owned}
    ranges, bounds = _owned_ranges(emitter, owned, names, blocks)
    start = _first_value(emitter, func) if strategy.initializes else None
    if strategy.vector_owner and strategy.lanes is not None:
        held = tuple(o.index for o in owned if o.index != strategy.lanes)
        inner = _vector_owner(emitter, func, names, bounds, strategy.lanes, held, start)
    else:
        inner = _serial(emitter, func, names, bounds, jam=strategy.jam, first=start)
    node: Node = Block((*ranges, inner))
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


def _vector_owner(emitter, func, names, bounds, index: int, held=(), first=None) -> Node:
    """A block of an owner Reduction run in lanes of its variable at `index`
    (schedule.reductions.vector_owner): the loops of the other owned variables (`held`, in
    their order), then that variable's loop under `omp simd`, the reduction-only loops inside
    it in their order, each cell summed in a variable from before them to after them."""
    order = loop_order(func)
    outside = [k for k in order if k in held] + [index]
    rest = [k for k in order if k not in outside]
    inner = [func.reduction_variables[k] for k in rest]

    def limits(k) -> tuple:
        return bounds.get(k, (f"{P}rlo_{names[k]}", f"{P}rhi_{names[k]}"))

    def cell_sum(printer) -> Block:
        def update(inner_printer) -> Node:
            return _unrolled_updates(emitter, inner_printer, func, (), None, ACCUMULATOR)

        loops = emitter._loops(inner, func.name, False, update, bounds=[limits(k) for k in rest])
        lanes = Block((loops,), note=LANE_LOOPS)
        return _in_a_variable(emitter, printer, func, None, lanes, first)

    lanes = [func.reduction_variables[k] for k in outside]
    nest = emitter._loops(
        lanes, func.name, False, cell_sum, bounds=[limits(k) for k in outside], simd=True
    )
    return Block((nest,), note=UPDATES)


def _owned_ranges(emitter, owned, names, cells) -> tuple:
    """(declarations, {variable index: (first, last) C names}) for each of the OwnedVariables
    `owned`: its points, within the reduction domain, whose cells lie in `cells[dim]` ((lo,
    hi) C texts along the dimension it owns)."""
    bigger, smaller = helper("max", "int64_t"), helper("min", "int64_t")
    nodes, bounds = [], {}
    for o in owned:
        n = names[o.index]
        lo, hi = cells[o.dim]
        nodes.append(
            declare(
                "int64_t",
                [
                    (
                        f"{P}ba_{n}",
                        cat(bigger, f"({P}rlo_{n}, (", lo, f") * {o.size} - {o.offset})"),
                    ),
                    (
                        f"{P}bb_{n}",
                        cat(
                            smaller,
                            f"({P}rhi_{n}, (",
                            hi,
                            f") * {o.size} + {o.size - 1 - o.offset})",
                        ),
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
    merged = combine(op, typ, f"{P}t", f"{P}priv[{P}k * {P}cells + {P}i]")
    cell = cat(f"{store.buffer}[{P}i]", reading(store.buffer))
    start = declare(c, [(f"{P}t", cell)], const=False)
    gather = For(f"{P}k", "0", f"{P}nchunks", assign(f"{P}t", merged), inclusive=False)
    merge_loop = For(
        f"{P}i",
        "0",
        f"{P}cells",
        Block((start, gather, assign(cat(cell, writing(store.buffer)), f"{P}t"))),
        inclusive=False,
        parallel="parallel for",
        threads=f"{P}nthreads",
        schedule=shared_schedule(f"{P}cells", f"{P}nthreads"),
        condition=f"{P}cells >= {PARALLEL_MIN_POINTS}",
    )
    parallel = Block((chunk_loop, merge_loop, Line(f"free({P}priv);")))
    serial = Block((_serial(emitter, func, names, {}),))
    return nodes + [If(f"{P}priv != NULL", parallel, serial)]


def _identity(op: Op, typ) -> str:
    """The value `op` leaves any other unchanged with, in `typ`."""
    if op in (Op.Sum, Op.Mul):
        unit = 0 if op is Op.Sum else 1
        return c_literal(unit if typ.is_int else float(unit), typ)
    if typ.is_float:
        return c_literal(float("inf") if op is Op.Min else float("-inf"), typ)
    return c_literal(typ.max_value() if op is Op.Min else typ.min_value(), typ)


def _floordiv(text: str, size: int) -> CText:
    if size == 1:
        return CText(f"({text})")
    return cat(helper("floordiv", "int64_t"), f"({text}, INT64_C({size}))")
