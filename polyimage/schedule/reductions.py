"""How each Reduction runs on several threads (after PANAMERA, seeds/002, made deterministic).

- owner: a prefix r0..rk of the reduction variables each indexes a dimension of every update's
  target as `r + c` or `(r + c) // m` (the bilateral grid's `u / 8`): blocks of m consecutive
  values of those variables write disjoint cells, so blocks run in parallel, each in the
  reduction domain's order. Every cell sees its updates in the serial order: the result is the
  interpreter's, bit for bit, for every operator and type.
- privatized: one operator and a small target (a histogram, a sum): the reduction domain is cut
  into a fixed number of chunks along one variable (the count depends on the sizes, never on
  the threads), each chunk combines into its own copy of the target, started at the operator's
  identity, and the copies are combined into the target in chunk order. Integer Sum and Mul
  wrap, and Min and Max pick, whatever the order: those equal the interpreter exactly. Float
  Sum and Mul are reassociated (by chunk), so they may differ from the serial order by rounding
  (a few units in the last place per chunk), and are the same for every thread count and run.
- blocked: an owner reduction whose target is its owned variables themselves, computed by
  register blocks (schedule.blocking): blocks of rows run in parallel, each block's cells
  accumulate in registers across the reduction-only loops, in their order.
- serial: the reduction domain in order on one thread, when neither applies or it is small.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ..algebra.evaluate import Evaluator, extent
from ..dsl import expr as E
from ..dsl.reduction import Reduction
from .blocking import (
    RegisterBlock,
    epilogue_on_vectors,
    folds_into_tasks,
    reads_along,
    register_block,
    rows_adjacent,
    tasks_cover_cells,
)
from .reduction_order import (  # noqa: F401  (UNROLL_POINTS read from here too)
    UNROLL_POINTS,
    contiguous_variable,
    is_legal_order,
    lane_variable,
    loop_order,
    owned_forms,
    single_update,
    unrolled_variables,
)

# a loop nest (a stage, a reduction) of fewer points runs on the calling thread: waking the
# others costs more
PARALLEL_MIN_POINTS = 16384
# the most chunks of a privatized reduction, and the bytes their copies may take
MAX_CHUNKS = 32
PRIVATE_BUDGET_BYTES = 4 << 20
# owner reductions own blocks along the fewest leading variables that give this many blocks
ENOUGH_BLOCKS = 256
# an owner reduction's contiguous variable, where it owns, takes blocks of this many values
CONTIGUOUS_RUN = 1024
# the most rows (values of reduction-only variables in an earlier index than the last) the
# reads of an owner's lanes may walk (vector_owner)
LANE_ROWS = 8
# the fewest values of a lane variable each block of its own takes (_lane_runs): whole
# vectors of every width
LANE_RUN = 64
# the cells whose in-order float chains run side by side (jammed_chains): enough adds in
# flight for two pipes of three cycles' latency
JAM_LINES = 8


@dataclass(frozen=True)
class OwnedVariable:
    """A reduction variable whose blocks of `size` values (r + offset) // size own distinct
    target cells along `dim`."""

    index: int
    size: int
    offset: int
    dim: int


@dataclass(frozen=True)
class ReductionStrategy:
    """kind: "owner", "blocked", "privatized" or "serial"; why, in words; owned: the
    OwnedVariables of an owner reduction; chunk_variable: the reduction variable a privatized
    one is cut along; block: a blocked one's RegisterBlock."""

    kind: str
    reason: str
    owned: tuple = ()
    chunk_variable: int = 0
    block: RegisterBlock | None = None
    # an owner whose lane variable (`lanes`, an index: its only owned one, or one no block
    # owns) runs under `omp simd` outside the reduction-only loops, each cell summed in a
    # variable (vector_owner)
    vector_owner: bool = False
    lanes: int | None = None
    # an owner whose float chains along its innermost loop run JAM_LINES cells of the loop
    # outside it side by side (jammed_chains): that many lines, 0 for none
    jam: int = 0
    # an owner in lanes or jammed whose blocks cover every cell once: each cell starts from
    # the default in its variable, with no pass over the buffer first (_starts_from_default)
    initializes: bool = False

    def describe(self) -> str:
        return f"{self.kind}: {self.reason}"


