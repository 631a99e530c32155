"""C text as a value that carries what it uses, and the nodes built from such values.

A CText is the text of an expression together with the names its text refers to: buffers it
reads or writes (`("read", buffer)`, `("write", buffer)`), helper functions it calls
(`("helper", (op, C type))`), gathers it narrows (`("narrow", (storage, fixed))`). Texts
combine by `cat` and `join`, which union their uses; a node made from them (`declare`,
`assign`, `call`, `if_chain`) records the uses of the values it holds (ctree's `uses`), so
what a subtree uses never depends on the order in which its texts were printed.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ctree import ONE_LINE, Assign, Call, Declare, Function, If, names_used
from .names import HELPER


@dataclass(frozen=True)
class CText:
    """C text and the names (buffers, helpers) it uses. Not formattable: an f-string would
    keep the text and drop the uses, so texts combine by `cat`."""

    text: str
    uses: frozenset = frozenset()

    def __format__(self, spec: str) -> str:
        raise TypeError("a CText in an f-string drops its uses: combine it with cat()")

    def __str__(self) -> str:
        raise TypeError("a CText as str drops its uses: read .text")


Text = CText | str


def text_of(value: Text) -> str:
    """The C text of `value`."""
    return value.text if isinstance(value, CText) else value


def uses_of(*values) -> frozenset:
    """The union of what `values` (CTexts, strs, None) use."""
    found: frozenset = frozenset()
    for value in values:
        if isinstance(value, CText):
            found |= value.uses
    return found


def cat(*parts: Text) -> CText:
    """The texts of `parts` joined, using what any of them uses."""
    return CText("".join(text_of(p) for p in parts), uses_of(*parts))


def join(separator: str, parts) -> CText:
    """The texts of `parts` joined by `separator`, using what any of them uses."""
    parts = list(parts)
    return CText(separator.join(text_of(p) for p in parts), uses_of(*parts))


def used(text: str, *uses) -> CText:
    """`text` that uses `uses` (each a (kind, name) pair)."""
    return CText(text, frozenset(uses))


def reading(buffer: str) -> CText:
    """No text, using a read of `buffer`."""
    return used("", ("read", buffer))


def writing(buffer: str) -> CText:
    """No text, using a write of `buffer`."""
    return used("", ("write", buffer))


def declare(c_type: str, items, const: bool = True) -> Declare:
    """`[const] c_type name = value, ...;` over `items` ((name, value or None)); it uses
    what its values use."""
    items = tuple(items)
    return Declare(
        c_type,
        tuple((name, None if value is None else text_of(value)) for name, value in items),
        const,
        uses_of(*(value for _, value in items)),
    )


def assign(target: Text, value: Text, op: str = "=") -> Assign:
    """`target op value;`, using what both use."""
    return Assign(text_of(target), text_of(value), op, uses_of(target, value))


def call(function: str, args) -> Call:
    """`function(args);`, using what its arguments use."""
    args = tuple(args)
    return Call(function, tuple(text_of(a) for a in args), uses_of(*args))


def if_chain(branches):
    """`if (c0) a0 else if (c1) a1 ... [else an]` from [(condition or None, node)]: a branch
    without a condition ends the chain; each If uses what its condition uses."""
    node = None
    for test, then in reversed(branches):
        node = then if test is None else If(text_of(test), then, node, uses_of(test))
    return node


def helpers_used(nodes) -> tuple:
    """(op, C type) of every helper the trees `nodes` call, sorted."""
    return tuple(sorted({name for n in nodes for kind, name in names_used(n) if kind == "helper"}))


def helper_function(returns: str, name: str, params: tuple, *body) -> Function:
    """A helper the generated code calls: `PIM_INLINE returns name(params) { body }`, on one
    line, inlined wherever it is called (names.HELPER)."""
    return Function(returns, name, params, body, qualifiers=HELPER, form=ONE_LINE)


def copy_bits(target: str, source: str) -> Call:
    """`__builtin_memcpy(&target, &source, sizeof target)`: a value's bits as another type."""
    return Call("__builtin_memcpy", (f"&{target}", f"&{source}", f"sizeof {target}"))
