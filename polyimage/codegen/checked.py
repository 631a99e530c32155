"""The checked build (POLYIMAGE_CHECK=1, `compile(..., check=True)`): every index into a
buffer, an image or a tile's scratchpad is checked against that buffer's extent at run time.

A failed check records the first failure of the call (the buffer, the index and its bounds,
the group and the tile being computed), uses the nearest index inside instead, and makes the
entry return CHECK_FAILED; the caller raises CheckError with the message. A debugging aid:
the checked code is much slower and not vectorized.
"""

from __future__ import annotations

from .names import HELPER, PREFIX

CHECK_FAILED = 2
MAX_TILE_RANK = 16

# repeated in every translation unit: what the loop nests call
HEADER = f"""\
#include <stdio.h>
#if defined(__GNUC__)
#define PIM_HIDDEN __attribute__((visibility("hidden")))
#else
#define PIM_HIDDEN
#endif
extern PIM_HIDDEN __thread int {PREFIX}chk_group, {PREFIX}chk_level, {PREFIX}chk_rank;
extern PIM_HIDDEN __thread int64_t {PREFIX}chk_lo[{MAX_TILE_RANK}], {PREFIX}chk_hi[{MAX_TILE_RANK}];
PIM_HIDDEN int64_t {PREFIX}chk_fail(int64_t i, int64_t lb, int64_t n, const char *what, int d,
                                int group);
{HELPER} int64_t {PREFIX}chk(int64_t i, int64_t lb, int64_t n, const char *what, int d,
                              int group)
{{
    return (i >= lb && i - lb < n) ? i - lb : {PREFIX}chk_fail(i, lb, n, what, d, group);
}}
"""


def state_source(function: str) -> str:
    """The main unit's part: the failure record, the report, and the exported
    `<function>_check_message`, which returns the last call's first failure and clears it."""
    p = PREFIX
    return f"""\
PIM_HIDDEN __thread int {p}chk_group = -1, {p}chk_level, {p}chk_rank;
PIM_HIDDEN __thread int64_t {p}chk_lo[{MAX_TILE_RANK}], {p}chk_hi[{MAX_TILE_RANK}];
static int {p}chk_count;
static char {p}chk_text[1024];

PIM_HIDDEN int64_t {p}chk_fail(int64_t i, int64_t lb, int64_t n, const char *what, int d,
                              int group)
{{
    if (__atomic_fetch_add(&{p}chk_count, 1, __ATOMIC_SEQ_CST) == 0) {{
        char tile[512] = "";
        if ({p}chk_group == group) {{
            const char *level = {p}chk_level == 2 ? "inner" : "outer";
            int used = snprintf(tile, sizeof tile, ", %s tile", level);
            for (int k = 0; k < {p}chk_rank && used < (int)sizeof tile; k++)
                used += snprintf(tile + used, sizeof tile - used, "%s%lld..%lld", k ? " x " : " ",
                                 (long long){p}chk_lo[k], (long long){p}chk_hi[k]);
        }}
        snprintf({p}chk_text, sizeof {p}chk_text,
                 "%s: index %d is %lld, outside [%lld, %lld] (group %d%s)", what, d, (long long)i,
                 (long long)lb, (long long)(lb + n - 1), group, tile);
    }}
    if (n <= 0) {{
        fprintf(stderr, "polyimage check: %s\\n", {p}chk_text);
        abort();
    }}
    return i < lb ? 0 : n - 1;
}}

const char *{function}_check_message(void)
{{
    static char copy[sizeof {p}chk_text];
    for (size_t k = 0; k < sizeof copy; k++) copy[k] = {p}chk_text[k];
    __atomic_store_n(&{p}chk_count, 0, __ATOMIC_SEQ_CST);
    return copy;
}}
"""


def cdef(function: str) -> str:
    return f"const char *{function}_check_message(void);\n"


def entry_start() -> list:
    return [
        f"    const int {PREFIX}chk_before = __atomic_load_n(&{PREFIX}chk_count, __ATOMIC_SEQ_CST);"
    ]


def entry_end() -> list:
    return [
        f"    if ({PREFIX}status == 0 && __atomic_load_n(&{PREFIX}chk_count, __ATOMIC_SEQ_CST) "
        f"!= {PREFIX}chk_before) {PREFIX}status = {CHECK_FAILED};"
    ]


def tile_note(group: int, level: int, lows, highs) -> str:
    """C statements recording the tile a thread computes (named in a failure's message)."""
    p = PREFIX
    rank = min(len(lows), MAX_TILE_RANK)
    bounds = " ".join(
        f"{p}chk_lo[{d}] = {lows[d]}; {p}chk_hi[{d}] = {highs[d]};" for d in range(rank)
    )
    return f"{p}chk_group = {group}; {p}chk_level = {level}; {p}chk_rank = {rank}; {bounds}"


def checked_index(index: str, lb: str, n: str, what: str, d: int, group: int) -> str:
    """`index - lb`, checked to lie in [0, n)."""
    return f'{PREFIX}chk((int64_t)({index}), {lb}, {n}, "{what}", {d}, {group})'
