"""A small C syntax tree between the group plans and the C text, and its one printer.

Emitters build these frozen nodes; `print_c` turns a tree into text and says, for every loop,
on which lines it stands and which stages it computes (the vectorization report reads compiler
remarks through that map; nothing parses the generated C). Expressions are C texts (printed by
codegen.cexpr as codegen.ctext values); a node made from them records the buffers and helpers
they use in `uses`, so that a subtree knows what it needs (an outlined nest's parameters, a
unit's helpers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

INDENT = "    "


@dataclass(frozen=True)
class Node:
    """Base of every node; `uses` are the names (buffers, helpers) its own C text refers to."""

    def children(self) -> tuple:
        return ()


@dataclass(frozen=True)
class Line(Node):
    """One statement, or a preprocessor line, as C text."""

    text: str
    uses: frozenset = field(default=frozenset(), compare=False)


@dataclass(frozen=True)
class Declare(Node):
    """`[const] TYPE a = x, b = y;` (a value of None declares without initializing)."""

    c_type: str
    items: tuple  # ((name, value or None), ...)
    const: bool = False
    uses: frozenset = field(default=frozenset(), compare=False)


@dataclass(frozen=True)
class Assign(Node):
    """`target = value;` (or another assignment operator)."""

    target: str
    value: str
    op: str = "="
    uses: frozenset = field(default=frozenset(), compare=False)


@dataclass(frozen=True)
class Call(Node):
    """`function(args);`: a call statement (an outlined nest, the region function)."""

    function: str
    args: tuple
    uses: frozenset = field(default=frozenset(), compare=False)


@dataclass(frozen=True)
class Return(Node):
    """`return value;` (`return;` without one)."""

    value: str = ""
    uses: frozenset = field(default=frozenset(), compare=False)


@dataclass(frozen=True)
class Comment(Node):
    """`/* text */`; a text of several lines keeps their indentation after the first."""

    text: str


@dataclass(frozen=True)
class Directive(Node):
    """A preprocessor line (`#include`, `#define`, `#if`...), always at the line's start."""

    text: str


@dataclass(frozen=True)
class Blank(Node):
    """An empty line between definitions."""


@dataclass(frozen=True)
class Below(Node):
    """A loop's or a branch's one statement on the line below its header, one level in."""

    body: Node

    def children(self) -> tuple:
        return (self.body,)


@dataclass(frozen=True)
class Label(Node):
    """A goto target."""

    name: str


@dataclass(frozen=True)
class Pragma(Node):
    """`#pragma TEXT` on a line of its own (loops carry their own: see For)."""

    text: str


@dataclass(frozen=True)
class Block(Node):
    """`{ ... }`; `note` is printed as a comment after the brace."""

    body: tuple
    note: str = ""

    def children(self) -> tuple:
        return self.body


@dataclass(frozen=True)
class Seq(Node):
    """Statements in a row, without braces (what a builder returns when it makes several)."""

    body: tuple

    def children(self) -> tuple:
        return self.body


@dataclass(frozen=True)
class For(Node):
    """`for (TYPE var = lo; var <= hi; var += step) body` with its OpenMP properties:
    `parallel` "" (serial), "for" (inside a Parallel region) or "parallel for"; `simd`;
    `collapse` loops; `threads` and `condition` (num_threads and if clauses); `schedule`;
    `reduction`, a reduction clause's "operator:variable"; `unroll` (plain loops only: gcc
    takes no unroll pragma after `omp simd`)."""

    var: str
    lo: str
    hi: str
    body: Node
    step: str = ""  # "" steps by one (var++), else var += step
    c_type: str = "int64_t"
    inclusive: bool = True
    parallel: str = ""
    simd: bool = False
    collapse: int = 1
    threads: str = ""
    condition: str = ""
    schedule: str = ""
    uses: frozenset = field(default=frozenset(), compare=False)
    reduction: str = ""
    unroll: int = 0  # a plain loop unrolled this many times (`#pragma GCC unroll`; clang too)

    def children(self) -> tuple:
        return (self.body,)

    def pragma(self) -> str:
        """The `#pragma omp` line of this loop, its unroll pragma, or "" for a plain loop."""
        if not (self.parallel or self.simd):
            return f"#pragma GCC unroll {self.unroll}" if self.unroll else ""
        words = ["#pragma omp"]
        words += [self.parallel] if self.parallel else []
        words += ["simd"] if self.simd else []
        words += [f"collapse({self.collapse})"] if self.collapse > 1 else []
        words += [f"num_threads({self.threads})"] if self.threads else []
        words += [f"schedule({self.schedule})"] if self.schedule else []
        words += [f"if(parallel: {self.condition})"] if self.condition else []
        words += [f"reduction({self.reduction})"] if self.reduction else []
        return " ".join(words)

    def header(self) -> str:
        test = "<=" if self.inclusive else "<"
        step = f"{self.var} += {self.step}" if self.step else f"{self.var}++"
        return f"for ({self.c_type} {self.var} = {self.lo}; {self.var} {test} {self.hi}; {step})"


@dataclass(frozen=True)
class Parallel(Node):
    """`#pragma omp parallel num_threads(threads) if(parallel: condition)` over a block."""

    body: Node
    threads: str
    condition: str = ""

    def children(self) -> tuple:
        return (self.body,)


@dataclass(frozen=True)
class If(Node):
    """`if (cond) then [else otherwise]`; `otherwise` may be another If (an else-if chain)."""

    cond: str
    then: Node
    otherwise: Node | None = None
    uses: frozenset = field(default=frozenset(), compare=False)

    def children(self) -> tuple:
        return (self.then,) if self.otherwise is None else (self.then, self.otherwise)


