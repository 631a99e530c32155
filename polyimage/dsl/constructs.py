"""User-facing constructs: Interval, Image, Function (and, from dsl.cases, Case, Reduce and
Op; Reduction is in dsl.reduction, Stencil in dsl.stencil).

Index order equals NumPy axis order: the last index of a stage is its contiguous axis, and
element `[i, j]` of a stage's array holds the value at domain point `(lb0 + i, lb1 + j)`.
"""

from __future__ import annotations

import numbers
from typing import Any, Iterable, Sequence, Tuple, overload

import numpy as np

from ..errors import PipelineError
from . import expr as E
from .cases import Always, Case, DefinitionList, Op, Piece, Reduce, rebuild_case  # noqa: F401
from .types import Int, ScalarType, TypeLike, as_type

__all__ = ["Interval", "Image", "Function", "Case", "Reduce", "Op"]


def _check_name(kind: str, name: object) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"{kind} name must be a Python identifier, got {name!r}")
    return name


def _parameter_expr(value: E.ExprLike, typ: ScalarType, what: str) -> E.Expr:
    """An integer expression of Parameters only (interval bounds, image extents)."""
    if isinstance(value, np.integer):
        value = int(value)  # a size, not a typed value
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
    """The inclusive range `[lb, ub]` of a dimension; bounds are affine in Parameters.

    `Interval(Int, 0, R - 1)` spans the R rows of an image R rows high.

    Args:
        typ: the integer type of the dimension's variable (`Int` as a rule); it must be the
            type of the Variable the Interval is paired with.
        lb: the first point: a number or an integer expression of Parameters (`R / 2`).
        ub: the last point, **inclusive**, as `lb`.

    Raises:
        TypeError: `typ` is not an integer type, or a bound uses a Variable, a stage or a
            float.

    Attributes:
        typ: the integer type of the dimension's variable.
        lb: the first point, an expression in Parameters (`lowerBound` in PolyMage).
        ub: the last point, an expression in Parameters (`upperBound` in PolyMage).
    """

    def __init__(self, typ: TypeLike, lb: E.ExprLike, ub: E.ExprLike):
        self.typ = as_type(typ)
        if not self.typ.is_int:
            raise TypeError(f"Interval type must be an integer type, not {self.typ}")
        self.lb = _parameter_expr(lb, self.typ, "Interval lower bound")
        self.ub = _parameter_expr(ub, self.typ, "Interval upper bound")

    @property
    def lowerBound(self) -> E.Expr:
        """PolyMage's name of `lb`."""
        return self.lb

    @property
    def upperBound(self) -> E.Expr:
        """PolyMage's name of `ub`."""
        return self.ub

    def __repr__(self) -> str:
        return f"Interval({self.typ}, {self.lb}, {self.ub})"


# the variables x0, x1, ... of the stages Function.like makes over an Image's domain: one
# Variable per name, so that two such stages (and a stage reading both) share them
LIKE_VARIABLES: dict[str, E.Variable] = {}


def _like_variable(k: int) -> E.Variable:
    """The shared Variable x`k` of Function.like."""
    return LIKE_VARIABLES.setdefault(f"x{k}", E.Variable(Int, f"x{k}"))


def piece_list(pieces: Piece | Iterable[Piece]) -> list[Piece]:
    """What `f.defn = ...` was given, as a list (one piece alone in a list of its own)."""
    if isinstance(pieces, (E.Expr, Case, Reduce, numbers.Number)):
        return [pieces]
    return list(pieces)  # type: ignore[arg-type]  # mypy: int, float are numbers.Number


# a stage's domain: its variables and their intervals, `([x, y], [rows, cols])`
Domain = Tuple[Sequence[E.Variable], Sequence[Interval]]


def _parse_function_args(args: tuple) -> tuple:
    """(variables, intervals, typ, name, hint) from the accepted spellings of Function(...)."""
    var_dom = args[0] if args else None
    is_var_dom = (
        isinstance(var_dom, tuple) and len(var_dom) == 2 and not isinstance(var_dom[0], E.Expr)
    )
    if is_var_dom and len(args) in (3, 4):
        (variables, intervals), typ, name, *hints = args
    elif len(args) == 4 and not is_var_dom:
        variables, intervals, typ, name = args
        hints = []
    else:
        raise TypeError("use Function(([vars], [intervals]), typ, name)")
    hint = hints[0] if hints else ""
    if not isinstance(hint, str):
        raise TypeError(
            f'the optional last argument of Function is a hint such as "const", got {hint!r}'
        )
    return variables, intervals, typ, name, hint


