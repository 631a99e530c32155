"""The runtime every kernel.c begins with (the prelude: includes, OpenMP's stand-ins, the
allocation and chunking functions) and the schedule clauses of parallel loops, which call its
pim_chunk."""

from __future__ import annotations

from .ctree import (
    ONE_LINE,
    Assign,
    Below,
    Blank,
    Call,
    Comment,
    Declare,
    Directive,
    Function,
    If,
    Return,
    Seq,
    separated,
)

# parallel loops hand out their iterations to the threads that come for them, in chunks of about
# 1/CHUNKS_PER_THREAD of a thread's share: a thread the OS takes its core from then holds the
# others up by one chunk at most, not by all of its share (static shares did)
CHUNKS_PER_THREAD = 8
ONE_AT_A_TIME = "dynamic, 1"


# tiles of little work (their points times their members) go to a thread several at a time,
# consecutive ones, up to a chunk of pim_chunk: one hand-out then serves several, and a
# thread's rows stay adjacent for the prefetcher (histogram_equalize's one-row tiles of luma,
# one at a time, took 0.23 us each more than one loop over the rows)
TILE_CHUNK_POINTS = 65536


def tile_schedule(tiles: str, threads: str, tile_work: int) -> str:
    """The schedule clause of the loop over `tiles` (a C expression) of `tile_work` points
    each (over all members): one tile at a time, or as many as make TILE_CHUNK_POINTS."""
    per_chunk = -(-TILE_CHUNK_POINTS // max(tile_work, 1))
    if per_chunk <= 1:
        return ONE_AT_A_TIME
    chunk = f"pim_chunk({tiles}, {threads})"
    return f"dynamic, ({chunk} < {per_chunk} ? {chunk} : {per_chunk})"


def shared_schedule(iterations: str, threads: str) -> str:
    """The schedule clause of a parallel loop of `iterations` (a C expression) on `threads`:
    dynamic, in chunks of about CHUNKS_PER_THREAD per thread (pim_chunk in the prelude)."""
    return f"dynamic, pim_chunk({iterations}, {threads})"


# gcc's out-of-SSA pass rebuilds each accumulator's chain of a jammed nest (codegen.jam) in one
# piece (and spills the shared reads): that nest's function asks it to keep the statements'
# order
IN_ORDER = "PIM_IN_ORDER"


def defines_if(condition: str, defines, otherwise) -> Seq:
    """`#if condition`, a `#define` of each of `defines`, `#else`, one of each of
    `otherwise`, `#endif`."""
    return Seq(
        (
            Directive(f"#if {condition}"),
            *(Directive(f"#define {d}") for d in defines),
            Directive("#else"),
            *(Directive(f"#define {d}") for d in otherwise),
            Directive("#endif"),
        )
    )


def openmp_stand_ins() -> Seq:
    """Without OpenMP (a compiler that has none builds without -fopenmp) the code runs serial:
    the pragmas are ignored and these stand in for the runtime's calls."""
    stand_ins = [("omp_get_max_threads", "1"), ("omp_get_thread_limit", "1")]
    stand_ins.append(("omp_get_thread_num", "0"))
    return Seq(
        (
            Directive("#ifdef _OPENMP"),
            Directive("#include <omp.h>"),
            Directive("#else"),
            *(
                Function("int", name, ("void",), (Return(value),), "static inline", form=ONE_LINE)
                for name, value in stand_ins
            ),
            Directive("#endif"),
        )
    )


def openmp_timer() -> Seq:
    """The profiled build's clock without OpenMP (clock_gettime is POSIX.1-2001, as the
    prelude asks)."""
    body = (
        Declare("struct timespec", (("t", None),)),
        Call("clock_gettime", ("CLOCK_MONOTONIC", "&t")),
        Return("(double)t.tv_sec + 1e-9 * (double)t.tv_nsec"),
    )
    return Seq(
        (
            Directive("#ifndef _OPENMP"),
            Directive("#include <time.h>"),
            Function("double", "omp_get_wtime", ("void",), body, "static inline"),
            Directive("#endif"),
        )
    )


def prelude() -> Seq:
    """What every kernel.c begins with: includes, OpenMP's stand-ins, the qualifiers of the
    generated functions, and the runtime's allocation and chunking functions."""
    includes = [Directive(f"#include <{header}>") for header in ("stdint.h", "stdlib.h", "math.h")]
    qualifiers = defines_if(
        "defined(__GNUC__)",
        (
            "PIM_NOINLINE __attribute__((noinline))",
            "PIM_INLINE static inline __attribute__((always_inline))",
        ),
        ("PIM_NOINLINE", "PIM_INLINE static inline"),
    )
    functions = separated(_runtime_functions())
    in_order = defines_if(
        "defined(__GNUC__) && !defined(__clang__)",
        (f'{IN_ORDER} __attribute__((optimize("no-tree-ter")))',),
        (IN_ORDER,),
    )
    return Seq(
        (
            Directive("#ifndef _POSIX_C_SOURCE"),
            Directive("#define _POSIX_C_SOURCE 200112L"),
            Directive("#endif"),
            *includes,
            openmp_stand_ins(),
            Blank(),
            Directive(f"#define PIM_CHUNKS_PER_THREAD {CHUNKS_PER_THREAD}"),
            qualifiers,
            Blank(),
            functions,
            Blank(),
            in_order,
        )
    )


def _runtime_functions() -> list:
    """The runtime's functions: allocation, extents, rows of scratchpads (after the comment on
    their layout), blocks of scans and chunks of parallel loops."""
    alloc = Function(
        "void *",
        "pim_alloc",
        ("size_t bytes",),
        (
            Declare("void", (("*p", "NULL"),)),
            If("posix_memalign(&p, 64, bytes ? bytes : 1) != 0", Below(Return("NULL"))),
            Return("p"),
        ),
        "static",
    )
    extent = Function(
        "int64_t",
        "pim_extent",
        ("int64_t lo", "int64_t hi"),
        (Return("hi < lo ? 0 : hi - lo + 1"),),
        "static inline",
    )
    row = Function(
        "int64_t",
        "pim_row",
        ("int64_t n", "int64_t per_line"),
        (
            If("n < 4 * per_line", Below(Return("n"))),
            Return("(((n + per_line - 1) / per_line) | 1) * per_line"),
        ),
        "static inline",
    )
    row_note = Comment(
        "a scratchpad row of n elements, per_line to a 64-byte line: from four lines up, an odd\n"
        "   number of whole lines, so that consecutive rows and planes start on different cache"
        " sets"
    )
    scan_block = Function(
        "int64_t",
        "pim_scan_block",
        ("int64_t iterations", "int threads"),
        (
            Declare("int64_t", (("tasks", "(int64_t)(threads > 0 ? threads : 1) * 2"),)),
            Declare("int64_t", (("width", "(iterations + tasks - 1) / tasks"),)),
            Assign("width", "(width + 15) / 16 * 16"),
            Return("width < 16 ? 16 : width"),
        ),
        "static inline",
    )
    shares = "((int64_t)(threads > 0 ? threads : 1) * PIM_CHUNKS_PER_THREAD)"
    chunk = Function(
        "int",
        "pim_chunk",
        ("int64_t iterations", "int threads"),
        (
            Declare("int64_t", (("chunk", f"iterations / {shares}"),)),
            Return("chunk < 1 ? 1 : (chunk > INT32_MAX ? INT32_MAX : (int)chunk)"),
        ),
        "static inline",
    )
    return [alloc, extent, Seq((row_note, row)), scan_block, chunk]
