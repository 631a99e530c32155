"""A pipeline's C: includes, helpers, the workspace, the outlined loop nests, the entry function
and its cffi declaration (cut into translation units by codegen.units).

Entry: `int pipeline_<name>(void *workspace, int nthreads, <parameters by name>, <input images
by name>, <outputs in order>)`; it returns 0, or 1 when a buffer could not be allocated. The
workspace (codegen/workspace.py; NULL for a temporary one) keeps buffers between calls.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..dsl.constructs import Image
from ..graph.dag import StageGraph
from ..schedule.memory import buffer_lifetimes, buffer_slots
from ..schedule.tiling import UntiledGroup
from . import checked
from .cexpr import CExprPrinter, helper_source
from .loops import LoopEmitter, StageStorage, gathered_stages, storage_type
from .names import PREFIX, NameRegistry
from .tiled import TiledEmitter
from .units import layout
from .workspace import WORKSPACE, workspace_cdef, workspace_source

# without OpenMP (a compiler that has none builds without -fopenmp) the code runs serial: the
# pragmas are ignored and these stand in for the runtime's calls
OPENMP_HEADER = """\
#ifdef _OPENMP
#include <omp.h>
#else
static inline int omp_get_max_threads(void) { return 1; }
static inline int omp_get_thread_limit(void) { return 1; }
static inline int omp_get_thread_num(void) { return 0; }
#endif
"""
# the profiled build's clock (clock_gettime is POSIX.1-2001, as the prelude asks)
OPENMP_TIMER = """\
#ifndef _OPENMP
#include <time.h>
static inline double omp_get_wtime(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
#endif
"""

_INCLUDES = """\
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200112L
#endif
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
"""

_HELPERS = """
#if defined(__GNUC__)
#define PIM_NOINLINE __attribute__((noinline))
#else
#define PIM_NOINLINE
#endif

static void *pim_alloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0)
        return NULL;
    return p;
}