class Function:
    """A stage: values over a box domain, defined piecewise by Cases.

    Accepts `Function(([x, y], [rows, cols]), Float, "f")` and the paper's
    `Function([x, y], [rows, cols], Float, "f")`; PolyMage's optional fifth argument (a hint
    such as "const") is kept in `hint` and has no effect. Set the definition afterwards,
    `f.defn = [Case(cond, value), ..., value]`: the first Case whose condition holds gives
    the value, a plain value last holds where none does. Points no Case covers hold 0.

    A scan reads its own points strictly earlier along one dimension: `v - k` (k > 0 a
    constant) there and its own variables elsewhere, guarded to stay in the domain. An
    integral image is a scan along y, then one along x:
    `rows.defn = [Case(y == 0, img(x, 0)), rows(x, y - 1) + img(x, y)]`,
    `sat.defn = [Case(x == 0, rows(0, y)), sat(x - 1, y) + rows(x, y)]`.
    The scan dimension runs in order, the others in parallel; any other self-read is a cycle
    (refused when the pipeline is built).

    Args:
        domain: `([variables], [intervals])`, one Variable and one Interval per dimension,
            in NumPy's axis order (the last is the contiguous one).
        typ: the type of the stage's values (`Float`, `UChar`, ...).
        name: the stage's name, a Python identifier: it names the stage in reports, errors
            and the generated C, and an output in a call's results.
        hint: PolyMage's optional last argument ("const"), kept and ignored.

    Raises:
        TypeError: a dimension is not a Variable, an interval not an Interval, or their
            types differ.
        ValueError: the name is not an identifier, the domain has no dimension, a
            different number of variables and intervals, or one Variable for two
            dimensions.
    """

    kind = "function"

    @overload
    def __init__(self, domain: Domain, typ: TypeLike, name: str, hint: str = "", /) -> None: ...

    @overload
    def __init__(
        self,
        variables: Sequence[E.Variable],
        intervals: Sequence[Interval],
        typ: TypeLike,
        name: str,
        /,
    ) -> None: ...

    def __init__(self, *args: Any) -> None:
        variables, intervals, typ, name, self.hint = _parse_function_args(args)
        self.name = _check_name(type(self).__name__, name)
        self.typ = as_type(typ)
        self.variables, self.intervals = self._check_dims(variables, intervals, "")
        self._defn: tuple[Case, ...] | None = None

    def _check_dims(
        self, variables: Iterable[E.Variable], intervals: Iterable[Interval], what: str
    ) -> tuple[tuple[E.Variable, ...], tuple[Interval, ...]]:
        variables, intervals = tuple(variables), tuple(intervals)
        if len(variables) != len(intervals):
            raise ValueError(
                f"{self.name}: {len(variables)} {what}variable(s) but {len(intervals)} interval(s)"
            )
        if not variables:
            raise ValueError(
                f"{self.name}: a {what or 'stage '}domain needs at least one "
                f"dimension; for a single value use a one-point domain such as "
                f"([v], [Interval(Int, 0, 0)])"
            )
        for v, iv in zip(variables, intervals):
            if not isinstance(v, E.Variable) or isinstance(v, E.Parameter):
                raise TypeError(f"{self.name}: dimension `{v}` is not a Variable")
            if not isinstance(iv, Interval):
                raise TypeError(f"{self.name}: `{iv}` is not an Interval")
            if v.typ is not iv.typ:
                raise TypeError(
                    f"{self.name}: Variable {v.name} has type {v.typ} but its "
                    f"Interval has type {iv.typ}"
                )
        names = [v.name for v in variables]
        if len(set(names)) != len(names):
            self._refuse_shared_name(variables, what)
        return variables, intervals

    def _refuse_shared_name(self, variables: tuple[E.Variable, ...], what: str) -> None:
        """Refuse two dimensions with one variable name, saying whether it is one Variable or
        two, and where names like x0 come from (Function.like)."""
        names = [v.name for v in variables]
        name = next(n for n in names if names.count(n) > 1)
        first, second = [v for v in variables if v.name == name][:2]
        which = (
            f"the variable {name} is used for two {what}dimensions"
            if first is second
            else f"two different Variables named {name} are used for two {what}dimensions"
        )
        hint = ""
        if any(v is LIKE_VARIABLES.get(name) for v in (first, second)):
            hint = (
                f"; {name} comes from Function.like, which names the variables of an Image's "
                "domain x0, x1, ... by position in every stage it makes: pass your own "
                "variables with Function.like(..., variables=[...])"
            )
        raise ValueError(
            f"{self.name}: {which} ({', '.join(names)}); each dimension needs a variable of its "
            f"own{hint}"
        )

    @classmethod
    def like(
        cls,
        source: Function,
        typ: TypeLike,
        name: str,
        variables: Sequence[E.Variable] | None = None,
    ) -> Function:
        """A Function over the domain of `source`, so that its output has the source's shape:
        `out = Function.like(img, Float, "out"); x, y = out.variables`.

        Args:
            source: an Image (whose domain is 0 .. extent - 1 along each dimension) or
                another stage.
            typ: the type of the new stage's values.
            name: the new stage's name.
            variables: the new stage's Variables, one per dimension; by default the
                source's own when it is a stage, else `x0, x1, ...`, the same Variables in
                every stage made so (read them back as `f.variables`).

        Returns:
            The new Function, not yet defined (set its `defn`).

        Raises:
            TypeError: `source` is not an Image or a stage.
        """
        if not isinstance(source, Function):
            raise TypeError(
                f"Function.like needs an Image or a stage to take the domain of, got {source!r}"
            )
        if variables is None:
            if isinstance(source, Image):
                variables = [_like_variable(k) for k in range(source.ndim)]
            else:
                variables = source.variables
        return Function((list(variables), list(source.intervals)), typ, name)

    @property
    def ndim(self) -> int:
        return len(self.variables)

    def __call__(self, *indices: E.ExprLike) -> E.Reference:
        return E.Reference(self, indices)

    @property
    def cases(self) -> tuple:
        """The checked Cases, as the compiler reads them; PipelineError until defn is set."""
        if self._defn is None:
            raise PipelineError(
                f"{type(self).__name__} {self.name} has no definition (set {self.name}.defn)"
            )
        return self._defn

    @property
    def defn(self) -> DefinitionList:
        """The checked Cases, as a list whose edits are checked too; until the definition is
        set, reading it raises PipelineError and appending to it sets it."""
        return DefinitionList(self, self._defn or ())

    @defn.setter
    def defn(self, pieces: Piece | Iterable[Piece]) -> None:
        self._defn = self._checked_definition(pieces)

    def _checked_definition(self, pieces: Piece | Iterable[Piece]) -> tuple[Case, ...]:
        """The Cases of `pieces`, checked; a plain value may only stand last."""
        pieces = piece_list(pieces)
        if not pieces:
            raise ValueError(f"{self.name}: the definition is empty")
        cases = []
        for i, piece in enumerate(pieces):
            plain = not isinstance(piece, Case) or isinstance(piece, Always)
            if plain and i != len(pieces) - 1:
                shown = piece.value if isinstance(piece, Always) else piece
                raise TypeError(
                    f"{self.name}: only the last entry of defn may be a plain "
                    f"value (the value where no Case holds); `{shown}` is not "
                    f"last: wrap it in a Case or put the Cases before it"
                )
            if not isinstance(piece, Case):
                piece = Always(piece)
            cases.append(self._check_case(piece))
        return tuple(cases)

    def _check_case(self, case: Case) -> Case:
        if isinstance(case.value, Reduce):
            raise TypeError(f"{self.name}: Reduce can only define a Reduction")
        self._check_symbols(case.cond, self.variables)
        self._check_symbols(case.value, self.variables)
        value = E.strong(case.value)
        if value.typ is not self.typ:
            value = E.Cast(self.typ, value)
        return rebuild_case(case, value)

    def _check_symbols(self, e: E.Expr | None, allowed: Sequence[E.Variable]) -> None:
        if e is None:
            return
        names = {v.name for v in allowed}
        for node in E.walk(e):
            if isinstance(node, E.Variable) and id(node) not in {id(v) for v in allowed}:
                hint = (
                    " (a different Variable object with the same name)"
                    if node.name in names
                    else ""
                )
                raise ValueError(
                    f"{self.name}: `{e}` uses variable {node.name}{hint}, which "
                    f"is not one of its variables "
                    f"({', '.join(v.name for v in allowed)})"
                )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class Image(Function):
    """An input array of the given extents, indexed from 0 (axis order as in NumPy).

    A call passes it by name, as a NumPy array of the Image's type whose shape gives the
    size Parameters: `Image(Float, "img", [R, C])` takes a float32 array of shape (R, C)
    as `pipe(img=array)`, and R and C are read off that shape.

    Args:
        typ: the type of the elements (`Float` for a float32 array, `UChar` for uint8, ...).
        name: the argument's name in a call, a Python identifier.
        extents: the size along each dimension, each a number or an integer expression of
            Parameters (`R`, `R + 4`, `2 * C`).

    Raises:
        TypeError: an extent uses a Variable or a float, or the type is boolean.
        ValueError: no extent, or a name that is not an identifier.
    """

    kind = "image"

    def __init__(self, typ: TypeLike, name: str, extents: Sequence[E.ExprLike]):
        self.name = _check_name("Image", name)
        self.typ = as_type(typ)
        self.hint = ""
        if self.typ.dtype.kind == "b":
            raise TypeError(f"Image {name} cannot have a boolean type")
        self.extents = tuple(_parameter_expr(x, Int, f"extent of Image {name}") for x in extents)
        if not self.extents:
            raise ValueError(f"Image {name} needs at least one extent")
        self.variables = tuple(E.Variable(Int, f"_{name}{i}") for i in range(len(extents)))
        self.intervals = tuple(Interval(Int, 0, x - 1) for x in self.extents)
        self._defn = ()

    @property
    def dimensions(self) -> tuple:
        """PolyMage's name of `extents`."""
        return self.extents

    @Function.defn.setter  # type: ignore[attr-defined]  # mypy: a base's property setter
    def defn(self, pieces: Piece | Iterable[Piece]) -> None:
        raise TypeError(f"Image {self.name} is an input and cannot be given a definition")
