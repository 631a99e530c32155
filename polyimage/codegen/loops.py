"""Loop nests of stages as C trees (codegen.ctree): a whole stage as a parallel nest (untiled
groups), or a serial nest over given bounds (the tiles of a tiled group, codegen/tiled.py).

A stage's outermost loop is `omp parallel for` (collapsed with the next one for 3-D stages), the
innermost runs over the contiguous last dimension with `omp simd`, on 64-bit iterators. A scan
(graph.dag.scan_dimension) runs its scan dimension's loop in order: the parallel loop is the
first other one (inside one parallel region when the scan's is outermost) and the innermost is
no `omp simd` when it is the scan's.
Reductions update as their strategy says (codegen/reduction_loops.py).
Innermost loops are cut where the chosen Case can change (codegen/split.py, codegen/versions.py);
Cases of stages whose reads are in bounds everywhere are blended without branches.
"""

from __future__ import annotations

import copy

from ..algebra.residues import at_residue, decide, period
from ..dsl import expr as E
from ..dsl.reduction import Reduction
from ..graph.dag import StageGraph, scan_dimension
from ..schedule.reductions import PARALLEL_MIN_POINTS
from . import scans, versions
from .addresses import Addresses, carrying
from .cexpr import CExprPrinter, Hoisted, wide_name
from .clamps import interior, merged
from .ctext import Text, assign, cat, declare, if_chain, writing
from .ctree import Assign, Block, Declare, For, If, Node, Seq, Stage, names_used
from .names import PREFIX
from .prelude import shared_schedule
from .reduction_loops import reduction_update
from .split import case_breakpoints, lifted_cases

# the note on the block of the int64 copy of an innermost loop (LoopEmitter._narrow_or_wide)
WIDE_COPY = "int64 offsets"


