"""Where a stage's values live in C: the element type of its full buffer and the names of its
origin and extent in every dimension (StageStorage), which give the offset of an index."""

from __future__ import annotations

from ..algebra.affine import data_dependent
from ..dsl import expr as E
from ..dsl.constructs import Image
from ..dsl.reduction import Reduction
from ..graph.dag import StageGraph, definition_exprs
from .checked import checked_index
from .ctext import CText, text_of, uses_of
from .ctree import Node, names_used
from .names import PREFIX


def gathered_stages(graph: StageGraph) -> frozenset:
    """Stages some consumer reads at a data-dependent index (a table lookup)."""
    return frozenset(
        ref.func.name
        for s in graph.stages
        if not isinstance(s.func, Image)
        for e in definition_exprs(s.func)
        for ref in E.references(e)
        if data_dependent(ref)
    )


def storage_type(graph: StageGraph, func, gathered: frozenset) -> str:
    """The C element type of a stage's full buffer: its own, except that narrow integer
    tables read at data-dependent indices are kept in int32, which the vectorizer can gather
    (there is no gather of 8- or 16-bit elements). Inputs, outputs and Reductions keep
    theirs."""
    typ = func.typ
    if (
        func.name in gathered
        and typ.is_int
        and typ.bits < 32
        and not isinstance(func, Image)
        and not isinstance(func, Reduction)
        and func.name not in graph.outputs
    ):
        return "int32_t"
    return typ.c_name


def fixed_int32(func) -> bool:
    """Whether the full buffer of stage `func` has constant bounds within int32 and fewer
    than 2^31 elements (its domain's box: a lookup table, a histogram)."""
    if isinstance(func, Image):
        return False
    elements = 1
    for iv in func.intervals:
        if not (isinstance(iv.lb, E.Const) and isinstance(iv.ub, E.Const)):
            return False
        if iv.lb.value < -(2**31) or iv.ub.value > 2**31 - 1:
            return False
        elements *= max(iv.ub.value - iv.lb.value + 1, 0)
    return elements <= 2**31 - 1


class StageStorage:
    """C names describing a stage's buffer: element type, origin and extent of every
    dimension."""

    def __init__(self, buffer: str, ndim: int, c_type: str, label: str = ""):
        """`label` names the buffer in the checked build's messages."""
        self.buffer, self.c_type, self.label = buffer, c_type, label or buffer
        self.lb = [f"{PREFIX}lb_{buffer}_{d}" for d in range(ndim)]
        self.n = [f"{PREFIX}n_{buffer}_{d}" for d in range(ndim)]
        self.fold: dict = {}
        self.pitch: dict = {}  # dimension -> C name of its padded length (codegen.tiled)

    def names(self) -> list:
        """The C names of every bound the offsets use (what an outlined nest takes)."""
        return self.lb + self.n + list(self.fold.values()) + list(self.pitch.values())

    def stride(self, d: int) -> str:
        """The C name of how many elements dimension `d` spans in memory: its fold, its
        padded length, or its extent."""
        return self.fold.get(d) or self.pitch.get(d) or self.n[d]

    def offset(self, indices, narrow=False, check=None) -> CText:
        """Row-major element offset of the given index texts (int64, or int32 if `narrow`),
        using what they use; with `check` (the number of the group computing), each index is
        checked at run time (codegen.checked). A folded dimension `d` (`fold[d]` names its
        extent, a power of two) keeps index modulo that extent: a sliding window's rows reuse
        the same storage."""
        cast = "(int32_t)" if narrow else ""

        def term(d):
            index = text_of(indices[d])
            if check is not None:
                index = checked_index(index, self.lb[d], self.n[d], self.label, d, check)
                index = f"({index} + {self.lb[d]})" if d in self.fold else index
            if d in self.fold:
                return f"({index} & ({cast}{self.fold[d]} - 1))"
            return index if check is not None else f"({index} - {cast}{self.lb[d]})"

        text = term(0)
        for d in range(1, len(indices)):
            text = f"({text} * {cast}{self.stride(d)} + {term(d)})"
        return CText(text, uses_of(*indices))

    def fits_int32(self) -> str:
        """C condition: fewer than 2^31 elements and every index within int32."""
        bounds = " && ".join(
            f"{lb} >= INT32_MIN && {lb} + {n} - 1 <= INT32_MAX" for lb, n in zip(self.lb, self.n)
        )
        elements = " * ".join(self.pitch.get(d, n) for d, n in enumerate(self.n))
        return f"({bounds} && {elements} <= INT32_MAX)"

    def upper(self, d: int) -> str:
        return f"({self.lb[d]} + {self.n[d]} - 1)"


def buffer_arguments(node: Node, stores, bounds: bool = True) -> tuple[list, list]:
    """(parameters, arguments) that pass an outlined function every buffer `node` reads or
    writes (`stores`: StageStorage by buffer name; others are the node's own): its pointer,
    const where it is only read, then, with `bounds`, the names of its bounds."""
    used = names_used(node)
    written = {name for kind, name in used if kind == "write"}
    params, values = [], []
    for buffer in sorted({name for kind, name in used if kind in ("read", "write")} & set(stores)):
        store = stores[buffer]
        params.append(f"{'' if buffer in written else 'const '}{store.c_type} *restrict {buffer}")
        values.append(buffer)
        if bounds:
            params += [f"int64_t {text}" for text in store.names()]
            values += store.names()
    return params, values