@dataclass(frozen=True)
class Stage(Node):
    """The code computing one stage (`kind` "function" or "reduction"), headed by a comment
    naming it."""

    kind: str
    name: str
    body: tuple

    def children(self) -> tuple:
        return self.body


@dataclass(frozen=True)
class Pointer:
    """A pointer parameter, `[const] TYPE *restrict NAME`: without `restrict` in a declaration
    for cffi's cdef, which does not take it."""

    c_type: str
    name: str
    const: bool = False

    def text(self, restrict: bool = True) -> str:
        qualifier = "restrict " if restrict else ""
        return f"{'const ' if self.const else ''}{self.c_type} *{qualifier}{self.name}"


@dataclass(frozen=True)
class Prototype(Node):
    """A function's head, `[qualifiers] [attributes] returns name(params)`; as a node, its
    declaration. It gives the cdef, a header's and a unit's declarations."""

    returns: str
    name: str
    params: tuple
    qualifiers: str = ""
    attributes: str = ""

    def signature(self, restrict: bool = True) -> str:
        """The head; without `restrict` on its Pointer parameters for cffi."""
        lead = "".join(f"{part} " for part in (self.qualifiers, self.attributes) if part)
        params = [p.text(restrict) if isinstance(p, Pointer) else p for p in self.params]
        space = "" if self.returns.endswith("*") else " "
        return f"{lead}{self.returns}{space}{self.name}({', '.join(params)})"


# how a Function is laid out: its brace on the line below its head, on the head's line, or
# the whole function on one line (the helpers)
BRACE_BELOW, BRACE_ON_HEAD, ONE_LINE = "brace below", "brace on head", "one line"


@dataclass(frozen=True)
class Function(Node):
    """A C function: `[qualifiers] [attributes] returns name(params) { body }`; `stages` are
    those its loops compute (an outlined nest), for the printer's loop map; `form` its
    layout (BRACE_BELOW, BRACE_ON_HEAD, ONE_LINE)."""

    returns: str
    name: str
    params: tuple
    body: tuple
    qualifiers: str = "static PIM_NOINLINE"
    stages: tuple = ()
    attributes: str = ""
    form: str = BRACE_BELOW

    def children(self) -> tuple:
        return self.body

    @property
    def prototype(self) -> Prototype:
        return Prototype(self.returns, self.name, self.params, self.qualifiers, self.attributes)

    def signature(self, restrict: bool = True) -> str:
        """The function's head; without `restrict` on its Pointer parameters for cffi."""
        return self.prototype.signature(restrict)


# statements printed on one line, after a branch's condition too
SIMPLE = (Line, Declare, Assign, Call, Return)


def _statement(node) -> str:
    """The one line of C of a simple statement (SIMPLE)."""
    if isinstance(node, Declare):
        items = ", ".join(name if v is None else f"{name} = {v}" for name, v in node.items)
        return f"{'const ' if node.const else ''}{node.c_type} {items};"
    if isinstance(node, Assign):
        return f"{node.target} {node.op} {node.value};"
    if isinstance(node, Call):
        return f"{node.function}({', '.join(node.args)});"
    if isinstance(node, Return):
        return f"return {node.value};" if node.value else "return;"
    return node.text


def _one_line(node) -> str:
    """A statement, a branch or a block as one line of C (a helper's body)."""
    if isinstance(node, SIMPLE):
        return _statement(node)
    if isinstance(node, If):
        otherwise = "" if node.otherwise is None else f" else {_one_line(node.otherwise)}"
        return f"if ({node.cond}) {_one_line(node.then)}{otherwise}"
    if isinstance(node, (Block, Seq)):
        inner = " ".join(_one_line(child) for child in node.body)
        return f"{{ {inner} }}" if isinstance(node, Block) else inner
    raise TypeError(f"{type(node).__name__} has no one-line form")


def walk(node: Node):
    """Every node of the tree, parents before children."""
    stack = [node]
    while stack:
        top = stack.pop()
        yield top
        stack.extend(reversed(top.children()))


def names_used(node: Node) -> frozenset:
    """The names (buffers, helpers) the C text of `node` and its descendants refers to."""
    found: set = set()
    for n in walk(node):
        found |= getattr(n, "uses", frozenset())
    return frozenset(found)


def statements(node: Node) -> int:
    """How many statements a tree holds (loops and branches count one each): its size for
    cutting code into units, whatever the printer's layout."""
    kinds = SIMPLE + (For, If, Pragma, Comment, Label)
    return sum(1 for n in walk(node) if isinstance(n, kinds))


def for_loops(node: Node) -> list:
    """The For nodes of a tree, outermost first in source order."""
    return [n for n in walk(node) if isinstance(n, For)]


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
        self.emit(_statement(node), depth)

    _declare = _assign = _call = _return = _line

    def _comment(self, node, depth, stages, notes):
        self.emit(f"/* {node.text} */", depth)

    def _directive(self, node, depth, stages, notes):
        self.lines.append(node.text)

    def _blank(self, node, depth, stages, notes):
        self.lines.append("")

    def _below(self, node, depth, stages, notes):
        self.node(node.body, depth, stages, notes)

    def _prototype(self, node, depth, stages, notes):
        self.emit(node.signature() + ";", depth)

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
            self.emit(brace + " " + _statement(body[0]), depth)  # a scope: `{ const int a = 1;`
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
            self.lines[-1] += " " + _statement(node)
        else:
            self.node(node, depth + 1, stages, notes)