def reduction_strategies(graph, params, tiled=None, machine=None, groups=()) -> dict:
    """{Reduction name: ReductionStrategy} for every Reduction of `graph`, decided at the
    parameter values `params` (the estimates) for `machine` (None: no register blocks); one in
    `tiled` ({stage: index of its tiled group}) is computed per tile. `groups`: the members
    of every group in order; a blocked Reduction's tasks compute the members of its untiled
    group that fold into them (epilogue)."""
    evaluate = Evaluator({}, {}, params)
    tiled = tiled or {}
    strategies = {}
    for stage in graph.stages:
        func = stage.func
        if not isinstance(func, Reduction):
            continue
        if stage.name in tiled:
            strategies[stage.name] = _tiled_strategy(func, tiled[stage.name])
            continue
        strategy = reduction_strategy(func, evaluate, machine)
        if strategy.block is not None:
            folded = epilogue(graph, stage.name, groups)
            if folded:
                # read by its tasks alone, its cells need no buffer beyond a task's, in cache
                alone = set(stage.consumers) <= set(folded) and stage.name not in graph.outputs
                chunk = strategy.block.chunk
                if alone:
                    chunk = _cached_chunk(func, strategy.block, evaluate, machine)
                cells = chunk * extent(evaluate, func.reduction_intervals[strategy.block.columns])
                small = cells * func.typ.dtype.itemsize <= machine.l2_bytes // 2
                # on vectors where every folded stage reads the Reduction and inputs alone
                in_registers = rows_adjacent(func, strategy.block, evaluate) and all(
                    epilogue_on_vectors(graph, stage.name, member)
                    and not set(graph.stage(member).producers) & set(folded)
                    for member in folded
                )
                block = dataclasses.replace(
                    strategy.block,
                    chunk=chunk if alone and small else strategy.block.chunk,
                    epilogue=folded,
                    scratch=alone and small,
                    in_registers=in_registers,
                )
                strategy = dataclasses.replace(strategy, block=block, reason=block.describe(func))
        strategies[stage.name] = strategy
    return strategies


def _cached_chunk(func, block, evaluate, machine) -> int:
    """The rows of a task of Reduction `func`'s `block` whose cells, kept in a buffer of its
    thread's, fit in half the L2: its chunk, else as many whole blocks of rows as fit (a
    window summed over a wide image: 192 rows of 2560 columns are 1.9 MiB), at least one."""
    row_bytes = extent(evaluate, func.reduction_intervals[block.columns]) * func.typ.dtype.itemsize
    fitting = machine.l2_bytes // 2 // max(1, row_bytes) // block.height * block.height
    return max(block.height, min(block.chunk, fitting))


def task_buffers(strategies) -> int:
    """The most buffers of each thread's that a Reduction's register blocks take (its cells,
    kept in its tasks; its packed rows; its packed columns), over `strategies` ({name:
    ReductionStrategy})."""
    blocks = [s.block for s in strategies.values() if s.block is not None]
    return max((int(b.scratch) + int(b.packed) + int(b.packed_columns) for b in blocks), default=0)


def kept_in_tasks(strategies) -> frozenset:
    """The Reductions (of `strategies`, {name: ReductionStrategy}) whose cells live only in
    the buffers of their register blocks' tasks: no full buffer."""
    return frozenset(
        name for name, s in strategies.items() if s.block is not None and s.block.scratch
    )


def epilogue(graph, name: str, groups) -> tuple:
    """The members of Reduction `name`'s group (in `groups`, every group's members in order)
    after it that its tasks compute (foldable)."""
    ready = set(computed_first(graph))
    for members in groups:
        if name not in members:
            ready.update(members)
            continue
        at = members.index(name)
        return foldable(graph, name, members[at + 1 :], ready | set(members[: at + 1]))
    return ()


def computed_first(graph) -> tuple:
    """The stages every group may read: the input images."""
    return tuple(s.name for s in graph.stages if s.kind == "image")


def foldable(graph, name: str, candidates, ready) -> tuple:
    """Those of `candidates` (stage names, in order) that the tasks of Reduction `name`
    compute (blocking.folds_into_tasks), each reading nothing but the stages of `ready`
    (computed before the tasks) and those folded before it."""
    ready, folded = set(ready), []
    for member in candidates:
        if set(graph.stage(member).producers) <= ready and folds_into_tasks(graph, name, member):
            folded.append(member)
            ready.add(member)
    return tuple(folded)


def _serial_strategy(func, why: str) -> ReductionStrategy:
    """A serial ReductionStrategy for `why`, saying where its chains run side by side
    (jammed_chains: codegen runs them so on one thread too)."""
    lines = JAM_LINES if jammed_chains(func) else 0
    return ReductionStrategy("serial", why + (_jam_reason(func) if lines else ""), jam=lines)


