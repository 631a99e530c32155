"""The subscripts a loop nest's references print as (CExprPrinter.address): a value the printer
carries, so a nest that stores into other storage or keeps a scan's value in a variable prints
with a changed copy of it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from . import scans
from .cexpr import CExprPrinter, narrow_gather
from .ctext import CText, cat, reading, used
from .storage import fixed_int32


@dataclass(frozen=True)
class Addresses:
    """References into `storage` ({stage name: StageStorage}), every index checked for the
    group numbered `check_group` in the checked build (None: unchecked); a read of a stage of
    `carried` ({stage: (scan variable, dimension, C name)}) one step back along its scan is the
    C variable holding that value."""

    storage: Mapping
    check_group: int | None = None
    carried: Mapping = field(default_factory=dict)

    def __call__(self, ref, printer: CExprPrinter) -> CText:
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


def carrying(printer: CExprPrinter, stage_name: str, carried) -> CExprPrinter:
    """`printer` reading stage `stage_name` one step back along its scan from a variable:
    `carried` is (scan variable, dimension, C name) (scans.carried_value)."""
    addresses = addresses_of(printer)
    held = {**addresses.carried, stage_name: carried}
    return printer.with_(address=dataclasses.replace(addresses, carried=held))
