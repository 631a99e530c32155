"""The C of a pipeline as one file (`kernel.c`: what is shown, hashed and kept in the cache) and
as translation units that compile in parallel: the main unit (workspace and entry function,
which cffi wraps) and, for large pipelines, one unit per group with enough loop-nest code.

Every unit repeats kernel.c's includes and places each piece of code under a `#line` directive
naming its line in kernel.c, so the compiler's messages (errors, the vectorization report) speak
of kernel.c whatever unit they come from. A group's unit holds only the helpers its code calls,
and its text depends only on that group's code (not on the tile sizes, which live in the
entry), so a compile that changes other groups finds its object in the cache (jit.build). How
the code is cut depends only on its text, never on the machine.
"""

from __future__ import annotations

import re

SOURCE_NAME = "kernel.c"
# pipelines with fewer lines of loop-nest functions than this stay one unit
UNIT_LINES = 400
# a group with fewer lines of functions than this keeps them in the main unit
GROUP_UNIT_LINES = 80
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
_HELPER_NAME = re.compile(r"^static inline [^(]*?\b(\w+)\(")


def lines_text(lines) -> str:
    return "".join(line + "\n" for line in lines)


def layout(header: str, workspace: str, blocks: list, entry: list, owners=None, helpers=()):
    """(kernel.c, units) of code made of `header` (includes), the `helpers` (sources of small
    static inline functions), the `workspace` code, the static functions `blocks` (each a
    list of lines; `owners[k]` the group block k belongs to, by default its own) and the
    `entry` function's lines. units[0] is the main unit; with few lines of functions it is the
    only one."""
    helper_text = "".join(h + "\n" for h in helpers)
    pieces = [header + helper_text + "\n", workspace + "\n"]
    pieces += [lines_text(block + [""]) for block in blocks]
    pieces.append(lines_text(entry))
    starts, line = [], 1
    for piece in pieces:
        starts.append(line)
        line += piece.count("\n")
    source = "".join(pieces)
    bins = _partition(blocks, list(range(len(blocks))) if owners is None else owners)
    if not bins:
        return source, (_at(1, source),)
    moved = {k for members in bins for k in members}
    function_starts = starts[2:-1]
    main = [_at(1, header + helper_text + "\n" + _SHARED_DEFINE)]
    main += [_prototype(blocks[k]) for k in sorted(moved)]
    main += [_at(starts[1], pieces[1])]
    main += [_at(function_starts[k], pieces[2 + k]) for k in range(len(blocks)) if k not in moved]
    main.append(_at(starts[-1], pieces[-1]))
    units = ["".join(main)]
    for members in bins:
        code = "".join(_at(function_starts[k], _shared(pieces[2 + k])) for k in members)
        used = "".join(h + "\n" for h in _used_helpers(helpers, code))
        units.append(_at(1, header + used + "\n" + _SHARED_DEFINE) + code)
    return source, tuple(units)


def _partition(blocks: list, owners: list) -> list:
    """Function indices per unit of their own: every group with GROUP_UNIT_LINES of functions,
    in source order. [] when all the functions are too few lines to be worth units."""
    sizes = [len(block) + 1 for block in blocks]
    if sum(sizes) < UNIT_LINES:
        return []
    by_owner = {}
    for k, owner in enumerate(owners):
        by_owner.setdefault(owner, []).append(k)
    return [
        members
        for members in by_owner.values()
        if sum(sizes[k] for k in members) >= min(GROUP_UNIT_LINES, UNIT_LINES)
    ]


def _used_helpers(helpers, code: str) -> list:
    """The helpers `code` calls, with those they call, in their order."""
    matches = [_HELPER_NAME.match(h) for h in helpers]
    names = [m.group(1) if m else None for m in matches]
    wanted, text = set(), code
    changed = True
    while changed:
        changed = False
        for name, source in zip(names, helpers):
            if name and name not in wanted and re.search(rf"\b{name}\(", text):
                wanted.add(name)
                text += source
                changed = True
    return [h for name, h in zip(names, helpers) if name in wanted]


def _at(line: int, text: str) -> str:
    return f'#line {line} "{SOURCE_NAME}"\n{text}'


def _shared(text: str) -> str:
    if not text.startswith(_STATIC):
        raise ValueError(f"not an outlined function: {text[:60]!r}")
    return _SHARED + text[len(_STATIC) :]


def _prototype(block: list) -> str:
    return _shared(block[0]) + ";\n"
