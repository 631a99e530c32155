"""C of a Reduction's updates under its strategy (schedule/reductions.py): serial, owner
(blocks of the owning variables in parallel) or privatized (fixed chunks into copies of the
target, combined in chunk order). Every Case whose condition holds applies its own update, in
the order of the Cases, at each point of the reduction domain in order (PolyMage's semantics)."""

from __future__ import annotations

import copy
import itertools

from ..dsl import expr as E
from ..dsl.constructs import Op
from ..schedule.reductions import (
    MAX_CHUNKS,
    PARALLEL_MIN_POINTS,
    PRIVATE_BUDGET_BYTES,
    independent_inner,
    tile_owned,
    unrolled_variables,
)
from .cexpr import c_literal, wide_name
from .names import PREFIX

P = PREFIX


def reduction_update(emitter, func, strategy, cells=None, depth=1) -> None:
    """Emit the updates of Reduction `func` (its target already holds the default). With
    `cells` ((lo, hi) C texts per dimension: a tile's box), only those of the reduction points
    that own the box's cells, in order on the calling thread."""
    emitter.emit("{", depth)
    variables = func.reduction_variables
    names = [emitter.names[v] for v in variables]
    for name, iv in zip(names, func.reduction_intervals):
        lo, hi = emitter.printer(iv.lb), emitter.printer(iv.ub)
        emitter.emit(
            f"const int64_t {P}rlo_{name} = (int64_t)({lo}), {P}rhi_{name} = (int64_t)({hi});",
            depth + 1,
        )
    points = " * ".join(f"{P}extent({P}rlo_{n}, {P}rhi_{n})" for n in names) or "1"
    emitter.emit(f"const int64_t {P}rpoints = {points};", depth + 1)
    if cells is not None:
        _owned_cells(emitter, func, names, cells, depth + 1)
    elif strategy is not None and strategy.kind == "owner":
        _owner(emitter, func, strategy, names)
    elif strategy is not None and strategy.kind == "privatized":
        _privatized(emitter, func, strategy, names)
    else:
        _serial(emitter, func, names, {}, 2)
    emitter.emit("}", depth)


def _owned_cells(emitter, func, names, cells, depth):
    """The updates into the box `cells`: each owning variable runs over the points whose
    cells lie in the box (the other dimensions span the domain, schedule.regions), and
    nothing runs when the box is empty (a later inner tile found it computed)."""
    bounds = _owned_ranges(emitter, tile_owned(func), names, cells, depth)
    nonempty = " && ".join(f"({lo}) <= ({hi})" for lo, hi in cells) or "1"
    emitter.emit(f"if ({nonempty}) {{", depth)
    _serial(emitter, func, names, bounds, depth + 1)
    emitter.emit("}", depth)


def _serial(emitter, func, names, bounds, depth, target=None):
    """The reduction domain in order, with `bounds` ({variable index: (lo, hi)}) replacing
    some variables' bounds, updating `target` (a StageStorage) instead of the buffer. The
    unrolled variables (schedule.reductions.unrolled_variables) run innermost, a copy of the
    update per value; an innermost variable owning cells runs by residues (_independent_loop)."""
    unrolled = unrolled_variables(func)
    looped = [k for k in range(len(names)) if k not in unrolled]
    variables = [func.reduction_variables[k] for k in looped]
    loop_bounds = [bounds.get(k, (f"{P}rlo_{names[k]}", f"{P}rhi_{names[k]}")) for k in looped]

    def update(d):
        _unrolled_updates(emitter, func, unrolled, d, target)

    inner = independent_inner(func, variables[-1])
    if inner is None:
        emitter._loops(variables, func.name, depth, False, update, bounds=loop_bounds)
        return
    emitter._loops(
        variables[:-1],
        func.name,
        depth,
        parallel=False,
        body=lambda d: _independent_loop(emitter, variables[-1], inner, loop_bounds[-1], d, update),
        bounds=loop_bounds[:-1],
    )


