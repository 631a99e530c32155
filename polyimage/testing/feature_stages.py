"""The stage kinds of the random feature pipelines, each built twice: as DSL stages and as its
values by NumPy's semantics (feature_values): the integer operations at the type's limits,
casts, Half arithmetic, border reads of tiny boxes, and Reductions whose reduction variables
run in an order that does not match the memory layout."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from polyimage import (
    Case,
    Cast,
    Clamp,
    Function,
    Int,
    Interval,
    Max,
    Min,
    Op,
    Parameter,
    Reduce,
    Reduction,
    Sqrt,
    Variable,
    absd,
    constant_exterior,
    halving_add,
    mirror,
    mirror_interior,
    repeat_edge,
    rounding_halving_add,
    saturating_add,
    saturating_cast,
    saturating_sub,
    widening_mul,
    wrap,
)
from polyimage.dsl.types import Half, type_of_dtype

from . import feature_values as fv

BORDERS: dict[str, Any] = {
    "repeat_edge": repeat_edge,
    "mirror": mirror,
    "mirror_interior": mirror_interior,
    "wrap": wrap,
    "constant_exterior": constant_exterior,
}
HALIDE_OPS = {
    "saturating_add": saturating_add,
    "saturating_sub": saturating_sub,
    "absd": absd,
    "halving_add": halving_add,
    "rounding_halving_add": rounding_halving_add,
    "widening_mul": widening_mul,
}
WRAPPING_OPS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
}
# the extents a dimension draws: tiny ones (under a border's reach) most of the time
EXTENTS = (1, 2, 3, 1, 2, 3, 4, 6, 9, 17)
# where a computed stage's domain starts along x and y
OFFSETS = (0, 0, 0, 1, 3, -2)
BINS = 16


def _interval(lo, last) -> Interval:
    """lo .. last + lo (`last` the upper bound of a domain starting at 0)."""
    return Interval(Int, lo, last + lo if lo else last)


@dataclass
class Valued:
    """A stage (or an Image) and its values by NumPy's semantics (None for a stage of a
    generator that computes none, testing.vector_pipelines): `lows` maps each of its axes
    ('x', 'y', 'b') to where its domain starts."""

    func: Any
    lows: dict
    values: np.ndarray | None
    op: str
    features: frozenset = frozenset()

    @property
    def axes(self) -> str:
        return "".join(self.lows)


class FeatureStages:
    """A feature pipeline under construction: its seeded streams, parameters, variables and
    stages so far, and the stage kinds it draws (op_*)."""

    def __init__(self, seed: int):
        self.seed = seed
        # a stream of its own: random_pipeline(seed) draws from random.Random(seed)
        self.rng = random.Random(f"features {seed}")
        self.np_rng = np.random.default_rng([seed, 50])
        self.R, self.C = Parameter(Int, "R"), Parameter(Int, "C")
        names = ("x", "y", "b", "i", "j", "kx", "ky")
        self.vars = {n: Variable(Int, n) for n in names}
        self.sizes = (self.rng.choice(EXTENTS), self.rng.choice(EXTENTS))
        self.extent = {"x": self.sizes[0], "y": self.sizes[1], "b": BINS}
        self.nodes: list[Valued] = []
        self.consumed: set = set()
        # the features of the stage being drawn, given to it when it is added (Valued.features)
        self.features: set = set()
        self.turns: set = set()
        self.count = 0

    # -- helpers -------------------------------------------------------------------------

    def interval(self, axis, lo) -> Interval:
        """The domain of `axis` (R or C points, or the bins) starting at `lo`."""
        return _interval(lo, {"x": self.R - 1, "y": self.C - 1, "b": BINS - 1}[axis])

    def box(self) -> dict:
        """The lows of a new 2-D stage: its domain starts at 0 or elsewhere."""
        lows = {a: self.rng.choice(OFFSETS) for a in "xy"}
        if any(lows.values()):
            self.features.add("offset domain")
        return lows

    def grid(self, lows) -> dict:
        """The coordinates of a box's points, one array per axis, broadcasting."""
        return {
            a: np.arange(lo, lo + self.extent[a]).reshape([-1 if b == a else 1 for b in lows])
            for a, lo in lows.items()
        }

    def shape(self, lows) -> tuple:
        """The array shape of a box."""
        return tuple(self.extent[a] for a in lows)

    def add(self, lows, typ, value, values, op, prefix="s") -> Valued:
        """A Function over the box `lows` defined by `value`, whose values by NumPy are
        `values` converted to `typ` as the DSL converts a definition (Cast)."""
        func = Function(
            ([self.vars[a] for a in lows], [self.interval(a, lo) for a, lo in lows.items()]),
            typ,
            self.name(prefix),
        )
        func.defn = [value]
        converted = fv.cast(np.broadcast_to(values, self.shape(lows)), typ.dtype)
        return self.keep(Valued(func, dict(lows), converted, op))

    def keep(self, node) -> Valued:
        """`node` added to the pipeline with the features drawn for it."""
        node.features = frozenset(self.features)
        self.features.clear()
        self.nodes.append(node)
        return node

    def pick(self, want=lambda n: True) -> Valued | None:
        """A stage 2-D or 1-D along x or y that `want` accepts: mostly a recent one."""
        candidates = [n for n in self.nodes if set(n.axes) <= set("xy") and want(n)]
        if not candidates:
            return None
        if self.rng.random() < 0.7:
            return self.rng.choice(candidates[-2:])
        return self.rng.choice(candidates)

    def at(self, p, lows, shift=None) -> dict:
        """The index of `p` from the box `lows` at its own point moved by `shift`: (DSL
        index, coordinates in p) for each axis of `p`."""
        grid, shift = self.grid(lows), shift or {}
        index = {}
        for a in p.axes:
            d = p.lows[a] - lows[a] + shift.get(a, 0)
            index[a] = (self.vars[a] + d if d else self.vars[a], grid[a] + d)
        return index

    def read(self, p, index, border=None) -> tuple:
        """(the DSL read of `p` at `index`, its values by NumPy), through `border` (mode,
        dims, constant) when given."""
        self.consumed.add(id(p))
        exprs = [index[a][0] for a in p.axes]
        coords = [index[a][1] for a in p.axes]
        lows = [p.lows[a] for a in p.axes]
        if border is None:
            return p.func(*exprs), fv.padded_read(p.values, lows, coords)
        mode, dims, constant = border
        extra = (constant,) if mode == "constant_exterior" else ()
        source = BORDERS[mode](p.func, *extra, dims=dims)
        values = fv.padded_read(p.values, lows, coords, mode, dims, constant)
        return source(*exprs), values

    def border(self, p) -> tuple:
        """A border of `p`: (mode, dims, constant); the constant fits p's type."""
        rng = self.rng
        mode = self.first("border", tuple(BORDERS))
        dims = tuple(range(len(p.axes)))
        if len(dims) > 1 and rng.random() < 0.4:
            dims = (rng.choice(dims),)
        dtype = p.func.typ.dtype
        if dtype.kind in "iu":
            lo, hi = fv.limits(dtype)
            constant = rng.choice((lo, hi, 0, 7))
        else:
            constant = rng.choice((0.1, -0.0, 0.25, 1000.0))
        self.features.add(f"border {mode}")
        if any(self.extent[p.axes[d]] <= 3 for d in dims):
            self.features.add("border of a tiny box")
        return mode, dims, constant

    def first(self, kind, choices):
        """A random choice, but the first of a kind in a pipeline is the seed's (its turn among
        the distinct choices), so that a few consecutive seeds draw every one."""
        choice = self.rng.choice(choices)
        if kind in self.turns:
            return choice
        self.turns.add(kind)
        distinct = tuple(dict.fromkeys(choices))
        return distinct[self.seed % len(distinct)]

    def integer_constant(self, dtype) -> int:
        """A constant of `dtype`: a limit, next to one, or a small number."""
        lo, hi = fv.limits(dtype)
        return self.rng.choice([v for v in (lo, hi, lo + 1, hi - 1, 1, -1, 3, -7) if lo <= v])

    def _pair(self, lows, want) -> tuple:
        """Two operands read from the box `lows` at its own point: (expr, values) each."""
        p = self.pick(want)
        q = self.pick(want)
        return self.read(p, self.at(p, lows)), self.read(q, self.at(q, lows))

    # -- stage kinds ---------------------------------------------------------------------

    def op_integer(self):
        """A Halide integer operation or a wrapping + - * // %, on two integer stages or on
        one and a constant at the type's limits."""
        rng, lows = self.rng, self.box()
        (ea, va), (eb, vb) = self._pair(lows, lambda n: n.values.dtype.kind in "iu")
        dtype = np.result_type(va.dtype, vb.dtype)
        if dtype.kind not in "iu" or rng.random() < 0.3:
            dtype = va.dtype
            c = self.integer_constant(dtype)
            eb, vb = c, np.array(c, dtype)
        fn = self.first("integer", tuple(HALIDE_OPS) * 3 + tuple(WRAPPING_OPS))
        if fn == "widening_mul" and dtype.itemsize == 8:
            fn = "saturating_add"
        if rng.random() < 0.3:
            (ea, va), (eb, vb) = (eb, vb), (ea, va)
        value = (HALIDE_OPS.get(fn) or WRAPPING_OPS[fn])(ea, eb)
        shape = self.shape(lows)
        a, b = (np.broadcast_to(v, shape).astype(dtype) for v in (va, vb))
        values = fv.integer_op(fn, a, b)
        typ = type_of_dtype(values.dtype)
        if rng.random() < 0.15:
            typ = type_of_dtype(rng.choice(fv.INTEGER_DTYPES))
        self.features.add(fn if fn in HALIDE_OPS else "wrapping arithmetic")
        self.features.add(f"{dtype.itemsize * 8}-bit integers")
        return self.add(lows, typ, value, values, fn)

    def op_cast(self):
        """saturating_cast (or a plain Cast) of any stage to any type."""
        lows = self.box()
        p = self.pick()
        e, v = self.read(p, self.at(p, lows))
        dtype = np.dtype(self.rng.choice(fv.INTEGER_DTYPES + (np.float16, np.float32)))
        typ = type_of_dtype(dtype)
        if self.rng.random() < 0.7:
            self.features.add("saturating_cast")
            return self.add(lows, typ, saturating_cast(typ, e), fv.saturating_cast(v, dtype), "sat")
        self.features.add("Cast")
        return self.add(lows, typ, Cast(typ, e), fv.cast(v, dtype), "cast")

    def op_half(self):
        """A Half stage (sometimes a Float one): arithmetic on any two stages, computed as
        Float (Double with an integer operand), rounded where it is stored or cast."""
        rng, lows = self.rng, self.box()
        (ea, va), (eb, vb) = self._pair(lows, lambda n: True)
        a, b = fv.arithmetic(va), fv.arithmetic(vb)
        c = rng.choice((0.5, 3.0, -0.1, 1000.0, 1e-3, 0.25))
        form = rng.choice(("affine", "minmax", "ratio", "sqrt", "rounded"))
        with np.errstate(all="ignore"):
            if form == "affine":
                value, values = ea * c + eb, a * c + b
            elif form == "minmax":
                value, values = (Min(ea, eb), np.minimum(a, b))
                if rng.random() < 0.5:
                    value, values = Max(ea, eb), np.maximum(a, b)
            elif form == "ratio":
                if a.dtype.kind in "iu" and b.dtype.kind in "iu":
                    ea, a = Cast(type_of_dtype(np.float32), ea), fv.cast(a, np.float32)
                value, values = ea / eb, a / b
            elif form == "sqrt":
                value, values = Sqrt(ea * c + eb), np.sqrt(a * c + b)
            else:
                rounded = fv.arithmetic(fv.cast(a * c, np.float16))
                value, values = Cast(Half, ea * c) + eb, rounded + b
        self.features.add("Half")
        typ = Half if rng.random() < 0.8 else type_of_dtype(np.float32)
        return self.add(lows, typ, value, values, f"half {form}")

    def op_border(self):
        """A few taps of a border of a stage (an Image, a Function, a Reduction), reaching
        past tiny boxes: saturating, halving or wrapping sums and extrema of integers,
        weighted sums and extrema of floats, in the order written."""
        rng, lows = self.rng, self.box()
        p = self.pick()
        border = self.border(p)
        reach = rng.choice((1, 2, 3, 5, 9))
        taps = []
        for _ in range(rng.randint(2, 4)):
            shift = {p.axes[d]: rng.randint(-reach, reach) for d in border[1]}
            taps.append(self.read(p, self.at(p, lows, shift), border))
        dtype = p.values.dtype
        value, values = taps[0]
        with np.errstate(all="ignore"):
            if dtype.kind in "iu":
                fn = rng.choice(("saturating_add", "halving_add", "+", "max", "min"))
                for e, v in taps[1:]:
                    if fn in ("max", "min"):
                        value = (Max if fn == "max" else Min)(value, e)
                        values = (np.maximum if fn == "max" else np.minimum)(values, v)
                    else:
                        value = (HALIDE_OPS.get(fn) or WRAPPING_OPS[fn])(value, e)
                        values = fv.integer_op(fn, *np.broadcast_arrays(values, v))
                typ = p.func.typ
            else:
                values = fv.arithmetic(values)
                for e, v in taps[1:]:
                    w = rng.choice((1.0, 0.5, -2.0))
                    if rng.random() < 0.3:
                        value, values = Max(value, e), np.maximum(values, fv.arithmetic(v))
                    else:
                        value, values = value + e * w, values + fv.arithmetic(v) * w
                typ = p.func.typ if rng.random() < 0.8 else type_of_dtype(np.float32)
        return self.add(lows, typ, value, values, f"border {border[0]}")

    def op_reduction(self):
        """A Reduction over a 2-D stage (row sums, column extrema, a 3x3 window through a
        border, a histogram), its reduction variables listed in another order than the
        natural one (i, j, kx, ky), sometimes with a first Case of another operator."""
        rng, v = self.rng, self.vars
        p = self.pick(lambda n: n.axes == "xy")
        if p is None:
            return None
        shape = rng.choice(("rows", "cols", "window", "hist"))
        names = ["i", "j"] + (["kx", "ky"] if shape == "window" else [])
        order = names[:]
        while order == names:
            rng.shuffle(order)
        first = {"i": p.lows["x"], "j": p.lows["y"], "kx": 0, "ky": 0}
        count = {"i": self.extent["x"], "j": self.extent["y"], "kx": 3, "ky": 3}
        last = {"i": self.R - 1, "j": self.C - 1, "kx": 2, "ky": 2}
        rgrid = {
            n: np.arange(first[n], first[n] + count[n]).reshape(
                [-1 if m == n else 1 for m in order]
            )
            for n in order
        }
        if shape == "window":
            index = {
                "x": (v["i"] + v["kx"] - 1, rgrid["i"] + rgrid["kx"] - 1),
                "y": (v["j"] + v["ky"] - 1, rgrid["j"] + rgrid["ky"] - 1),
            }
            mode, _, constant = self.border(p)
            value, values = self.read(p, index, (mode, (0, 1), constant))
        else:
            value, values = self.read(p, {"x": (v["i"], rgrid["i"]), "y": (v["j"], rgrid["j"])})
        full = np.broadcast_shapes(*(g.shape for g in rgrid.values()))
        own, args, cells = self._target(shape, first, rgrid, value, values)
        dtype = values.dtype
        if dtype.kind in "iu":
            out = np.dtype(rng.choice((dtype, dtype, np.int64, np.int32, np.float32)))
        else:
            out = np.dtype(rng.choice((np.float32, np.float32, np.float64, np.int32)))
        ops = ("Sum", "Sum", "Max", "Min") + (("Mul",) if out.kind in "iu" else ())
        op = rng.choice(ops)
        red = Reduction(
            ([v[a] for a in own], [self.interval(a, lo) for a, lo in own.items()]),
            ([v[n] for n in order], [_interval(first[n], last[n]) for n in order]),
            type_of_dtype(out),
            self.name("r"),
        )
        start = {"Sum": 0, "Mul": 1, "Max": -1000, "Min": 1000}[op]
        start = int(np.clip(start, *fv.limits(out))) if out.kind in "iu" else float(start)
        red.default = start
        flat = fv.cast(np.broadcast_to(values, full), out).ravel()
        flat_cells = [np.broadcast_to(c, full).ravel() for c in cells]
        updates = [(op, np.ones(flat.shape, bool), flat_cells, flat)]
        red.defn = [Reduce(red(*args), value, getattr(Op, op))]
        if rng.random() < 0.3:
            second = rng.choice([o for o in ops if o != op])
            corner = first["i"] + first["j"] + 1
            holds = np.broadcast_to(rgrid["i"] + rgrid["j"] <= corner, full).ravel()
            updates.insert(0, (second, holds, flat_cells, flat))
            case = Case(v["i"] + v["j"] <= corner, Reduce(red(*args), value, getattr(Op, second)))
            red.defn = [case, red.defn[0]]
            self.features.add("Reduction with Cases")
        result = fv.reduced(np.full(self.shape(own), start, out), updates)
        self.features.add(f"Reduction {shape}")
        self.features.add(f"{out.kind} {op} Reduction")
        return self.keep(
            Valued(red, dict(own), result, f"reduction {shape} over {', '.join(order)}")
        )

    def _target(self, shape, first, rgrid, value, values) -> tuple:
        """(the Reduction's lows, its Reduce target's indices, the cells they update as
        indices of its array): rows and columns keep p's points along x or y, moved to the
        Reduction's own lows; a histogram's bin is computed from the value."""
        v = self.vars
        if shape == "hist":
            if values.dtype.kind in "iu":
                return {"b": 0}, [value % BINS], [np.mod(values, BINS).astype(np.int64)]
            bins = np.clip(fv.cast(values, np.int32), 0, BINS - 1)
            return {"b": 0}, [Clamp(Cast(Int, value), 0, BINS - 1)], [bins]
        lows = self.box()
        axes = {"rows": "x", "cols": "y", "window": "xy"}[shape]
        lows = {a: lows[a] for a in axes}
        args, cells = [], []
        for a in axes:
            r = "i" if a == "x" else "j"
            d = lows[a] - first[r]
            args.append(v[r] + d if d else v[r])
            cells.append(rgrid[r] - first[r])
        return lows, args, cells

    def name(self, prefix) -> str:
        """A new stage name."""
        self.count += 1
        return f"{prefix}{self.count}"