def _tiled_strategy(func, group: int) -> ReductionStrategy:
    owned = tile_owned(func)
    owners = ", ".join(
        f"{func.reduction_variables[o.index].name} owns {func.variables[o.dim].name}"
        + (f" in blocks of {o.size}" if o.size > 1 else "")
        for o in owned
    )
    return ReductionStrategy(
        "tiled",
        f"computed per tile of group {group}, over the cells its consumers read ({owners}); "
        "tiles run in parallel, each in the reduction domain's order"
        + (_jam_reason(func) if jammed_chains(func) else ""),
        owned=owned,
    )


def reduction_strategy(func, evaluate, machine=None) -> ReductionStrategy:
    """The ReductionStrategy of one Reduction, with the domain sized by `evaluate`, for
    `machine` (None: no register blocks)."""
    extents = [extent(evaluate, iv) for iv in func.reduction_intervals]
    points = math.prod(extents)
    if points < PARALLEL_MIN_POINTS:
        return _serial_strategy(func, f"{points} reduction points, too few for threads")
    block = register_block(func, evaluate, machine) if machine is not None else None
    if block is not None:
        return ReductionStrategy("blocked", block.describe(func), block=block)
    unrolled = unrolled_variables(func)
    contiguous = contiguous_variable(func, unrolled)
    owned, blocks = _owners(func, extents, unrolled + (contiguous,))
    if blocks < 2:
        owned, blocks = _owners(func, extents, unrolled)
        owned = [_long_runs(o, extents[o.index]) if o.index == contiguous else o for o in owned]
        blocks = _block_count(owned, extents)
    lanes = contiguous
    strided = lane_variable(func, unrolled) if owned and contiguous is None else None
    if strided is not None:  # lanes inside blocks of the other variables, or its own
        beside, apart = _owners(func, extents, unrolled + (strided,))
        runs = [_lane_runs(owned[0], extents[strided])] if len(owned) == 1 else []
        if apart >= 2 and vector_owner(func, beside, strided, unrolled, extents):
            owned, blocks, lanes = beside, apart, strided
        elif runs and runs[0].index == strided:
            count = _block_count(runs, extents)
            if count >= 2 and vector_owner(func, runs, strided, unrolled, extents):
                owned, blocks, lanes = runs, count, strided
    if owned and blocks >= 2:
        outside = vector_owner(func, owned, lanes, unrolled, extents)
        if outside and lanes not in {o.index for o in owned}:
            owned, blocks = _neighbour_rows(owned, extents)
        jam = 0
        if not outside and jammed_chains(func):
            owned, blocks = _jam_runs(owned, extents, loop_order(func)[-2])
            jam = JAM_LINES
        names = ", ".join(
            f"{func.reduction_variables[o.index].name} in blocks of {o.size}" for o in owned
        )
        held = {o.index for o in owned} - {lanes}
        inside = [
            v.name for k, v in enumerate(func.reduction_variables) if k != lanes and k not in held
        ]
        return ReductionStrategy(
            "owner",
            f"{names} own distinct cells ({blocks} blocks)"
            + (
                f"; {func.reduction_variables[lanes].name} runs under omp simd outside "
                f"{', '.join(inside)}, each cell summed in a variable"
                if outside and lanes is not None
                else ""
            )
            + (_jam_reason(func) if jam else ""),
            owned=tuple(owned),
            vector_owner=outside,
            lanes=lanes if outside else None,
            jam=jam,
            initializes=_starts_from_default(func, owned, lanes if outside else None)
            or (jam > 0 and _starts_from_default(func, owned, loop_order(func)[-2], chain=True)),
        )
    ops = {case.value.op for case in func.cases}
    if len(ops) > 1:
        return ReductionStrategy("serial", "its Cases combine with different operators")
    cells = math.prod(extent(evaluate, iv) for iv in func.intervals)
    copy_bytes = cells * func.typ.dtype.itemsize
    if copy_bytes * 2 > PRIVATE_BUDGET_BYTES:
        return _serial_strategy(
            func,
            f"no variable owns the target's cells and copies of its {copy_bytes} bytes "
            "are too large to privatize",
        )
    looped = [k for k in range(len(extents)) if k not in unrolled]
    chunk = max(looped, key=lambda k: (min(extents[k], MAX_CHUNKS), -k))
    return ReductionStrategy(
        "privatized",
        f"{cells} cells: up to {MAX_CHUNKS} chunks along "
        f"{func.reduction_variables[chunk].name} combine into copies",
        chunk_variable=chunk,
    )


