"""The pieces of a stage's definition: Case and Reduce (and Op, the reduction operators), the
plain value that always holds, and DefinitionList, the `f.defn` list that re-checks every edit."""

from __future__ import annotations

import enum

from . import expr as E


class Op(enum.Enum):
    """Reduction operators."""

    Sum = "+"
    Mul = "*"
    Min = "min"
    Max = "max"


class Case:
    """One piece of a piecewise definition: where `cond` holds, the value is `value`."""

    def __init__(self, cond, value):
        if not isinstance(cond, E.BoolExpr):
            raise TypeError(f"Case needs a Condition first, got `{cond}`")
        self.cond = cond
        self.value = value if isinstance(value, Reduce) else E.to_expr(value)

    @property
    def condition(self):
        """PolyMage's name of `cond`."""
        return self.cond

    @property
    def expression(self):
        """PolyMage's name of `value`."""
        return self.value

    def __repr__(self):
        return f"Case({self.cond}, {self.value})"


class Reduce:
    """`Reduce(r(idx...), value, Op.Sum)`: combine `value` into element `idx` of Reduction r."""

    def __init__(self, target, value, op):
        if not isinstance(target, E.Reference):
            raise TypeError(f"Reduce needs a reference to its Reduction first, got `{target}`")
        if not isinstance(op, Op):
            raise TypeError(f"Reduce operator must be Op.Sum, Op.Mul, Op.Min or Op.Max, got {op!r}")
        self.target, self.value, self.op = target, E.to_expr(value), op

    def __repr__(self):
        return f"Reduce({self.target}, {self.value}, Op.{self.op.name})"


class DefinitionList(list):
    """`f.defn` as a list: every edit re-runs the checks of `f.defn = [...]` on the edited list
    and leaves `f` unchanged when they fail. Before `f` is defined the list cannot be read
    (the compiler reports the missing definition), only extended."""

    def __init__(self, owner, cases):
        super().__init__(cases)
        self._owner = owner
        self._source = owner._defn

    def _require_definition(self):
        if self._source is None:
            self._owner.cases  # raises the missing definition

    def __iter__(self):
        self._require_definition()
        return super().__iter__()

    def __len__(self):
        self._require_definition()
        return super().__len__()

    def __getitem__(self, index):
        self._require_definition()
        return super().__getitem__(index)

    def __reversed__(self):
        self._require_definition()
        return super().__reversed__()

    def __contains__(self, piece):
        self._require_definition()
        return super().__contains__(piece)

    def __repr__(self):
        if self._source is None:
            return f"<{self._owner.name}.defn, not set yet>"
        return super().__repr__()

    def _edit(self, change):
        owner = self._owner
        if owner._defn is not self._source:
            raise RuntimeError(
                f"this list is an old copy of {owner.name}.defn, which was set "
                f"since; edit {owner.name}.defn itself"
            )
        pieces = list(super().__iter__())
        result = change(pieces)
        owner.defn = pieces
        self._source = owner._defn
        super().__setitem__(slice(None), owner._defn)
        return result

    def append(self, piece):
        self._edit(lambda pieces: pieces.append(piece))

    def extend(self, more):
        more = list(more)
        self._edit(lambda pieces: pieces.extend(more))

    def insert(self, index, piece):
        self._edit(lambda pieces: pieces.insert(index, piece))

    def __iadd__(self, more):
        self.extend(more)
        return self

    def __imul__(self, times):
        self._edit(lambda pieces: pieces.__imul__(times))
        return self

    def __setitem__(self, index, piece):
        self._edit(lambda pieces: pieces.__setitem__(index, piece))

    def __delitem__(self, index):
        self._edit(lambda pieces: pieces.__delitem__(index))

    def pop(self, index=-1):
        return self._edit(lambda pieces: pieces.pop(index))

    def remove(self, piece):
        self._edit(lambda pieces: pieces.remove(piece))

    def clear(self):
        self._edit(lambda pieces: pieces.clear())

    def reverse(self):
        self._edit(lambda pieces: pieces.reverse())

    def sort(self, *args, **kwargs):
        raise TypeError(
            f"the Cases of {self._owner.name}.defn are tried in order and cannot be sorted"
        )


class Always(Case):
    """A Case whose condition always holds (a plain value in defn)."""

    def __init__(self, value):
        self.cond = None
        self.value = value if isinstance(value, Reduce) else E.to_expr(value)


def rebuild_case(case: Case, value) -> Case:
    """A copy of `case` (of its own class) with another value."""
    new = object.__new__(type(case))
    new.cond, new.value = case.cond, value
    return new
