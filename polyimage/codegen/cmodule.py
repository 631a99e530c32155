"""The translation unit: includes, helpers, the entry function and its cffi declaration.

Entry: `int pipeline_<name>(int nthreads, <parameters by name>, <input images by name>,
<outputs in order>)`; it returns 0, or 1 when a buffer could not be allocated.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..dsl.constructs import Image
from ..graph.dag import StageGraph
from .cexpr import CExprPrinter, helper_source
from .names import PREFIX, NameRegistry
from .naive import StageStorage, naive_body

_PRELUDE = """\
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200112L
#endif
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <omp.h>

static void *pim_alloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0)
        return NULL;
    return p;
}
"""


@dataclass(frozen=True)
class CModule:
    """Generated C for one pipeline and what the loader needs to call it."""

    source: str
    function: str
    cdef: str
    params: tuple
    inputs: tuple
    outputs: tuple


def generate_module(graph: StageGraph, name: str) -> CModule:
    """C source of the naive schedule of `graph`."""
    names = NameRegistry()
    function = f"pipeline_{name}"
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
    args = [f"int {PREFIX}nthreads"]
    args += [f"{p.typ.c_name} {names[p]}" for p in graph.parameters]
    by_name = {s.name: s.func for s in graph.stages}
    args += [f"const {by_name[n].typ.c_name} *restrict {names[by_name[n]]}" for n in inputs]
    args += [f"{by_name[n].typ.c_name} *restrict {names[by_name[n]]}" for n in graph.outputs]
    signature = f"int {function}({', '.join(args)})"

    body = [f"    if ({PREFIX}nthreads <= 0) {PREFIX}nthreads = omp_get_max_threads();"]
    temporaries = []
    for s in graph.stages:
        func, buf = s.func, names[s.func]
        store = StageStorage(buf, func.ndim)
        for d, iv in enumerate(func.intervals):
            lb = "0" if isinstance(func, Image) else f"(int64_t)({printer(iv.lb)})"
            ub = f"(int64_t)({printer(iv.ub)})"
            body.append(f"    const int64_t {store.lb[d]} = {lb}, {store.n[d]} = {ub} - "
                        f"{store.lb[d]} + 1;")
        if not isinstance(func, Image) and s.name not in graph.outputs:
            temporaries.append(func)
            body.append(f"    {func.typ.c_name} *restrict {buf} = NULL;")
    for func in temporaries:
        buf = names[func]
        size = " * ".join(StageStorage(buf, func.ndim).n)
        body.append(f"    {buf} = ({func.typ.c_name} *){PREFIX}alloc(sizeof({func.typ.c_name})"
                    f" * (size_t)({size}));")
        body.append(f"    if (!{buf}) goto {PREFIX}fail;")
    body += naive_body(graph, names, helpers)
    frees = [f"    free({names[f]});" for f in temporaries]
    body += frees + ["    return 0;", f"{PREFIX}fail:"] + frees + ["    return 1;"]

    helper_text = "\n".join(helper_source(op, c) for op, c in sorted(helpers))
    source = "\n".join([_PRELUDE, helper_text, "", signature, "{", *body, "}", ""])
    return CModule(source=source, function=function, cdef=signature.replace("restrict ", "")
                   + ";", params=tuple(p.name for p in graph.parameters), inputs=inputs,
                   outputs=graph.outputs)
