"""User-facing constructs: Interval, Image, Function, Reduction, Case, Reduce, Op.

Index order equals NumPy axis order: the last index of a stage is its contiguous axis, and
element `[i, j]` of a stage's array holds the value at domain point `(lb0 + i, lb1 + j)`.
"""
from __future__ import annotations

import enum

from . import expr as E
from .types import Int, ScalarType, as_type

__all__ = ["Interval", "Image", "Function", "Reduction", "Case", "Reduce", "Op"]


def _check_name(kind: str, name) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"{kind} name must be a Python identifier, got {name!r}")
    return name


def _parameter_expr(value, typ: ScalarType, what: str) -> E.Expr:
    """An integer expression of Parameters only (interval bounds, image extents)."""
    e = E.to_expr(value)
    bad = [n for n in E.walk(e) if isinstance(n, (E.Variable, E.Reference))]
    if bad:
        raise TypeError(f"{what} `{e}` may only use Parameters and numbers, not `{bad[0]}`")
    if E.is_weak(e):
        e = E.convert_weak(e, typ, what)
    if not e.typ.is_int:
        raise TypeError(f"{what} `{e}` must be an integer expression, not {e.typ}")
    return e


class Interval:
    """The inclusive range `[lb, ub]` of a dimension; bounds are affine in Parameters."""

    def __init__(self, typ, lb, ub):
        self.typ = as_type(typ)
        if not self.typ.is_int:
            raise TypeError(f"Interval type must be an integer type, not {self.typ}")
        self.lb = _parameter_expr(lb, self.typ, "Interval lower bound")
        self.ub = _parameter_expr(ub, self.typ, "Interval upper bound")

    def __repr__(self):
        return f"Interval({self.typ}, {self.lb}, {self.ub})"


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

    def __repr__(self):
        return f"Case({self.cond}, {self.value})"


class Reduce:
    """`Reduce(r(idx...), value, Op.Sum)`: combine `value` into element `idx` of Reduction r."""

    def __init__(self, target, value, op):
        if not isinstance(target, E.Reference):
            raise TypeError(f"Reduce needs a reference to its Reduction first, got `{target}`")
        if not isinstance(op, Op):
            raise TypeError(f"Reduce operator must be Op.Sum, Op.Mul, Op.Min or Op.Max, "
                            f"got {op!r}")
        self.target, self.value, self.op = target, E.to_expr(value), op

    def __repr__(self):
        return f"Reduce({self.target}, {self.value}, Op.{self.op.name})"


class Function:
    """A stage: values over a box domain, defined piecewise by Cases.

    Accepts `Function(([x, y], [rows, cols]), Float, "f")` and the paper's
    `Function([x, y], [rows, cols], Float, "f")`. Points no Case covers hold 0.
    """

    kind = "function"

    def __init__(self, *args):
        if len(args) == 3 and isinstance(args[0], tuple) and len(args[0]) == 2:
            (variables, intervals), typ, name = args
        elif len(args) == 4:
            variables, intervals, typ, name = args
        else:
            raise TypeError("use Function(([vars], [intervals]), typ, name)")
        self.name = _check_name(type(self).__name__, name)
        self.typ = as_type(typ)
        self.variables, self.intervals = self._check_dims(variables, intervals, "")
        self._defn = None

    def _check_dims(self, variables, intervals, what: str):
        variables, intervals = tuple(variables), tuple(intervals)
        if len(variables) != len(intervals):
            raise ValueError(f"{self.name}: {len(variables)} {what}variable(s) but "
                             f"{len(intervals)} interval(s)")
        for v, iv in zip(variables, intervals):
            if not isinstance(v, E.Variable) or isinstance(v, E.Parameter):
                raise TypeError(f"{self.name}: dimension `{v}` is not a Variable")
            if not isinstance(iv, Interval):
                raise TypeError(f"{self.name}: `{iv}` is not an Interval")
            if v.typ is not iv.typ:
                raise TypeError(f"{self.name}: Variable {v.name} has type {v.typ} but its "
                                f"Interval has type {iv.typ}")
        names = [v.name for v in variables]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: the same variable is used for two dimensions "
                             f"({', '.join(names)})")
        return variables, intervals

    @property
    def ndim(self) -> int:
        return len(self.variables)

    def __call__(self, *indices) -> E.Reference:
        return E.Reference(self, indices)

    @property
    def defn(self):
        return self._defn

    @defn.setter
    def defn(self, pieces):
        if isinstance(pieces, (E.Expr, Case, Reduce, int, float)):
            pieces = [pieces]
        pieces = list(pieces)
        if not pieces:
            raise ValueError(f"{self.name}: the definition is empty")
        cases = []
        for i, piece in enumerate(pieces):
            if not isinstance(piece, Case):
                if i != len(pieces) - 1:
                    raise TypeError(f"{self.name}: only the last entry of defn may be a plain "
                                    f"value; wrap `{piece}` in a Case")
                piece = _Always(piece)
            cases.append(self._check_case(piece))
        self._defn = tuple(cases)

    def _check_case(self, case):
        if isinstance(case.value, Reduce):
            raise TypeError(f"{self.name}: Reduce can only define a Reduction")
        self._check_symbols(case.cond, self.variables)
        self._check_symbols(case.value, self.variables)
        value = E.strong(case.value)
        if value.typ is not self.typ:
            value = E.Cast(self.typ, value)
        return _rebuild_case(case, value)

    def _check_symbols(self, e, allowed):
        if e is None:
            return
        names = {v.name for v in allowed}
        for node in E.walk(e):
            if isinstance(node, E.Variable) and id(node) not in {id(v) for v in allowed}:
                hint = " (a different Variable object with the same name)" \
                    if node.name in names else ""
                raise ValueError(f"{self.name}: `{e}` uses variable {node.name}{hint}, which "
                                 f"is not one of its variables "
                                 f"({', '.join(v.name for v in allowed)})")

    def __repr__(self):
        return f"<{type(self).__name__} {self.name}>"