static inline int64_t pim_extent(int64_t lo, int64_t hi)
{
    return hi < lo ? 0 : hi - lo + 1;
}
"""
_PRELUDE = _INCLUDES + OPENMP_HEADER + _HELPERS


@dataclass(frozen=True)
class CModule:
    """Generated C for one pipeline (`source`: kernel.c, one file; `units`: the same code cut
    into translation units) and what the loader needs to call it."""

    source: str
    function: str
    cdef: str
    params: tuple
    inputs: tuple
    outputs: tuple
    profile: tuple = ()
    units: tuple = ()  # translation units (codegen.units); the main one first
    checked: bool = False  # the checked build (codegen.checked)


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
    """C source of `graph` run as the group `plans` (schedule.tiling); stages in `branch_free`
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
    helpers = set()
    printer = CExprPrinter(names, None, helpers)
    inputs = tuple(sorted(img.name for img in graph.images))
    args = [f"void *{PREFIX}ws", f"int {PREFIX}nthreads"]
    if profile:
        args.append(f"double *restrict {PREFIX}prof")
    timers = []
    args += [f"{p.typ.c_name} {names[p]}" for p in graph.parameters]
    by_name = {s.name: s.func for s in graph.stages}
    args += [f"const {by_name[n].typ.c_name} *restrict {names[by_name[n]]}" for n in inputs]
    args += [f"{by_name[n].typ.c_name} *restrict {names[by_name[n]]}" for n in graph.outputs]
    signature = f"int {function}({', '.join(args)})"

    body = checked.entry_start() if check else []
    body += [
        f"    if ({PREFIX}nthreads <= 0) {PREFIX}nthreads = omp_get_max_threads();",
        f"    if ({PREFIX}nthreads > omp_get_thread_limit()) {PREFIX}nthreads = "
        f"omp_get_thread_limit();",
        f"    {PREFIX}workspace {PREFIX}local = {{0}};",
        f"    {PREFIX}workspace *{WORKSPACE} = {PREFIX}ws != NULL ? ({PREFIX}workspace *)"
        f"{PREFIX}ws : &{PREFIX}local;",
        f"    int {PREFIX}status = 1;",
    ]
    n_scratch = max((len(p.scratch) for p in plans if not isinstance(p, UntiledGroup)), default=0)
    if n_scratch:
        body.append(
            f"    if (!{PREFIX}reserve_threads({WORKSPACE}, {PREFIX}nthreads)) goto {PREFIX}fail;"
        )
    storage = {}
    gathered = gathered_stages(graph)
    for s in graph.stages:
        func, buf = s.func, names[s.func]
        label = f"image {s.name}" if isinstance(func, Image) else f"{s.name} buffer"
        store = storage[s.name] = StageStorage(
            buf, func.ndim, storage_type(graph, func, gathered), label
        )
        for d, iv in enumerate(func.intervals):
            lb = "0" if isinstance(func, Image) else f"(int64_t)({printer(iv.lb)})"
            ub = f"(int64_t)({printer(iv.ub)})"
            body.append(
                f"    const int64_t {store.lb[d]} = {lb}, {store.n[d]} = {ub} - {store.lb[d]} + 1;"
            )
    lifetimes = buffer_lifetimes(graph, plans)
    slots = buffer_slots(lifetimes)
    for stage_name in lifetimes:
        func = by_name[stage_name]
        body.append(f"    {storage[stage_name].c_type} *restrict {names[func]} = NULL;")
    untiled = LoopEmitter(graph, names, helpers, storage, branch_free, reductions, plain)
    functions, owners = [], []
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
                body.append(
                    f"    {buf} = ({c_type} *){PREFIX}reserve(&{slot}, sizeof({c_type}) * "
                    f"(size_t)({size}));"
                )
                body.append(f"    if (!{buf}) goto {PREFIX}fail;")
        if isinstance(plan, UntiledGroup):
            untiled.check_group = i if check else None
            for stage_name in plan.members:
                timed = _timed(profile, timers, ("stage", i, (stage_name,)))
                body += timed[0] + untiled.stage(by_name[stage_name]) + timed[1]
        else:
            timed = _timed(profile, timers, ("group", i, plan.members))
            first_nest = len(timers) if profile else None
            timers += [("nest", i, nest.stages) for nest in plan.nests] if profile else []
            code = TiledEmitter(
                graph,
                names,
                helpers,
                storage,
                plan,
                i,
                n_scratch,
                branch_free,
                first_nest,
                check,
                plain,
            ).code()
            body += timed[0] + code.body + timed[1]
            functions += code.functions
            owners += [i] * len(code.functions)
    body += [
        f"    {PREFIX}status = 0;",
        f"{PREFIX}fail:",
        f"    if ({WORKSPACE} == &{PREFIX}local) {PREFIX}clear(&{PREFIX}local);",
        *(checked.entry_end() if check else []),
        f"    return {PREFIX}status;",
    ]

    workspace = workspace_source(function, len(set(slots.values())), n_scratch)
    prelude = [_PRELUDE, *([OPENMP_TIMER] if profile else []), *([checked.HEADER] if check else [])]
    if check:
        workspace += "\n" + checked.state_source(function)
    source, units = layout(
        "\n".join(prelude + [""]),
        workspace,
        functions,
        [signature, "{", *body, "}"],
        owners,
        [helper_source(op, c) for op, c in sorted(helpers)],
    )
    return CModule(
        source=source,
        units=units,
        function=function,
        cdef=signature.replace("restrict ", "")
        + ";\n"
        + workspace_cdef(function)
        + (checked.cdef(function) if check else ""),
        params=tuple(p.name for p in graph.parameters),
        inputs=inputs,
        outputs=graph.outputs,
        profile=tuple(timers),
        checked=check,
    )


def _timed(profile: bool, timers: list, timer: tuple) -> tuple:
    """(lines before, lines after) that add the wall time between them to a new timer."""
    if not profile:
        return [], []
    timers.append(timer)
    k = len(timers) - 1
    return (
        [f"    {{ const double {PREFIX}t{k} = omp_get_wtime();"],
        [f"    {PREFIX}prof[{k}] += omp_get_wtime() - {PREFIX}t{k}; }}"],
    )
