"""Integer DSL expressions compiled to Python functions of plain ints, for the cost model's
regions: one point at a time, a compiled function is many times faster than a NumPy walk of the
tree (algebra.evaluate.Evaluator), whose arrays of a few tiles cost more than their arithmetic.

The values are those the Evaluator computes from int64 coordinates: every operation wraps
where NumPy's fixed-width integers wrap (an operation computes in the wider of its operands'
types, its result is cast to the node's type), floor division and remainder by zero give 0,
and Select, `&&` and `||` evaluate only the operand they need. A node the compiler does not
handle exactly (floats, unsigned types, calls, references) leaves its whole expression to the
Evaluator, on one point.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..dsl import expr as E
from .evaluate import Evaluator, column

_BOOL = np.dtype(np.bool_)
_COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
_ARITHMETIC = ("+", "-", "*", "//", "%", "min", "max")
# the compiled code checks where a value may overflow when no coordinate is larger than this;
# larger ones (none in a real image) are left to the Evaluator
COORDINATE = 1 << 40


class _Unsupported(Exception):
    """A node the compiler leaves to the Evaluator."""


def wrapped(value: int, bits: int) -> int:
    """`value` wrapped into a signed integer of `bits` bits, as fixed-width arithmetic wraps."""
    half = 1 << (bits - 1)
    return ((value + half) & ((half << 1) - 1)) - half


def compile_expressions(exprs, variables, params):
    """A function of the values of `variables` (ints standing for int64 coordinates, in that
    order) returning the values of `exprs` (an expression, or tuples of them nested to any
    depth) at `params` nested alike in tuples, as Python ints and bools (floats where the
    Evaluator gives floats)."""
    leaves = list(_leaves(exprs))
    names = [f"v{k}" for k in range(len(variables))]
    walk = _tree_walk(leaves, variables, params)
    namespace = {"_wrap": wrapped, "_exact": lambda *values: _nested(exprs, iter(walk(*values)))}
    results = []
    body = _Body(params, {id(v): n for v, n in zip(variables, names)})
    for k, e in enumerate(leaves):
        emitted, known = len(body.lines), dict(body.computed)
        try:
            value = body.value(e)
        except (_Unsupported, RecursionError):
            namespace[f"_walk{k}"] = _tree_walk([e], variables, params)
            value = f"_walk{k}({', '.join(names)})[0]"
            del body.lines[emitted:]
            body.indent, body.computed = "    ", dict(known)
        results.append(value)
    used = [n for n in names if n in body.used]
    guard = [
        f"    if not ({' and '.join(f'{-COORDINATE} <= {n} <= {COORDINATE}' for n in used)}):",
        f"        return _exact({', '.join(names)})",
    ]
    source = "\n".join(
        [
            f"def _compiled({', '.join(names)}):",
            *(guard if used else []),
            *body.lines,
            f"    return {_nested(exprs, iter(results), source=True)}",
        ]
    )
    try:
        exec(compile(source, "<polyimage.algebra.compiled>", "exec"), namespace)
    except (SyntaxError, RecursionError, MemoryError):  # nested too deep for Python's parser
        return namespace["_exact"]
    return namespace["_compiled"]


def _leaves(exprs):
    """The expressions of `exprs` (an expression or nested tuples of them), in order."""
    if isinstance(exprs, (tuple, list)):
        for part in exprs:
            yield from _leaves(part)
    else:
        yield exprs


def _nested(exprs, values, source=False):
    """`values` (an iterator over one per leaf) nested as `exprs` is: tuples, or with
    `source`, the source text of those tuples."""
    if not isinstance(exprs, (tuple, list)):
        return next(values)
    parts = [_nested(part, values, source) for part in exprs]
    return f"({''.join(p + ', ' for p in parts)})" if source else tuple(parts)


def _tree_walk(exprs, variables, params):
    """The function giving the tuple of the values of `exprs` by the Evaluator, at one point
    of `variables`."""
    evaluate = Evaluator({}, {}, params)

    def values(*coordinates):
        points = {v: np.array([x], np.int64) for v, x in zip(variables, coordinates)}
        return tuple(column(evaluate(e, points, 1), 1)[0].item() for e in exprs)

    return values


class _Value(NamedTuple):
    """A compiled node: the source of its value (a name or a literal), the NumPy dtype the
    Evaluator gives it, and a bound on its magnitude when no coordinate exceeds COORDINATE."""

    source: str
    dtype: np.dtype
    bound: int


class _Body:
    """The statements computing expressions into temporaries, indented for a function (the
    expressions compiled stay alive meanwhile: the ids its memos are keyed by are theirs)."""

    def __init__(self, params, arguments):
        self.params, self.arguments = params, arguments
        self.lines = []
        self.temps = 0
        self.indent = "    "
        self.literals = {}  # {source of a literal: its value}
        self.constness = {}  # {id(node): whether _constant}
        self.folded = {}  # {id(node): _folded's}
        self.used = set()  # the arguments read
        self.computed = {}  # {id(node): its _Value, computed outside any branch}

    def value(self, e) -> str:
        """Emit what computes `e`; the source of its value."""
        return self._node(e).source

    def _emit(self, line: str) -> None:
        """Add a statement at the current indentation."""
        self.lines.append(self.indent + line)

    def _temp(self) -> str:
        """A fresh temporary's name."""
        self.temps += 1
        return f"_t{self.temps}"

    def _fitted(self, temp: str, dtype, bound: int, bits: int) -> _Value:
        """`temp`, of magnitude up to `bound`, wrapped into `bits` bits where it may overflow."""
        half = 1 << (bits - 1)
        if bound < half:
            return _Value(temp, dtype, bound)
        self._emit(f"if not {-half} <= {temp} <= {half - 1}: {temp} = _wrap({temp}, {bits})")
        return _Value(temp, dtype, half)

    def _node(self, e) -> _Value:
        """Emit what computes `e` (by the method `_<its node type>`), once where every path
        computes it, and as a literal where it is constant."""
        if id(e) in self.computed:
            return self.computed[id(e)]
        if e.children() and self._constant(e):
            if id(e) not in self.folded:
                self.folded[id(e)] = self._folded(e)
            if self.folded[id(e)] is not None:
                return self.folded[id(e)]
        method = getattr(self, "_" + type(e).__name__, None)
        if method is None:
            raise _Unsupported(type(e).__name__)
        value = method(e)
        if self.indent == "    ":  # computed on every path: what follows may reuse it
            self.computed[id(e)] = value
        return value

    def _constant(self, e) -> bool:
        """Whether `e` is made of constants and parameters alone."""
        if id(e) not in self.constness:
            if isinstance(e, (E.Const, E.Parameter)):
                self.constness[id(e)] = True
            elif isinstance(e, (E.Variable, E.Reference)):
                self.constness[id(e)] = False
            else:
                self.constness[id(e)] = all(self._constant(c) for c in e.children())
        return self.constness[id(e)]

    def _folded(self, e) -> _Value | None:
        """The literal of constant `e`, as the Evaluator computes it; None where it has no
        integer or bool value."""
        try:
            value = column(Evaluator({}, {}, self.params)(e, {}, 1), 1)[0]
        except Exception:  # left to run time, where the Evaluator meets it too
            return None
        if value.dtype != _BOOL and value.dtype.kind != "i":
            return None
        return self._literal(value, value.dtype)

    def _integer(self, e) -> _Value:
        """The value of `e`, where it is a signed integer."""
        value = self._node(e)
        if value.dtype.kind != "i":
            raise _Unsupported(str(value.dtype))
        return value

    def _boolean(self, e) -> str:
        """The source of the value of `e`, where it is a bool."""
        value = self._node(e)
        if value.dtype != _BOOL:
            raise _Unsupported(str(value.dtype))
        return value.source

    def _literal(self, value, dtype) -> _Value:
        """`value` as a literal of `dtype`, as the Evaluator converts it."""
        if dtype != _BOOL and dtype.kind != "i":
            raise _Unsupported(str(dtype))
        try:
            item = np.asarray(value, dtype).item()
        except (OverflowError, TypeError, ValueError) as error:
            raise _Unsupported(str(error)) from error
        source = f"({item!r})"
        self.literals[source] = item
        return _Value(source, dtype, abs(int(item)))

    def _Const(self, e) -> _Value:
        return self._literal(e.value, e.typ.dtype)

    def _Parameter(self, e) -> _Value:
        if e.name not in self.params:
            raise _Unsupported(e.name)
        return self._literal(self.params[e.name], e.typ.dtype)

    def _Variable(self, e) -> _Value:
        if id(e) not in self.arguments:
            raise _Unsupported(e.name)
        self.used.add(self.arguments[id(e)])
        return _Value(self.arguments[id(e)], np.dtype(np.int64), COORDINATE)

    def _BinOp(self, e) -> _Value:
        dtype = e.typ.dtype
        if e.op not in _ARITHMETIC or dtype.kind != "i":
            raise _Unsupported(f"{e.op} of {dtype}")
        a, b = self._integer(e.a), self._integer(e.b)
        same = self._identity(e.op, a, b)
        if same is not None and same.dtype.itemsize <= dtype.itemsize:
            return _Value(same.source, dtype, same.bound)
        temp = self._temp()
        if e.op in ("//", "%"):
            guard = "" if self.literals.get(b.source) else f" if {b.source} else 0"
            self._emit(f"{temp} = {a.source} {e.op} {b.source}{guard}")
        elif e.op in ("min", "max"):
            keeps = "<=" if e.op == "min" else ">="
            self._emit(f"{temp} = {a.source} if {a.source} {keeps} {b.source} else {b.source}")
        else:
            self._emit(f"{temp} = {a.source} {e.op} {b.source}")
        bound = {
            "+": a.bound + b.bound,
            "-": a.bound + b.bound,
            "*": a.bound * b.bound,
            "//": a.bound,
            "%": b.bound,
        }.get(e.op, max(a.bound, b.bound))
        bits = min(dtype.itemsize, max(a.dtype.itemsize, b.dtype.itemsize)) * 8
        return self._fitted(temp, dtype, bound, bits)

    def _identity(self, op, a, b) -> _Value | None:
        """The operand that `a op b` equals by an identity (`x + 0`, `x * 1`, `x // 1`)."""
        left, right = self.literals.get(a.source), self.literals.get(b.source)
        if right == 0 and op in ("+", "-") or right == 1 and op in ("*", "//"):
            return a
        if left == 0 and op == "+" or left == 1 and op == "*":
            return b
        return None

    def _Neg(self, e) -> _Value:
        a = self._integer(e.a)
        temp = self._temp()
        self._emit(f"{temp} = -{a.source}")
        return self._fitted(temp, a.dtype, a.bound, a.dtype.itemsize * 8)

    def _Cast(self, e) -> _Value:
        dtype = e.typ.dtype
        a = self._node(e.a)
        if dtype == _BOOL and a.dtype == _BOOL:
            return _Value(a.source, dtype, 1)
        temp = self._temp()
        if dtype == _BOOL and a.dtype.kind == "i":
            self._emit(f"{temp} = {a.source} != 0")
            return _Value(temp, dtype, 1)
        if dtype.kind != "i" or (a.dtype != _BOOL and a.dtype.kind != "i"):
            raise _Unsupported(f"{a.dtype} to {dtype}")
        if a.dtype == _BOOL:
            self._emit(f"{temp} = 1 if {a.source} else 0")
            return _Value(temp, dtype, 1)
        if a.dtype.itemsize <= dtype.itemsize:
            return _Value(a.source, dtype, a.bound)
        self._emit(f"{temp} = {a.source}")
        return self._fitted(temp, dtype, a.bound, dtype.itemsize * 8)

    def _Condition(self, e) -> _Value:
        if e.op not in _COMPARISONS:
            raise _Unsupported(e.op)
        a, b = self._integer(e.lhs), self._integer(e.rhs)
        temp = self._temp()
        self._emit(f"{temp} = {a.source} {e.op} {b.source}")
        return _Value(temp, _BOOL, 1)

    def _Not(self, e) -> _Value:
        a = self._boolean(e.a)
        temp = self._temp()
        self._emit(f"{temp} = not {a}")
        return _Value(temp, _BOOL, 1)

    def _Logic(self, e) -> _Value:
        if e.op not in ("&&", "||"):
            raise _Unsupported(e.op)
        temp = self._temp()
        self._emit(f"{temp} = {self._boolean(e.a)}")
        self._emit(f"if {'' if e.op == '&&' else 'not '}{temp}:")
        self._branch(temp, lambda: self._boolean(e.b))
        return _Value(temp, _BOOL, 1)

    def _Select(self, e) -> _Value:
        dtype = e.typ.dtype
        if dtype.kind != "i":
            raise _Unsupported(str(dtype))
        cond = self._boolean(e.cond)
        temp = self._temp()
        bounds = []
        for opening, branch in ((f"if {cond}:", e.a), ("else:", e.b)):
            self._emit(opening)
            value = self._branch(temp, lambda branch=branch: self._stored(branch, dtype))
            bounds.append(value.bound)
        return _Value(temp, dtype, max(bounds))

    def _stored(self, e, dtype) -> _Value:
        """The value of integer `e` stored into an array of `dtype` (wrapped)."""
        a = self._integer(e)
        if a.dtype.itemsize <= dtype.itemsize:
            return a
        temp = self._temp()
        self._emit(f"{temp} = {a.source}")
        return self._fitted(temp, dtype, a.bound, dtype.itemsize * 8)

    def _branch(self, temp: str, value):
        """Emit, indented one level, the statements of `value()` and its store into `temp`;
        what `value()` returned."""
        outer = self.indent
        self.indent = outer + "    "
        result = value()
        self._emit(f"{temp} = {result if isinstance(result, str) else result.source}")
        self.indent = outer
        return result
