"""Which innermost loops the C compiler vectorized, per stage: gcc's vectorization report
(`-fopt-info-vec-optimized`, `-fopt-info-vec-missed`), which every build writes to its
build.log (jit.build), its messages mapped back from lines of the generated C to the stage (or
fused loop nest) they belong to; a unit whose object was reused replays the messages kept
with it. Only a log that lacks them (a cache entry of an older version, an object kept
without its messages) makes a build of its own."""

from __future__ import annotations

import dataclasses
import re
import tempfile
from dataclasses import dataclass

from ..algebra.affine import is_affine
from ..codegen.ctree import For, names_used, walk
from ..codegen.loops import WIDE_COPY
from ..codegen.names import (
    BLOCK_CELLS,
    LANE_LOOPS,
    PACKED_ROWS,
    STAGED_UPDATES,
    UPDATES,
    VECTOR_TYPES,
)
from ..codegen.units import SOURCE_NAME
from ..dsl import expr as E
from ..dsl.arithmetic import Call
from ..dsl.libm import is_library_call
from ..dsl.reduction import Reduction
from ..errors import ArgumentError
from ..graph.dag import definition_exprs
from ..grouping.facts import narrow_gather
from ..jit.build import VECTOR_REPORT_FLAGS, build
from ..jit.toolchain import compiler_command, compiler_facts, facts_dir, facts_for

_MESSAGE = re.compile(rf"^{re.escape(SOURCE_NAME)}:(\d+):\d+: (optimized|missed): (.*)$")
UNUSED_WIDE_COPY = "the int64 copy, removed: its table always fits the 32-bit copy"
REMOVED = "removed by the compiler: it never runs, or was unrolled whole"
DIVISION_64 = (
    "64-bit integer division by a variable: no vector instruction divides 64-bit integers, and "
    "double is not exact for them"
)
LIBRARY_CALL = "calls the C library's log, sin, cos or pow: no vector variant without -ffast-math"
# the last cause looked for: gcc folds a branch on a constant, so other causes come first
BRANCHES = (
    "branches around reads that may lie out of bounds: Selects or Cases on more conditions "
    "than codegen.split lifts into segments of the loop (MAX_LIFTED_CASES)"
)
SCATTER = (
    "a Reduction's scatter: its target is indexed by data, and lanes of one vector may "
    "update the same cell"
)
IN_ORDER = (
    "a float Reduction along the loop, in order: a vector would reassociate a Mul, or change "
    "which of equal values (+0, -0) a Min or Max keeps, and its results are promised bit for bit"
)
NARROW_GATHER = (
    "gathers 8- or 16-bit values at indices computed from data: x86's gathers load 32- and "
    "64-bit elements"
)
SMALL_STAGE = (
    "a small stage, computed by one plain loop nest (schedule.memory.small_stages): its "
    "border clamps stay in the loop, over few points"
)
CONVERSION_64 = (
    "converts 64-bit integers to or from floating point: a vector instruction for it needs "
    "AVX-512, which the target lacks"
)


@dataclass(frozen=True)
class LoopVerdict:
    """One innermost loop: the stages it computes, whether it vectorized, and how (vector
    width) or why not (a known cause, else the compiler's first reason)."""

    stages: tuple
    line: int
    vectorized: bool
    detail: str


def vectorization(compiled, kernel=None) -> tuple:
    """A LoopVerdict for every innermost loop (`omp simd`, or a Reduction's update) of the C
    of `compiled` (a Compiled record, or a Pipeline: its record and module), in source order,
    read from the build log of `kernel` (default: the Pipeline's) where it holds the report,
    else from a build made for it; ArgumentError from a compiler other than gcc, whose report
    this does not read."""
    kernel = kernel if kernel is not None else getattr(compiled, "kernel", None)
    verdicts = logged_verdicts(compiled, kernel)
    if verdicts is not None:
        return verdicts
    compiler, options = compiler_command(), compiled.options
    family = compiler_facts(compiler, options.flags, facts_dir(options)).family
    if family != "gcc":
        raise ArgumentError(
            f"the vectorization report reads gcc's -fopt-info messages; the C compiler "
            f"{compiler!r} is {family}: set CC=gcc for it"
        )
    with tempfile.TemporaryDirectory() as root:  # no object reused: every unit reports
        options = dataclasses.replace(options, cache_dir=root, use_cache=True)
        log = _entry_log(build(compiled.cmodule, options).info.path)
    return tuple(_verdicts(compiled, log))


