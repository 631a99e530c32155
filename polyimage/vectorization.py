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
_STAGE = re.compile(r"^\s*/\* (?:function|reduction) (\w+) \*/")
_NEST = re.compile(r"^static PIM_NOINLINE void pim_nest(\d+)_(\d+)\(")


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
    with tempfile.TemporaryDirectory() as root:
        kernel = build(compiled.cmodule, dataclasses.replace(options, cache_dir=root))
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
    messages = _messages(log)
    source = compiled.cmodule.source.splitlines()
    labels = _labels(compiled, source)
    for index, text in enumerate(source):
        if text.strip() != "#pragma omp simd" and not text.strip().startswith(
            "#pragma omp parallel for simd"
        ):
            continue
        line = index + 2  # the for loop after the pragma, 1-based
        end = _loop_end(source, index + 1)
        found = [m for k in range(line, end + 1) for m in messages.get(k, [])]
        good = [m for kind, m in found if kind == "optimized" and "vectorized" in m]
        library = [m for _, m in found if "__builtin_memcpy" in m or "__builtin_memset" in m]
        reasons = [m for kind, m in found if kind == "missed" and "couldn't vectorize" not in m]
        if good:
            yield LoopVerdict(labels[line - 1], line, True, good[0])
        elif library:
            yield LoopVerdict(labels[line - 1], line, True, "became a memcpy/memset call")
        elif not found and _in_wide_copy(source, index):
            yield LoopVerdict(labels[line - 1], line, True, UNUSED_WIDE_COPY)
        else:
            detail = reasons[0] if reasons else "the compiler said nothing about this loop"
            yield LoopVerdict(labels[line - 1], line, False, detail)


UNUSED_WIDE_COPY = "the int64 copy, removed: its table always fits the 32-bit copy"


def _in_wide_copy(source, index: int) -> bool:
    """Whether the loop at 0-based line `index` is in the int64 copy of a loop whose gathers
    also have a 32-bit copy (codegen.loops.WIDE_COPY): the block that encloses it opens there."""
    indent = len(source[index]) - len(source[index].lstrip())
    for text in reversed(source[:index]):
        if text.strip() and len(text) - len(text.lstrip()) < indent:
            return WIDE_COPY in text
    return False


def _loop_end(source, start: int) -> int:
    """The 1-based line where the loop beginning at 0-based line `start` closes its braces."""
    depth, opened = 0, False
    for index in range(start, len(source)):
        for ch in source[index]:
            if ch == "{":
                depth, opened = depth + 1, True
            elif ch == "}":
                depth -= 1
        if opened and depth <= 0:
            return index + 1
    return len(source)


def _messages(log: str) -> dict:
    """{line of kernel.c: [(kind, message)]} from a build log (every unit places its code under
    `#line` directives naming kernel.c, codegen.units)."""
    messages = {}
    for text in log.splitlines():
        match = _MESSAGE.match(text.strip())
        if match:
            messages.setdefault(int(match[1]), []).append((match[2], match[3]))
    return messages


def _labels(compiled, source) -> list:
    """The stages each line of the C belongs to."""
    current, labels = ("(setup)",), []
    for text in source:
        stage, nest = _STAGE.match(text), _NEST.match(text)
        if stage:
            current = (stage[1],)
        elif nest:
            group, index = int(nest[1]), int(nest[2])
            current = compiled.group_plans[group].nests[index].stages
        labels.append(current)
    return labels
