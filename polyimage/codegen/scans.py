"""Scans in the loop nests of codegen.loops: a scan along the outermost dimension run by
blocks of the next one (no barrier per step), and the value one step back of a scan along the
innermost dimension kept in a variable, for several lines at once."""

from __future__ import annotations

from ..algebra.affine import linear_form
from ..dsl import expr as E
from ..dsl.reduction import Reduction
from ..dsl.types import Half
from ..graph.dag import definition_exprs, self_references
from .cexpr import narrow_gather, wide_name
from .clamps import interior
from .ctext import assign, cat, declare, reading
from .ctree import Block, Declare, For, If, Node, Pragma
from .names import PREFIX
from .versions import interior_loops

# lines of a scan along the innermost dimension run side by side, a step of each in turn: their
# chains of dependent operations overlap, where a line alone waits out the latency of every
# step (a multiply and an add: about 7 cycles an element)
LINES = 4


def carried_value(emitter, stage_name, variables, scan):
    """(scan variable, its dimension, C name) where the stage scans along its innermost
    loop and reads its point one step back: that value then stays in a variable from one
    step to the next (the C compiler, which cannot tell the stage's buffer from those it
    reads, would store and load it at every step, on the scan's critical path). None
    elsewhere."""
    if scan is None or scan != len(variables) - 1 or stage_name not in emitter.storage:
        return None
    func = emitter.graph.stage(stage_name).func
    if func.typ is Half or list(func.variables) != list(variables):
        return None
    var = variables[scan]
    if not any(one_step_back(ref, var, scan) for ref in self_references(func)):
        return None
    return var, scan, f"{PREFIX}prev_{emitter.names[var]}"


def carrying(emitter, stage_name, variables, carried, body) -> Block:
    """`body` (a step of the scan), then the value it stored kept for the next step."""
    store = emitter.storage[stage_name]
    own = store.offset([wide_name(emitter.names[v]) for v in variables], False, emitter.check_group)
    value = cat(store.buffer, "[", own, "]", reading(store.buffer))
    return Block((body, assign(carried[2], value)))


def scan_blocks(emitter, var, scan_nest, team) -> Block:
    """`scan_nest` (the scan's loop outermost) run by blocks of `var`'s range, one block a
    task of a parallel loop around it: each thread scans its columns to the end, with no
    barrier per step of the scan (a work-shared loop inside it waits once per row)."""
    it = emitter.names[var]
    lo, hi = f"{PREFIX}lo_{it}", f"{PREFIX}hi_{it}"
    width, count, block = f"{PREFIX}bw_{it}", f"{PREFIX}nb_{it}", f"{PREFIX}b_{it}"
    extent = f"{PREFIX}extent({lo}, {hi})"
    sizes = declare(
        "int64_t",
        [
            (width, f"{PREFIX}scan_block({extent}, {PREFIX}nthreads)"),
            (count, f"({extent} + {width} - 1) / {width}"),
        ],
    )
    start, end = f"{PREFIX}bs_{it}", f"{PREFIX}be_{it}"
    bounds = declare(
        "int64_t",
        [
            (start, f"{lo} + {block} * {width}"),
            (end, f"{start} + {width} - 1 < {hi} ? {start} + {width} - 1 : {hi}"),
        ],
    )
    # the nest reads the block's range under the names of the whole range
    shadowed = declare("int64_t", [(lo, start), (hi, end)])
    body = Block((bounds, Block((shadowed, scan_nest))))
    loop = For(
        block,
        "0",
        f"{count} - 1",
        body,
        parallel="parallel for",
        threads=team[0],
        condition=team[1],
        schedule="dynamic, 1",
    )
    return Block((sizes, loop))


def one_step_back(ref, var, dim) -> bool:
    """Whether `ref` reads its stage's point one step back along `dim` (`var - 1` there)."""
    form = linear_form(ref.args[dim]) if dim < len(ref.args) else None
    return form is not None and form[0] is var and form[1] == 1 and form[2] == -1


def line_count(emitter, stage_name, carried, loops, ndim) -> int:
    """LINES where the stage scans along its innermost loop, keeping its value one step back
    (carried_value), inside a loop over its lines; 0 where a line runs alone (a gather with
    32-bit offsets has a copy of the loop of its own: see LoopEmitter._narrow_or_wide)."""
    if carried is None or loops != ndim or ndim < 2:
        return 0
    func = emitter.graph.stage(stage_name).func
    if any(narrow_gather(ref) for e in definition_exprs(func) for ref in E.references(e)):
        return 0
    return LINES


