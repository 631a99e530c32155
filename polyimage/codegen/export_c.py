"""The C of a pipeline shipped without Python (`polyimage export`): a header documenting its one
entry function, and that entry, appended to kernel.c, which checks every parameter value and
buffer extent against what the pipeline requires before any memory is touched.

The checks are the ones the Python call makes (polyimage.graph.arguments): the constraints, every
stage's domain non-empty and within its variables' type, each buffer's extents equal to what
the parameters give, outputs overlapping no other buffer. Extents are computed in 64-bit
arithmetic from parameters of at most 32 bits, so no check can overflow.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..algebra.simplify import simplify
from ..dsl import constructs
from ..dsl import expr as E
from ..dsl.constructs import Image
from . import ctree
from .cexpr import CExprPrinter
from .chelpers import helper_definitions
from .cprint import print_c
from .ctext import CText, Text, assign, cat, helpers_used, text_of, uses_of
from .export_doc import header_documentation
from .names import PREFIX, NameRegistry

P = PREFIX

OK, ERROR_MEMORY, ERROR_ARGUMENT = 0, 1, 2
MESSAGE_BYTES = 512


@dataclass(frozen=True)
class ExportedC:
    """The exported library's C (`source`: kernel.c and the entry), its header, and the
    prototypes of its functions (ctree.Prototype), which the header declares."""

    source: str
    header: str
    prototypes: tuple

    @property
    def declarations(self) -> str:
        """The functions' declarations, as cffi's cdef takes them."""
        return "\n".join(p.declaration() for p in self.prototypes)


def exported_c(
    graph,
    cmodule,
    name: str,
    constraints=(),
    version: str = "",
    link: str = "-fopenmp -lm",
    estimates=None,
    parameters=None,
) -> ExportedC:
    """The exported C of `cmodule` (generated from `graph` after inlining) under the entry
    name `name` (checked by export.check_export), checking `constraints` (Conditions on
    parameters); `link` the flags a program links it with; `estimates` ({parameter name:
    value}) are documented as the parameters' typical values. The entry takes `parameters`
    in their order (default: the order they were declared in)."""
    names = NameRegistry()
    for taken in (name, cmodule.function, "workspace", "nthreads", "extents"):
        names.name(_Key(), taken)
    c_names = {p.name: names.name(p, p.name) for p in graph.parameters}
    entry_order = graph.declared_parameters if parameters is None else parameters
    params = [(p, c_names[p.name]) for p in entry_order]
    buffers = _buffers(graph, cmodule, names)
    writer = _CheckWriter(CExprPrinter(names), params)
    param_args = [f"{p.typ.c_name} {c}" for p, c in params]
    buffer_args = []
    for b in buffers:
        const = "const " if b.is_input else ""
        buffer_args += [
            f"{const}{b.func.typ.c_name} *{b.c_name}",
            f"const int64_t *{b.extents_name}",
        ]
    extents = ctree.Prototype("int", f"{name}_extents", (*param_args, "int64_t *extents"))
    entry = ctree.Prototype(
        "int", name, ("void *workspace", "int nthreads", *param_args, *buffer_args)
    )
    accessors = _accessors(name, cmodule.function)
    functions = [
        ctree.defined(extents, _extents_body(writer, graph, constraints, buffers)),
        ctree.defined(entry, _entry_body(name, cmodule, params, c_names, buffers)),
        *accessors,
    ]
    extra = helper_definitions(h for h in helpers_used(functions) if h not in cmodule.helpers)
    source = cmodule.source + print_c(ctree.Seq((_shim_prelude(), extra, ctree.Blank()))).text
    source += print_c(ctree.separated(functions)).text
    prototypes = (extents, entry, *(f.prototype for f in accessors))
    declared = ctree.separated((extents, entry, ctree.Seq(prototypes[2:])))
    header = print_c(
        _header(name, params, buffers, constraints, version, link, estimates or {}, declared)
    ).text
    return ExportedC(source, header, prototypes)


def _extents_body(writer, graph, constraints, buffers: list) -> list:
    """The statements of `<name>_extents`: the constraints and domains checked, then every
    buffer's extents written."""
    body = [ctree.Assign(f"{P}message[0]", "0")]
    body += writer.constraints(constraints) + writer.domains(graph)
    for b in buffers:
        for d, extent in enumerate(b.extents):
            body.append(assign(f"extents[{b.first + d}]", writer.int64(extent)))
    return body + [ctree.Return(str(OK))]