def vector_owner(func, owned, lanes, unrolled, extents) -> bool:
    """Whether an owner Reduction's blocks run its lane variable (`lanes`: reduction_order.
    lane_variable), its only owned one or one that no block owns, under `omp simd` outside
    the reduction-only loops, each cell summed in a variable: one unconditional update whose
    target is that variable alone and whose value does not read the Reduction, no unrolled
    variables. gcc vectorizes the outer loop, every lane taking its cell's updates in order
    (a 1-D filter: 5.3 -> 3.8 ms, each tap's load and store of the cells gone)."""
    if lanes is None or unrolled:
        return False
    held = [o.index for o in owned if o.index != lanes]
    if len(held) == len(owned):  # the lanes run inside the blocks of the others
        inner = [k for k in loop_order(func) if k not in held]
        if not is_legal_order(func, held + [lanes] + [k for k in inner if k != lanes]):
            return False
    elif held:
        return False
    update = single_update(func)
    if update is None:
        return False
    var = func.reduction_variables[lanes]
    moving = [a for a in update.target.args if any(n is var for n in E.walk(a))]
    inner = [k for k in range(len(func.reduction_variables)) if k != lanes and k not in held]
    if len(moving) != 1 or not inner:
        return False
    # each lane walks the reduction-only loops: along an earlier index than the last of the
    # reads that move with the lanes, over a few constant values at most (a pooling window's
    # rows; a column sum's lanes walking down 4096 rows would touch a page a step)
    reads = reads_along(func, lanes)
    across = [
        k for k in inner if not all(_last_only(r, func.reduction_variables[k]) for r in reads)
    ]
    constant = all(_constant_interval(func.reduction_intervals[k]) for k in across)
    return constant and math.prod(extents[k] for k in across) <= LANE_ROWS


def _constant_interval(interval) -> bool:
    return isinstance(interval.lb, E.Const) and isinstance(interval.ub, E.Const)


def _last_only(ref, var) -> bool:
    """Whether `var` appears in no index of `ref` but its last."""
    return not any(any(n is var for n in E.walk(a)) for a in ref.args[:-1])