def interleaved(emitter, stage_name, variables, carried, lines, one_line, step, clauses) -> For:
    """The loop over the lines (variables[-2]) of a scan along variables[-1], by `lines` lines
    at a time: one loop along the scan runs a step of each in turn, each line with its own
    value one step back (`carried`, suffixed by the line), built by `step(build, carried)`;
    the lines left at the end run one at a time (`one_line`, the nest of one line)."""
    names = emitter.names
    it, scan = names[variables[-2]], names[variables[-1]]
    start, end = f"{PREFIX}ls_{it}", f"{PREFIX}le_{it}"
    typ = emitter.graph.stage(stage_name).func.typ.c_name

    def line(k: int) -> Node:
        own = (*carried[:2], f"{carried[2]}_{k}")
        point = Declare("int64_t", ((wide_name(it), f"{start} + {k}"),), True)
        body = carrying(emitter, stage_name, variables, own, step(own))
        return Block((point, body))

    steps = For(
        wide_name(scan),
        f"{PREFIX}lo_{scan}",
        f"{PREFIX}hi_{scan}",
        Block(tuple(map(line, range(lines)))),
    )
    values = Declare(typ, tuple((f"{carried[2]}_{k}", "0") for k in range(lines)))
    alone = For(wide_name(it), start, end, one_line)
    last = f"{start} + {lines - 1} < {PREFIX}hi_{it} ? {start} + {lines - 1} : {PREFIX}hi_{it}"
    body = Block(
        (
            Declare("int64_t", ((end, last),), True),
            If(f"{end} - {start} + 1 == {lines}", Block((values, steps)), Block((alone,))),
        )
    )
    return For(start, f"{PREFIX}lo_{it}", f"{PREFIX}hi_{it}", body, step=str(lines), **clauses)


def running_sum(emitter, stage_name, carried):
    """The term `t` of a stage that scans along its innermost loop (`carried`, from
    carried_value) as a running sum of integers: one Case for its first point there (`v ==`
    the domain's lower bound), then `self(..., v - 1) + t` (or `t + self(...)`), `t` reading
    none of the stage; None elsewhere. Integer sums wrap, so the terms added in any grouping
    give the same values: the loop may run as an OpenMP scan at vector width
    (summed_loops)."""
    if carried is None:
        return None
    func = emitter.graph.stage(stage_name).func
    var, dim = carried[0], carried[1]
    if isinstance(func, Reduction) or not func.typ.is_int or len(func.cases) != 2:
        return None
    first, rest = func.cases
    if rest.cond is not None or not _first_point(first.cond, var, func.intervals[dim].lb):
        return None
    value = rest.value
    if not (isinstance(value, E.BinOp) and value.op == "+" and value.typ == func.typ):
        return None
    for prev, term in ((value.a, value.b), (value.b, value.a)):
        if (
            isinstance(prev, E.Reference)
            and prev.func is func
            and one_step_back(prev, var, dim)
            and term.typ == func.typ
            and not any(ref.func is func for ref in E.references(term))
        ):
            return term
    return None


def _first_point(cond, var, lb) -> bool:
    """Whether `cond` is `var == lb` (either way round)."""
    if not (isinstance(cond, E.Condition) and cond.op == "=="):
        return False
    for own, other in ((cond.lhs, cond.rhs), (cond.rhs, cond.lhs)):
        if own is var and (
            other is lb
            or isinstance(other, E.Const)
            and isinstance(lb, E.Const)
            and other.value == lb.value
        ):
            return True
    return False


def summed_loops(emitter, stage_name, carried, scalar, term, step) -> Block:
    """The scan loop of a running sum (running_sum): its first point, and the points where
    `term`'s clamps bind, run `scalar` (the carried step) in order around an interior that
    adds the terms as an OpenMP inclusive scan of the carried value (`#pragma omp simd
    reduction(inscan, ...)`), which gcc vectorizes; `step(build)` makes a loop body."""
    func = emitter.graph.stage(stage_name).func
    var, total = carried[0], carried[2]
    it = emitter.names[var]
    w, lo, hi = wide_name(it), f"{PREFIX}lo_{it}", f"{PREFIX}hi_{it}"
    inside = interior([term], var)

    def added(printer):
        if inside is not None:
            printer = printer.with_(chosen=inside.chosen)
        return assign(total, printer(term), "+=")

    def loop(_printer, start, end, simd=True) -> For:
        if not simd:
            return For(w, start, end, scalar)
        # the scan's input phase (a block: C takes no declaration right there), its output
        store = emitter.store(func, total)
        body = Block((step(added), Pragma(f"omp scan inclusive({total})"), store))
        return For(w, start, end, body, simd=True, reduction=f"inscan, +: {total}")

    laid = interior_loops(emitter.printer, it, lo, hi, inside, loop, first=f"{lo} + 1")
    return Block(laid.body)