def _buffers(graph, cmodule, names: NameRegistry) -> list:
    """A _Buffer for each input, then each output, in the entry's order."""
    by_name = {s.name: s.func for s in graph.stages}
    stages = [(by_name[n], True) for n in cmodule.inputs]
    stages += [(by_name[n], False) for n in cmodule.outputs]
    buffers, first = [], 0
    for func, is_input in stages:
        c_name = names.name(func, func.name)
        extents = _extents(func)
        extents_name = names.name(_Key(), f"{c_name}_extents")
        buffers.append(_Buffer(func, is_input, c_name, extents_name, extents, first))
        first += len(extents)
    return buffers


def _entry_body(name: str, cmodule, params: list, c_names: dict, buffers: list) -> list:
    """The entry's statements: NULLs, parameter values (through `<name>_extents`), every
    extent and overlap checked, then the pipeline called with its parameters in its own
    order (by name, `cmodule.params`)."""
    count = sum(len(b.extents) for b in buffers)
    body: list = [
        ctree.Declare("int64_t", ((f"{P}expected[{max(count, 1)}]", None),)),
        ctree.Assign(f"{P}message[0]", "0"),
    ]
    for b in buffers:
        null = f'{P}fail("{b.what}: the buffer or its extents are NULL")'
        body.append(_failing(f"{b.c_name} == NULL || {b.extents_name} == NULL", null))
    call = ", ".join([c for _, c in params] + [f"{P}expected"])
    body.append(_failing(f"{name}_extents({call}) != {OK}", str(ERROR_ARGUMENT)))
    for b in buffers:
        for d, extent in enumerate(b.extents):
            expected, given = f"{P}expected[{b.first + d}]", f"{b.extents_name}[{d}]"
            wrong = (
                f'{P}fail("{b.what}: dimension {d} must have extent {_c_text(extent)} = %lld, '
                f'got %lld", (long long){expected}, (long long){given})'
            )
            body.append(_failing(f"{given} != {expected}", wrong))
    body += _overlap_checks(buffers)
    args = ", ".join([c_names[n] for n in cmodule.params] + [b.c_name for b in buffers])
    memory = f'{P}fail_with({ERROR_MEMORY}, "{name}: could not allocate its buffers")'
    return body + [
        ctree.Declare("int", ((f"{P}status", f"{cmodule.function}(workspace, nthreads, {args})"),)),
        _failing(f"{P}status == {ERROR_MEMORY}", memory),
        ctree.Return(f"{P}status"),
    ]


def _failing(condition: Text, failure: str) -> ctree.If:
    """`if (condition)` and, on the line below, `return failure;`."""
    return ctree.If(text_of(condition), ctree.Below(ctree.Return(failure)), uses=uses_of(condition))


def _accessors(name: str, function: str) -> list:
    """The error message and workspace functions under the export's name."""
    return [
        ctree.Function(
            "const char *", f"{name}_error", ("void",), (ctree.Return(f"{P}message"),), ""
        ),
        ctree.Function(
            "void *",
            f"{name}_workspace_new",
            ("void",),
            (ctree.Return(f"{function}_workspace_new()"),),
            "",
        ),
        ctree.Function(
            "void",
            f"{name}_workspace_free",
            ("void *workspace",),
            (ctree.Call(f"{function}_workspace_free", ("workspace",)),),
            "",
        ),
    ]


class _Key:
    """A registry key for names that belong to no DSL object."""


@dataclass(frozen=True)
class _Buffer:
    """One input or output of the entry: its stage, C argument names and extents."""

    func: constructs.Function
    is_input: bool
    c_name: str
    extents_name: str
    extents: list
    first: int  # the index of its first extent in `<name>_extents`' array

    @property
    def what(self) -> str:
        return f"{'image' if self.is_input else 'output'} {self.func.name}"


def _extents(func) -> list:
    """The extent of each dimension of an input (its declared extents) or output (its box)."""
    if isinstance(func, Image):
        return list(func.extents)
    return [simplify(iv.ub - iv.lb + 1) for iv in func.intervals]


