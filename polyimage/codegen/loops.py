"""Loop nests of stages: a whole stage as a parallel nest (untiled groups), or a serial nest
over given bounds (the tiles of a tiled group, codegen/tiled.py).

A stage's outermost loop is `omp parallel for` (collapsed with the next one for 3-D stages), the
innermost runs over the contiguous last dimension with `omp simd`, on 64-bit iterators. A scan
(graph.dag.scan_dimension) runs its scan dimension's loop in order: the parallel loop is the
first other one (inside one parallel region when the scan's is outermost) and the innermost is
no `omp simd` when it is the scan's.
Reductions update as their strategy says (codegen/reductions.py).
Innermost loops are cut where the chosen Case can change (codegen/split.py); Cases of stages
whose reads are in bounds everywhere are blended without branches.
"""

from __future__ import annotations

import contextlib

from ..algebra.affine import data_dependent
from ..algebra.residues import at_residue, decide, period
from ..dsl import expr as E
from ..dsl.constructs import Image, Reduction
from ..graph.dag import StageGraph, definition_exprs, scan_dimension
from ..schedule.reductions import PARALLEL_MIN_POINTS
from .cexpr import CExprPrinter, narrow_gather, wide_name
from .checked import checked_index
from .clamps import interior, merged
from .names import PREFIX
from .reductions import reduction_update
from .split import case_breakpoints, lifted_cases


def gathered_stages(graph: StageGraph) -> frozenset:
    """Stages some consumer reads at a data-dependent index (a table lookup)."""
    return frozenset(
        ref.func.name
        for s in graph.stages
        if not isinstance(s.func, Image)
        for e in definition_exprs(s.func)
        for ref in E.references(e)
        if data_dependent(ref)
    )


def storage_type(graph: StageGraph, func, gathered: frozenset) -> str:
    """The C element type of a stage's full buffer: its own, except that narrow integer
    tables read at data-dependent indices are kept in int32, which the vectorizer can gather
    (there is no gather of 8- or 16-bit elements). Inputs, outputs and Reductions keep
    theirs."""
    typ = func.typ
    if (
        func.name in gathered
        and typ.is_int
        and typ.bits < 32
        and not isinstance(func, Image)
        and not isinstance(func, Reduction)
        and func.name not in graph.outputs
    ):
        return "int32_t"
    return typ.c_name


# marks the int64 copy of an innermost loop (LoopEmitter._narrow_or_wide)
WIDE_COPY = "/* int64 offsets */"


def _fixed_int32(func) -> bool:
    """Whether the full buffer of stage `func` has constant bounds within int32 and fewer
    than 2^31 elements (its domain's box: a lookup table, a histogram)."""
    if isinstance(func, Image):
        return False
    elements = 1
    for iv in func.intervals:
        if not (isinstance(iv.lb, E.Const) and isinstance(iv.ub, E.Const)):
            return False
        if iv.lb.value < -(2**31) or iv.ub.value > 2**31 - 1:
            return False
        elements *= max(iv.ub.value - iv.lb.value + 1, 0)
    return elements <= 2**31 - 1


class StageStorage:
    """C names describing a stage's buffer: element type, origin and extent of every
    dimension."""

    def __init__(self, buffer: str, ndim: int, c_type: str, label: str = ""):
        """`label` names the buffer in the checked build's messages."""
        self.buffer, self.c_type, self.label = buffer, c_type, label or buffer
        self.lb = [f"{PREFIX}lb_{buffer}_{d}" for d in range(ndim)]
        self.n = [f"{PREFIX}n_{buffer}_{d}" for d in range(ndim)]
        self.fold = {}

    def names(self) -> list:
        """The C names of every bound the offsets use (what an outlined nest takes)."""
        return self.lb + self.n + list(self.fold.values())

    def offset(self, indices, narrow=False, check=None) -> str:
        """Row-major element offset of the given index texts (int64, or int32 if `narrow`);
        with `check` (the number of the group computing), each index is checked at run time
        (codegen.checked). A folded dimension `d` (`fold[d]` names its extent, a power of two)
        keeps index modulo that extent: a sliding window's rows reuse the same storage."""
        cast = "(int32_t)" if narrow else ""

        def term(d):
            index = indices[d]
            if check is not None:
                index = checked_index(index, self.lb[d], self.n[d], self.label, d, check)
                index = f"({index} + {self.lb[d]})" if d in self.fold else index
            if d in self.fold:
                return f"({index} & ({cast}{self.fold[d]} - 1))"
            return index if check is not None else f"({index} - {cast}{self.lb[d]})"

        text = term(0)
        for d in range(1, len(indices)):
            text = f"({text} * {cast}{self.fold.get(d, self.n[d])} + {term(d)})"
        return text

    def fits_int32(self) -> str:
        """C condition: fewer than 2^31 elements and every index within int32."""
        bounds = " && ".join(
            f"{lb} >= INT32_MIN && {lb} + {n} - 1 <= INT32_MAX" for lb, n in zip(self.lb, self.n)
        )
        return f"({bounds} && {' * '.join(self.n)} <= INT32_MAX)"

    def upper(self, d: int) -> str:
        return f"({self.lb[d]} + {self.n[d]} - 1)"