def logged_verdicts(compiled, kernel):
    """The LoopVerdicts read from the log of the build of `kernel` (a jit.build.Kernel, or
    None), or None when there is none holding the report of every unit."""
    if kernel is None:
        return None
    log = kernel.info.log or _entry_log(kernel.info.path)
    if not reports_every_unit(log):
        return None
    return tuple(_verdicts(compiled, log))


def scalar_stages(verdicts) -> tuple:
    """The stages, in source order, of the innermost loops among `verdicts` that did not
    vectorize."""
    return tuple(dict.fromkeys(s for v in verdicts if not v.vectorized for s in v.stages))


def reports_every_unit(log: str) -> bool:
    """Whether build log `log` holds gcc's vectorization report of every unit: each compiled
    with its flags (jit.build's `# seconds` then command lines), none reused from the object
    cache."""
    lines = log.splitlines()
    commands = [lines[k + 1].split() for k, line in enumerate(lines[:-1]) if line.startswith("# ")]
    compiles = [c for c in commands if any(a.endswith(".c") for a in c)]
    return (
        bool(compiles)
        and not any(line.startswith("reused ") for line in lines)
        and all(all(f in c for f in VECTOR_REPORT_FLAGS) for c in compiles)
    )


def _entry_log(path) -> str:
    try:
        return (path / "build.log").read_text(errors="replace")
    except OSError:
        return ""


def describe(verdicts) -> str:
    """The verdicts as the report's lines, one per loop."""
    lines = []
    for v in verdicts:
        mark = "vectorized" if v.vectorized else "NOT vectorized"
        mark = "unused" if v.detail in (UNUSED_WIDE_COPY, REMOVED) else mark
        lines.append(f"  {', '.join(v.stages)} (line {v.line}): {mark}: {v.detail}")
    return "\n".join(lines) or "  (no innermost loops)"


def _verdicts(compiled, log):
    """A LoopVerdict per innermost loop of the C (`omp simd`, or a Reduction's update), placed
    by the printer's map of its loops (codegen.cprint.LoopLines). A loop the compiler said
    nothing about was removed (identical code folding, which would leave a copy silent, is
    off in every build: -fno-ipa-icf)."""
    messages = _messages(log)
    loops = compiled.cmodule.loops
    for placed in loops:
        if not _reported(placed):
            continue
        found = [m for k in _own_lines(placed, loops) for m in messages.get(k, [])]
        if not found and WIDE_COPY not in placed.notes:
            yield LoopVerdict(placed.stages, placed.line, True, REMOVED)
            continue
        verdict = _verdict(placed, found)
        if not verdict.vectorized:
            causes = _known_causes(compiled, placed)
            verdict = dataclasses.replace(verdict, detail=(causes or [verdict.detail])[0])
        yield verdict


def _own_lines(placed, loops) -> list:
    """The kernel.c lines of loop `placed` outside the loops nested in it (an owner's lanes
    hold their cells' loops): gcc's messages about a nested loop speak of that loop, not of
    this one (a lane loop it could not vectorize read as vectorized from its inner loop's
    message)."""
    nested = [
        (other.line, other.end)
        for other in loops
        if placed.line <= other.line <= other.end <= placed.end
        and (other.line, other.end) != (placed.line, placed.end)
    ]
    return [
        k for k in range(placed.line, placed.end + 1) if not any(lo <= k <= hi for lo, hi in nested)
    ]