class _Always(Case):
    """A Case whose condition always holds (a plain value in defn)."""

    def __init__(self, value):
        self.cond = None
        self.value = value if isinstance(value, Reduce) else E.to_expr(value)


def _rebuild_case(case: Case, value) -> Case:
    new = object.__new__(type(case))
    new.cond, new.value = case.cond, value
    return new


class Image(Function):
    """An input array of the given extents, indexed from 0 (axis order as in NumPy)."""

    kind = "image"

    def __init__(self, typ, name, extents):
        self.name = _check_name("Image", name)
        self.typ = as_type(typ)
        if self.typ.dtype.kind == "b":
            raise TypeError(f"Image {name} cannot have a boolean type")
        self.extents = tuple(_parameter_expr(x, Int, f"extent of Image {name}")
                             for x in extents)
        if not self.extents:
            raise ValueError(f"Image {name} needs at least one extent")
        self.variables = tuple(E.Variable(Int, f"_{name}{i}") for i in range(len(extents)))
        self.intervals = tuple(Interval(Int, 0, x - 1) for x in self.extents)
        self._defn = ()

    @property
    def defn(self):
        return self._defn

    @defn.setter
    def defn(self, pieces):
        raise TypeError(f"Image {self.name} is an input and cannot be given a definition")


class Reduction(Function):
    """A stage built by combining values into its points: `Reduction((vars, intervals),
    (rvars, rintervals), typ, name)` with `r.defn = [Reduce(r(...), value, Op.Sum)]`."""

    kind = "reduction"

    def __init__(self, var_dom, red_dom, typ, name):
        super().__init__(tuple(var_dom), typ, name)
        self.reduction_variables, self.reduction_intervals = self._check_dims(
            red_dom[0], red_dom[1], "reduction ")
        self.default = 0

    @property
    def default(self):
        return self._default

    @default.setter
    def default(self, value):
        value = E.to_expr(value)
        self._check_symbols(value, self.variables)
        value = E.strong(value)
        self._default = value if value.typ is self.typ else E.Cast(self.typ, value)

    @Function.defn.setter
    def defn(self, pieces):
        Function.defn.fset(self, pieces)
        ops = {case.value.op for case in self._defn}
        if len(ops) > 1:
            self._defn = None
            raise ValueError(f"{self.name}: every Reduce of one Reduction must use the same "
                             f"operator, got {', '.join(sorted(op.name for op in ops))}")

    @property
    def op(self) -> Op:
        return self._defn[0].value.op

    def _check_case(self, case):
        red = case.value
        if not isinstance(red, Reduce):
            raise TypeError(f"{self.name}: a Reduction is defined by Reduce(...), got "
                            f"`{red}`")
        if red.target.func is not self:
            raise ValueError(f"{self.name}: Reduce must update {self.name}, not "
                             f"{red.target.func.name}")
        for part in (case.cond, red.value, *red.target.args):
            self._check_symbols(part, self.reduction_variables)
        value = E.strong(red.value)
        if value.typ is not self.typ:
            value = E.Cast(self.typ, value)
        new_reduce = Reduce(red.target, value, red.op)
        return _rebuild_case(case, new_reduce)
