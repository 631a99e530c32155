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

import dataclasses
from dataclasses import dataclass

from .chelpers import helper_definitions
from .cprint import print_c
from .ctree import Blank, Directive, Node, Seq, names_used, statements
from .prelude import defines_if

SOURCE_NAME = "kernel.c"
# pipelines with fewer statements in loop-nest functions than this stay one unit
UNIT_STATEMENTS = 400
# a group with fewer statements in its functions than this keeps them in the main unit
GROUP_UNIT_STATEMENTS = 80
_SHARED = "PIM_SHARED"
# functions other units call: external, but not exported from the built module
_SHARED_DEFINE = defines_if(
    "defined(__GNUC__)",
    (f'{_SHARED} PIM_NOINLINE __attribute__((visibility("hidden")))',),
    (f"{_SHARED} PIM_NOINLINE",),
)


@dataclass(frozen=True)
class Unit:
    """A translation unit as pieces of code, each under the kernel.c line it stands at (0: it
    follows the piece before, with no directive of its own)."""

    pieces: tuple  # ((line, text), ...)

    @property
    def text(self) -> str:
        """The unit's C: each piece under its `#line` directive."""
        return "".join(_at(line, text) if line else text for line, text in self.pieces)

    @property
    def code(self) -> str:
        """The unit's code without its directives (they move with the code before the unit in
        kernel.c, and change nothing in its object)."""
        return "".join(text for _, text in self.pieces)

    @property
    def lines(self) -> tuple:
        """The kernel.c lines its `#line` directives name, in order."""
        return tuple(line for line, _ in self.pieces if line)


@dataclass(frozen=True)
class Layout:
    """kernel.c, its translation units (the main one first) and where its loops stand in it
    (cprint.LoopLines, in kernel.c's lines)."""

    source: str
    units: tuple
    loops: tuple


def layout(header: Node, workspace: Node, functions, entry, owners=None, helpers=()) -> Layout:
    """kernel.c and its units of code made of `header` (the prelude), the `helpers` ((op, C
    type) of the small static inline functions the code calls), the `workspace` code, the
    static functions `functions` (ctree.Function; `owners[k]` the group function k belongs to,
    by default its own) and the `entry` function. units[0] is the main unit; with few lines of
    functions it is the only one."""
    helper_functions = helper_definitions(helpers)
    pieces = [
        print_c(Seq((header, helper_functions, Blank()))).text,
        print_c(Seq((workspace, Blank()))).text,
    ]
    line = 1 + sum(piece.count("\n") for piece in pieces)
    loops: list
    printed, loops = [], []
    for function in [*functions, entry]:
        done = print_c(function, first_line=line)
        printed.append(done)
        loops += done.loops
        line += done.text.count("\n") + 1
    pieces += [done.text + "\n" for done in printed[:-1]] + [printed[-1].text]
    starts, line = [], 1
    for piece in pieces:
        starts.append(line)
        line += piece.count("\n")
    source = "".join(pieces)
    sizes = [statements(function) + 1 for function in functions]
    bins = _partition(sizes, list(range(len(functions))) if owners is None else owners)
    if not bins:
        return Layout(source, (Unit(((1, source),)),), tuple(loops))
    moved = {k for members in bins for k in members}
    function_starts = starts[2:-1]
    main = [(1, print_c(Seq((header, helper_functions, Blank(), _SHARED_DEFINE))).text)]
    main += [(0, print_c(_shared(functions[k]).prototype).text) for k in sorted(moved)]
    main += [(starts[1], pieces[1])]
    main += [(function_starts[k], pieces[2 + k]) for k in range(len(functions)) if k not in moved]
    main.append((starts[-1], pieces[-1]))
    units = [Unit(tuple(main))]
    for members in bins:
        used = {
            name for k in members for kind, name in names_used(functions[k]) if kind == "helper"
        }
        own = helper_definitions(h for h in helpers if h in used)
        opening = print_c(Seq((header, own, Blank(), _SHARED_DEFINE))).text
        code = [
            (function_starts[k], print_c(Seq((_shared(functions[k]), Blank()))).text)
            for k in members
        ]
        units.append(Unit(((1, opening), *code)))
    return Layout(source, tuple(units), tuple(loops))


def _partition(sizes: list, owners: list) -> list:
    """Function indices per unit of their own: every group with GROUP_UNIT_STATEMENTS statements
    of functions, in source order. [] when all the functions are too few statements to be
    worth units (`sizes`: statements per function, ctree.statements)."""
    if sum(sizes) < UNIT_STATEMENTS:
        return []
    by_owner: dict = {}
    for k, owner in enumerate(owners):
        by_owner.setdefault(owner, []).append(k)
    return [
        members
        for members in by_owner.values()
        if sum(sizes[k] for k in members) >= min(GROUP_UNIT_STATEMENTS, UNIT_STATEMENTS)
    ]


def _at(line: int, text: str) -> str:
    """`text` under a directive naming its line in kernel.c."""
    return print_c(Directive(f'#line {line} "{SOURCE_NAME}"')).text + text


def _shared(function):
    """An outlined function as other units call it."""
    return dataclasses.replace(function, qualifiers=_SHARED)