def _reported(placed) -> bool:
    """Whether the report reads the loop: `omp simd`, or innermost among a Reduction's update
    loops (they run in order, no `omp simd`, and gcc vectorizes what it proves safe), except
    a register block's moves of its cells and its leftover cells (codegen.blocked), one
    written in vector types (codegen.vector_blocks), the copies of its packed rows
    (codegen.packing), a scatter's staged updates, applied in order (the loop computing
    them is read: codegen.reduction_loops), and the loops each lane of an owner's `omp simd`
    loop runs (that loop is read: reduction_loops._vector_owner)."""
    if {BLOCK_CELLS, VECTOR_TYPES, PACKED_ROWS, STAGED_UPDATES, LANE_LOOPS} & set(placed.notes):
        return False
    if placed.loop.simd:
        return True
    return UPDATES in placed.notes and not any(isinstance(n, For) for n in walk(placed.loop.body))


def _known_causes(compiled, placed) -> list:
    """What keeps the loop placed at `placed` scalar whatever its C: a 64-bit division helper
    among the loop's uses, and, read off its stages' definitions, a C library call, a scatter
    or an in-order float reduction, a gather of narrow values, a 64-bit conversion on a target
    without AVX-512, a small stage's plain loop, a Select or Case left as a branch."""
    by_name = {s.name: s.func for s in compiled.stage_graph.stages}
    funcs = [by_name[name] for name in placed.stages if name in by_name]
    helpers = {use[1] for use in names_used(placed.loop) if use[0] == "helper"}
    causes = [DIVISION_64] if helpers & _DIVISIONS_64 else []
    updates = [
        (func, case.value) for func in funcs if isinstance(func, Reduction) for case in func.cases
    ]
    if any(not is_affine(a) for _, red in updates for a in red.target.args):
        causes.append(SCATTER)
    if not placed.loop.simd and any(f.typ.is_float for f, _ in updates):
        causes.append(IN_ORDER)
    nodes = [n for func in funcs for e in definition_exprs(func) for n in E.walk(e)]
    if any(isinstance(n, Call) and is_library_call(n.fn) for n in nodes):
        causes.append(LIBRARY_CALL)
    if any(narrow_gather(n) for n in nodes):
        causes.append(NARROW_GATHER)
    if any(_converts_64_bits(n) for n in nodes) and _without_avx512(compiled.options):
        causes.append(CONVERSION_64)
    if any(func.name in compiled.plain_stages for func in funcs):
        causes.append(SMALL_STAGE)
    if any(isinstance(n, E.Select) for n in nodes) or any(
        case.cond is not None for f in funcs for case in f.cases
    ):
        causes.append(BRANCHES)
    return causes


_DIVISIONS_64 = {(op, c) for op in ("floordiv", "mod") for c in ("int64_t", "uint64_t")}


def _without_avx512(options) -> bool:
    facts = facts_for(options)
    return facts.vector_bytes < 64


def _converts_64_bits(node) -> bool:
    if not isinstance(node, E.Cast):
        return False
    types = (node.typ, node.a.typ)
    return any(t.is_int and t.bits == 64 for t in types) and any(t.is_float for t in types)


def _verdict(placed, found) -> LoopVerdict:
    """The LoopVerdict of a loop from the compiler's messages on its lines."""
    line, stages = placed.line, placed.stages
    good = [m for kind, m in found if kind == "optimized" and "vectorized" in m]
    library = [m for _, m in found if "__builtin_memcpy" in m or "__builtin_memset" in m]
    reasons = [m for kind, m in found if kind == "missed" and "couldn't vectorize" not in m]
    if good:
        return LoopVerdict(stages, line, True, good[0])
    if library:
        return LoopVerdict(stages, line, True, "became a memcpy/memset call")
    if not found:
        return LoopVerdict(stages, line, True, UNUSED_WIDE_COPY)
    return LoopVerdict(stages, line, False, reasons[0] if reasons else "no reason given")


def _messages(log: str) -> dict:
    """{line of kernel.c: [(kind, message)]} from a build log (every unit places its code under
    `#line` directives naming kernel.c, codegen.units)."""
    messages: dict = {}
    for text in log.splitlines():
        match = _MESSAGE.match(text.strip())
        if match:
            messages.setdefault(int(match[1]), []).append((match[2], match[3]))
    return messages
