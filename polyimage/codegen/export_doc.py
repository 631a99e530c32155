"""The comment of an exported library's header: what each parameter is (a size, with the
extents it gives, or a value the pipeline computes with), each buffer's layout and which
point of its stage an element holds, the constraints, and how the functions are called;
lines at most 80 columns wide."""

from __future__ import annotations

import re
import textwrap

from ..algebra.simplify import simplify
from ..dsl import expr as E
from ..dsl.constructs import Image
from ..dsl.types import Half


def header_documentation(name: str, params: list, buffers: list, constraints, estimates) -> list:
    """The lines of the header's comment on the functions: what each parameter is, each
    buffer's extents and layout, the constraints, and how the functions are called."""
    upper = name.upper()
    lines = [
        line for p, c in params for line in _wrapped(_parameter_text(p, c, buffers, estimates), 1)
    ]
    lines += _wrapped(
        "Buffers, each with a pointer to its extents (int64_t, one per dimension), dense and "
        "row-major in the order of their dimensions (planar: a channel dimension written first "
        "is the outermost):",
        0,
    )
    for b in buffers:
        shape = ", ".join(_comment(x) for x in b.extents)
        half = " (Half: IEEE binary16 bits)" if b.func.typ is Half else ""
        lines += _wrapped(f"{b.c_name} ({b.what}): {b.func.typ.c_name}[{shape}]{half}", 1)
        lines += _wrapped(_placement(b), 2)
    if constraints:
        lines.append(" * Constraints every call must meet:")
        lines += [line for c in constraints for line in _wrapped(_comment(c), 1)]
    return (
        lines
        + [" *"]
        + _wrapped(
            f"{name}_extents(parameters, extents) writes the extents every buffer must have, "
            f"the inputs' then the outputs', {upper}_EXTENT_COUNT values in all.",
            0,
        )
        + _wrapped(
            f"{name}(workspace, nthreads, parameters, buffers) runs the pipeline. workspace: "
            f"NULL, or from {name}_workspace_new() to keep buffers for the next call (one per "
            "thread calling at once); nthreads: 0 for OpenMP's default. Both check every "
            f"parameter and extent first and return {upper}_ERROR_ARGUMENT, touching no "
            f"buffer, when one is wrong; {name}_error() then says which (the calling thread's "
            "last message).",
            0,
        )
    )


# the header's comment lines fit 80 columns (continued two spaces further in)
COMMENT_WIDTH = 80


def _wrapped(text: str, depth: int) -> list:
    """The comment lines of `text` at indent `depth` (0: the margin, 1: an item, 2: its
    detail), at most COMMENT_WIDTH wide unless a word is longer."""
    first = " * " + "  " * depth
    return textwrap.wrap(
        text,
        COMMENT_WIDTH,
        initial_indent=first,
        subsequent_indent=first + ("  " if depth else ""),
        break_long_words=False,
        break_on_hyphens=False,
    )


def _parameter_text(p, c_name: str, buffers: list, estimates) -> str:
    """One parameter documented: its C name and type, the extents it sizes (or that it is a
    value the pipeline computes with), and its typical value (the compile's estimate)."""
    sizes = [
        f"{b.c_name} dimension {d} has {_comment(extent)}"
        for b in buffers
        for d, extent in enumerate(b.extents)
        if any(isinstance(s, E.Parameter) and s.name == p.name for s in E.walk(extent))
    ]
    role = f"a size: {'; '.join(sizes)}" if sizes else "a value the pipeline computes with"
    typical = f" (typical: {estimates[p.name]})" if p.name in estimates else ""
    return f"{c_name} ({p.typ.c_name}): {role}{typical}"


def _placement(b) -> str:
    """Which point of its stage an element of buffer `b` holds."""
    func = b.func
    index = [f"i{d}" for d in range(func.ndim)]
    if isinstance(func, Image):
        return f"element [{', '.join(index)}] is {func.name}({', '.join(index)})"
    points = []
    for i, iv in zip(index, func.intervals):
        lb = simplify(iv.lb)
        points.append(i if isinstance(lb, E.Const) and lb.value == 0 else f"{_comment(lb)} + {i}")
    return (
        f"element [{', '.join(index)}] holds {func.name}({', '.join(points)}), its domain's point"
    )


def _comment(e) -> str:
    return re.sub(r"\*/", "* /", str(e))
