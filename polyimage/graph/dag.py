"""The stage DAG: built by tracing references back from the outputs, then validated.

build_graph(outputs) -> StageGraph, with stages in a deterministic topological order
(depth-first from the outputs in the order given, producers in order of first use).
A Function may read itself only as a scan (see scan_dimension); that read is no edge.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from ..algebra.affine import linear_form
from ..dsl import expr as E
from ..dsl.constructs import Function, Image
from ..dsl.reduction import Reduction
from ..errors import PipelineError


@dataclass(frozen=True)
class Stage:
    """One node of the DAG: a DSL Function, Reduction or Image and its neighbours by name."""

    func: Function
    producers: tuple
    consumers: tuple

    @property
    def name(self) -> str:
        return self.func.name

    @property
    def kind(self) -> str:
        return self.func.kind


@dataclass(frozen=True)
class StageGraph:
    """Stages in topological order (inputs included), the outputs and the Parameters."""

    stages: tuple
    outputs: tuple
    parameters: tuple
    # {stage name: (every reference in its definition, in order; its scan_dimension)}
    traced: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def declared_parameters(self) -> tuple:
        """The Parameters in the order the user created them (`parameters` is by name)."""
        return tuple(sorted(self.parameters, key=lambda p: p.declared))

    def stage(self, name: str) -> Stage:
        return self._by_name[name]

    @functools.cached_property
    def _by_name(self) -> dict:
        return {s.name: s for s in self.stages}

    def reads(self, name: str) -> tuple:
        """Every reference in the definition of stage `name`, in order (found once, by
        build_graph: the passes ask again and again)."""
        return self.traced[name][0]

    def scan(self, name: str):
        """scan_dimension of stage `name`, found once, by build_graph."""
        return self.traced[name][1]

    @property
    def images(self) -> tuple:
        return tuple(s.func for s in self.stages if isinstance(s.func, Image))

    @property
    def computed(self) -> tuple:
        """Stages that are computed (everything but the input Images)."""
        return tuple(s for s in self.stages if not isinstance(s.func, Image))


def definition_exprs(func: Function):
    """Every expression tree of a stage: domain bounds, conditions, values, Reduce targets."""
    for iv in func.intervals + getattr(func, "reduction_intervals", ()):
        yield iv.lb
        yield iv.ub
    if isinstance(func, Reduction):
        yield func.default
    for case in func.cases:
        if case.cond is not None:
            yield case.cond
        value = case.value
        if isinstance(func, Reduction):
            yield from value.target.args
            value = value.value
        yield value


def _producers(func: Function, refs) -> list:
    """The Functions `refs` (the references in `func`'s definition) read, in order of first
    use, `func` itself excluded (its Reduce target, or its reads of its own earlier points as
    a scan)."""
    seen: dict = {}
    for ref in refs:
        if ref.func is not func:
            seen.setdefault(id(ref.func), ref.func)
    return list(seen.values())


def self_references(func: Function) -> list:
    """The reads of `func` by its own definition, in order (Reduce targets excluded)."""
    return [ref for e in definition_exprs(func) for ref in E.references(e) if ref.func is func]


def scan_dimension(func: Function):
    """The dimension along which `func` reads its own earlier points (a scan), or None when it
    never reads itself. Every self-read must be `v - k` (k > 0 a constant) on that dimension
    and the stage's own variable on every other one; any other self-read is a cycle
    (PipelineError naming the stage and the read). The compiler runs that dimension in order
    and the bounds check proves every self-read inside the domain."""
    return _scanned_dimension(func, self_references(func))


def _scanned_dimension(func: Function, refs: list):
    """scan_dimension of `func` given its reads of itself, `refs`."""
    if not refs:
        return None
    cycle = f"the pipeline has a cycle: {func.name} reads itself at `{{}}`"
    if isinstance(func, Reduction):
        raise PipelineError(cycle.format(refs[0]) + "; a Reduction cannot read itself")
    scanned: dict = {}
    for ref in refs:
        shifted = _earlier_along(func, ref)
        if isinstance(shifted, str) and _also_earlier(func, ref):
            raise PipelineError(
                cycle.format(ref) + f", {shifted} while it reads an earlier point along another "
                "dimension; a scan reads its own earlier points along one dimension only, its own "
                "variable on every other: split it into one scan per dimension (a summed-area "
                "table is a running sum along the rows, then one down the columns of that: "
                "docs/dsl.md)"
            )
        if isinstance(shifted, str):
            raise PipelineError(
                cycle.format(ref) + f", {shifted}; a stage may read itself only at points "
                "strictly earlier along one dimension (a scan: `v - k` with a constant k > 0 "
                "on that dimension, the same variable on every other)"
            )
        scanned.setdefault(shifted, ref)
    if len(scanned) > 1:
        (d0, ref0), (d1, ref1) = list(scanned.items())[:2]
        raise PipelineError(
            f"the pipeline has a cycle: {func.name} reads itself earlier along more than one "
            f"dimension "
            f"(`{ref0}` along {func.variables[d0].name}, `{ref1}` along "
            f"{func.variables[d1].name}); a scan runs along one dimension only: split it "
            f"into one scan per dimension"
        )
    return next(iter(scanned))


def _also_earlier(func, ref) -> bool:
    """Whether `ref` reads an earlier point (`v - k`) along some dimension while another index
    is not its own variable shifted by a constant."""
    forms = [linear_form(arg) for arg in ref.args]
    own = [f is not None and f[0] is var and f[1] == 1 for f, var in zip(forms, func.variables)]
    return not all(own) and any(o and f[2] < 0 for o, f in zip(own, forms))


def _earlier_along(func, ref):
    """The dimension along which `ref` (a read of `func` by itself) reads an earlier point, or
    the reason it does not, as a string."""
    along = []
    for d, (var, arg) in enumerate(zip(func.variables, ref.args)):
        form = linear_form(arg)
        if form is None or form[0] is not var or form[1] != 1:
            return f"whose index {d} `{arg}` is not {var.name} shifted by a constant"
        if form[2] > 0:
            return f"a later point along {var.name}"
        if form[2] < 0:
            along.append(d)
    if not along:
        return "the point being computed"
    if len(along) > 1:
        names = ", ".join(func.variables[d].name for d in along)
        return f"earlier along more than one dimension ({names}) at once"
    return along[0]


def build_graph(outputs, known: dict | None = None) -> StageGraph:
    """Trace the pipeline from `outputs` and check it is well formed. `known` keeps what was
    found of each function ({id: (function, producers, parameters, references, scan)}) for
    the next graph of mostly the same functions (inlining builds one per step)."""
    outputs = _check_outputs(outputs)
    known = {} if known is None else known
    state: dict
    order, state = [], {}

    def traced(func) -> tuple:
        hit = known.get(id(func))
        if hit is None or hit[0] is not func:
            func.cases  # a stage without a definition raises here, before its producers
            exprs = list(definition_exprs(func))
            refs = tuple(r for e in exprs for r in E.references(e))
            scan = _scanned_dimension(func, [r for r in refs if r.func is func])
            producers = _producers(func, refs)
            if isinstance(func, Image):
                exprs += list(func.extents)
            params = [p for e in exprs for p in E.free_symbols(e, E.Parameter)]
            hit = known[id(func)] = (func, producers, params, refs, scan)
        return hit

    def visit(func, path):
        mark = state.get(id(func))
        if mark == "done":
            return
        if mark == "active":
            cycle = path[path.index(func) :] + [func]
            raise PipelineError("the pipeline has a cycle: " + " -> ".join(f.name for f in cycle))
        traced(func)
        state[id(func)] = "active"
        for producer in traced(func)[1]:
            visit(producer, path + [func])
        state[id(func)] = "done"
        order.append(func)

    for out in outputs:
        visit(out, [])
    _check_names(order)
    producers = {f.name: [p.name for p in traced(f)[1]] for f in order}
    consumers: dict[str, list] = {f.name: [] for f in order}
    for f in order:
        for p in producers[f.name]:
            consumers[p].append(f.name)
    stages = tuple(Stage(f, tuple(producers[f.name]), tuple(consumers[f.name])) for f in order)
    parameters = _collect_parameters(order, [traced(f)[2] for f in order])
    found = {f.name: traced(f)[3:] for f in order}
    return StageGraph(stages, tuple(o.name for o in outputs), parameters, found)


# keywords of a pipeline call and of interpret(); no Image or Parameter may take these names
CALL_KEYWORDS = ("out", "threads", "constraints")


def _check_outputs(outputs) -> tuple:
    if isinstance(outputs, Function):
        outputs = [outputs]
    outputs = tuple(outputs)
    if not outputs:
        raise PipelineError("a pipeline needs at least one output")
    for out in outputs:
        if not isinstance(out, Function):
            raise PipelineError(f"outputs must be Functions or Reductions, got {out!r}")
        if isinstance(out, Image):
            raise PipelineError(f"Image {out.name} is an input and cannot be an output")
    names = [o.name for o in outputs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise PipelineError(f"{dup[0]} is listed twice among the outputs")
    return outputs


def _check_names(funcs):
    by_name = {}
    for f in funcs:
        other = by_name.setdefault(f.name, f)
        if other is not f:
            raise PipelineError(
                f"two different stages are named {f.name} "
                f"({type(other).__name__} and {type(f).__name__}); "
                "stage names must be unique"
            )


def _collect_parameters(funcs, found) -> tuple:
    """The Parameters of `funcs` (`found`: the Parameters each one's definition reads, in
    order), each name once."""
    params: dict = {}
    for each in found:
        for p in each:
            other = params.setdefault(p.name, p)
            if other is not p:
                raise PipelineError(f"two different Parameters are named {p.name}")
    for f in funcs:
        if isinstance(f, Image) and f.name in params:
            raise PipelineError(f"Image {f.name} and a Parameter share the name {f.name}")
    for name in [f.name for f in funcs if isinstance(f, Image)] + sorted(params):
        if name in CALL_KEYWORDS:
            kind = "Parameter" if name in params else "Image"
            raise PipelineError(
                f"{kind} {name} cannot be passed by name: {name}= is a keyword "
                f"of the call ({', '.join(k + '=' for k in CALL_KEYWORDS)}); "
                f"rename it"
            )
    return tuple(params[n] for n in sorted(params))