def _unrolled_updates(emitter, func, unrolled, depth, target):
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
    if hoisted:
        typ = func.typ.c_name
        emitter.emit(" ".join(f"int64_t {P}o{u}; {typ} {P}v{u};" for u in range(count)), depth)
    saved = emitter.storage[func.name]
    store = target or saved
    emitter.storage[func.name] = store
    try:
        for k, values in enumerate(copies):
            fixed = "".join(
                f"const int64_t {wide_name(emitter.names[v])} = {value}; "
                for v, value in zip(variables, values)
            )
            emitter.emit(f"{{ {fixed}{emitter._aliases(variables)}", depth)
            for i, case in enumerate(func.cases):
                red = case.value
                offset = emitter.offset(red.target, emitter.printer)
                if hoisted:
                    u = k * len(func.cases) + i
                    emitter.emit(f"{P}o{u} = {offset};", depth + 1)
                    emitter.emit(f"{P}v{u} = {emitter.printer(red.value)};", depth + 1)
                    continue
                cell = f"{store.buffer}[{offset}]"
                combined = combine(
                    emitter.printer, red.op, func.typ, cell, emitter.printer(red.value)
                )
                test = "" if case.cond is None else f"if ({emitter.printer(case.cond)}) "
                emitter.emit(f"{test}{{ {cell} = {combined}; }}", depth + 1)
            emitter.emit("}", depth)
    finally:
        emitter.storage[func.name] = saved
    for u in range(count) if hoisted else ():
        cell = f"{store.buffer}[{P}o{u}]"
        op = func.cases[u % len(func.cases)].value.op
        emitter.emit(f"{cell} = {combine(emitter.printer, op, func.typ, cell, f'{P}v{u}')};", depth)


def _independent_loop(emitter, var, inner, bounds, depth, body):
    """Loop `var` by residues r of var + offset modulo size, each an `omp simd` loop over
    points that update distinct cells (schedule.reductions.independent_inner): every cell
    still sees its updates in the serial order."""
    size, offset = inner
    n = emitter.names[var]
    w, lo, hi = wide_name(n), f"{P}ilo_{n}", f"{P}ihi_{n}"
    emitter.emit(f"{{ const int64_t {lo} = {bounds[0]}, {hi} = {bounds[1]};", depth)
    emitter.emit(f"for (int64_t {P}res_{n} = 0; {P}res_{n} < {size}; {P}res_{n}++) {{", depth + 1)
    start = _floordiv(emitter, f"{lo} + {offset} - {P}res_{n} + {size - 1}", size)
    end = _floordiv(emitter, f"{hi} + {offset} - {P}res_{n}", size)
    emitter.emit(f"const int64_t {P}qlo_{n} = {start}, {P}qhi_{n} = {end};", depth + 2)
    emitter.emit("#pragma omp simd", depth + 2)
    emitter.emit(
        f"for (int64_t {P}q_{n} = {P}qlo_{n}; {P}q_{n} <= {P}qhi_{n}; {P}q_{n}++) {{", depth + 2
    )
    emitter.emit(
        f"const int64_t {w} = {P}q_{n} * {size} - {offset} + {P}res_{n}; {emitter._aliases([var])}",
        depth + 3,
    )
    body(depth + 3)
    emitter.emit("}", depth + 2)
    emitter.emit("}}", depth)


def _owner(emitter, func, strategy, names):
    owned = strategy.owned
    for o in owned:
        n = names[o.index]
        emitter.emit(
            f"const int64_t {P}klo_{n} = {_floordiv(emitter, f'{P}rlo_{n} + {o.offset}', o.size)}"
            f", {P}khi_{n} = {_floordiv(emitter, f'{P}rhi_{n} + {o.offset}', o.size)};",
            2,
        )
    collapse = f" collapse({len(owned)})" if len(owned) > 1 else ""
    emitter.emit(
        f"#pragma omp parallel for{collapse} num_threads({P}nthreads) schedule(static) "
        f"if(parallel: {P}rpoints >= {PARALLEL_MIN_POINTS})",
        2,
    )
    for depth, o in enumerate(owned, 2):
        n = names[o.index]
        emitter.emit(
            f"for (int64_t {P}k_{n} = {P}klo_{n}; {P}k_{n} <= {P}khi_{n}; {P}k_{n}++)", depth
        )
    depth = 2 + len(owned)
    emitter.emit("{", depth)
    blocks = {o.dim: (f"{P}k_{names[o.index]}",) * 2 for o in owned}
    bounds = _owned_ranges(emitter, owned, names, blocks, depth + 1)
    _serial(emitter, func, names, bounds, depth + 1)
    emitter.emit("}", depth)


