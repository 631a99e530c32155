"""Deterministic, collision-free C identifiers for stages, parameters and loop variables."""

from __future__ import annotations

import re

PREFIX = "pim_"
# how a helper function is declared: inlined wherever it is called, however many calls a loop
# holds (gcc stops inlining in a long loop body, and a call leaves the loop scalar)
HELPER = "PIM_INLINE"
# the note on the block of a Reduction's update loops: the vectorization report reads their
# innermost loops, `omp simd` or not (polyimage.tools.vectorization)
UPDATES = "updates"
# the note on the loops of a register-blocked Reduction that move its cells (into and out of
# the registers) or update its leftover cells in place (fewer than a vector of columns, or of
# rows): the vectorization report leaves them out, as it does a stage's setup
BLOCK_CELLS = "block cells"
# the note on a register block written in vector types (codegen.vector_blocks): nothing in it
# is left for the compiler to vectorize, and the vectorization report leaves it out
VECTOR_TYPES = "vector types"
# the note on the loops that copy a register block's rows into their packed buffer
# (codegen.packing): strided copies, left out of the vectorization report as cells' moves are
PACKED_ROWS = "packed rows"
# the note on the loop that applies a scatter's staged updates in order (codegen.reduction_loops
# ._staged_strips): cells at indices computed from data, which no vector stores; the loop
# that computes them is the one the vectorization report reads
STAGED_UPDATES = "staged updates"
# the reduction-only loops inside an owner's `omp simd` loop (codegen.reduction_loops
# _vector_owner): each lane runs them; the vectorization report reads the loop outside
LANE_LOOPS = "loops of each lane"
_C_RESERVED = frozenset(
    """auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed sizeof static struct
switch typedef union unsigned void volatile while main""".split()
)

# library names the generated code uses, and the lowercase object-like macros of the headers it
# includes (and of Python.h, which an export's users may include beside it); macros in capitals are
# caught by their shape
_C_LIBRARY = frozenset(
    """abs free malloc posix_memalign size_t sqrt sqrtf exp expf log logf sin
sinf cos cosf floor floorf pow powf fabs fabsf fmod fmodf copysign copysignf omp_get_max_threads
omp_get_thread_limit errno stdin stdout stderr math_errhandling static_assert assert alloca
offsetof sched_priority st_atime st_ctime st_mtime st_atim st_ctim st_mtim linux unix
i386""".split()
)
_LIBRARY_PATTERN = re.compile(r"^(u?int\w*_t|(omp_|Py|PY|PIM_|M_|L_|P_|PRI|SCN)\w*|_\w*)$")


def reserved(name: str) -> bool:
    """C keywords, the library and header names generated code may meet, every name polyimage
    derives (those all start with PREFIX), and names shaped like macros (no lowercase)."""
    return (
        name in _C_RESERVED
        or name in _C_LIBRARY
        or name.startswith(PREFIX)
        or bool(_LIBRARY_PATTERN.match(name))
        or (len(name) > 1 and not any(ch.islower() for ch in name))
    )


class NameRegistry:
    """Maps DSL objects (by identity) to unique C names; never invents global counters."""

    def __init__(self):
        self._by_object = {}
        self._taken = set()

    def name(self, obj, wanted: str) -> str:
        key = id(obj)
        if key in self._by_object:
            return self._by_object[key][1]
        base = re.sub(r"[^A-Za-z0-9_]", "_", wanted) or "v"
        if base[0] in "_0123456789" or base.startswith((PREFIX, "PIM_")):
            base = "v" + base
        if reserved(base):
            base += "_"
        candidate, n = base, 1
        while candidate in self._taken:
            candidate = f"{base}_{n}"
            n += 1
        self._taken.add(candidate)
        self._by_object[key] = (obj, candidate)
        return candidate

    def __getitem__(self, obj) -> str:
        return self._by_object[id(obj)][1]