def _long_runs(owned: OwnedVariable, extent: int) -> OwnedVariable:
    """The contiguous variable as an owner in blocks of CONTIGUOUS_RUN values or more (a
    whole number of its own blocks, which together own their cells): each block then runs
    it innermost under `omp simd` over a long stretch, where blocks of one value (a 1-D
    filter's `y(t)`) ran one task per cell, scalar (4 million of them: 100x slower)."""
    runs = max(1, min(CONTIGUOUS_RUN, extent) // owned.size)
    return dataclasses.replace(owned, size=owned.size * runs)


def jammed_chains(func) -> bool:
    """Whether a float Reduction's cells each sum along its innermost loop in order (one
    unconditional update whose target does not move with that loop: a scalar chain, one add's
    latency a step) while the loop outside it moves to the next cell (`v + c` along a target
    dimension: a row sum's rows): codegen then runs JAM_LINES of those cells side by side,
    each in a variable, so that their chains overlap (the scans' lines, codegen.scans)."""
    update = single_update(func)
    order = loop_order(func)
    if update is None or not func.typ.is_float or unrolled_variables(func) or len(order) < 2:
        return False
    chain, line = (func.reduction_variables[k] for k in order[-1:-3:-1])
    if any(n is chain for a in update.target.args for n in E.walk(a)):
        return False
    form = independent_inner(func, line)
    return form is not None and form[0] == 1


def _jam_runs(owned, extents, line: int) -> tuple:
    """(owned, blocks) with the jammed lines' variable (index `line`), where it owns blocks
    of one value, in blocks of _lane_runs instead (whole sets of lines in each block), or
    of fewer sets where those would leave a single block."""
    single = [o for o in owned if o.index == line and o.size == 1]
    if single:
        fewer = max(JAM_LINES, extents[line] // 2 // JAM_LINES * JAM_LINES)
        for size in (_lane_runs(single[0], extents[line]).size, fewer):
            runs = [dataclasses.replace(o, size=size) if o.index == line else o for o in owned]
            if _block_count(runs, extents) >= 2:
                return runs, _block_count(runs, extents)
    return owned, _block_count(owned, extents)


def _jam_reason(func) -> str:
    order = loop_order(func)
    chain, line = (func.reduction_variables[k].name for k in order[-1:-3:-1])
    return (
        f"; {JAM_LINES} values of {line} run side by side along {chain}, each cell summed in "
        "order in a variable"
    )


def _starts_from_default(func, owned, inner, chain=False) -> bool:
    """Whether the blocks of `owned` (OwnedVariables) with the variable at index `inner` run
    whole inside each (the lanes, the jammed lines; None: no such strategy) cover every cell
    of the Reduction once with a constant default (blocking.initialized_by_tasks): each cell
    can then start from the default in its variable, the buffer written once. With `chain`
    (jammed lines), only where the innermost loop is the one reduction-only loop: one
    outside the lines would visit each cell again."""
    if inner is None or any(isinstance(n, (E.Variable, E.Reference)) for n in E.walk(func.default)):
        return False
    rest = set(range(len(func.reduction_variables))) - {o.index for o in owned} - {inner}
    if chain and rest != {loop_order(func)[-1]}:
        return False
    target = func.cases[0].value.target.args
    indices = {o.index for o in owned} | {inner}
    dims = {}
    for k in indices:
        var = func.reduction_variables[k]
        found = [d for d, a in enumerate(target) if any(n is var for n in E.walk(a))]
        if len(found) != 1:
            return False
        dims[k] = found[0]
    return len(set(dims.values())) == func.ndim == len(dims) and tasks_cover_cells(func, dims)


def _neighbour_rows(owned, extents) -> tuple:
    """(owned, blocks) with the first owned variable's blocks of one value made of
    extent // ENOUGH_BLOCKS values where that is more: lanes that run inside the blocks of
    other variables read rows their neighbours read too (a pooling window's, two apart by
    three high), which a task then finds in its cache instead of reading them again (one
    row per task read 1.5 rows per row of output)."""
    first = owned[0]
    if first.size == 1 and extents[first.index] // ENOUGH_BLOCKS > 1:
        first = dataclasses.replace(first, size=extents[first.index] // ENOUGH_BLOCKS)
    owned = [first, *owned[1:]]
    return owned, _block_count(owned, extents)


def _lane_runs(owned: OwnedVariable, extent: int) -> OwnedVariable:
    """A lane variable that alone owns its cells in blocks of LANE_RUN values or more (up to
    CONTIGUOUS_RUN, ENOUGH_BLOCKS blocks where there are enough values): whole vectors of
    lanes in each block, where blocks of one value ran one cell per task."""
    values = max(LANE_RUN, min(CONTIGUOUS_RUN, extent // ENOUGH_BLOCKS))
    return dataclasses.replace(owned, size=owned.size * max(1, values // owned.size))


def _block_count(owned, extents) -> int:
    """How many blocks the OwnedVariables `owned` cut the reduction domain into."""
    return math.prod(-(-extents[o.index] // o.size) for o in owned)


def _owners(func, extents, skip) -> tuple:
    """(OwnedVariables, blocks): the fewest leading owning variables, those at indices `skip`
    left out, that give ENOUGH_BLOCKS blocks (all of them if fewer). The loop order's
    contiguous variable is left out where others give two blocks or more: it then runs whole
    in each block, under `omp simd` (schedule.reduction_order)."""
    owned, blocks = [], 1
    for o in owned_variables(func, skip=skip):
        if blocks >= ENOUGH_BLOCKS:
            break
        owned.append(o)
        blocks *= -(-extents[o.index] // o.size)
    return owned, blocks


def owned_variables(func, skip=(), prefix=True) -> tuple:
    """The longest prefix of reduction variables (those at indices `skip` left out) that own
    target cells (see OwnedVariable), or all of them with `prefix` false: each one indexes
    its own target dimension, the same way in every Case."""
    owned, used = [], set()
    for index, var in enumerate(func.reduction_variables):
        if index in skip:
            continue
        forms = owned_forms(func, var)
        dim = next((d for d, f in enumerate(forms) if f is not None and d not in used), None)
        if dim is None:
            if prefix:
                break
            continue
        size, offset = forms[dim]
        owned.append(OwnedVariable(index, size, offset, dim))
        used.add(dim)
    return tuple(owned)


def tile_owned(func) -> tuple:
    """The OwnedVariables that bound Reduction `func` computed per tile (in a tiled group):
    the tile computes a box of cells, and only the points whose owned dimensions fall in it.
    Every other dimension of the box is the whole domain (schedule.regions), so no update
    falls outside it. The loops keep the reduction domain's order, so any variable may own
    (not only a prefix, as the owner strategy's parallel blocks need)."""
    return owned_variables(func, skip=unrolled_variables(func), prefix=False)


def independent_inner(func, var):
    """(size, offset) when reduction variable `var`, run innermost, indexes one target
    dimension as `(var + offset) // size` (or `var + offset`, size 1) in every Case: for fixed
    outer variables and a fixed residue of var + offset modulo size, the points then update
    distinct cells, so a loop over them carries no dependence, and running the residues one
    after another keeps every cell's updates in the serial order. Else None."""
    return next((f for f in owned_forms(func, var) if f is not None), None)
