"""The one printer of C trees (codegen.ctree): a tree as text, and where every loop stands in
it and which stages it computes (the vectorization report reads compiler remarks through that
map; nothing parses the generated C)."""

from __future__ import annotations

from dataclasses import dataclass

from .ctree import BRACE_ON_HEAD, ONE_LINE, SIMPLE, Block, Declare, For, If, Node, Seq

INDENT = "    "


def _one_line(node) -> str:
    """A statement, a branch or a block as one line of C (a helper's body)."""
    if isinstance(node, SIMPLE):
        return node.statement()
    if isinstance(node, If):
        otherwise = "" if node.otherwise is None else f" else {_one_line(node.otherwise)}"
        return f"if ({node.cond}) {_one_line(node.then)}{otherwise}"
    if isinstance(node, (Block, Seq)):
        inner = " ".join(_one_line(child) for child in node.body)
        return f"{{ {inner} }}" if isinstance(node, Block) else inner
    raise TypeError(f"{type(node).__name__} has no one-line form")


@dataclass(frozen=True)
class LoopLines:
    """Where a loop stands in printed C: the 1-based lines of its `for` and of its end, the
    stages it computes, and whether it lies in a block noted `note` (the int64 copy of a loop
    whose gathers also have a 32-bit one)."""

    loop: For
    line: int
    end: int
    stages: tuple
    notes: tuple


@dataclass(frozen=True)
class Printed:
    """C text and the place of every loop in it."""

    text: str
    loops: tuple


def print_c(node: Node, depth: int = 0, first_line: int = 1) -> Printed:
    """`node` as C text, indented from `depth`; its loops' lines counted from `first_line`."""
    printer = _Printer(first_line)
    printer.node(node, depth, ("(setup)",), ())
    placed = tuple(sorted(printer.loops, key=lambda loop: loop.line))
    return Printed("".join(line + "\n" for line in printer.lines), placed)


class _Printer:
    def __init__(self, first_line: int):
        self.lines: list
        self.loops: list
        self.lines, self.loops, self.first = [], [], first_line

    def emit(self, text: str, depth: int):
        """`text` at `depth`; the lines after its first (a long statement's) as they are."""
        first, *rest = text.split("\n")
        self.lines.append(INDENT * depth + first if first else "")
        self.lines += rest

    def node(self, node, depth, stages, notes):
        method = getattr(self, "_" + type(node).__name__.lower())
        method(node, depth, stages, notes)

    def body(self, nodes, depth, stages, notes):
        for child in nodes:
            self.node(child, depth, stages, notes)

    def _line(self, node, depth, stages, notes):
        self.emit(node.statement(), depth)

    _declare = _assign = _call = _return = _line

    def _comment(self, node, depth, stages, notes):
        self.emit(f"/* {node.text} */", depth)

    def _directive(self, node, depth, stages, notes):
        self.lines.append(node.text)

    def _blank(self, node, depth, stages, notes):
        self.lines.append("")

    def _typedef(self, node, depth, stages, notes):
        self.emit("typedef struct {", depth)
        self.body(node.fields, depth + 1, stages, notes)
        self.emit(f"}} {node.name};", depth)

    def _below(self, node, depth, stages, notes):
        self.node(node.body, depth, stages, notes)

    def _prototype(self, node, depth, stages, notes):
        self.emit(node.declaration(), depth)

    def _label(self, node, depth, stages, notes):
        self.emit(f"{node.name}:", max(depth - 1, 0))

    def _pragma(self, node, depth, stages, notes):
        self.emit(f"#pragma {node.text}", depth)

    def _block(self, node, depth, stages, notes, opened=False):
        """A block; `opened`: its brace goes at the end of the line above (a loop's or a
        branch's header)."""
        brace = "{" + (f" /* {node.note} */" if node.note else "")
        body = node.body
        if opened:
            self.lines[-1] += " " + brace
        elif body and isinstance(body[0], Declare) and not node.note:
            self.emit(brace + " " + body[0].statement(), depth)  # a scope: `{ const int a = 1;`
            body = body[1:]
        else:
            self.emit(brace, depth)
        inner = notes + (node.note,) if node.note else notes
        self.body(body, depth + 1, stages, inner)
        self.emit("}", depth)

    def _seq(self, node, depth, stages, notes):
        self.body(node.body, depth, stages, notes)

    def _stage(self, node, depth, stages, notes):
        self.emit(f"/* {node.kind} {node.name} */", depth)
        self.body(node.body, depth, (node.name,), notes)

    def _function(self, node, depth, stages, notes):
        if node.form == ONE_LINE:
            self.emit(f"{node.signature()} {_one_line(Block(node.body))}", depth)
            return
        self.emit(node.signature(), depth)
        if node.form == BRACE_ON_HEAD:
            self.lines[-1] += " {"
        else:
            self.emit("{", depth)
        self.body(node.body, depth + 1, node.stages or stages, notes)
        self.emit("}", depth)

    def _parallel(self, node, depth, stages, notes):
        condition = f" if(parallel: {node.condition})" if node.condition else ""
        self.emit(f"#pragma omp parallel num_threads({node.threads}){condition}", depth)
        self.node(node.body, depth, stages, notes)  # nothing may follow a pragma on its line

    def _for(self, node, depth, stages, notes):
        pragma = node.pragma()
        if pragma:
            self.emit(pragma, depth)
        self.emit(node.header(), depth)
        line = self.first + len(self.lines) - 1
        self._nested(node.body, depth, stages, notes)
        self.loops.append(LoopLines(node, line, self.first + len(self.lines) - 1, stages, notes))

    def _if(self, node, depth, stages, notes, keyword="if"):
        self._after(f"{keyword} ({node.cond})", depth)
        self._nested(node.then, depth, stages, notes)
        other = node.otherwise
        if isinstance(other, If):
            self._if(other, depth, stages, notes, keyword="else if")
        elif other is not None:
            self._after("else", depth)
            self._nested(other, depth, stages, notes)

    def _after(self, text: str, depth: int):
        """`text` on a line of its own, or after a closing brace (`} else`)."""
        if self.lines and self.lines[-1] == INDENT * depth + "}" and text.startswith("else"):
            self.lines[-1] += " " + text
        else:
            self.emit(text, depth)

    def _nested(self, node, depth, stages, notes):
        """The body of a loop or branch: a block opened on the header's line, a simple
        statement on that line too, else a statement one level in."""
        if isinstance(node, Block):
            self._block(node, depth, stages, notes, opened=True)
        elif isinstance(node, SIMPLE):
            self.lines[-1] += " " + node.statement()
        else:
            self.node(node, depth + 1, stages, notes)
