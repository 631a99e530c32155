"""Reduction: the stage whose points are built by Reduce updates (sums, histograms, matrix
products); a module of its own beside dsl.constructs, whose Function it extends."""

from __future__ import annotations

from typing import Iterable

from . import expr as E
from .cases import Case, Piece, Reduce, rebuild_case
from .constructs import Domain, Function, piece_list
from .types import Half, TypeLike

__all__ = ["Reduction"]


class Reduction(Function):
    """A stage built by combining values into its points: `Reduction((vars, intervals),
    (rvars, rintervals), typ, name)` with `r.defn = [Reduce(r(...), value, Op.Sum)]`.

    As in Halide, a variable of the stage's own that a Reduce target has as its own index
    (`Reduce(mm(i, j), A(i, k) * B(k, j), Op.Sum)` over `([k], [inner])`) need not be listed:
    such variables join the reduction domain, before the listed ones, over the stage's
    intervals, so the sum over k is made at every (i, j).

    Unlike a Function's first-match Cases, every Case of a Reduction whose condition holds at
    a reduction point applies its own Reduce (each with its own Op), in the order given, as in
    PolyMage: `[Case(c0, Reduce(h(x), v, Op.Min)), Case(c1, Reduce(h(x), v, Op.Max))]`.
    Points start at `default` (0 unless set). Examples (a sum, a histogram, a matrix
    product) are in the DSL page's section on Reductions.

    Args:
        var_dom: the stage's domain, `([variables], [intervals])`, as for a Function.
        red_dom: the reduction domain, `([reduction variables], [intervals])`, visited in
            lexicographic order; the stage's own variables that the Reduce target takes
            as its own index join it without being listed.
        typ: the type of the accumulated values (not `Half`: accumulate in Float).
        name: the stage's name, a Python identifier.

    Raises:
        TypeError: the type is Half, or a domain is malformed (as for a Function).
        ValueError: a domain has no dimension, a different number of variables and
            intervals, or one Variable for two dimensions.
    """

    kind = "reduction"

    def __init__(self, var_dom: Domain, red_dom: Domain, typ: TypeLike, name: str):
        super().__init__(tuple(var_dom), typ, name)  # type: ignore[arg-type]  # a list too
        if self.typ is Half:
            raise TypeError(
                f"Reduction {self.name} cannot have type Half: accumulate in Float and "
                "store the result in a Half Function"
            )
        self.reduction_variables, self.reduction_intervals = self._check_dims(
            red_dom[0], red_dom[1], "reduction "
        )
        self._listed = (self.reduction_variables, self.reduction_intervals)
        self.default = 0

    @property
    def default(self) -> E.Expr:
        """The value each point starts from before the first update (0 unless set): a number
        or an expression of the stage's own variables, converted to its type (a minimum
        starts from `float("inf")` or the type's largest value, a product from 1)."""
        return self._default

    @default.setter
    def default(self, value: E.ExprLike) -> None:
        value = E.to_expr(value)
        self._check_symbols(value, self.variables)
        value = E.strong(value)
        self._default = value if value.typ is self.typ else E.Cast(self.typ, value)

    @Function.defn.setter  # type: ignore[attr-defined]  # mypy: a base's property setter
    def defn(self, pieces: Piece | Iterable[Piece]) -> None:
        pieces = piece_list(pieces)
        before = self.reduction_variables, self.reduction_intervals
        implicit = self._implicit_dimensions(pieces)
        self.reduction_variables, self.reduction_intervals = self._check_dims(
            [*(self.variables[d] for d in implicit), *self._listed[0]],
            [*(self.intervals[d] for d in implicit), *self._listed[1]],
            "reduction ",
        )
        try:
            self._defn = self._checked_definition(pieces)
        except BaseException:
            self.reduction_variables, self.reduction_intervals = before
            raise

    def _implicit_dimensions(self, pieces: list) -> list[int]:
        """The dimensions d whose variable some Reduce target of `pieces` has as its index d
        and the reduction domain does not list (they join it, as Halide's pure variables)."""
        listed = {id(v) for v in self._listed[0]}
        dims = set()
        for piece in pieces:
            red = piece.value if isinstance(piece, Case) else piece
            if isinstance(red, Reduce) and red.target.func is self:
                for d, (arg, v) in enumerate(zip(red.target.args, self.variables)):
                    if arg is v and id(v) not in listed:
                        dims.add(d)
        return sorted(dims)

    @property
    def ops(self) -> tuple:
        """The Op of each Case, in order."""
        return tuple(case.value.op for case in self.cases)

    def _check_case(self, case: Case) -> Case:
        red = case.value
        if not isinstance(red, Reduce):
            raise TypeError(f"{self.name}: a Reduction is defined by Reduce(...), got `{red}`")
        if red.target.func is not self:
            raise ValueError(
                f"{self.name}: Reduce must update {self.name}, not {red.target.func.name}"
            )
        cond = self._on_target(case.cond, red.target.args)
        for used in (red.value, *red.target.args):
            self._refuse_unlisted(used)
        for part in (cond, red.value, *red.target.args):
            self._check_symbols(part, self.reduction_variables)
        value = E.strong(red.value)
        if value.typ is not self.typ:
            value = E.Cast(self.typ, value)
        new_case = rebuild_case(case, Reduce(red.target, value, red.op))
        new_case.cond = cond
        return new_case

    def _on_target(
        self, cond: E.BoolExpr | None, target_args: tuple[E.Expr, ...]
    ) -> E.BoolExpr | None:
        """`cond` with each of the Reduction's own variables that is not a reduction variable
        and stands alone on one side of a comparison replaced by the index of the Case's
        Reduce target along it: PolyMage's `Case(c == 0, Reduce(grid(0, ...), ...))` selects
        the updates whose target has c = 0. Any other use of such a variable is refused."""
        if cond is None:
            return None
        reduction = {id(v) for v in self.reduction_variables}
        own = {id(v): d for d, v in enumerate(self.variables) if id(v) not in reduction}
        if isinstance(cond, E.Condition):
            sides = [
                target_args[own[id(side)]] if id(side) in own else side
                for side in (cond.lhs, cond.rhs)
            ]
            for side in sides:
                self._refuse_own_variables(side, own)
            if sides[0] is cond.lhs and sides[1] is cond.rhs:
                return cond
            return E.Condition(sides[0], cond.op, sides[1])
        if isinstance(cond, E.Logic):
            return E.Logic(
                cond.op,
                self._on_target(cond.a, target_args),
                self._on_target(cond.b, target_args),
            )
        if isinstance(cond, E.Not):
            return E.Not(self._on_target(cond.a, target_args))
        self._refuse_own_variables(cond, own)
        return cond

    def _refuse_unlisted(self, e: E.Expr) -> None:
        """Refuse a variable of the stage's own domain in `e` that is not in the reduction
        domain, saying how to make it one."""
        reduction = {id(v) for v in self.reduction_variables}
        for node in E.walk(e):
            if isinstance(node, E.Variable) and id(node) not in reduction:
                d = next((d for d, v in enumerate(self.variables) if v is node), None)
                if d is None:
                    continue
                raise ValueError(
                    f"{self.name}: `{e}` uses {node.name}, a variable of {self.name}'s own "
                    f"domain that the reduction domain "
                    f"({', '.join(v.name for v in self._listed[0])}) does not list and the "
                    f"Reduce target does not have as its index {d}: give the target "
                    f"{node.name} as its index {d} to reduce at every {node.name} (as Halide "
                    f"does), or list {node.name} in the reduction domain"
                )

    def _refuse_own_variables(self, e: E.Expr, own: dict[int, int]) -> None:
        for node in E.walk(e):
            if isinstance(node, E.Variable) and id(node) in own:
                raise ValueError(
                    f"{self.name}: `{e}` uses {node.name}, a variable of {self.name}'s own "
                    f"domain; a condition of a Reduction may use it only alone on one side "
                    f"of a comparison (`{node.name} == 0`: the updates whose target has "
                    f"{node.name} = 0), else only the reduction variables "
                    f"({', '.join(v.name for v in self.reduction_variables)})"
                )
