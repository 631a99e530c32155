"""The pieces of a stage's definition: Case and Reduce (and Op, the reduction operators), the
plain value that always holds, and DefinitionList, the `f.defn` list that re-checks every edit."""

from __future__ import annotations

import enum
from typing import Any, Callable, Iterable, Protocol, Union

from . import expr as E


class Defined(Protocol):
    """What owns a DefinitionList (a Function of dsl.constructs), as the list reads it."""

    name: str
    _defn: Any

    @property
    def cases(self) -> tuple: ...

    @property
    def defn(self) -> Any: ...

    @defn.setter
    def defn(self, pieces: Any) -> None: ...


class Op(enum.Enum):
    """How a Reduce combines a value into its target: `Op.Sum` adds it, `Op.Mul` multiplies,
    `Op.Min` and `Op.Max` keep the smaller or larger (NaN if either is NaN)."""

    Sum = "+"
    Mul = "*"
    Min = "min"
    Max = "max"


class Case:
    """One piece of a piecewise definition: where `cond` holds, the value is `value`.

    In a Function's definition the Cases are tried in order and the first that holds gives
    the value; in a Reduction's, every Case that holds applies its Reduce.

    Args:
        cond: a Condition on the stage's variables and Parameters (`x == 0`,
            `(x > 0) & (y < C - 1)`).
        value: the value there: an expression or a number; a `Reduce` in a Reduction.

    Raises:
        TypeError: `cond` is not a Condition.
    """

    def __init__(self, cond: E.BoolExpr, value: Reduce | E.ExprLike):
        if not isinstance(cond, E.BoolExpr):
            raise TypeError(f"Case needs a Condition first, got `{cond}`")
        self.cond: E.BoolExpr | None = cond
        self.value = value if isinstance(value, Reduce) else E.to_expr(value)

    @property
    def condition(self) -> E.BoolExpr | None:
        """PolyMage's name of `cond`."""
        return self.cond

    @property
    def expression(self) -> Reduce | E.Expr:
        """PolyMage's name of `value`."""
        return self.value

    def __repr__(self) -> str:
        return f"Case({self.cond}, {self.value})"


class Reduce:
    """`Reduce(r(idx...), value, Op.Sum)`: combine `value` into element `idx` of Reduction r,
    at every point of r's reduction domain.

    Args:
        target: the Reduction read at the point to update, `r(i, j)`: its indices may be
            any integer expressions of the reduction variables (a histogram's bin computed
            from the data is clamped into the domain).
        value: the value combined into it, converted to the Reduction's type.
        op: the operator: `Op.Sum`, `Op.Mul`, `Op.Min` or `Op.Max`.

    Raises:
        TypeError: `target` is not a reference to a stage, or `op` is not an Op.
    """

    def __init__(self, target: E.Reference, value: E.ExprLike, op: Op):
        if not isinstance(target, E.Reference):
            raise TypeError(f"Reduce needs a reference to its Reduction first, got `{target}`")
        if not isinstance(op, Op):
            raise TypeError(f"Reduce operator must be Op.Sum, Op.Mul, Op.Min or Op.Max, got {op!r}")
        self.target, self.value, self.op = target, E.to_expr(value), op

    def __repr__(self) -> str:
        return f"Reduce({self.target}, {self.value}, Op.{self.op.name})"


# what a stage's definition lists: Cases (with Reduce in a Reduction), and a plain value last
Piece = Union[Case, Reduce, E.ExprLike]


class DefinitionList(list):
    """`f.defn` as a list: every edit re-runs the checks of `f.defn = [...]` on the edited list
    and leaves `f` unchanged when they fail. Before `f` is defined the list cannot be read
    (the compiler reports the missing definition), only extended."""

    def __init__(self, owner: Defined, cases: Iterable[Case]):
        super().__init__(cases)
        self._owner = owner
        self._source = owner._defn

    def _require_definition(self) -> None:
        if self._source is None:
            self._owner.cases  # raises the missing definition

    def __iter__(self) -> Any:
        self._require_definition()
        return super().__iter__()

    def __len__(self) -> int:
        self._require_definition()
        return super().__len__()

    def __getitem__(self, index: Any) -> Any:
        self._require_definition()
        return super().__getitem__(index)

    def __reversed__(self) -> Any:
        self._require_definition()
        return super().__reversed__()

    def __contains__(self, piece: object) -> bool:
        self._require_definition()
        return super().__contains__(piece)

    def __repr__(self) -> str:
        if self._source is None:
            return f"<{self._owner.name}.defn, not set yet>"
        return super().__repr__()

    def _edit(self, change: Callable[[list], Any]) -> Any:
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
        super().__setitem__(slice(None), owner.cases)
        return result

    def append(self, piece: Piece) -> None:
        self._edit(lambda pieces: pieces.append(piece))

    def extend(self, more: Iterable[Piece]) -> None:
        more = list(more)
        self._edit(lambda pieces: pieces.extend(more))

    def insert(self, index: Any, piece: Piece) -> None:
        self._edit(lambda pieces: pieces.insert(index, piece))

    def __iadd__(self, more: Iterable[Piece]) -> DefinitionList:  # type: ignore[misc,override]  # as list's +=
        self.extend(more)
        return self

    def __imul__(self, times: Any) -> DefinitionList:  # type: ignore[misc]  # as list's *=
        self._edit(lambda pieces: pieces.__imul__(times))
        return self

    def __setitem__(self, index: Any, piece: Any) -> None:
        self._edit(lambda pieces: pieces.__setitem__(index, piece))

    def __delitem__(self, index: Any) -> None:
        self._edit(lambda pieces: pieces.__delitem__(index))

    def pop(self, index: Any = -1) -> Any:
        return self._edit(lambda pieces: pieces.pop(index))

    def remove(self, piece: Piece) -> None:
        self._edit(lambda pieces: pieces.remove(piece))

    def clear(self) -> None:
        self._edit(lambda pieces: pieces.clear())

    def reverse(self) -> None:
        self._edit(lambda pieces: pieces.reverse())

    def sort(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            f"the Cases of {self._owner.name}.defn are tried in order and cannot be sorted"
        )


class Always(Case):
    """A Case whose condition always holds (a plain value in defn)."""

    def __init__(self, value: Reduce | E.ExprLike):
        self.cond = None
        self.value = value if isinstance(value, Reduce) else E.to_expr(value)


def rebuild_case(case: Case, value: Reduce | E.Expr) -> Case:
    """A copy of `case` (of its own class) with another value."""
    new = object.__new__(type(case))
    new.cond, new.value = case.cond, value
    return new
