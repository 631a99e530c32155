"""Which innermost loops the C compiler vectorized, per stage: a build with gcc's vectorization
report (`-fopt-info-vec-optimized`, `-fopt-info-vec-missed`), whose messages are mapped back
from lines of the generated C to the stage (or fused loop nest) they belong to."""

from __future__ import annotations

import dataclasses
import re
import tempfile
from dataclasses import dataclass

from .codegen.loops import WIDE_COPY
from .codegen.units import SOURCE_NAME
from .errors import ArgumentError
from .jit.build import build
from .jit.toolchain import compiler_command, compiler_facts, facts_dir

# identical functions (two images filtered alike) stay apart, so each reports its own loops
REPORT_FLAGS = ("-fopt-info-vec-optimized", "-fopt-info-vec-missed", "-fno-ipa-icf")
_MESSAGE = re.compile(rf"^{re.escape(SOURCE_NAME)}:(\d+):\d+: (optimized|missed): (.*)$")


@dataclass(frozen=True)
class LoopVerdict:
    """One innermost loop: the stages it computes, whether it vectorized, and how (vector
    width) or why not (the compiler's first reason)."""

    stages: tuple
    line: int
    vectorized: bool
    detail: str


def vectorization(compiled) -> tuple:
    """A LoopVerdict for every innermost (`omp simd`) loop of the C of `compiled` (a Compiled
    record, or a Pipeline: it reads its record), in source order; ArgumentError from a compiler
    other than gcc, whose report this does not read."""
    compiler, options = compiler_command(), compiled.options
    family = compiler_facts(compiler, tuple(options.cflags), facts_dir(options)).family
    if family != "gcc":
        raise ArgumentError(
            f"the vectorization report reads gcc's -fopt-info messages; the C compiler "
            f"{compiler!r} is {family}: set CC=gcc for it"
        )
    options = dataclasses.replace(options, cflags=options.cflags + REPORT_FLAGS)
    with tempfile.TemporaryDirectory() as root:  # kept there while read, even without a cache
        kernel = build(
            compiled.cmodule, dataclasses.replace(options, cache_dir=root, use_cache=True)
        )
        log = (kernel.info.path / "build.log").read_text(errors="replace")
    return tuple(_verdicts(compiled, log))


def describe(verdicts) -> str:
    lines = []
    for v in verdicts:
        mark = "vectorized" if v.vectorized else "NOT vectorized"
        mark = "unused" if v.detail == UNUSED_WIDE_COPY else mark
        lines.append(f"  {', '.join(v.stages)} (line {v.line}): {mark}: {v.detail}")
    return "\n".join(lines) or "  (no innermost loops)"


def _verdicts(compiled, log):
    """A LoopVerdict per `omp simd` loop of the C, placed by the printer's map of its loops
    (codegen.ctree.LoopLines)."""
    messages = _messages(log)
    for placed in compiled.cmodule.loops:
        if not placed.loop.simd:
            continue
        line, stages = placed.line, placed.stages
        found = [m for k in range(line, placed.end + 1) for m in messages.get(k, [])]
        good = [m for kind, m in found if kind == "optimized" and "vectorized" in m]
        library = [m for _, m in found if "__builtin_memcpy" in m or "__builtin_memset" in m]
        reasons = [m for kind, m in found if kind == "missed" and "couldn't vectorize" not in m]
        if good:
            yield LoopVerdict(stages, line, True, good[0])
        elif library:
            yield LoopVerdict(stages, line, True, "became a memcpy/memset call")
        elif not found and WIDE_COPY in placed.notes:
            yield LoopVerdict(stages, line, True, UNUSED_WIDE_COPY)
        else:
            detail = reasons[0] if reasons else "the compiler said nothing about this loop"
            yield LoopVerdict(stages, line, False, detail)


UNUSED_WIDE_COPY = "the int64 copy, removed: its table always fits the 32-bit copy"


def _messages(log: str) -> dict:
    """{line of kernel.c: [(kind, message)]} from a build log (every unit places its code under
    `#line` directives naming kernel.c, codegen.units)."""
    messages: dict = {}
    for text in log.splitlines():
        match = _MESSAGE.match(text.strip())
        if match:
            messages.setdefault(int(match[1]), []).append((match[2], match[3]))
    return messages
