"""The subscripts a loop nest's references print as (CExprPrinter.address): a value the printer
carries, so a nest that stores into other storage or keeps a scan's value in a variable prints
with a changed copy of it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..algebra.affine import coefficient, is_affine
from . import scans
from .cexpr import CExprPrinter, narrow_gather
from .ctext import CText, cat, reading, used
from .storage import fixed_int32


@dataclass(frozen=True)
class Addresses:
    """References into `storage` ({stage name: StageStorage}), every index checked for the
    group numbered `check_group` in the checked build (None: unchecked); a read of a stage of
    `carried` ({stage: (scan variable, dimension, C name)}) one step back along its scan is the
    C variable holding that value; a reference in `shifts` ({id(reference): C text}) lies
    that many elements further on (a register block's row, codegen.vector_blocks); one in
    `replaced` ({id(reference): C text}) prints as that text (a packed copy, codegen.packing)."""

    storage: Mapping
    check_group: int | None = None
    carried: Mapping = field(default_factory=dict)
    shifts: Mapping = field(default_factory=dict)
    replaced: Mapping = field(default_factory=dict)

    def __call__(self, ref, printer: CExprPrinter) -> CText:
        if id(ref) in self.replaced:
            return CText(self.replaced[id(ref)])
        carried = self.carried.get(ref.func.name)
        if carried is not None and scans.one_step_back(ref, *carried[:2]):
            return CText(carried[2])
        store = self.storage[ref.func.name]
        text = cat(store.buffer, "[", self.offset(ref, printer), "]")
        typ = ref.func.typ.c_name
        return text if store.c_type == typ else cat(f"(({typ})", text, ")")

    def offset(self, ref, printer: CExprPrinter) -> CText:
        """The element offset `ref` reads or writes in its stage's storage (int32 for a
        narrow gather in the narrow copy of a loop, see LoopEmitter._narrow_or_wide), using
        the read."""
        store = self.storage[ref.func.name]
        narrow = printer.narrow and narrow_gather(ref)
        index = printer.narrow_index if narrow else printer.index
        idx = [index(a, store.lb[d], store.upper(d)) for d, a in enumerate(ref.args)]
        offset = store.offset(idx, narrow, self.check_group)
        shift = self.shifts.get(id(ref))
        if shift is not None:
            offset = cat("(", offset, f" + {shift})")
        gathered = used("", ("narrow", (store, fixed_int32(ref.func)))) if narrow else ""
        return cat(offset, reading(store.buffer), gathered)


def addresses_of(printer: CExprPrinter) -> Addresses:
    """The Addresses `printer` prints references with."""
    assert isinstance(printer.address, Addresses), "a loop nest's printer"
    return printer.address


def offset_of(ref, printer: CExprPrinter) -> CText:
    """The element offset of `ref` in the storage `printer` addresses (Addresses.offset)."""
    return addresses_of(printer).offset(ref, printer)


def storing(printer: CExprPrinter, stage_name: str, store) -> CExprPrinter:
    """`printer` addressing stage `stage_name` in `store` (a StageStorage) instead."""
    addresses = addresses_of(printer)
    storage = {**addresses.storage, stage_name: store}
    return printer.with_(address=dataclasses.replace(addresses, storage=storage))


def shifting(printer: CExprPrinter, shifts: Mapping, replaced=None) -> CExprPrinter:
    """`printer` reading and writing each reference of `shifts` ({id(reference): C text of
    elements}) that much further on, and printing each of `replaced` ({id(reference): C
    text}) as its text."""
    addresses = addresses_of(printer)
    changed = dataclasses.replace(addresses, shifts=shifts, replaced=replaced or {})
    return printer.with_(address=changed)


def element_step(ref, var, store) -> str | None:
    """C text of how many elements reference `ref` moves in `store` (its stage's
    StageStorage) when integer variable `var` grows by one, where every index is affine and
    moves by a constant step with `var` and no dimension it moves along is folded; None
    otherwise."""
    terms = []
    for d, arg in enumerate(ref.args):
        step = coefficient(arg, var)
        if step == 0:
            continue
        if step is None or not is_affine(arg) or d in store.fold:
            return None
        strides = [store.stride(e) for e in range(d + 1, len(ref.args))]
        terms.append(" * ".join([str(step), *strides]))
    return " + ".join(terms) if terms else None


def carrying(printer: CExprPrinter, stage_name: str, carried) -> CExprPrinter:
    """`printer` reading stage `stage_name` one step back along its scan from a variable:
    `carried` is (scan variable, dimension, C name) (scans.carried_value)."""
    addresses = addresses_of(printer)
    held = {**addresses.carried, stage_name: carried}
    return printer.with_(address=dataclasses.replace(addresses, carried=held))
