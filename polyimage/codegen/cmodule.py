"""A pipeline's C: includes, helpers, the workspace, the outlined loop nests, the entry function
and its cffi declaration (cut into translation units by codegen.units).

Entry: `int pipeline_<name>(void *workspace, int nthreads, <parameters by name>, <input images
by name>, <outputs in order>)`; it returns 0, or 1 when a buffer could not be allocated. The
workspace (codegen/workspace.py; NULL for a temporary one) keeps buffers between calls.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ..dsl.constructs import Image
from ..graph.dag import StageGraph
from ..schedule.memory import buffer_lifetimes, buffer_slots
from ..schedule.reductions import kept_in_tasks, task_buffers
from ..schedule.tiling import UntiledGroup
from . import checked
from .cexpr import CExprPrinter
from .ctext import cat, declare, helpers_used
from .ctree import (
    Assign,
    Blank,
    Block,
    Call,
    Declare,
    Function,
    If,
    Label,
    Line,
    Pointer,
    Return,
    Seq,
    Stage,
    names_used,
    separated,
)
from .loops import LoopEmitter
from .names import PREFIX, NameRegistry
from .prelude import openmp_timer, prelude
from .storage import StageStorage, buffer_arguments, gathered_stages, storage_type
from .tiled import TiledEmitter
from .units import layout
from .workspace import WORKSPACE, WORKSPACE_USE, workspace_code, workspace_prototypes


@dataclass(frozen=True)
class CModule:
    """Generated C for one pipeline (`source`: kernel.c, one file; `units`: the same code cut
    into translation units), its tree (`functions`: the outlined functions, then the entry;
    codegen.ctree), where its loops stand in kernel.c (`loops`: cprint.LoopLines), the helpers
    it defines, and what the loader needs to call it."""

    source: str
    function: str
    cdef: str
    params: tuple
    inputs: tuple
    outputs: tuple
    profile: tuple = ()
    units: tuple = ()  # translation units (codegen.units.Unit); the main one first
    checked: bool = False  # the checked build (codegen.checked)
    functions: tuple = ()
    loops: tuple = ()
    helpers: tuple = ()  # (op, C type) of every helper function kernel.c defines


def generate_module(
    graph: StageGraph,
    name: str,
    plans,
    branch_free=frozenset(),
    profile=False,
    reductions=None,
    check=False,
    plain=frozenset(),
) -> CModule:
    """C of `graph` run as the group `plans` (schedule.tiling); stages in `branch_free`
    evaluate their Cases eagerly (see poly.bounds.branch_free_stages); Reductions run by their
    `reductions` strategies (schedule.reductions; serial when absent). With `profile`, the
    entry takes an array of timers after the thread count (`double *prof`), one per
    `CModule.profile` entry (kind, group, stages): "stage" and "group" hold wall seconds,
    "nest" the seconds a tiled group's loop nest took summed over its threads. With `check`,
    every index is checked at run time (codegen.checked). Stages in `plain` get one plain loop
    nest, without versions of their innermost loop (see schedule.memory.small_stages)."""
    names = NameRegistry()
    function = "pipeline_" + re.sub(r"\W", "_", name, flags=re.ASCII)
    for p in graph.parameters:
        names.name(p, p.name)
    for s in graph.stages:
        names.name(s.func, s.name)
    for s in graph.stages:
        for v in s.func.variables + getattr(s.func, "reduction_variables", ()):
            names.name(v, v.name)
    printer = CExprPrinter(names)
    inputs = tuple(sorted(img.name for img in graph.images))
    args: list = [f"void *{PREFIX}ws", f"int {PREFIX}nthreads"]  # texts and Pointers
    if profile:
        args.append(Pointer("double", f"{PREFIX}prof"))
    timers: list = []
    args += [f"{p.typ.c_name} {names[p]}" for p in graph.parameters]
    by_name = {s.name: s.func for s in graph.stages}
    args += [Pointer(by_name[n].typ.c_name, names[by_name[n]], True) for n in inputs]
    args += [Pointer(by_name[n].typ.c_name, names[by_name[n]]) for n in graph.outputs]

    nthreads, fail = f"{PREFIX}nthreads", Line(f"goto {PREFIX}fail;")
    body: list = [checked.entry_start()] if check else []
    body += [
        If(f"{nthreads} <= 0", Assign(nthreads, "omp_get_max_threads()")),
        If(f"{nthreads} > omp_get_thread_limit()", Assign(nthreads, "omp_get_thread_limit()")),
        Declare(f"{PREFIX}workspace", ((f"{PREFIX}local", "{0}"),)),
        Declare(
            f"{PREFIX}workspace *",
            (
                (
                    WORKSPACE,
                    f"{PREFIX}ws != NULL ? ({PREFIX}workspace *){PREFIX}ws : &{PREFIX}local",
                ),
            ),
        ),
        Declare("int", ((f"{PREFIX}status", "1"),)),
    ]
    in_tasks = kept_in_tasks(reductions or {})
    n_scratch = max(
        (len(p.scratch) for p in plans if not isinstance(p, UntiledGroup)),
        default=0,
    )
    n_scratch = max(n_scratch, task_buffers(reductions or {}))
    if n_scratch:
        body.append(If(f"!{PREFIX}reserve_threads({WORKSPACE}, {nthreads})", fail))
    storage: dict = {}
    bounds: dict = {}  # the declarations of each buffer's bounds, by buffer
    gathered = gathered_stages(graph)
    for s in graph.stages:
        func, buf = s.func, names[s.func]
        label = f"image {s.name}" if isinstance(func, Image) else f"{s.name} buffer"
        store = storage[s.name] = StageStorage(
            buf, func.ndim, storage_type(graph, func, gathered), label
        )
        for d, iv in enumerate(func.intervals):
            lb = "0" if isinstance(func, Image) else cat("(int64_t)(", printer(iv.lb), ")")
            ub = cat("(int64_t)(", printer(iv.ub), ")")
            extent = cat(ub, f" - {store.lb[d]} + 1")
            bounds.setdefault(buf, []).append(
                declare("int64_t", [(store.lb[d], lb), (store.n[d], extent)])
            )
        body += bounds.get(buf, [])
    lifetimes = buffer_lifetimes(graph, plans, in_tasks)
    slots = buffer_slots(lifetimes)
    for stage_name in lifetimes:
        func = by_name[stage_name]
        body.append(Declare(f"{storage[stage_name].c_type} *restrict", ((names[func], "NULL"),)))
    untiled = LoopEmitter(graph, names, storage, branch_free, reductions, plain, n_scratch)
    scalars = [(f"int {nthreads}", nthreads)]
    scalars += [(f"{p.typ.c_name} {names[p]}", names[p]) for p in graph.parameters]
    functions: list
    functions, owners = [], []
    entry_computes = False  # an untiled stage's loops stay in the entry
    for i, plan in enumerate(plans):
        for stage_name, (first, _) in lifetimes.items():
            if first == i:
                func = by_name[stage_name]
                buf, size = names[func], " * ".join(storage[stage_name].n)
                c_type = storage[stage_name].c_type
                slot = (
                    f"{WORKSPACE}->full[{slots[stage_name]}], &{WORKSPACE}->full_bytes["
                    f"{slots[stage_name]}]"
                )
                reserve = (
                    f"({c_type} *){PREFIX}reserve(&{slot}, sizeof({c_type}) * (size_t)({size}))"
                )
                body += [Assign(buf, reserve), If(f"!{buf}", fail)]
        if isinstance(plan, UntiledGroup):
            emitter = untiled.for_group(i if check else None)
            for k, stage_name in enumerate(plan.members):
                stage = emitter.stage(by_name[stage_name])
                if stage.body and not WORKSPACE_USE <= names_used(stage):
                    called = f"{PREFIX}stage{i}_{k}"
                    stage, outlined = _outlined(stage, called, storage, bounds, scalars)
                    functions.append(outlined)
                    owners.append(i)
                else:
                    entry_computes = entry_computes or bool(stage.body)
                body += _timed(profile, timers, ("stage", i, (stage_name,)), [stage])
        else:
            # the group's timer comes first (_timed adds it once the code is built), then
            # its nests'
            first_nest = len(timers) + 1 if profile else None
            group = ("group", i, plan.members)
            nests = [("nest", i, nest.stages) for nest in plan.nests] if profile else []
            code = TiledEmitter(
                graph,
                names,
                storage,
                plan,
                i,
                n_scratch,
                branch_free,
                first_nest,
                check,
                plain,
            ).code()
            body += _timed(profile, timers, group, code.body)
            timers += nests
            functions += code.functions
            owners += [i] * len(code.functions)
    body += [
        Assign(f"{PREFIX}status", "0"),
        Label(f"{PREFIX}fail"),
        If(f"{WORKSPACE} == &{PREFIX}local", Call(f"{PREFIX}clear", (f"&{PREFIX}local",))),
        *([checked.entry_end()] if check else []),
        Return(f"{PREFIX}status"),
    ]
    entry = Function("int", function, tuple(args), tuple(body), qualifiers="")

    workspace = [workspace_code(function, len(set(slots.values())), n_scratch)]
    workspace += [checked.state_code(function)] if check else []
    header = [
        prelude(),
        *([openmp_timer()] if profile else []),
        *([checked.header()] if check else []),
    ]
    used = helpers_used((*functions, entry))
    laid = layout(
        Seq(tuple(node for part in header for node in (part, Blank()))),
        separated(workspace),
        functions,
        entry,
        owners,
        used,
        entry_computes,
    )
    declared = "\n".join(
        p.declaration(False) for p in (entry.prototype, *workspace_prototypes(function))
    )
    if check:  # on the same line as the last: as the cdef always was
        declared += checked.message_prototype(function).declaration() + "\n"
    return CModule(
        source=laid.source,
        units=laid.units,
        function=function,
        cdef=declared,
        params=tuple(p.name for p in graph.parameters),
        inputs=inputs,
        outputs=graph.outputs,
        profile=tuple(timers),
        checked=check,
        functions=(*functions, entry),
        loops=laid.loops,
        helpers=used,
    )


def _outlined(stage: Stage, function: str, storage: dict, bounds: dict, scalars: list) -> tuple:
    """(its call, the function) of an untiled stage's code as a function of its own, taking
    the thread count, the parameters (`scalars`: (parameter, argument)) and the buffers it
    uses, whose bounds it declares as the entry does (`bounds`: the declarations by buffer),
    so that constant ones stay constants to the C compiler (a lookup table's gathers then take
    32-bit indices). The C compiler builds a large pipeline's stages in units of their own,
    in parallel, and each function's register allocation stays small."""
    stores = {store.buffer: store for store in storage.values()}
    pointers, buffers = buffer_arguments(stage, stores, bounds=False)
    params = [p for p, _ in scalars] + pointers
    values = [v for _, v in scalars] + buffers
    declared = [node for buffer in buffers for node in bounds[buffer]]
    outlined = Function("void", function, tuple(params), (*declared, stage), stages=(stage.name,))
    return Call(function, tuple(values)), outlined


def _timed(profile: bool, timers: list, timer: tuple, nodes: Sequence) -> list:
    """`nodes`, with a profile in a block that adds their wall time to a new timer."""
    if not profile:
        return list(nodes)
    timers.append(timer)
    k = len(timers) - 1
    start = Declare("double", ((f"{PREFIX}t{k}", "omp_get_wtime()"),), True)
    add = Assign(f"{PREFIX}prof[{k}]", f"omp_get_wtime() - {PREFIX}t{k}", "+=")
    return [Block((start, *nodes, add))]
