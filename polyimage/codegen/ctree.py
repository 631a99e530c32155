"""A small C syntax tree between the group plans and the C text (its one printer: codegen.cprint).

Emitters build these frozen nodes, the runtime around the loop nests and the helpers too;
`cprint.print_c` turns a tree into text. Expressions are C texts (printed by
codegen.cexpr as codegen.ctext values); a node made from them records the buffers and helpers
they use in `uses`, so that a subtree knows what it needs (an outlined nest's parameters, a
unit's helpers).
"""

from __future__ import annotations

from dataclasses import dataclass, field


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

    def statement(self) -> str:
        return self.text


@dataclass(frozen=True)
class Declare(Node):
    """`[const] TYPE a = x, b = y;` (a value of None declares without initializing)."""

    c_type: str
    items: tuple  # ((name, value or None), ...)
    const: bool = False
    uses: frozenset = field(default=frozenset(), compare=False)

    def statement(self) -> str:
        items = ", ".join(name if v is None else f"{name} = {v}" for name, v in self.items)
        return f"{'const ' if self.const else ''}{self.c_type} {items};"


@dataclass(frozen=True)
class Assign(Node):
    """`target = value;` (or another assignment operator)."""

    target: str
    value: str
    op: str = "="
    uses: frozenset = field(default=frozenset(), compare=False)

    def statement(self) -> str:
        return f"{self.target} {self.op} {self.value};"


@dataclass(frozen=True)
class Call(Node):
    """`function(args);`: a call statement (an outlined nest, the region function)."""

    function: str
    args: tuple
    uses: frozenset = field(default=frozenset(), compare=False)

    def statement(self) -> str:
        return f"{self.function}({listed(self.args)});"


@dataclass(frozen=True)
class Return(Node):
    """`return value;` (`return;` without one)."""

    value: str = ""
    uses: frozenset = field(default=frozenset(), compare=False)

    def statement(self) -> str:
        return f"return {self.value};" if self.value else "return;"


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
class Typedef(Node):
    """`typedef struct { fields } name;`, its fields Declare nodes."""

    name: str
    fields: tuple


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
        return f"{lead}{self.returns}{space}{self.name}({listed(params)})"

    def declaration(self, restrict: bool = True) -> str:
        return self.signature(restrict) + ";"


def listed(items) -> str:
    """`items` (parameters, arguments) joined by ", ", or by "," before one that begins with
    a line break: a list wrapped onto a line of its own."""
    return "".join(
        ("," if item.startswith("\n") else ", ") + item if k else item
        for k, item in enumerate(items)
    )


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


def defined(prototype: Prototype, body, form: str = BRACE_BELOW) -> Function:
    """The function `prototype` declares, with `body`."""
    head = (prototype.returns, prototype.name, prototype.params, tuple(body))
    return Function(*head, prototype.qualifiers, attributes=prototype.attributes, form=form)


def separated(parts) -> Seq:
    """`parts` (definitions) with an empty line between each two."""
    return Seq(tuple(node for k, part in enumerate(parts) for node in (Blank(), part)[not k :]))


# statements printed on one line (their `statement()`), after a branch's condition too
SIMPLE = (Line, Declare, Assign, Call, Return)


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
