"""The C of a pipeline as one file (`kernel.c`: what is shown, hashed and kept in the cache) and
as translation units that compile in parallel: the main unit (workspace and entry function,
which cffi wraps) and, for large pipelines, units of the outlined loop-nest functions.

Every unit repeats kernel.c's header (includes and helpers) and places each piece of code under
a `#line` directive naming its line in kernel.c, so the compiler's messages (errors, the
vectorization report) speak of kernel.c whatever unit they come from. How the functions are cut
depends only on their text, never on the machine, so the units are as deterministic as kernel.c.
"""

from __future__ import annotations

SOURCE_NAME = "kernel.c"
# a unit of loop nests holds about this many lines (about a second of gcc -O3 on 2 cores)
UNIT_LINES = 400
MAX_UNITS = 8
_STATIC = "static PIM_NOINLINE "
_SHARED = "PIM_SHARED "
# functions other units call: external, but not exported from the built module
_SHARED_DEFINE = """\
#if defined(__GNUC__)
#define PIM_SHARED PIM_NOINLINE __attribute__((visibility("hidden")))
#else
#define PIM_SHARED PIM_NOINLINE
#endif
"""


def lines_text(lines) -> str:
    return "".join(line + "\n" for line in lines)


def layout(header: str, workspace: str, blocks: list, entry: list) -> tuple:
    """(kernel.c, units) of code made of `header` (includes, helpers), the `workspace` code,
    the static functions `blocks` (each a list of lines) and the `entry` function's lines.
    units[0] is the main unit; with few lines of functions it is the only one."""
    pieces = [header + "\n", workspace + "\n"]
    pieces += [lines_text(block + [""]) for block in blocks]
    pieces.append(lines_text(entry))
    starts, line = [], 1
    for piece in pieces:
        starts.append(line)
        line += piece.count("\n")
    source = "".join(pieces)
    bins = _partition([len(block) + 1 for block in blocks])
    if not bins:
        return source, (_at(1, source),)
    shared = header + "\n" + _SHARED_DEFINE
    moved = {k for members in bins for k in members}
    function_starts = starts[2:-1]
    main = [_at(1, shared)]
    main += [_prototype(blocks[k]) for k in sorted(moved)]
    main += [_at(starts[1], pieces[1])]
    main += [_at(function_starts[k], pieces[2 + k]) for k in range(len(blocks)) if k not in moved]
    main.append(_at(starts[-1], pieces[-1]))
    units = ["".join(main)]
    for members in bins:
        code = [_at(function_starts[k], _shared(pieces[2 + k])) for k in members]
        units.append(_at(1, shared) + "".join(code))
    return source, tuple(units)


def _partition(sizes: list) -> list:
    """Groups of function indices, in source order within a group, balanced by lines: the
    largest function first into the lightest group. [] when the functions are too few lines
    to be worth a unit of their own."""
    count = min(MAX_UNITS, sum(sizes) // UNIT_LINES)
    if count < 1:
        return []
    loads, bins = [0] * count, [[] for _ in range(count)]
    for k in sorted(range(len(sizes)), key=lambda k: (-sizes[k], k)):
        lightest = loads.index(min(loads))
        loads[lightest] += sizes[k]
        bins[lightest].append(k)
    return [sorted(members) for members in bins if members]


def _at(line: int, text: str) -> str:
    return f'#line {line} "{SOURCE_NAME}"\n{text}'


def _shared(text: str) -> str:
    if not text.startswith(_STATIC):
        raise ValueError(f"not an outlined function: {text[:60]!r}")
    return _SHARED + text[len(_STATIC) :]


def _prototype(block: list) -> str:
    return _shared(block[0]) + ";\n"
