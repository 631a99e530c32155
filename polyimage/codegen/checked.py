"""The checked build (POLYIMAGE_CHECK=1, `compile(..., check=True)`): every index into a
buffer, an image or a tile's scratchpad is checked against that buffer's extent at run time.

A failed check records the first failure of the call (the buffer, the index and its bounds,
the group and the tile being computed), uses the nearest index inside instead, and makes the
entry return CHECK_FAILED; the caller raises CheckError with the message. A debugging aid:
the checked code is much slower and not vectorized.
"""

from __future__ import annotations

from .ctree import (
    Assign,
    Below,
    Block,
    Call,
    Declare,
    Directive,
    For,
    Function,
    If,
    Prototype,
    Return,
    Seq,
    separated,
)
from .names import HELPER, PREFIX
from .prelude import defines_if

P = PREFIX

CHECK_FAILED = 2
MAX_TILE_RANK = 16

_FAIL_PARAMS = ("int64_t i", "int64_t lb", "int64_t n", "const char *what", "int d")


def _wrapped(column: int) -> tuple:
    """The failure's parameters, the last on a line of its own from `column`."""
    return (*_FAIL_PARAMS, "\n" + " " * column + "int group")


def header() -> Seq:
    """What the loop nests call, repeated in every translation unit."""
    hidden = defines_if(
        "defined(__GNUC__)", ('PIM_HIDDEN __attribute__((visibility("hidden")))',), ("PIM_HIDDEN",)
    )
    check = Function(
        "int64_t",
        f"{P}chk",
        _wrapped(30),
        (Return(f"(i >= lb && i - lb < n) ? i - lb : {P}chk_fail(i, lb, n, what, d, group)"),),
        HELPER,
    )
    return Seq(
        (
            Directive("#include <stdio.h>"),
            hidden,
            Declare(
                "extern PIM_HIDDEN __thread int",
                _names(f"{P}chk_group", f"{P}chk_level", f"{P}chk_rank"),
            ),
            Declare(
                "extern PIM_HIDDEN __thread int64_t",
                _names(f"{P}chk_lo[{MAX_TILE_RANK}]", f"{P}chk_hi[{MAX_TILE_RANK}]"),
            ),
            Prototype("int64_t", f"{P}chk_fail", _wrapped(32), "PIM_HIDDEN"),
            check,
        )
    )


def _names(*names) -> tuple:
    """Items of a declaration without values."""
    return tuple((name, None) for name in names)


def state_code(function: str) -> Seq:
    """The main unit's part: the failure record, the report, and the exported
    `<function>_check_message`, which returns the last call's first failure and clears it."""
    tile_bounds = (
        'snprintf(tile + used, sizeof tile - used, "%s%lld..%lld", k ? " x " : " ",\n'
        + " " * 33
        + f"(long long){P}chk_lo[k], (long long){P}chk_hi[k])"
    )
    tile = If(
        f"{P}chk_group == group",
        Block(
            (
                Declare(
                    "char", (("*level", f'{P}chk_level == 2 ? "inner" : "outer"'),), const=True
                ),
                Declare("int", (("used", 'snprintf(tile, sizeof tile, ", %s tile", level)'),)),
                For(
                    "k",
                    "0",
                    f"{P}chk_rank && used < (int)sizeof tile",
                    Below(Assign("used", tile_bounds, "+=")),
                    c_type="int",
                    inclusive=False,
                ),
            )
        ),
    )
    indent = "\n" + " " * 17
    message = Call(
        "snprintf",
        (
            f"{P}chk_text",
            f"sizeof {P}chk_text",
            f'{indent}"%s: index %d is %lld, outside [%lld, %lld] (group %d%s)"',
            "what",
            "d",
            "(long long)i",
            f"{indent}(long long)lb",
            "(long long)(lb + n - 1)",
            "group",
            "tile",
        ),
    )
    first = Block((Declare("char", (("tile[512]", '""'),)), tile, message))
    fail = Function(
        "int64_t",
        f"{P}chk_fail",
        _wrapped(30),
        (
            If(f"__atomic_fetch_add(&{P}chk_count, 1, __ATOMIC_SEQ_CST) == 0", first),
            If(
                "n <= 0",
                Block(
                    (
                        Call("fprintf", ("stderr", '"polyimage check: %s\\n"', f"{P}chk_text")),
                        Call("abort", ()),
                    )
                ),
            ),
            Return("i < lb ? 0 : n - 1"),
        ),
        "PIM_HIDDEN",
    )
    message_function = Function(
        "const char *",
        f"{function}_check_message",
        ("void",),
        (
            Declare("static char", ((f"copy[sizeof {P}chk_text]", None),)),
            For(
                "k",
                "0",
                "sizeof copy",
                Assign("copy[k]", f"{P}chk_text[k]"),
                c_type="size_t",
                inclusive=False,
            ),
            Call("__atomic_store_n", (f"&{P}chk_count", "0", "__ATOMIC_SEQ_CST")),
            Return("copy"),
        ),
        "",
    )
    record = (
        Declare(
            "PIM_HIDDEN __thread int",
            ((f"{P}chk_group", "-1"), (f"{P}chk_level", None), (f"{P}chk_rank", None)),
        ),
        Declare(
            "PIM_HIDDEN __thread int64_t",
            _names(f"{P}chk_lo[{MAX_TILE_RANK}]", f"{P}chk_hi[{MAX_TILE_RANK}]"),
        ),
        Declare("static int", _names(f"{P}chk_count")),
        Declare("static char", _names(f"{P}chk_text[1024]")),
    )
    return separated((Seq(record), fail, message_function))


def message_prototype(function: str) -> Prototype:
    """The declaration of `<function>_check_message`."""
    return Prototype("const char *", f"{function}_check_message", ("void",))


def entry_start() -> Declare:
    """The entry's first statement: the failures counted before the call."""
    count = f"__atomic_load_n(&{P}chk_count, __ATOMIC_SEQ_CST)"
    return Declare("int", ((f"{P}chk_before", count),), const=True)


def entry_end() -> If:
    """The entry's last statement before it returns: CHECK_FAILED where a check failed."""
    failed = f"__atomic_load_n(&{P}chk_count, __ATOMIC_SEQ_CST) != {P}chk_before"
    return If(f"{P}status == 0 && {failed}", Assign(f"{P}status", str(CHECK_FAILED)))


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
