"""The C of a pipeline as one file (`kernel.c`: what is shown, hashed and kept in the cache) and
as translation units that compile in parallel: the main unit (workspace and entry function,
which cffi wraps) and, for large pipelines, one unit per group with enough C in its
functions (a tiled group's nests, an untiled stage's loops), and one per long jammed nest.
Where the entry computes no stage itself, a large pipeline's main unit keeps only the code
that drives the loops (the entry, the tiles' regions): the nests of the smaller groups move to
a unit of their own, and the main unit is marked `driver` (jit.build gives it fewer passes).

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
from .ctree import Blank, Directive, For, Node, Seq, names_used, statements, walk
from .prelude import IN_ORDER, defines_if

SOURCE_NAME = "kernel.c"
# pipelines with fewer bytes of C in their outlined functions than this stay one unit
UNIT_BYTES = 64 * 1024
# a group with fewer bytes of C in its functions than this keeps them in the main unit
GROUP_UNIT_BYTES = 12 * 1024
# a function kept in order (codegen.jam) with a loop body of this many statements or more is
# a unit of its own, marked `long_chains` (jit.build gives such units their own flags)
LONG_CHAIN_STATEMENTS = 100
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
    long_chains: bool = False  # it holds a function of long_chains()
    driver: bool = False  # it computes no stage: the entry and the tiles' regions only

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


def layout(
    header: Node,
    workspace: Node,
    functions,
    entry,
    owners=None,
    helpers=(),
    entry_computes: bool = True,
) -> Layout:
    """kernel.c and its units of code made of `header` (the prelude), the `helpers` ((op, C
    type) of the small static inline functions the code calls), the `workspace` code, the
    static functions `functions` (ctree.Function; `owners[k]` the group function k belongs to,
    by default its own) and the `entry` function (`entry_computes`: it holds a stage's loops
    of its own). units[0] is the main unit; with few lines of functions it is the only one.
    Functions that compute no stage (a group's regions) stay in the main unit."""
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
    sizes = [len(done.text) for done in printed[:-1]]
    chains = [k for k, function in enumerate(functions) if long_chains(function)]
    owners = list(range(len(functions))) if owners is None else list(owners)
    rest = [k for k, function in enumerate(functions) if k not in chains and function.stages]
    worth_units = sum(size for k, size in enumerate(sizes) if k not in chains) >= UNIT_BYTES
    grouped = _partition([sizes[k] for k in rest], [owners[k] for k in rest]) if worth_units else []
    bins = sorted([[k] for k in chains] + [[rest[j] for j in members] for members in grouped])
    driver = bool(grouped) and not entry_computes
    if driver:
        kept = sorted(set(rest) - {k for members in bins for k in members})
        bins = sorted(bins + [kept] if kept else bins)
    if not bins:
        return Layout(source, (Unit(((1, source),)),), tuple(loops))
    moved = {k for members in bins for k in members}
    function_starts = starts[2:-1]
    main = [(1, print_c(Seq((header, helper_functions, Blank(), _SHARED_DEFINE))).text)]
    main += [(0, print_c(_shared(functions[k]).prototype).text) for k in sorted(moved)]
    main += [(starts[1], pieces[1])]
    main += [(function_starts[k], pieces[2 + k]) for k in range(len(functions)) if k not in moved]
    main.append((starts[-1], pieces[-1]))
    units = [Unit(tuple(main), driver=driver)]
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
        units.append(Unit(((1, opening), *code), members[0] in chains))
    return Layout(source, tuple(units), tuple(loops))


def long_chains(function) -> bool:
    """Whether `function` is kept in order (prelude.IN_ORDER: a jammed nest's accumulators)
    and runs a loop body of LONG_CHAIN_STATEMENTS or more (a sum over a 7x7 search window
    for 4 channels: 196 statements)."""
    if function.attributes != IN_ORDER:
        return False
    return any(
        isinstance(node, For)
        and not any(isinstance(inner, For) for inner in walk(node.body))
        and statements(node.body) >= LONG_CHAIN_STATEMENTS
        for node in walk(function)
    )


def _partition(sizes: list, owners: list) -> list:
    """Function indices per unit of their own: every group with GROUP_UNIT_BYTES of C in its
    functions, in source order (`sizes`: bytes of C per function; the compiler's time grows
    with them, not with the statements: one stage of a 7x7 window is a few statements of
    100 KB)."""
    by_owner: dict = {}
    for k, owner in enumerate(owners):
        by_owner.setdefault(owner, []).append(k)
    return [
        members
        for members in by_owner.values()
        if sum(sizes[k] for k in members) >= min(GROUP_UNIT_BYTES, UNIT_BYTES)
    ]


def _at(line: int, text: str) -> str:
    """`text` under a directive naming its line in kernel.c."""
    return print_c(Directive(f'#line {line} "{SOURCE_NAME}"')).text + text


def _shared(function):
    """An outlined function as other units call it."""
    return dataclasses.replace(function, qualifiers=_SHARED)