class _CheckWriter:
    """C for the checks on parameter values: constraints and domains, in int64 arithmetic."""

    def __init__(self, printer: CExprPrinter, params: list):
        self.printer, self.params = printer, params

    def int64(self, e) -> CText:
        """An integer expression of parameters in int64 arithmetic (exact for affine ones)."""
        try:
            return self.printer.wide(e)
        except (AttributeError, KeyError):
            return cat("(int64_t)(", self.printer(e), ")")

    def value(self, e) -> CText:
        return self.int64(e) if e.typ.is_int else cat("(", self.printer(e), ")")

    def condition(self, e) -> CText:
        if isinstance(e, E.Condition):
            return cat("(", self.value(e.lhs), f" {e.op} ", self.value(e.rhs), ")")
        if isinstance(e, E.Logic):
            return cat("(", self.condition(e.a), f" {e.op} ", self.condition(e.b), ")")
        if isinstance(e, E.Not):
            return cat("(!", self.condition(e.a), ")")
        return cat("(", self.printer(e), ")")

    def described(self, exprs) -> tuple:
        """(`R=%lld, C=%lld`, its arguments) naming the parameters `exprs` use."""
        used = {id(p) for e in exprs for p in E.free_symbols(e, E.Parameter)}
        chosen = [(p, c) for p, c in self.params if id(p) in used]
        text = ", ".join(f"{p.name}={'%lld' if p.typ.is_int else '%g'}" for p, _ in chosen)
        args = [f"(long long){c}" if p.typ.is_int else f"(double){c}" for p, c in chosen]
        return text, args

    def constraints(self, constraints) -> list:
        checks = []
        for cond in constraints:
            text, args = self.described([cond])
            violated = (
                f'{P}fail("parameter values {text} violate the constraint '
                f'{_c_text(cond)}"{"".join(", " + a for a in args)})'
            )
            checks.append(_failing(cat("!", self.condition(cond)), violated))
        return checks

    def domains(self, graph) -> list:
        """Every stage's domain non-empty, and within its variables' types (with one to spare)
        as its loops need."""
        checks = []
        for stage in graph.stages:
            func = stage.func
            pairs = list(zip(func.variables, func.intervals))
            reductions = list(
                zip(
                    getattr(func, "reduction_variables", ()),
                    getattr(func, "reduction_intervals", ()),
                )
            )
            for k, (var, iv) in enumerate(pairs + reductions):
                lb, ub = self.int64(iv.lb), self.int64(iv.ub)
                text, args = self.described([iv.lb, iv.ub])
                tail = "".join(", " + a for a in args)
                if k < len(pairs):
                    empty = (
                        f'{P}fail("parameter values {text} make the domain of {func.name} '
                        f'empty: {var.name} in [{_c_text(iv.lb)}, {_c_text(iv.ub)}]"{tail})'
                    )
                    checks.append(_failing(cat(ub, " < ", lb), empty))
                low, high = var.typ.min_value(), var.typ.max_value()
                outside = cat(
                    lb,
                    " <= ",
                    ub,
                    " && (",
                    lb,
                    f" < INT64_C({low}) || ",
                    ub,
                    f" >= INT64_C({high}))",
                )
                too_wide = (
                    f'{P}fail("parameter values {text} give {func.name} a range for '
                    f'{var.name} that does not fit its type {var.typ}"{tail})'
                )
                checks.append(_failing(outside, too_wide))
        return checks


def _overlap_checks(buffers: list) -> list:
    """Each output overlaps no input and no other output (the entry's pointers are restrict)."""
    spans = [
        f"sizeof(*{b.c_name}) * "
        + " * ".join(f"(size_t){PREFIX}expected[{b.first + d}]" for d in range(len(b.extents)))
        for b in buffers
    ]
    checks = []
    for i, b in enumerate(buffers):
        for j, other in enumerate(buffers):
            if b.is_input or j == i or (j > i and not other.is_input):
                continue  # each output against every input and every earlier output
            overlap = (
                f"(uintptr_t){b.c_name} < (uintptr_t){other.c_name} + {spans[j]} && "
                f"(uintptr_t){other.c_name} < (uintptr_t){b.c_name} + {spans[i]}"
            )
            message = f'{P}fail("output {b.func.name} overlaps {other.func.name}")'
            checks.append(_failing(overlap, message))
    return checks