def _owned_ranges(emitter, owned, names, cells, depth) -> dict:
    """{variable index: (first, last) C names} for each of the OwnedVariables `owned`: its
    points, within the reduction domain, whose cells lie in `cells[dim]` ((lo, hi) C texts
    along the dimension it owns)."""
    bigger, smaller = emitter.printer.helper("max", E.Long), emitter.printer.helper("min", E.Long)
    bounds = {}
    for o in owned:
        n = names[o.index]
        lo, hi = cells[o.dim]
        emitter.emit(
            f"const int64_t {P}ba_{n} = {bigger}({P}rlo_{n}, ({lo}) * {o.size} - {o.offset}), "
            f"{P}bb_{n} = {smaller}({P}rhi_{n}, ({hi}) * {o.size} + {o.size - 1 - o.offset});",
            depth,
        )
        bounds[o.index] = (f"{P}ba_{n}", f"{P}bb_{n}")
    return bounds


def _privatized(emitter, func, strategy, names):
    store = emitter.storage[func.name]
    typ, c = func.typ, store.c_type
    chunk = names[strategy.chunk_variable]
    cells = " * ".join(store.n) or "1"
    emitter.emit(
        f"const int64_t {P}cells = {cells}, {P}cext = {P}extent({P}rlo_{chunk}, {P}rhi_{chunk});", 2
    )
    emitter.emit(f"int64_t {P}nchunks = {P}cext < {MAX_CHUNKS} ? {P}cext : {MAX_CHUNKS};", 2)
    emitter.emit(
        f"if ({P}cells > 0 && {P}nchunks > {PRIVATE_BUDGET_BYTES} / ({P}cells * "
        f"(int64_t)sizeof({c}))) {P}nchunks = {PRIVATE_BUDGET_BYTES} / ({P}cells * "
        f"(int64_t)sizeof({c}));",
        2,
    )
    emitter.emit(
        f"{c} *{P}priv = ({P}nchunks >= 2 && {P}rpoints >= {PARALLEL_MIN_POINTS}) ? "
        f"({c} *)malloc(sizeof({c}) * (size_t)({P}nchunks * {P}cells)) : NULL;",
        2,
    )
    emitter.emit(f"if ({P}priv != NULL) {{", 2)
    emitter.emit(f"#pragma omp parallel for num_threads({P}nthreads) schedule(static)", 3)
    emitter.emit(f"for (int64_t {P}k = 0; {P}k < {P}nchunks; {P}k++) {{", 3)
    emitter.emit(f"{c} *restrict {P}part = {P}priv + {P}k * {P}cells;", 4)
    op = func.cases[0].value.op
    identity = _identity(op, typ)
    emitter.emit(f"for (int64_t {P}i = 0; {P}i < {P}cells; {P}i++) {P}part[{P}i] = {identity};", 4)
    emitter.emit(
        f"const int64_t {P}ca = {P}rlo_{chunk} + {P}cext * {P}k / {P}nchunks, {P}cb = "
        f"{P}rlo_{chunk} + {P}cext * ({P}k + 1) / {P}nchunks - 1;",
        4,
    )
    part = copy.copy(store)
    part.buffer = f"{P}part"
    _serial(emitter, func, names, {strategy.chunk_variable: (f"{P}ca", f"{P}cb")}, 4, part)
    emitter.emit("}", 3)
    emitter.emit(
        f"#pragma omp parallel for num_threads({P}nthreads) if(parallel: {P}cells >= "
        f"{PARALLEL_MIN_POINTS})",
        3,
    )
    emitter.emit(f"for (int64_t {P}i = 0; {P}i < {P}cells; {P}i++) {{", 3)
    emitter.emit(f"{c} {P}t = {store.buffer}[{P}i];", 4)
    merged = combine(emitter.printer, op, typ, f"{P}t", f"{P}priv[{P}k * {P}cells + {P}i]")
    emitter.emit(f"for (int64_t {P}k = 0; {P}k < {P}nchunks; {P}k++) {P}t = {merged};", 4)
    emitter.emit(f"{store.buffer}[{P}i] = {P}t;", 4)
    emitter.emit("}", 3)
    emitter.emit(f"free({P}priv);", 3)
    emitter.emit("} else {", 2)
    _serial(emitter, func, names, {}, 3)
    emitter.emit("}", 2)


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