class LoopEmitter:
    """Builds loop nests of stages; `storage` says where each stage's values live (full
    buffers; tiled groups substitute scratchpads). `check_group`, in the checked build, is
    the number of the group being built: every index is then checked (codegen.checked). Each
    node carries the buffers and helpers its C text uses (ctree's `uses`). Expressions print
    through `printer` (its Addresses: codegen.addresses), or a changed copy of it that the
    nest being built passes on (`eager`, `narrow`, `hoist`, `chosen`: CExprPrinter)."""

    def __init__(
        self,
        graph: StageGraph,
        names,
        storage: dict,
        branch_free=frozenset(),
        reductions=None,
        plain=frozenset(),
        scratch_slots: int = 0,
        check_group: int | None = None,
    ):
        self.graph = graph
        self.scratch_slots = scratch_slots
        self.branch_free = branch_free
        self.plain = plain
        self.reductions = reductions or {}
        self.epilogues = frozenset(
            name
            for strategy in self.reductions.values()
            if strategy.block is not None
            for name in strategy.block.epilogue
        )
        self.names = names
        self.storage = storage
        self.check_group = check_group
        self.printer = CExprPrinter(names, Addresses(storage, check_group))

    def for_group(self, check_group: int | None) -> LoopEmitter:
        """This emitter building the group numbered `check_group` in the checked build (None:
        unchecked); its printer's copy shares the memo (CExprPrinter.signless)."""
        emitter = copy.copy(self)
        emitter.check_group = check_group
        emitter.printer = self.printer.with_(address=Addresses(self.storage, check_group))
        return emitter

    def stage(self, func) -> Stage:
        """The code computing stage `func` over its whole domain (none for a stage the tasks
        of a Reduction's register blocks compute: schedule.blocking.folds_into_tasks)."""
        if func.name in self.epilogues:
            return Stage(func.kind, func.name, ())
        if isinstance(func, Reduction):
            body = self._reduction(func)
        else:
            body = self._loops(
                func.variables,
                func.name,
                parallel=True,
                body=lambda printer: self.cases(func, printer),
                scan=scan_dimension(func),
                **self._versions([func]),
            )
        return Stage(func.kind, func.name, (body,))

    def _reduction(self, func, cells=None) -> Seq:
        """Reduction `func`: its default, then its updates. Over its whole buffer, in parallel
        and by its strategy; or, given `cells` ((lo, hi) C texts: a tile's box), serially over
        the box from the reduction points that own its cells; register blocks whose tasks
        set their own cells (schedule.blocking.initialized_by_tasks), and owners whose lanes
        or lines start from the default (ReductionStrategy.initializes), need no default
        first."""
        strategy = self.reductions.get(func.name) if cells is None else None
        if strategy is not None and (
            strategy.initializes or (strategy.block is not None and strategy.block.initializes)
        ):
            return Seq((reduction_update(self, func, strategy),))
        default = self._loops(
            func.variables,
            func.name,
            parallel=cells is None,
            body=lambda printer: self.store(func, printer(func.default)),
            bounds=cells,
            simd=cells is not None,
        )
        return Seq((default, reduction_update(self, func, strategy, cells=cells)))

    def _clamps(self, funcs):
        """The Interior (codegen.clamps) of the innermost loop computing `funcs` (siblings whose
        variables print alike), or None."""
        head = funcs[0]
        if any(
            [self.names[v] for v in f.variables] != [self.names[v] for v in head.variables]
            for f in funcs
        ):
            return None
        return merged(
            interior(
                [e for case in f.cases for e in (case.cond, case.value) if e is not None],
                f.variables[-1],
            )
            for f in funcs
        )

    def _split(self, func):
        """(func, its Cases, breakpoints) for versions.segments, or None: the Cases with
        invariant Selects lifted (codegen.split) unless that would cost the loop its clamp
        peeling."""
        v, cases = func.variables[-1], func.cases
        lifted = lifted_cases(cases, v)
        if lifted is not None and (
            case_breakpoints(cases, v) is not None or self._clamps([func]) is None
        ):
            cases = lifted
        points = case_breakpoints(cases, v)
        return None if points is None else (func, cases, points)

    def _residues(self, func):
        """(func, M, per residue the Cases left as (condition or None, value), q) when the
        innermost variable v is divided or reduced by constants (algebra.residues), else None:
        v = M*q + r, with the conditions decided per residue where they can be."""
        var = func.variables[-1]
        exprs = [e for case in func.cases for e in (case.cond, case.value) if e is not None]
        period_ = period(exprs, var)
        if period_ == 1:
            return None
        q = E.Variable(var.typ, f"{var.name}_q")
        self.names.name(q, q.name)
        per_residue = []
        for r in range(period_):
            chosen = []
            for case in func.cases:
                cond = None if case.cond is None else at_residue(case.cond, var, period_, r, q)
                verdict = decide(cond)
                if verdict is False:
                    continue
                chosen.append(
                    (None if verdict else cond, at_residue(case.value, var, period_, r, q))
                )
                if verdict:
                    break
            per_residue.append(chosen)
        inside = merged(
            interior([e for pair in cases for e in pair if e is not None], q)
            for cases in per_residue
        )
        return func, period_, per_residue, q, inside

    def _bounds(self, variables, stage_name: str):
        """(lo, hi) C texts per variable: the stage box, or a reduction's own intervals."""
        store = self.storage[stage_name]
        return [(store.lb[d], store.upper(d)) for d in range(len(variables))]

    def nest(self, funcs, bounds):
        """One serial loop nest over `bounds` ((lo, hi) C texts) computing every stage of
        `funcs` (siblings of equal rank) at each point, the innermost loop `omp simd` unless a
        scan (alone in its nest) runs along it. A Reduction (alone too) takes its default over
        the box, then the updates of the reduction points that own its cells
        (schedule.reductions.tile_owned)."""
        head = funcs[0]
        if isinstance(head, Reduction):
            return self._reduction(head, cells=bounds)

        def body(printer):
            nodes = []
            for func in funcs:
                aliases = [
                    node
                    for v, h in zip(func.variables, head.variables)
                    if self.names[v] != self.names[h]
                    for node in (
                        declare(v.typ.c_name, [(self.names[v], self.names[h])]),
                        declare("int64_t", [(wide_name(self.names[v]), wide_name(self.names[h]))]),
                    )
                ]
                cases = self.cases(func, printer)
                scoped = len(funcs) > 1 or aliases
                nodes.append(Block((*aliases, cases)) if scoped else cases)
            return Seq(tuple(nodes))

        return self._loops(
            head.variables,
            head.name,
            parallel=False,
            body=body,
            bounds=bounds,
            simd=True,
            scan=scan_dimension(head),
            **self._versions(funcs),
        )

    def _versions(self, funcs) -> dict:
        """The versions of the innermost loop computing `funcs` (_loops' split, residues and
        clamps), none for stages in `plain` (small ones: see schedule.memory.small_stages)."""
        if any(func.name in self.plain for func in funcs):
            return {}
        single = len(funcs) == 1
        return {
            "split": self._split(funcs[0]) if single else None,
            "residues": self._residues(funcs[0]) if single else None,
            "clamps": self._clamps(funcs),
        }

    def _loops(
        self,
        variables,
        stage_name,
        parallel,
        body,
        bounds=None,
        simd=False,
        split=None,
        residues=None,
        clamps=None,
        scan=None,
    ):
        """Loops over int64 iterators (see CExprPrinter.wide); the body (`body(printer)`, a node
        printed by the printer in force there) sees each variable in its own type too. `split`
        = (func, breakpoints) cuts the innermost loop into segments that each compute one Case
        of `func` (see codegen.split); `residues` (from _residues), which wins over it, runs the
        innermost loop over blocks of its residues; else `clamps` (an Interior) runs it as
        head, interior and tail (codegen.clamps). `scan`: the dimension that runs in order
        (never parallel nor simd), or None."""
        bounds = bounds or self._bounds(variables, stage_name)
        ndim = len(variables)
        carried = scans.carried_value(self, stage_name, variables, scan)
        across = [d for d in range(ndim) if d != scan]
        first = across[0] if parallel and across else None
        if first == ndim - 1 or scan == ndim - 1:
            split = residues = clamps = None
        if residues:
            split = None
        if residues or split:
            clamps = None
        scopes = []
        for var, (lo, hi) in zip(variables, bounds):
            it = self.names[var]
            scopes.append(declare("int64_t", [(f"{PREFIX}lo_{it}", lo), (f"{PREFIX}hi_{it}", hi)]))
        plain = (
            not (split or residues or clamps)
            and ndim > 0
            and first != ndim - 1
            and scan != ndim - 1
        )
        loops = ndim - 1 if split or residues or clamps or plain else ndim
        team = (f"{PREFIX}nthreads", f"{self._extents(variables)} >= {PARALLEL_MIN_POINTS}")

        def innermost(printer):
            if residues:
                return versions.residue_loops(self, printer, variables[-1], residues, body)
            if split:
                return versions.segments(self, printer, variables[-1], split)
            if clamps:
                var = variables[-1]
                it = self.names[var]

                def loop(printer, start, end, simd=True):
                    return self.innermost(var, start, end, body(printer), simd)

                lo, hi = f"{PREFIX}lo_{it}", f"{PREFIX}hi_{it}"
                return versions.interior_loops(printer, it, lo, hi, clamps, loop)
            if plain:
                it = self.names[variables[-1]]
                lo, hi = f"{PREFIX}lo_{it}", f"{PREFIX}hi_{it}"
                return self.innermost(variables[-1], lo, hi, body(printer), simd=parallel or simd)
            return Seq((*self.aliases(variables[loops:]), body(printer)))

        def generic(printer):
            if loops == ndim - 1:
                it = self.names[variables[-1]]
                lo, hi = f"{PREFIX}lo_{it}", f"{PREFIX}hi_{it}"
                return self.innermost(variables[-1], lo, hi, body(printer), simd=False)
            return innermost(printer)

        aliases = self.aliases(variables[:loops])

        def step(build, carried_as=carried) -> Block:
            """The body of the loops: `build(printer)` printed with the scan's value one step
            back in `carried_as`, invariants hoisted in front."""
            hoisted = Hoisted(variables[:loops])
            printer = self.printer.with_(hoist=hoisted)
            if carried_as is not None:
                printer = carrying(printer, stage_name, carried_as)
            inner = build(printer)
            terms = hoisted.declarations()
            folds = [declare("int64_t", terms)] if terms else []
            return Block((*aliases, *folds, inner))

        def build(printer):
            return self._narrow_or_wide(printer, innermost, generic)

        node = step(build)
        summed = scans.running_sum(self, stage_name, carried) if loops == ndim else None
        lines = (
            0 if summed is not None else scans.line_count(self, stage_name, carried, loops, ndim)
        )
        for d in reversed(range(loops)):
            var = variables[d]
            w, it = wide_name(self.names[var]), self.names[var]
            clauses = {}
            if d == first and first > 0:  # a scan along the outermost: blocks of it, below
                clauses = dict(simd=d == ndim - 1)
            elif d == first:
                collapse = 2 if d + 1 < ndim - 1 and d + 1 != scan else 1
                iterations = self._extents(variables[d : d + collapse])
                clauses = dict(
                    parallel="parallel for",
                    simd=d == ndim - 1,
                    collapse=collapse,
                    threads=team[0],
                    condition=team[1],
                    schedule=shared_schedule(iterations, f"{PREFIX}nthreads"),
                )
            elif (parallel or simd) and d == ndim - 1 and d != scan:
                clauses = dict(simd=True)
            if carried is not None and d == scan:
                node = scans.carrying(self, stage_name, variables, carried, node)
            if lines and d == scan - 1:
                if clauses.get("schedule") and clauses.get("collapse") == 1:
                    steps = f"({self._extents([var])} + {lines - 1}) / {lines}"
                    clauses["schedule"] = shared_schedule(steps, f"{PREFIX}nthreads")
                node = scans.interleaved(
                    self,
                    stage_name,
                    variables,
                    carried,
                    lines,
                    node,
                    lambda own: step(build, own),
                    clauses,
                )
            elif summed is not None and d == scan:
                node = scans.summed_loops(self, stage_name, carried, node, summed, step)
            else:
                node = For(w, f"{PREFIX}lo_{it}", f"{PREFIX}hi_{it}", node, **clauses)
            if carried is not None and d == scan:
                typ = self.graph.stage(stage_name).func.typ.c_name
                node = Block((Declare(typ, ((carried[2], "0"),)), node))
            if first is not None and d == 0 and first > 0:
                node = scans.scan_blocks(self, variables[first], node, team)
        for scope in reversed(scopes):
            node = Block((scope, node))
        return node

    def _extents(self, variables) -> str:
        """The points of the loops over `variables` (their bounds declared), as C."""
        return " * ".join(
            f"{PREFIX}extent({PREFIX}lo_{self.names[v]}, {PREFIX}hi_{self.names[v]})"
            for v in variables
        )

    def _narrow_or_wide(self, printer, build, generic):
        """`build(printer)` the innermost loop; when it gathers from buffers with 32-bit indices
        (cexpr.narrow_gather), with int32 offsets: alone when those buffers' bounds are
        constants that fit int32 (lookup tables), else beside an int64 copy for buffers of
        2^31 elements or more, which `generic(printer)` builds as one plain loop computing every
        point in full (no residue blocks nor interior split: half the C to compile, for a
        case that hardly ever runs). Without such gathers both copies would be the same code,
        so the one built is kept."""
        if printer.narrow:
            return build(printer)
        narrow = build(printer.with_(narrow=True))
        stores = {
            store.buffer: store
            for kind, (store, fixed) in (u for u in names_used(narrow) if u[0] == "narrow")
            if not fixed
        }
        if not stores:
            return narrow
        fits = " && ".join(stores[name].fits_int32() for name in sorted(stores))
        return If(fits, Block((narrow,)), Block((generic(printer),), note=WIDE_COPY))

    def innermost(self, var, start, end, body: Node, simd=True) -> For:
        """One innermost loop of `var` from `start` to `end` (C texts) running `body`."""
        w = wide_name(self.names[var])
        return For(w, start, end, Block((*self.aliases([var]), body)), simd=simd)

    def chosen_cases(self, func, cases, printer) -> Node:
        """Store the first of `cases` ((condition or None, value)) whose condition holds, 0
        when none does, printed by `printer` (eager for a branch-free stage)."""
        printer = printer.with_(eager=func.name in self.branch_free)
        if cases and cases[0][0] is None:
            return self.store(func, printer(cases[0][1]))
        value = f"{PREFIX}value"
        chain = self._case_chain(value, cases, printer)
        declared = Declare(func.typ.c_name, ((value, "0"),))
        stored = self.store(func, value)
        return Seq((declared, chain, stored) if chain else (declared, stored))  # none: all 0

    def aliases(self, variables) -> list:
        """Each variable in its own type, read off its int64 iterator."""
        return [
            Declare(
                v.typ.c_name,
                ((self.names[v], f"({v.typ.c_name}){wide_name(self.names[v])}"),),
                True,
            )
            for v in variables
        ]

    def store(self, func, value: Text, indices=None) -> Assign:
        """`value` stored at `indices` (C texts; default: the point of the loops) of stage
        `func`'s storage."""
        store = self.storage[func.name]
        indices = indices or [wide_name(self.names[v]) for v in func.variables]
        own = store.offset(indices, False, self.check_group)
        return assign(cat(store.buffer, "[", own, "]", writing(store.buffer)), value)

    def cases(self, func, printer):
        """The point of stage `func` its Cases compute, printed by `printer`."""
        cases = func.cases
        if len(cases) == 1 and cases[0].cond is None:
            eager = printer.with_(eager=func.name in self.branch_free)
            return self.store(func, eager(cases[0].value))
        if func.name in self.branch_free:
            return self._blend(func, printer)
        value = f"{PREFIX}value"
        pairs = [(c.cond, c.value) for c in cases]
        chain = self._case_chain(value, pairs, printer, Assign(value, "0"))
        declared = Declare(func.typ.c_name, ((value, None),))
        return Seq((declared, chain, self.store(func, value)))

    def _case_chain(self, target: str, cases, printer, otherwise=None):
        """`if (c0) target = v0; else if (c1) ...` over `cases` ((condition or None, value))
        printed by `printer`, up to the first without a condition, else ending in `otherwise`
        (a node, or none)."""
        branches = []
        for cond, value in cases:
            test = None if cond is None else printer(cond)
            branches.append((test, assign(target, printer(value))))
            if cond is None:
                return if_chain(branches)
        return if_chain(branches + ([(None, otherwise)] if otherwise else []))

    def _blend(self, func, printer):
        """Every condition and value evaluated (by `printer`, eager), then selected: no branch
        in the loop body."""
        typ, choice, nodes = func.typ.c_name, "0", []
        eager = printer.with_(eager=True)
        for i, case in enumerate(func.cases):
            nodes.append(declare(typ, [(f"{PREFIX}v{i}", eager(case.value))]))
            if case.cond is not None:
                nodes.append(declare("int", [(f"{PREFIX}k{i}", eager(case.cond))]))
        for i, case in reversed(list(enumerate(func.cases))):
            choice = (
                f"{PREFIX}v{i}"
                if case.cond is None
                else f"({PREFIX}k{i} ? {PREFIX}v{i} : {choice})"
            )
        nodes.append(self.store(func, choice))
        return Seq(tuple(nodes))
