"""Naive schedule: one loop nest per stage in topological order, every stage in a full buffer.

The outermost loop is `omp parallel for` (collapsed with the next one for 3-D stages), the
innermost runs over the contiguous last dimension with `omp simd`. Reductions update serially
in the order of their reduction domain, as the interpreter does.
"""
from __future__ import annotations

from ..dsl.constructs import Image, Reduction
from ..graph.dag import StageGraph
from .cexpr import CExprPrinter
from .names import PREFIX


class StageStorage:
    """C names describing a stage's full buffer: origin and extent of every dimension."""

    def __init__(self, buffer: str, ndim: int):
        self.buffer = buffer
        self.lb = [f"{PREFIX}lb_{buffer}_{d}" for d in range(ndim)]
        self.n = [f"{PREFIX}n_{buffer}_{d}" for d in range(ndim)]

    def offset(self, indices) -> str:
        """Row-major element offset of the given (int64) index texts."""
        text = f"({indices[0]} - {self.lb[0]})"
        for d in range(1, len(indices)):
            text = f"({text} * {self.n[d]} + ({indices[d]} - {self.lb[d]}))"
        return text

    def upper(self, d: int) -> str:
        return f"({self.lb[d]} + {self.n[d]} - 1)"


class NaiveEmitter:
    """Emits the body of the pipeline function for the naive schedule."""

    def __init__(self, graph: StageGraph, names, helpers: set):
        self.graph = graph
        self.names = names
        self.storage = {s.name: StageStorage(names[s.func], s.func.ndim) for s in graph.stages}
        self.printer = CExprPrinter(names, self.address, helpers)
        self.lines = []

    def address(self, ref, printer) -> str:
        store = self.storage[ref.func.name]
        idx = [printer.index(a, store.lb[d], store.upper(d)) for d, a in enumerate(ref.args)]
        return f"{store.buffer}[{store.offset(idx)}]"

    def emit(self, text: str, depth: int):
        self.lines.append("    " * depth + text)

    def stage(self, func) -> list:
        self.lines = []
        self.emit(f"/* {func.kind} {func.name} */", 1)
        if isinstance(func, Reduction):
            self._loops(func.variables, func.name, 1, parallel=True,
                        body=lambda d: self._store(func, self.printer(func.default), d))
            self._reduction_update(func)
        else:
            self._loops(func.variables, func.name, 1, parallel=True,
                        body=lambda d: self._cases(func, d))
        return self.lines

    def _bounds(self, variables, stage_name: str):
        """(lo, hi) C texts per variable: the stage box, or a reduction's own intervals."""
        store = self.storage[stage_name]
        return [(store.lb[d], store.upper(d)) for d in range(len(variables))]

    def _loops(self, variables, stage_name, depth, parallel, body, bounds=None):
        bounds = bounds or self._bounds(variables, stage_name)
        ndim = len(variables)
        for d, (var, (lo, hi)) in enumerate(zip(variables, bounds)):
            c_type, it = var.typ.c_name, self.names[var]
            self.emit(f"{{ const {c_type} {PREFIX}lo_{it} = ({c_type}){lo}, "
                      f"{PREFIX}hi_{it} = ({c_type}){hi};", depth + d)
        for d, var in enumerate(variables):
            it = self.names[var]
            pragma = None
            if parallel and d == 0:
                collapse = " collapse(2)" if ndim >= 3 else ""
                simd = " simd" if ndim == 1 else ""
                pragma = f"#pragma omp parallel for{simd}{collapse} num_threads({PREFIX}nthreads)"
            elif parallel and d == ndim - 1:
                pragma = "#pragma omp simd"
            if pragma:
                self.emit(pragma, depth + ndim + d)
            self.emit(f"for ({var.typ.c_name} {it} = {PREFIX}lo_{it}; {it} <= {PREFIX}hi_{it};"
                      f" {it}++)", depth + ndim + d)
        inner = depth + 2 * ndim
        self.emit("{", inner - 1)
        body(inner)
        self.emit("}", inner - 1)
        self.emit("}" * ndim, depth)

    def _store(self, func, value: str, depth: int):
        store = self.storage[func.name]
        own = store.offset([self.names[v] for v in func.variables])
        self.emit(f"{store.buffer}[{own}] = {value};", depth)

    def _cases(self, func, depth):
        cases = func.defn
        if len(cases) == 1 and cases[0].cond is None:
            self._store(func, self.printer(cases[0].value), depth)
            return
        self.emit(f"{func.typ.c_name} {PREFIX}value;", depth)
        for i, case in enumerate(cases):
            keyword = "if" if i == 0 else "else if"
            if case.cond is None:
                self.emit(f"else {PREFIX}value = {self.printer(case.value)};", depth)
                break
            self.emit(f"{keyword} ({self.printer(case.cond)}) {PREFIX}value = "
                      f"{self.printer(case.value)};", depth)
        else:
            self.emit(f"else {PREFIX}value = 0;", depth)
        self._store(func, f"{PREFIX}value", depth)

    def _reduction_update(self, func):
        bounds = [(f"(int64_t)({self.printer(iv.lb)})", f"(int64_t)({self.printer(iv.ub)})")
                  for iv in func.reduction_intervals]
        self._loops(func.reduction_variables, func.name, 1, parallel=False,
                    body=lambda d: self._reduce_cases(func, d), bounds=bounds)

    def _reduce_cases(self, func, depth):
        typ = func.typ
        for i, case in enumerate(func.defn):
            red = case.value
            target = self.address(red.target, self.printer)
            value = self.printer(red.value)
            if red.op.name in ("Min", "Max"):
                combined = f"{self.printer.helper(red.op.name.lower(), typ)}({target}, {value})"
            else:
                combined = f"({typ.c_name})({target} {red.op.value} {value})"
            cond = "" if case.cond is None else f"if ({self.printer(case.cond)}) "
            prefix = "else " if i else ""
            self.emit(f"{prefix}{cond}{{ {target} = {combined}; }}", depth)


def naive_body(graph: StageGraph, names, helpers: set) -> list:
    """Lines of C computing every stage of `graph` in order into its buffer."""
    emitter = NaiveEmitter(graph, names, helpers)
    lines = []
    for stage in graph.stages:
        if not isinstance(stage.func, Image):
            lines += emitter.stage(stage.func)
    return lines