def _c_text(e) -> str:
    """An expression as the DSL prints it, safe inside a C format string."""
    return str(e).replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")


_ENTRY_NOTE = "checks before any memory is touched"


def _shim_prelude() -> ctree.Seq:
    """What the entry needs after kernel.c: its headers, the thread's message and the
    functions that write it."""
    thread_local = (
        ctree.Directive("#if defined(__GNUC__) || defined(__clang__)"),
        ctree.Directive("#define PIM_THREAD_LOCAL __thread"),
        ctree.Directive("#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L"),
        ctree.Directive("#define PIM_THREAD_LOCAL _Thread_local"),
        ctree.Directive("#else"),
        ctree.Directive("#define PIM_THREAD_LOCAL"),
        ctree.Directive("#endif"),
    )
    fail_with = ctree.Function(
        "int",
        f"{P}fail_with",
        ("int code", "const char *format", "..."),
        (
            ctree.Declare("va_list", (("args", None),)),
            ctree.Call("va_start", ("args", "format")),
            ctree.Call("vsnprintf", (f"{P}message", f"sizeof {P}message", "format", "args")),
            ctree.Call("va_end", ("args",)),
            ctree.Return("code"),
        ),
        "static",
    )
    message = ctree.Declare(
        "static PIM_THREAD_LOCAL char", ((f"{P}message[{MESSAGE_BYTES}]", None),)
    )
    opening = ctree.Seq(
        (
            ctree.Blank(),
            ctree.Comment(f"---- the exported entry: {_ENTRY_NOTE} (polyimage export) ----"),
            ctree.Directive("#include <stdarg.h>"),
            ctree.Directive("#include <stdio.h>"),
            *thread_local,
        )
    )
    failing = ctree.Directive(f"#define {P}fail(...) {P}fail_with({ERROR_ARGUMENT}, __VA_ARGS__)")
    return ctree.separated((opening, message, fail_with, failing))


def _header(
    name: str,
    params: list,
    buffers: list,
    constraints,
    version: str,
    link: str,
    estimates,
    declared: ctree.Node,
) -> ctree.Seq:
    """The header: what the library is, its return codes, the documentation of its functions
    (what each parameter is, each buffer's extents and layout, constraints) and their
    `declared` prototypes."""
    guard, upper = f"POLYIMAGE_{name.upper()}_H", name.upper()
    count = sum(len(b.extents) for b in buffers)
    about = (
        f"{name}.h: the pipeline {name}, exported by polyimage {version}.\n *\n"
        f" * Link with lib{name}.a (or -l{name}): cc app.c lib{name}.a {link}\n"
        " * Buffers are dense, row-major (the last index varies fastest).\n"
    )
    codes = (
        f"{upper}_OK {OK}",
        f"{upper}_ERROR_MEMORY {ERROR_MEMORY} /* a buffer could not be allocated */",
        f"{upper}_ERROR_ARGUMENT {ERROR_ARGUMENT} /* a wrong parameter or extent */",
        f"{upper}_EXTENT_COUNT {count}",
    )
    documented = header_documentation(name, params, buffers, constraints, estimates)
    return ctree.separated(
        (
            ctree.Seq(
                (
                    ctree.Comment(about),
                    ctree.Directive(f"#ifndef {guard}"),
                    ctree.Directive(f"#define {guard}"),
                )
            ),
            ctree.Directive("#include <stdint.h>"),
            ctree.Seq(
                (
                    ctree.Directive("#ifdef __cplusplus"),
                    ctree.Line('extern "C" {'),
                    ctree.Directive("#endif"),
                )
            ),
            ctree.Seq(tuple(ctree.Directive(f"#define {code}") for code in codes)),
            ctree.Comment("Parameters:\n" + "".join(line + "\n" for line in documented)),
            declared,
            ctree.Seq(
                (ctree.Directive("#ifdef __cplusplus"), ctree.Line("}"), ctree.Directive("#endif"))
            ),
            ctree.Directive(f"#endif /* {guard} */"),
        )
    )
