"""The one place that turns DSL expressions into isl objects.

A `StageSpace` is the isl set space of one stage's (or reduction's) variables, with every
pipeline Parameter as an isl parameter. It converts affine expressions to `PwAff`s and affine
conditions to sets; anything else raises `NotAffine`.
"""

from __future__ import annotations

import islpy as isl

from ..algebra.affine import is_affine
from ..dsl import expr as E


class NotAffine(Exception):
    """An expression isl cannot represent (data-dependent, non-linear or floating point)."""


class StageSpace:
    """isl helpers over the space `[params] -> { [variables] }`."""

    def __init__(self, ctx: isl.Context, params, variables, name=None):
        self.ctx = ctx
        self.params = tuple(params)
        self.variables = tuple(variables)
        self.name = name
        dims = [v.name for v in self.variables]
        if len(set(dims)) != len(dims) or set(dims) & {p.name for p in self.params}:
            dims = [f"i{d}" for d in range(len(dims))]
        space = isl.Space.create_from_names(ctx, set=dims, params=[p.name for p in self.params])
        if name is not None:
            space = space.set_tuple_name(isl.dim_type.set, name)
        self.local_space = isl.LocalSpace.from_space(space)
        self.universe_set = isl.Set.universe(space)
        self._param_pos = {p.name: i for i, p in enumerate(self.params)}
        self._var_pos = {id(v): i for i, v in enumerate(self.variables)}

    def val(self, n: int) -> isl.Val:
        return isl.Val.int_from_si(self.ctx, int(n))

    def constant(self, n: int) -> isl.PwAff:
        aff = isl.Aff.zero_on_domain(self.local_space).set_constant_val(self.val(n))
        return isl.PwAff.from_aff(aff)

    def pw_aff(self, e: E.Expr) -> isl.PwAff:
        """The (quasi-)affine function `e` of the variables and parameters."""
        if isinstance(e, E.Const) and isinstance(e.value, int):
            return self.constant(e.value)
        if isinstance(e, E.Parameter) and e.typ.is_int:
            return self._var(isl.dim_type.param, self._param_pos[e.name])
        if isinstance(e, E.Variable) and id(e) in self._var_pos:
            return self._var(isl.dim_type.set, self._var_pos[id(e)])
        if isinstance(e, E.Neg):
            return self.pw_aff(e.a).neg()
        if (
            isinstance(e, E.Cast)
            and e.a.typ.is_int
            and e.typ.is_int
            and e.typ.min_value() <= e.a.typ.min_value()
            and e.typ.max_value() >= e.a.typ.max_value()
        ):
            return self.pw_aff(e.a)
        if isinstance(e, E.BinOp):
            return self._binop(e)
        raise NotAffine(str(e))

    def _var(self, kind, pos: int) -> isl.PwAff:
        return isl.PwAff.from_aff(isl.Aff.var_on_domain(self.local_space, kind, pos))

    def _binop(self, e: E.BinOp) -> isl.PwAff:
        if e.op in ("+", "-", "min", "max"):
            a, b = self.pw_aff(e.a), self.pw_aff(e.b)
            return {"+": a.add, "-": a.sub, "min": a.min, "max": a.max}[e.op](b)
        const = e.b if isinstance(e.b, E.Const) else None
        if e.op == "*":
            if isinstance(e.a, E.Const):
                return self.pw_aff(e.b).scale_val(self.val(e.a.value))
            if const is not None:
                return self.pw_aff(e.a).scale_val(self.val(const.value))
        if e.op in ("//", "%") and const is not None and const.value != 0:
            a, d = self.pw_aff(e.a), const.value
            quotient = (a if d > 0 else a.neg()).scale_down_val(self.val(abs(d))).floor()
            return quotient if e.op == "//" else a.sub(quotient.scale_val(self.val(d)))
        raise NotAffine(str(e))

    def condition_set(self, cond) -> isl.Set:
        """The points where `cond` holds (raises NotAffine when isl cannot express it)."""
        if isinstance(cond, E.Condition):
            a, b = self.pw_aff(cond.lhs), self.pw_aff(cond.rhs)
            return {
                "<": a.lt_set,
                "<=": a.le_set,
                ">": a.gt_set,
                ">=": a.ge_set,
                "==": a.eq_set,
                "!=": a.ne_set,
            }[cond.op](b)
        if isinstance(cond, E.Logic):
            left, right = self.condition_set(cond.a), self.condition_set(cond.b)
            return left.intersect(right) if cond.op == "&&" else left.union(right)
        if isinstance(cond, E.Not):
            return self.condition_set(cond.a).complement()
        raise NotAffine(str(cond))

    def box_set(self, intervals) -> isl.Set:
        """`{ [v] : lb <= v <= ub }` for one interval per variable."""
        box = self.universe_set
        for d, iv in enumerate(intervals):
            v = self._var(isl.dim_type.set, d)
            box = box.intersect(v.ge_set(self.pw_aff(iv.lb))).intersect(
                v.le_set(self.pw_aff(iv.ub))
            )
        return box

    def access_map(self, ref: E.Reference, producer: "StageSpace", producer_intervals):
        """`consumer[v] -> producer[d]` of a reference: exact along affine indices, the whole
        interval along the others (which are clamped there at run time)."""
        result = None
        for d, arg in enumerate(ref.args):
            if is_affine(arg):
                part = isl.Map.from_pw_aff(self.pw_aff(arg))
            else:
                column = StageSpace(self.ctx, self.params, producer.variables[d : d + 1])
                part = isl.Map.from_domain_and_range(
                    self.universe_set, column.box_set(producer_intervals[d : d + 1])
                )
            result = part if result is None else result.flat_range_product(part)
        if result is None:
            result = isl.Map.from_domain_and_range(self.universe_set, producer.universe_set)
        return result.set_tuple_name(isl.dim_type.out, producer.name)

    def describe_point(self, point: isl.Point) -> tuple:
        """(variable values, parameter values) of an isl point, as dicts by name."""
        var_values = {
            v.name: point.get_coordinate_val(isl.dim_type.set, d).to_python()
            for d, v in enumerate(self.variables)
        }
        param_values = {
            p.name: point.get_coordinate_val(isl.dim_type.param, i).to_python()
            for i, p in enumerate(self.params)
        }
        return var_values, param_values