class LoopEmitter:
    """Emits loop nests of stages; `storage` says where each stage's values live (full buffers;
    tiled groups substitute scratchpads). `check_group`, set in the checked build, is the
    number of the group being emitted: every index is then checked (codegen.checked)."""

    def __init__(
        self,
        graph: StageGraph,
        names,
        helpers: set,
        storage: dict,
        branch_free=frozenset(),
        reductions=None,
        plain=frozenset(),
    ):
        self.graph = graph
        self.branch_free = branch_free
        self.plain = plain
        self.reductions = reductions or {}
        self.names = names
        self.storage = storage
        self.printer = CExprPrinter(names, self.address, helpers)
        self.lines = []
        self.touched = {}
        self.narrowed = {}
        self.check_group = None

    def touch(self, store, writes: bool):
        """Record a buffer the code emitted since `touched` was reset reads or writes."""
        _, wrote = self.touched.get(store.buffer, (None, False))
        self.touched[store.buffer] = (store, wrote or writes)

    def offset(self, ref, printer) -> str:
        """The element offset `ref` reads or writes in its stage's storage (int32 for a
        narrow gather in the narrow copy of a loop, see _narrow_or_wide)."""
        store = self.storage[ref.func.name]
        self.touch(store, False)
        narrow = printer.narrow and narrow_gather(ref)
        index = printer.narrow_index if narrow else printer.index
        if narrow:
            self.narrowed[store.buffer] = (store, ref.func)
        idx = [index(a, store.lb[d], store.upper(d)) for d, a in enumerate(ref.args)]
        return store.offset(idx, narrow, self.check_group)

    def address(self, ref, printer, lvalue=False) -> str:
        store = self.storage[ref.func.name]
        text = f"{store.buffer}[{self.offset(ref, printer)}]"
        typ = ref.func.typ.c_name
        return text if lvalue or store.c_type == typ else f"(({typ}){text})"

    def emit(self, text: str, depth: int):
        self.lines.append("    " * depth + text)

    @contextlib.contextmanager
    def _eager(self, on: bool):
        """Print with both sides of every Select and logic operator evaluated while `on`
        (only for stages whose reads are all in bounds: see CExprPrinter)."""
        self.printer.eager = on
        try:
            yield
        finally:
            self.printer.eager = False

    def stage(self, func) -> list:
        self.lines = []
        self.emit(f"/* {func.kind} {func.name} */", 1)
        if isinstance(func, Reduction):
            self._reduction(func, 1)
        else:
            self._loops(
                func.variables,
                func.name,
                1,
                parallel=True,
                body=lambda d: self._cases(func, d),
                scan=scan_dimension(func),
                **self._versions([func]),
            )
        return self.lines

    def _reduction(self, func, depth: int, cells=None):
        """Reduction `func`: its default, then its updates. Over its whole buffer, in parallel
        and by its strategy; or, given `cells` ((lo, hi) C texts: a tile's box), serially over
        the box from the reduction points that own its cells."""
        self._loops(
            func.variables,
            func.name,
            depth,
            parallel=cells is None,
            body=lambda d: self._store(func, self.printer(func.default), d),
            bounds=cells,
            simd=cells is not None,
        )
        strategy = self.reductions.get(func.name) if cells is None else None
        reduction_update(self, func, strategy, cells=cells, depth=depth)

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
        """(func, its Cases, breakpoints) for _segments, or None: the Cases with invariant
        Selects lifted (codegen.split) unless that would cost the loop its clamp peeling."""
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

    def nest(self, funcs, bounds, depth: int):
        """One serial loop nest over `bounds` ((lo, hi) C texts) computing every stage of
        `funcs` (siblings of equal rank) at each point, the innermost loop `omp simd`. A
        Reduction (alone in its nest) takes its default over the box, then the updates of the
        reduction points that own its cells (schedule.reductions.tile_owned)."""
        head = funcs[0]
        if isinstance(head, Reduction):
            self._reduction(head, depth, cells=bounds)
            return

        def body(d):
            for func in funcs:
                aliases = [
                    f"const {v.typ.c_name} {self.names[v]} = {self.names[h]}; "
                    f"const int64_t {wide_name(self.names[v])} = "
                    f"{wide_name(self.names[h])};"
                    for v, h in zip(func.variables, head.variables)
                    if self.names[v] != self.names[h]
                ]
                if len(funcs) > 1 or aliases:
                    self.emit("{ " + " ".join(aliases), d)
                self._cases(func, d + 1 if len(funcs) > 1 or aliases else d)
                if len(funcs) > 1 or aliases:
                    self.emit("}", d)

        self._loops(
            head.variables,
            head.name,
            depth,
            parallel=False,
            body=body,
            bounds=bounds,
            simd=True,
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
        depth,
        parallel,
        body,
        bounds=None,
        simd=False,
        split=None,
        residues=None,
        clamps=None,
        scan=None,
    ):
        """Loops over int64 iterators (see CExprPrinter.wide); the body sees each variable in
        its own type too. `split` = (func, breakpoints) cuts the innermost loop into segments
        that each compute one Case of `func` (see codegen.split); `residues` (from _residues),
        which wins over it, runs the innermost loop over blocks of its residues; else `clamps`
        (an Interior) runs it as head, interior and tail (codegen.clamps). `scan`: the
        dimension that runs in order (never parallel nor simd), or None."""
        bounds = bounds or self._bounds(variables, stage_name)
        ndim = len(variables)
        across = [d for d in range(ndim) if d != scan]
        first = across[0] if parallel and across else None
        if first == ndim - 1 or scan == ndim - 1:
            split = residues = clamps = None
        if residues:
            split = None
        if residues or split:
            clamps = None
        for d, (var, (lo, hi)) in enumerate(zip(variables, bounds)):
            it = self.names[var]
            self.emit(
                f"{{ const int64_t {PREFIX}lo_{it} = {lo}, {PREFIX}hi_{it} = {hi};", depth + d
            )
        plain = (
            not (split or residues or clamps)
            and ndim > 0
            and first != ndim - 1
            and scan != ndim - 1
        )
        loops = ndim - 1 if split or residues or clamps or plain else ndim
        points = " * ".join(
            f"{PREFIX}extent({PREFIX}lo_{self.names[v]}, {PREFIX}hi_{self.names[v]})"
            for v in variables
        )
        team = f"num_threads({PREFIX}nthreads) if(parallel: {points} >= {PARALLEL_MIN_POINTS})"
        for d, var in enumerate(variables[:loops]):
            it = self.names[var]
            pragma = None
            if first is not None and d == 0 and first > 0:
                self.emit(f"#pragma omp parallel {team}", depth + ndim + d)
            if d == first:
                collapse = " collapse(2)" if d + 1 < ndim - 1 and d + 1 != scan else ""
                vector = " simd" if d == ndim - 1 else ""
                pragma = (
                    f"#pragma omp for{vector}{collapse}"
                    if first > 0
                    else f"#pragma omp parallel for{vector}{collapse} {team}"
                )
            elif (parallel or simd) and d == ndim - 1 and d != scan:
                pragma = "#pragma omp simd"
            if pragma:
                self.emit(pragma, depth + ndim + d)
            w = wide_name(it)
            self.emit(
                f"for (int64_t {w} = {PREFIX}lo_{it}; {w} <= {PREFIX}hi_{it}; {w}++)",
                depth + ndim + d,
            )
        inner = depth + ndim + loops + 1
        self.emit("{", inner - 1)
        self.emit(self._aliases(variables[:loops]), inner)

        def innermost(d):
            if residues:
                self._residue_loops(variables[-1], residues, body, d)
            elif split:
                self._segments(variables[-1], split, d)
            elif clamps:
                var = variables[-1]
                it = self.names[var]

                def loop(start, end, d, simd=True):
                    self._innermost(var, start, end, body, d, simd)

                self._interior_loops(it, f"{PREFIX}lo_{it}", f"{PREFIX}hi_{it}", clamps, loop, d)
            elif plain:
                it = self.names[variables[-1]]
                lo, hi = f"{PREFIX}lo_{it}", f"{PREFIX}hi_{it}"
                self._innermost(variables[-1], lo, hi, body, d, simd=parallel or simd)
            else:
                self.emit(self._aliases(variables[loops:]), d)
                body(d)

        def generic(d):
            if loops == ndim - 1:
                it = self.names[variables[-1]]
                lo, hi = f"{PREFIX}lo_{it}", f"{PREFIX}hi_{it}"
                self._innermost(variables[-1], lo, hi, body, d, simd=False)
            else:
                innermost(d)

        self._narrow_or_wide(innermost, inner, generic)
        self.emit("}", inner - 1)
        self.emit("}" * ndim, depth)

    def _narrow_or_wide(self, emit, depth, generic):
        """`emit(depth)` the innermost loop; when it gathers from buffers with 32-bit indices
        (cexpr.narrow_gather), with int32 offsets: alone when those buffers' bounds are
        constants that fit int32 (lookup tables), else beside an int64 copy for buffers of
        2^31 elements or more, which `generic(depth)` emits as one plain loop computing every
        point in full (no residue blocks nor interior split: half the C to compile, for a
        case that hardly ever runs). Without such gathers both copies would be the same text,
        so the one emitted is kept."""
        if self.printer.narrow:
            emit(depth)
            return
        outer_lines, outer_narrowed = self.lines, self.narrowed
        self.lines, self.narrowed = [], {}
        self.printer.narrow = True
        try:
            emit(depth)
        finally:
            self.printer.narrow = False
        narrow_lines, stores = self.lines, self.narrowed
        self.lines, self.narrowed = outer_lines, outer_narrowed
        guarded = sorted(name for name, (_, func) in stores.items() if not _fixed_int32(func))
        if not guarded:
            self.lines += narrow_lines
            return
        fits = " && ".join(stores[name][0].fits_int32() for name in guarded)
        self.emit(f"if ({fits}) {{", depth)
        self.lines += ["    " + line for line in narrow_lines]
        self.emit(f"}} else {{ {WIDE_COPY}", depth)
        generic(depth + 1)
        self.emit("}", depth)

    def _residue_loops(self, var, residues, body, depth):
        """The innermost loop as a loop over q computing residues 0..M-1 of v = M*q + r, each
        with its own Cases and divisions made affine, between a prologue and an epilogue of
        fewer than M points each (computed as usual)."""
        func, period_, per_residue, q, inside = residues
        it, w = self.names[var], wide_name(self.names[var])
        qname = self.names[q]
        qw = wide_name(qname)
        lo, hi = f"{PREFIX}lo_{it}", f"{PREFIX}hi_{it}"
        qlo, qhi, head_end, tail_start = (f"{PREFIX}{k}_{it}" for k in ("qlo", "qhi", "pe", "es"))
        floordiv = self.printer.helper("floordiv", E.Long)
        self.emit(
            f"const int64_t {qlo} = {floordiv}({lo} + {period_ - 1}, INT64_C({period_})), "
            f"{qhi} = {floordiv}({hi} + 1, INT64_C({period_})) - 1;",
            depth,
        )
        self.emit(
            f"const int64_t {head_end} = {qlo} <= {qhi} ? {qlo} * {period_} - 1 : {hi}, "
            f"{tail_start} = {qlo} <= {qhi} ? ({qhi} + 1) * {period_} : {hi} + 1;",
            depth,
        )
        for start, end in ((lo, head_end), (tail_start, hi)):
            self._innermost(var, start, end, body, depth, simd=False)

        def loop(start, end, d, simd=True):
            if simd:
                self.emit("#pragma omp simd", d)
            self.emit(f"for (int64_t {qw} = {start}; {qw} <= {end}; {qw}++) {{", d)
            self.emit(f"const {q.typ.c_name} {qname} = ({q.typ.c_name}){qw};", d + 1)
            for r, cases in enumerate(per_residue):
                self.emit(
                    f"{{ const int64_t {w} = {qw} * {period_} + {r}; {self._aliases([var])}", d + 1
                )
                self._chosen_cases(func, cases, d + 2)
                self.emit("}", d + 1)
            self.emit("}", d)

        if inside is None:
            loop(qlo, qhi, depth)
        else:
            self._interior_loops(qname, qlo, qhi, inside, loop, depth)

    def _innermost(self, var, start, end, body, depth, simd=True):
        """One innermost loop of `var` from `start` to `end` (C texts) running `body`."""
        w = wide_name(self.names[var])
        if simd:
            self.emit("#pragma omp simd", depth)
        self.emit(f"for (int64_t {w} = {start}; {w} <= {end}; {w}++) {{", depth)
        self.emit(self._aliases([var]), depth + 1)
        body(depth + 1)
        self.emit("}", depth)

    def _interior_loops(self, it, lo, hi, inside, loop, depth):
        """`loop(start, end, depth, simd)` over lo..hi cut into head, interior and tail, the
        interior printed with the clamps of `inside` replaced by the operands they pick; the
        head and tail, a few points at the borders, are left to the compiler (no omp simd)."""
        low, high = lo, hi
        bigger, smaller = self.printer.helper("max", E.Long), self.printer.helper("min", E.Long)
        for e in inside.lows:
            low = f"{bigger}({low}, {self.printer.wide(e)})"
        for e in inside.highs:
            high = f"{smaller}({high}, {self.printer.wide(e)})"
        ilo, ihi, head_end, tail_start = (f"{PREFIX}{k}_{it}" for k in ("ilo", "ihi", "ie", "is"))
        self.emit(f"const int64_t {ilo} = {low}, {ihi} = {high};", depth)
        self.emit(
            f"const int64_t {head_end} = {ilo} <= {ihi} ? {ilo} - 1 : {hi}, "
            f"{tail_start} = {ilo} <= {ihi} ? {ihi} + 1 : {hi} + 1;",
            depth,
        )
        loop(lo, head_end, depth, False)
        self.printer.chosen = inside.chosen
        try:
            loop(ilo, ihi, depth)
        finally:
            self.printer.chosen = {}
        loop(tail_start, hi, depth, False)

    def _chosen_cases(self, func, cases, depth):
        """Store the first of `cases` ((condition or None, value)) whose condition holds, 0
        when none does."""
        with self._eager(func.name in self.branch_free):
            if cases and cases[0][0] is None:
                self._store(func, self.printer(cases[0][1]), depth)
                return
            self.emit(f"{func.typ.c_name} {PREFIX}value = 0;", depth)
            for i, (cond, value) in enumerate(cases):
                keyword = "if" if i == 0 else "else if"
                test = "" if cond is None else f"({self.printer(cond)})"
                prefix = "else" if cond is None else f"{keyword} {test}"
                self.emit(f"{prefix} {PREFIX}value = {self.printer(value)};", depth)
        self._store(func, f"{PREFIX}value", depth)

    def _aliases(self, variables) -> str:
        return " ".join(
            f"const {v.typ.c_name} {self.names[v]} = ({v.typ.c_name}){wide_name(self.names[v])};"
            for v in variables
        )

    def _segments(self, var, split, depth):
        """The innermost loop cut at the breakpoints; each segment picks its Case at its
        first point and runs a branch-free loop computing that Case."""
        func, cases, points = split
        it, w = self.names[var], wide_name(self.names[var])
        lo, hi = f"{PREFIX}lo_{it}", f"{PREFIX}hi_{it}"
        n = len(points) + 2
        bp, p = f"{PREFIX}bp", f"{PREFIX}p"
        self.emit(f"if ({lo} <= {hi}) {{", depth)
        depth += 1
        self.emit(f"int64_t {bp}[{n}]; {bp}[0] = {lo}; {bp}[{n - 1}] = {hi} + 1;", depth)
        for k, point in enumerate(points, 1):
            self.emit(
                f"{{ const int64_t {p} = {self.printer.wide(point)}; {bp}[{k}] = {p} < {lo}"
                f" ? {lo} : ({p} > {hi} + 1 ? {hi} + 1 : {p}); }}",
                depth,
            )
        i, j, t = (f"{PREFIX}{x}" for x in "ijt")
        self.emit(
            f"for (int {i} = 2; {i} < {n - 1}; {i}++) for (int {j} = {i}; {j} > 1 && "
            f"{bp}[{j} - 1] > {bp}[{j}]; {j}--) {{ const int64_t {t} = {bp}[{j}]; "
            f"{bp}[{j}] = {bp}[{j} - 1]; {bp}[{j} - 1] = {t}; }}",
            depth,
        )
        self.emit(f"for (int {PREFIX}s = 0; {PREFIX}s < {n - 1}; {PREFIX}s++) {{", depth)
        self.emit(
            f"const int64_t {PREFIX}a = {bp}[{PREFIX}s], {PREFIX}b = {bp}[{PREFIX}s + 1] - 1;",
            depth + 1,
        )
        self.emit(f"if ({PREFIX}a > {PREFIX}b) continue;", depth + 1)
        self.emit(f"int {PREFIX}case = {len(cases)};", depth + 1)
        self.emit(f"{{ const int64_t {w} = {PREFIX}a; {self._aliases([var])}", depth + 1)
        choice = str(len(cases))
        for i, case in reversed(list(enumerate(cases))):
            choice = (
                str(i) if case.cond is None else f"({self.printer(case.cond)} ? {i} : {choice})"
            )
        self.emit(f"{PREFIX}case = {choice}; }}", depth + 2)
        for i, case in enumerate(list(cases) + [None]):
            keyword = "if" if i == 0 else "else if"
            self.emit(f"{keyword} ({PREFIX}case == {i}) {{", depth + 1)
            self.emit("#pragma omp simd", depth + 2)
            self.emit(f"for (int64_t {w} = {PREFIX}a; {w} <= {PREFIX}b; {w}++) {{", depth + 2)
            self.emit(self._aliases([var]), depth + 3)
            with self._eager(func.name in self.branch_free):
                value = "0" if case is None else self.printer(case.value)
            self._store(func, f"({func.typ.c_name})({value})" if case is None else value, depth + 3)
            self.emit("}", depth + 2)
            self.emit("}", depth + 1)
            if case is not None and case.cond is None:
                break
        self.emit("}", depth)
        self.emit("}", depth - 1)

    def _store(self, func, value: str, depth: int):
        store = self.storage[func.name]
        self.touch(store, True)
        own = store.offset(
            [wide_name(self.names[v]) for v in func.variables], False, self.check_group
        )
        self.emit(f"{store.buffer}[{own}] = {value};", depth)

    def _cases(self, func, depth):
        cases = func.cases
        if len(cases) == 1 and cases[0].cond is None:
            with self._eager(func.name in self.branch_free):
                value = self.printer(cases[0].value)
            self._store(func, value, depth)
            return
        if func.name in self.branch_free:
            self._blend(func, depth)
            return
        self.emit(f"{func.typ.c_name} {PREFIX}value;", depth)
        for i, case in enumerate(cases):
            keyword = "if" if i == 0 else "else if"
            if case.cond is None:
                self.emit(f"else {PREFIX}value = {self.printer(case.value)};", depth)
                break
            self.emit(
                f"{keyword} ({self.printer(case.cond)}) {PREFIX}value = "
                f"{self.printer(case.value)};",
                depth,
            )
        else:
            self.emit(f"else {PREFIX}value = 0;", depth)
        self._store(func, f"{PREFIX}value", depth)

    def _blend(self, func, depth):
        """Every condition and value evaluated, then selected: no branch in the loop body."""
        typ, choice = func.typ.c_name, "0"
        with self._eager(True):
            for i, case in enumerate(func.cases):
                self.emit(f"const {typ} {PREFIX}v{i} = {self.printer(case.value)};", depth)
                if case.cond is not None:
                    self.emit(f"const int {PREFIX}k{i} = {self.printer(case.cond)};", depth)
        for i, case in reversed(list(enumerate(func.cases))):
            choice = (
                f"{PREFIX}v{i}"
                if case.cond is None
                else f"({PREFIX}k{i} ? {PREFIX}v{i} : {choice})"
            )
        self._store(func, choice, depth)
