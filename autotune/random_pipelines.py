"""Seeded random DSL pipelines and random valid schedules, for differential tests
(tests/test_schedules_random.py) and as extra training pipelines of `polyimage tune --random`.

`random_pipeline(seed)` builds a small pipeline (2 to 8 computed stages over Parameters R and C)
from a `random.Random(seed)`, together with the arguments of one call: input arrays of the
declared shapes and dtypes, and the parameter values. The same seed always gives the same
pipeline (stage names, expressions, data). `random_schedule(graph, rng)` draws a Schedule for
a stage graph (`pipe.stage_graph`): contiguous segments of a random topological order, each
untiled or tiled with one or two levels.

Every read of a producer is inside the producer's domain for every parameter value, so that
`compile` never raises BoundsError: a stage's domain is derived from its producer's by the
operation that reads it (shrunk by the stencil radius, halved for down-sampling, doubled for
up-sampling), or the read is guarded (a Case or a Select on the loop variables) or its indices
are clamped to the producer's domain with Min/Max (affine, so still checked at compile time).
Data-dependent indices (lookup tables, histogram bins) are clamped explicitly, as the
compiler would do anyway.

Shapes of the building blocks:
  - 2-D stages (x, y) over [lo, ub] boxes; 3-D stages (c, x, y) with c in 0..2 first;
  - 1-D stages: lookup tables (bins 0..15), row sums and column maxima (Reductions);
  - pointwise ops, stencils of radius 1-2 along x, y or both (cross or box), down-sampling by
    2 (`g(2*x, y) + g(2*x + 1, y)` on a half-size domain), up-sampling (`g(x // 2, y)`),
    Cases on affine conditions (borders, halves, parities), Selects (affine or data
    dependent), binary ops mixing two producers (diamonds), channel expand/collapse/shuffle,
    Reductions (row sums, column maxima, histograms, block sums, channel sums);
  - Float (float32) pipelines on [0, 1) or small-integer-valued inputs, and Int (int32)
    pipelines on small integers (some from a UChar image) for bit-exact checks.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from polyimage import (
    Abs,
    Case,
    Cast,
    Clamp,
    Float,
    Floor,
    Function,
    Image,
    Int,
    Interval,
    Max,
    Min,
    Op,
    Parameter,
    Reduce,
    Reduction,
    Select,
    Short,
    Sqrt,
    UChar,
    Variable,
)
from polyimage.dsl import expr as E
from polyimage.dsl.printer import format_expr
from polyimage.graph import build_graph
from polyimage.graph.dag import definition_exprs
from polyimage.schedule import GroupSchedule, Schedule
from polyimage.schedule.plan import tile_rank

# (R, C) of the calls: odd and even, tiny and a few tiles' worth
SIZES = ((5, 7), (7, 5), (13, 9), (16, 16), (33, 70), (67, 93))
SIZE_WEIGHTS = (1, 1, 2, 1, 2, 2)
TILE_SIZES = (1, 2, 3, 7, 8, 64, 1000)
LUT_BINS = 16
MAX_STAGES = 8


@dataclass
class RandomPipeline:
    """A generated pipeline: `outputs` for compile/interpret, `arguments` for the calls (input
    arrays and parameter values), a readable `description`, and the suggested `inline`."""

    seed: int
    outputs: list
    arguments: dict
    description: str
    inline: bool = True
    sizes: tuple = ()
    features: frozenset = frozenset()

    def __str__(self):
        return self.description


# -- domains -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dim:
    """One dimension of a stage: its axis ('c' channel, 'x' rows, 'y' columns, 'b' bins), the
    inclusive range [lo, ub] (lo an int, ub an int or a Parameter expression), the value of ub
    at the chosen sizes, and the resolution level along x/y (0 full, 1 half, -1 double)."""

    axis: str
    lo: int
    ub: object
    ub_val: int
    level: int = 0

    @property
    def extent(self) -> int:
        return self.ub_val - self.lo + 1

    @property
    def key(self) -> str:
        return f"{self.axis}{self.level}[{self.lo},{format_expr(E.to_expr(self.ub))}]"

    def interval(self) -> Interval:
        return Interval(Int, self.lo, self.ub)


@dataclass
class Node:
    """A stage of the pipeline under construction."""

    func: object
    dims: tuple
    kind: str  # image, func, lut, reduction
    dtype: object  # the DSL type
    op: str = ""  # the operation that made it

    @property
    def axes(self) -> str:
        return "".join(d.axis for d in self.dims)

    @property
    def spatial(self) -> bool:
        """Indexed by the loop variables (x, y and maybe c), not by data (bins)."""
        return "x" in self.axes and "y" in self.axes


# -- the generator -------------------------------------------------------------------------


class _Builder:
    def __init__(self, seed: int):
        self.seed = seed
        self.rng = random.Random(seed)
        rng = self.rng
        self.R, self.C = Parameter(Int, "R"), Parameter(Int, "C")
        self.c, self.x, self.y = Variable(Int, "c"), Variable(Int, "x"), Variable(Int, "y")
        self.b = Variable(Int, "b")
        self.k, self.i, self.j = Variable(Int, "k"), Variable(Int, "i"), Variable(Int, "j")
        self.sizes = rng.choices(SIZES, SIZE_WEIGHTS)[0]
        self.op = "input"
        self.is_float = rng.random() < 0.7
        self.dtype = Float if self.is_float else Int
        self.small_ints = self.is_float and rng.random() < 0.5
        self.weight = Parameter(Float, "w") if self.is_float and rng.random() < 0.2 else None
        self.nodes = []
        self.arguments = {"R": self.sizes[0], "C": self.sizes[1]}
        if self.weight is not None:
            self.arguments["w"] = 0.75
        self.count = 0

    # -- helpers -------------------------------------------------------------------------

    def var(self, axis):
        return {"c": self.c, "x": self.x, "y": self.y, "b": self.b}[axis]

    def new_name(self, prefix="s"):
        self.count += 1
        return f"{prefix}{self.count}"

    def const(self, choices_float=(0.5, 0.25, 2.0, 1.5, 0.125, 3.0), choices_int=(1, 2, 3, 5)):
        return self.rng.choice(choices_float if self.is_float else choices_int)

    def spatial_dims(self, axes):
        R, C = self.sizes
        full = {
            "c": Dim("c", 0, 2, 2),
            "x": Dim("x", 0, self.R - 1, R - 1),
            "y": Dim("y", 0, self.C - 1, C - 1),
        }
        return tuple(full[a] for a in axes)

    def make_func(self, dims, name=None, typ=None):
        variables = [self.var(d.axis) for d in dims]
        return Function(
            (variables, [d.interval() for d in dims]), typ or self.dtype, name or self.new_name()
        )

    def add(self, func, dims, kind="func", dtype=None):
        node = Node(func, tuple(dims), kind, dtype or self.dtype, self.op)
        self.nodes.append(node)
        return node

    def pick(self, want=None, exclude=()):
        """A producer: a recent stage most of the time, any earlier one otherwise (diamonds).
        `want(node)` filters."""
        candidates = [n for n in self.nodes if (want is None or want(n)) and n not in exclude]
        if not candidates:
            return None
        computed = [n for n in candidates if n.kind != "image"]
        if computed and self.rng.random() < 0.85:
            recent = computed[-2:] if self.rng.random() < 0.7 else computed
            return self.rng.choice(recent)
        return self.rng.choice(candidates)

    def read(self, producer, dims, offsets=None, mode="auto"):
        """A reference to `producer` from a consumer with dimensions `dims`, at the consumer's
        own point (scaled between resolution levels) shifted by `offsets` (axis -> int).
        mode 'trust': the caller knows the read is in bounds (a shrunk domain, a guard);
        'clamp': every index is clamped to the producer's domain; 'auto': indices are clamped
        along dimensions whose domains differ from the consumer's."""
        offsets = offsets or {}
        by_axis = {d.axis: d for d in dims}
        args = []
        for pd in producer.dims:
            cd = by_axis.get(pd.axis)
            if pd.axis == "b":
                raise ValueError("bins are read through data")
            v = self.var(pd.axis)
            off = offsets.get(pd.axis, 0)
            if cd is None:
                # a channel the consumer does not have: a fixed one
                args.append(self.rng.randint(pd.lo, pd.ub_val) if pd.axis == "c" else pd.lo)
                continue
            if pd.axis == "c":
                args.append((v + off) % 3 if off else v)
                continue
            index = v
            if cd.level > pd.level:
                index = v * (2 ** (cd.level - pd.level))
            elif cd.level < pd.level:
                index = v // (2 ** (pd.level - cd.level))
            if off:
                index = index + off
            if mode == "clamp" or (mode == "auto" and (cd.key != pd.key or off)):
                index = Clamp(index, pd.lo, pd.ub)
            args.append(index)
        return producer.func(*args)

    def data_index(self, value):
        """A lookup index in [0, LUT_BINS - 1] computed from data (clamped; not affine)."""
        if self.is_float:
            scale = 1.0 if self.small_ints else float(LUT_BINS)
            return Clamp(Cast(Int, value * scale), 0, LUT_BINS - 1)
        if self.rng.random() < 0.5:
            return value % LUT_BINS
        return Clamp(value, 0, LUT_BINS - 1)

    def raw_index(self, value):
        """An index computed from data and left unclamped (the compiled code clamps it to the
        domain it reads, as the interpreter does): a cast, then `//`, `%` or a shift."""
        rng = self.rng
        index = Cast(Int, value * float(LUT_BINS)) if value.typ.is_float else Cast(Int, value)
        r = rng.random()
        if r < 0.4:
            return index // rng.choice((2, 3, 5))
        if r < 0.8:
            return index % rng.choice((5, LUT_BINS, 20))
        return index - rng.choice((1, 3))

    def unary(self, e):
        """A cheap pointwise touch on `e` (or `e` itself)."""
        r = self.rng.random()
        if r < 0.45:
            return e
        if r < 0.6:
            return Abs(e)
        if r < 0.7:
            return e * self.const() + self.const()
        if r < 0.8:
            return Min(e, self.const((0.75, 1.5, 4.0), (7, 20, 100)))
        if r < 0.9:
            return Max(e, self.const((0.25, 0.5, 1.0), (-3, 0, 2)))
        if self.is_float:
            return Sqrt(Abs(e)) if self.rng.random() < 0.5 else Floor(e * 4.0) * 0.25
        return e // self.const(choices_int=(2, 3, 4)) if self.rng.random() < 0.5 else e % 7

    def average(self, terms):
        """Combine stencil taps: a (weighted) mean for Float, a sum (maybe halved) for Int."""
        rng = self.rng
        if len(terms) > 1 and rng.random() < 0.15:
            total = terms[0]
            for t in terms[1:]:
                total = Max(total, t) if rng.random() < 0.5 else Min(total, t)
            return total
        weights = [rng.choice((1, 1, 2)) for _ in terms]
        total = None
        for w, t in zip(weights, terms):
            term = t * w if w != 1 else t
            total = term if total is None else total + term
        if self.is_float:
            return total / sum(weights) if rng.random() < 0.5 else total * (1.0 / sum(weights))
        return total // sum(weights) if rng.random() < 0.5 else total

    def affine_condition(self, dims):
        """A condition on the loop variables: a half, a border band, a parity, a band."""
        rng = self.rng
        spatial = [d for d in dims if d.axis in "xy"]
        d = rng.choice(spatial)
        v = self.var(d.axis)
        kind = rng.random()
        if kind < 0.3:
            cond = v * 2 <= d.ub + d.lo
        elif kind < 0.5:
            cond = v < d.lo + rng.randint(1, 3)
        elif kind < 0.65:
            cond = (v + self.var(rng.choice(spatial).axis)) % 2 == 0
        elif kind < 0.8 and len(spatial) == 2:
            cond = self.x - self.y > rng.randint(-3, 3)
        else:
            cond = (v >= d.lo + 2) & (v <= d.ub - 2)
        if "c" in "".join(dd.axis for dd in dims) and rng.random() < 0.25:
            cond = cond | (self.c == rng.randint(0, 2))
        if rng.random() < 0.15:
            cond = ~cond
        return cond

    def data_condition(self, e):
        if self.is_float:
            threshold = self.rng.choice((0.5, 0.25, 2.0, 4.5))
            return e > threshold if self.rng.random() < 0.5 else e <= threshold
        return e > self.rng.randint(-5, 5)

    # -- inputs --------------------------------------------------------------------------

    def add_input(self, axes):
        R, C = self.sizes
        rng = self.rng
        name = f"in{sum(n.kind == 'image' for n in self.nodes)}"
        extents = {"c": 3, "x": self.R, "y": self.C}
        shape = tuple({"c": 3, "x": R, "y": C}[a] for a in axes)
        np_rng = np.random.default_rng(self.seed * 7919 + len(self.nodes))
        if self.is_float:
            typ = Float
            if self.small_ints:
                data = np_rng.integers(0, 10, size=shape).astype(np.float32)
            else:
                data = np_rng.random(shape, dtype=np.float32)
        elif rng.random() < 0.3:
            typ = UChar
            data = np_rng.integers(0, 256, size=shape, dtype=np.uint8)
        else:
            typ = Int
            data = np_rng.integers(-50, 51, size=shape).astype(np.int32)
        img = Image(typ, name, [extents[a] for a in axes])
        self.arguments[name] = data
        return self.add(img, self.spatial_dims(axes), "image", typ)

    def source(self, e, node):
        """A value read from `node`, converted to the pipeline's type when it has another
        one (a UChar image, a UChar or Short stage)."""
        if node.dtype is not self.dtype:
            return Cast(self.dtype, e)
        return e

    # -- stage kinds ---------------------------------------------------------------------

    def op_pointwise(self):
        p = self.pick(lambda n: n.spatial)
        dims = p.dims
        f = self.make_func(dims)
        value = self.unary(self.source(self.read(p, dims), p))
        if self.rng.random() < 0.5 or self.weight is None:
            value = value * self.const() if self.rng.random() < 0.4 else value + self.const()
        else:
            value = value * self.weight
        f.defn = [value]
        return self.add(f, dims)

    def op_binary(self):
        """Two producers combined pointwise; the second is read at the first one's points
        (clamped to its own domain where the domains differ)."""
        p = self.pick(lambda n: n.spatial)
        q = self.pick(lambda n: n.spatial, exclude=(p,)) or p
        if len(q.dims) > len(p.dims):
            p, q = q, p
        dims = p.dims
        f = self.make_func(dims)
        a = self.source(self.read(p, dims), p)
        b = self.source(self.read(q, dims, mode="clamp" if self.rng.random() < 0.2 else "auto"), q)
        r = self.rng.random()
        if r < 0.35:
            value = a + b
        elif r < 0.55:
            value = a - b * self.const()
        elif r < 0.7:
            value = Max(a, b) if self.rng.random() < 0.5 else Min(a, b)
        elif r < 0.85:
            value = a * b if not self.is_float or not self.small_ints else a * b * 0.125
        else:
            value = Select(self.data_condition(b), a, b * self.const())
        f.defn = [self.unary(value)]
        return self.add(f, dims)

    def op_stencil(self):
        rng = self.rng
        p = self.pick(lambda n: n.spatial)
        along = rng.choice(("x", "y", "xy", "xy"))
        radius = {a: rng.choice((1, 1, 1, 2)) for a in along}
        box = along == "xy" and all(r == 1 for r in radius.values()) and rng.random() < 0.5
        if box:
            taps = [{"x": dx, "y": dy} for dx in (-1, 0, 1) for dy in (-1, 0, 1)]
        else:
            taps = [{}] + [
                {a: s * k} for a in along for k in range(1, radius[a] + 1) for s in (-1, 1)
            ]
        if rng.random() < 0.3:
            # an asymmetric stencil (a derivative, a shifted read)
            taps = [t for t in taps if all(v >= 0 for v in t.values())]
        by_axis = {d.axis: d for d in p.dims}
        mode = rng.choice(("shrink", "shrink", "case", "clamp", "select"))
        if mode == "shrink" and any(by_axis[a].extent < 2 * radius[a] + 2 for a in along):
            mode = rng.choice(("case", "clamp", "select"))
        if mode == "shrink":
            dims = tuple(
                Dim(
                    d.axis,
                    d.lo + radius[d.axis],
                    d.ub - radius[d.axis],
                    d.ub_val - radius[d.axis],
                    d.level,
                )
                if d.axis in along
                else d
                for d in p.dims
            )
            value = self.average([self.source(self.read(p, dims, t, "trust"), p) for t in taps])
            defn = [value]
        elif mode == "clamp":
            dims = p.dims
            value = self.average(
                [self.source(self.read(p, dims, t, mode="clamp"), p) for t in taps]
            )
            defn = [value]
        elif mode == "case":
            dims = p.dims
            cond = None
            for a in along:
                d, r = by_axis[a], radius[a]
                v = self.var(a)
                c = (v >= d.lo + r) & (v <= d.ub - r)
                cond = c if cond is None else cond & c
            inner = self.average([self.source(self.read(p, dims, t, "trust"), p) for t in taps])
            border = self.source(self.read(p, dims), p)
            defn = [Case(cond, inner), self.unary(border)]
            if rng.random() < 0.3:
                # a second Case for the first rows, before the stencil's
                d = by_axis[along[0]]
                defn.insert(0, Case(self.var(d.axis) <= d.lo, border * self.const()))
        else:  # select: every tap guarded by its own condition, the centre otherwise
            dims = p.dims
            centre = self.source(self.read(p, dims), p)
            terms = []
            for t in taps:
                cond = None
                for a, off in t.items():
                    if off == 0:
                        continue
                    d, v = by_axis[a], self.var(a)
                    c = v >= d.lo - off if off < 0 else v <= d.ub - off
                    cond = c if cond is None else cond & c
                tap = self.source(self.read(p, dims, t, "trust"), p)
                terms.append(tap if cond is None else Select(cond, tap, centre))
            defn = [self.average(terms)]
        f = self.make_func(dims)
        f.defn = defn
        return self.add(f, dims)

    def op_downsample(self, p=None, channel=None):
        """`p` (or a picked stage) at half resolution along x, y or both; from a 3-D `p`,
        sometimes (always with `channel`) one channel of it only."""
        rng = self.rng
        p = p or self.pick(
            lambda n: (
                n.spatial
                and all(d.extent >= 4 for d in n.dims if d.axis in "xy")
                and all(d.level < 2 for d in n.dims if d.axis in "xy")
            )
        )
        if p is None:
            return None
        along = rng.choice(("x", "y", "xy"))
        # one channel of a 3-D producer: a 2-D stage at another resolution in a 3-D group,
        # owned by the tiles of the first channel tile only
        if channel is None and p.axes == "cxy" and rng.random() < 0.3:
            channel = rng.randint(0, 2)
        # ... whose domain may stop short of the producer's half, read with an offset
        shrink, shift = (
            (rng.randint(0, 2), rng.choice((-2, 0, 1))) if channel is not None else (0, 0)
        )
        room = min((d.ub_val - 1) // 2 - (d.lo + 1) // 2 for d in p.dims if d.axis in along)
        shrink = max(min(shrink, room), 0)
        dims = tuple(
            Dim(
                d.axis,
                (d.lo + 1) // 2,
                (d.ub - 1) // 2 - shrink,
                (d.ub_val - 1) // 2 - shrink,
                d.level + 1,
            )
            if d.axis in along
            else d
            for d in p.dims
            if d.axis != "c" or channel is None
        )
        f = self.make_func(dims)
        terms = []
        parities = [{}]
        for a in along:
            parities = [dict(t, **{a: s}) for t in parities for s in (0, 1)]
        for par in parities:
            args = [
                channel
                if d.axis == "c" and channel is not None
                else Clamp(2 * self.var(d.axis) + (par[d.axis] + shift), d.lo, d.ub)
                if d.axis in along and shift
                else (2 * self.var(d.axis) + par[d.axis] if par[d.axis] else 2 * self.var(d.axis))
                if d.axis in along
                else self.var(d.axis)
                for d in p.dims
            ]
            terms.append(self.source(p.func(*args), p))
        f.defn = [self.average(terms)]
        return self.add(f, dims)

    def op_upsample(self):
        rng = self.rng
        p = self.pick(
            lambda n: (
                n.spatial and all(d.level > -1 and d.extent <= 80 for d in n.dims if d.axis in "xy")
            )
        )
        if p is None:
            return None
        along = rng.choice(("x", "y", "xy"))
        smooth = rng.random() < 0.5
        # p(v // 2) on [2 lo, 2 ub + 1]; with p((v + 1) // 2) as well, on [2 lo, 2 ub]
        dims = tuple(
            Dim(
                d.axis,
                2 * d.lo,
                2 * d.ub + (0 if smooth else 1),
                2 * d.ub_val + (0 if smooth else 1),
                d.level - 1,
            )
            if d.axis in along
            else d
            for d in p.dims
        )
        f = self.make_func(dims)

        def at(shift):
            return p.func(
                *[
                    (self.var(d.axis) + shift) // 2
                    if d.axis in along and shift
                    else self.var(d.axis) // 2
                    if d.axis in along
                    else self.var(d.axis)
                    for d in p.dims
                ]
            )

        value = self.source(at(0), p)
        if smooth:
            value = self.average([value, self.source(at(1), p)])
        f.defn = [value]
        return self.add(f, dims)

    def op_cases(self):
        """Cases on affine conditions of the loop variables (and sometimes data), each with
        its own value; a last plain value covers the rest (or sometimes nothing does)."""
        rng = self.rng
        p = self.pick(lambda n: n.spatial)
        q = self.pick(lambda n: n.spatial)
        dims = p.dims
        f = self.make_func(dims)
        a = self.source(self.read(p, dims), p)
        b = self.source(self.read(q, dims), q)
        defn = [Case(self.affine_condition(dims), self.unary(a))]
        if rng.random() < 0.5:
            defn.append(Case(self.affine_condition(dims), b * self.const()))
        if rng.random() < 0.2:
            defn.append(Case(self.data_condition(a), a - b))
        if rng.random() < 0.9:
            defn.append(self.unary(b))
        f.defn = defn
        return self.add(f, dims)

    def op_select(self):
        """A Select on an affine condition whose taken branch alone is in bounds (lazy), or
        on data."""
        rng = self.rng
        p = self.pick(lambda n: n.spatial)
        dims = p.dims
        f = self.make_func(dims)
        d = rng.choice([d for d in dims if d.axis in "xy"])
        v, off = self.var(d.axis), rng.choice((-2, -1, 1, 2))
        guard = v >= d.lo - off if off < 0 else v <= d.ub - off
        shifted = self.source(self.read(p, dims, {d.axis: off}, "trust"), p)
        here = self.source(self.read(p, dims), p)
        if rng.random() < 0.6:
            value = Select(guard, shifted - here, here * self.const())
        else:
            value = Select(
                self.data_condition(here), here * self.const(), Select(guard, shifted, here)
            )
        f.defn = [value]
        return self.add(f, dims)

    def op_expand(self):
        """2-D -> 3-D (c, x, y): a value per channel."""
        rng = self.rng
        p = self.pick(lambda n: n.spatial and n.axes == "xy")
        if p is None:
            return None
        dims = (Dim("c", 0, 2, 2),) + p.dims
        f = self.make_func(dims)
        a = self.source(self.read(p, p.dims), p)
        if rng.random() < 0.5:
            f.defn = [
                Case(self.c == 0, a),
                Case(self.c == 1, self.unary(a) * self.const()),
                a + self.const(),
            ]
        else:
            f.defn = [a * (self.c + 1) + self.c]
        return self.add(f, dims)

    def op_collapse(self):
        """3-D -> 2-D: a channel sum, maximum or one channel against another."""
        rng = self.rng
        p = self.pick(lambda n: n.axes == "cxy")
        if p is None:
            return None
        dims = p.dims[1:]
        f = self.make_func(dims)
        x, y = self.x, self.y
        chans = [self.source(p.func(ch, x, y), p) for ch in range(3)]
        r = rng.random()
        if r < 0.5:
            f.defn = [self.average(chans)]
        elif r < 0.75:
            f.defn = [Max(Max(chans[0], chans[1]), chans[2])]
        else:
            f.defn = [chans[0] - chans[2] * self.const()]
        return self.add(f, dims)

    def op_shuffle(self):
        """3-D: each channel mixed with the next one (c + 1) % 3 and the reversed one 2 - c."""
        p = self.pick(lambda n: n.axes == "cxy")
        if p is None:
            return None
        dims = p.dims
        f = self.make_func(dims)
        x, y, c = self.x, self.y, self.c
        f.defn = [
            self.source(p.func(c, x, y), p) * self.const()
            + self.source(p.func((c + 1) % 3, x, y), p)
            - self.source(p.func(2 - c, x, y), p)
        ]
        return self.add(f, dims)

    def op_convert(self):
        """A stage of a narrower type: Float -> UChar (saturating, or clamped first), Int ->
        Short (wrapping)."""
        p = self.pick(lambda n: n.spatial)
        dims = p.dims
        a = self.source(self.read(p, dims), p)
        if self.is_float:
            typ = UChar
            value = a * 64.0 if self.rng.random() < 0.5 else Clamp(a * 64.0, 0.0, 255.0)
        else:
            typ = Short
            value = a * 300 + 7
        f = self.make_func(dims, typ=typ)
        f.defn = [value]
        return self.add(f, dims, dtype=typ)

    def op_lookup(self):
        """A 16-entry table (a computed 1-D stage, shared between lookups) read at
        data-dependent, clamped indices."""
        rng = self.rng
        p = self.pick(lambda n: n.spatial)
        tables = [n for n in self.nodes if n.axes == "b"]
        if tables and rng.random() < 0.5:
            table = rng.choice(tables)
        else:
            b = self.b
            tdims = (Dim("b", 0, LUT_BINS - 1, LUT_BINS - 1),)
            table_f = Function(([b], [tdims[0].interval()]), self.dtype, self.new_name("lut"))
            if self.is_float:
                table_f.defn = [Case(b < 4, 0.5), Cast(Float, (b * 5) % 16) * 0.25]
            else:
                table_f.defn = [(b * 7) % 16 - 3]
            table = self.add(table_f, tdims, "lut")
        dims = p.dims
        f = self.make_func(dims)
        a = self.source(self.read(p, dims), p)
        index = self.data_index(a) if rng.random() < 0.7 else self.raw_index(a)
        looked = table.func(index)
        f.defn = [looked + a * self.const() if rng.random() < 0.5 else looked]
        return self.add(f, dims)

    def op_reduction(self):
        """A Reduction over a producer's whole domain, then (usually) a stage reading it."""
        rng = self.rng
        p = self.pick(lambda n: n.spatial)
        i, j, k = self.i, self.j, self.k
        pd = {d.axis: d for d in p.dims}
        has_c = "c" in pd
        rvars = ([k] if has_c else []) + [i, j]
        rintervals = [d.interval() for d in p.dims]
        value = self.source(p.func(*rvars), p)
        kind = rng.choice(("rowsum", "colmax", "hist", "blocks", "chansum" if has_c else "rowsum"))
        name = self.new_name("r")
        if kind == "rowsum":
            dims = (pd["x"],)
            red = Reduction(([self.x], [pd["x"].interval()]), (rvars, rintervals), self.dtype, name)
            red.defn = [Reduce(red(i), value, Op.Sum)]
        elif kind == "colmax":
            dims = (pd["y"],)
            red = Reduction(([self.y], [pd["y"].interval()]), (rvars, rintervals), self.dtype, name)
            red.default = -1000 if not self.is_float else -1000.0
            if rng.random() < 0.5:
                red.defn = [Reduce(red(j), value, Op.Max)]
            else:
                red.defn = [
                    Case(i % 2 == 0, Reduce(red(j), value, Op.Max)),
                    Reduce(red(j), value * self.const(), Op.Max),
                ]
        elif kind == "hist":
            dims = (Dim("b", 0, LUT_BINS - 1, LUT_BINS - 1),)
            red = Reduction(([self.b], [dims[0].interval()]), (rvars, rintervals), self.dtype, name)
            red.defn = [Reduce(red(self.data_index(value)), 1, Op.Sum)]
        elif kind == "blocks":
            dx, dy = pd["x"], pd["y"]
            dims = (
                Dim("x", dx.lo // 4, dx.ub // 4, dx.ub_val // 4, dx.level + 2),
                Dim("y", dy.lo // 4, dy.ub // 4, dy.ub_val // 4, dy.level + 2),
            )
            red = Reduction(
                ([self.x, self.y], [d.interval() for d in dims]),
                (rvars, rintervals),
                self.dtype,
                name,
            )
            red.default = 1
            red.defn = [Reduce(red(i // 4, j // 4), value, Op.Sum)]
        else:  # chansum: 3-D -> 2-D
            dims = (pd["x"], pd["y"])
            red = Reduction(
                ([self.x, self.y], [d.interval() for d in dims]),
                (rvars, rintervals),
                self.dtype,
                name,
            )
            red.defn = [Reduce(red(i, j), value, Op.Sum)]
        node = self.add(red, dims, "reduction")
        if rng.random() < 0.2:
            return node  # maybe an output by itself, maybe read later
        # a consumer with p's domain that reads the reduction
        q = p if rng.random() < 0.7 else self.pick(lambda n: n.spatial)
        qdims = q.dims
        f = self.make_func(qdims)
        here = self.source(self.read(q, qdims), q)
        if kind == "hist":
            other = node.func(self.data_index(here))
        elif kind in ("blocks", "chansum"):
            other = self.read(node, qdims, mode="clamp")
        else:
            other = self.read(node, qdims)
        f.defn = [
            here * self.const() - other
            if rng.random() < 0.5
            else Select(self.data_condition(here), other, here)
        ]
        return self.add(f, qdims)

    def op_scatter(self):
        """A histogram whose bin is a stage's value through a cast, `//` or `%`, unclamped:
        often a stage of coordinates (`y`, `x + y`) that inlining makes an affine index, which
        must stay clamped. A stage may read it back."""
        rng = self.rng
        p = self.pick(lambda n: n.spatial)
        pd = {d.axis: d for d in p.dims}
        rvars = ([self.k] if "c" in pd else []) + [self.i, self.j]
        if rng.random() < 0.6:
            coords = self.make_func(p.dims, name=self.new_name("coords"), typ=Int)
            x, y = self.x, self.y
            forms = [y, x, x + y, y - x * 2] + ([self.c + y] if "c" in pd else [])
            coords.defn = [rng.choice(forms)]
            self.op = "coords"
            source = self.add(coords, p.dims, dtype=Int)
            self.op = "scatter"
        else:
            source = p
        index = self.raw_index(source.func(*rvars))
        dims = (Dim("b", 0, LUT_BINS - 1, LUT_BINS - 1),)
        red = Reduction(
            ([self.b], [dims[0].interval()]),
            (rvars, [d.interval() for d in p.dims]),
            self.dtype,
            self.new_name("r"),
        )
        amount = self.source(p.func(*rvars), p) if rng.random() < 0.4 else 1
        red.defn = [Reduce(red(index), amount, Op.Sum)]
        node = self.add(red, dims, "reduction")
        if rng.random() < 0.5:
            return node
        q = self.pick(lambda n: n.spatial)
        f = self.make_func(q.dims)
        here = self.source(self.read(q, q.dims), q)
        f.defn = [here + node.func(self.raw_index(here))]
        return self.add(f, q.dims)

    # -- the pipeline --------------------------------------------------------------------

    OPS = (
        ("pointwise", 2),
        ("binary", 3),
        ("stencil", 5),
        ("downsample", 2),
        ("upsample", 1.5),
        ("cases", 2),
        ("select", 1.5),
        ("expand", 1.5),
        ("collapse", 1.5),
        ("shuffle", 0.8),
        ("lookup", 1),
        ("reduction", 1),
        ("scatter", 0.8),
        ("convert", 0.7),
    )

    def build_mixed(self) -> RandomPipeline:
        """A 3-D stage, one channel of it at half resolution (2-D, stopping short and read
        with an offset) and a 3-D stage reading the first (and maybe the second): a group of
        them tiles 3-D while one live-out lacks the channel dimension."""
        rng = self.rng
        self.sizes = rng.choice(SIZES[2:])  # room for a stencil and half a resolution
        self.arguments.update(R=self.sizes[0], C=self.sizes[1])
        self.add_input("cxy")
        self.op = "stencil"
        p = self.op_stencil()
        self.op = "downsample"
        half = self.op_downsample(p, channel=rng.randint(0, 2))
        self.op = "binary"
        top = self.make_func(p.dims)
        a = self.source(self.read(p, p.dims), p)
        if rng.random() < 0.5:  # the 2-D stage is read in the group, else only outside
            b = self.source(self.read(half, p.dims, mode="clamp"), half)
            top.defn = [a - b * self.const() if rng.random() < 0.5 else Max(a, b)]
        else:
            top.defn = [self.unary(a)]
        self.add(top, p.dims)
        outputs = [half.func, top] + ([p.func] if rng.random() < 0.3 else [])
        return self._finish(outputs, rng.random() < 0.5)

    def build(self) -> RandomPipeline:
        rng = self.rng
        self.add_input(rng.choice(("xy", "xy", "cxy")))
        if rng.random() < 0.3:
            self.add_input(rng.choice(("xy", "cxy")))
        n_stages = rng.randint(2, MAX_STAGES)
        names, weights = zip(*self.OPS)
        while True:
            while sum(n.kind != "image" for n in self.nodes) < n_stages:
                op = rng.choices(names, weights)[0]
                self.op = op
                getattr(self, f"op_{op}")()
            outputs = self.choose_outputs()
            graph = build_graph(outputs)
            # at least two computed stages (the outputs may read only inputs)
            if len(graph.computed) >= 2 or n_stages >= 3 * MAX_STAGES:
                break
            n_stages += 1
        return self._finish(outputs, rng.random() < 0.65)

    def _finish(self, outputs, inline) -> RandomPipeline:
        graph = build_graph(outputs)
        used = {s.name for s in graph.stages} | {p.name for p in graph.parameters}
        arguments = {k: v for k, v in self.arguments.items() if k in used}
        text = describe(self.seed, outputs, arguments, self.is_float)
        features = {n.op for n in self.nodes if n.func.name in used}
        features.add("Float" if self.is_float else "Int")
        features.add(f"{len(outputs)} outputs")
        if any(n.axes == "cxy" for n in self.nodes if n.func.name in used):
            features.add("3-D")
        if any(isinstance(n.func, Reduction) for n in self.nodes if n.func.name in used):
            features.add("Reduction")
        consumed = {p for s in graph.stages for p in s.producers}
        if any(o in consumed for o in graph.outputs):
            features.add("output read by a stage")
        if any(len(s.consumers) > 1 for s in graph.stages if s.kind != "image"):
            features.add("several consumers")
        return RandomPipeline(
            self.seed, outputs, arguments, text, inline, self.sizes, frozenset(features)
        )

    def choose_outputs(self):
        rng = self.rng
        computed = [n for n in self.nodes if n.kind != "image"]
        consumed = set()
        for n in computed:
            for e in definition_exprs(n.func):
                for ref in E.references(e):
                    if ref.func is not n.func:
                        consumed.add(id(ref.func))
        last = computed[-1]
        outputs = [last]
        sinks = [n for n in computed[:-1] if id(n.func) not in consumed and n.kind != "lut"]
        rng.shuffle(sinks)
        extra = rng.choice((0, 0, 1, 2))
        outputs += sinks[:extra]
        inner = [n for n in computed[:-1] if id(n.func) in consumed and n not in outputs]
        if inner and len(outputs) < 3 and rng.random() < 0.25:
            outputs.append(rng.choice(inner))  # an output another stage also reads
        rng.shuffle(outputs)
        return [n.func for n in outputs]


def describe(seed, outputs, arguments, is_float) -> str:
    """The pipeline as text: one stage a line with its domain and Cases."""
    graph = build_graph(outputs)
    lines = [
        f"random pipeline, seed {seed} ({'Float' if is_float else 'Int'}); "
        f"outputs {', '.join(graph.outputs)}; "
        + ", ".join(
            f"{k}={v}" if np.isscalar(v) else f"{k}: {v.dtype}{list(v.shape)}"
            for k, v in arguments.items()
        )
    ]
    for s in graph.stages:
        func = s.func
        if isinstance(func, Image):
            lines.append(
                f"  {func.name} = Image({func.typ}, "
                f"[{', '.join(format_expr(e) for e in func.extents)}])"
            )
            continue
        dom = ", ".join(
            f"{v.name} in {format_expr(iv.lb)}..{format_expr(iv.ub)}"
            for v, iv in zip(func.variables, func.intervals)
        )
        kind = type(func).__name__
        if isinstance(func, Reduction):
            rdom = ", ".join(
                f"{v.name} in {format_expr(iv.lb)}..{format_expr(iv.ub)}"
                for v, iv in zip(func.reduction_variables, func.reduction_intervals)
            )
            dom += f"; over {rdom}; default {format_expr(func.default)}"
        lines.append(f"  {func.name}: {kind}({func.typ}) [{dom}]")
        for case in func.defn:
            value = case.value
            text = (
                f"Reduce({format_expr(value.target)}, {format_expr(value.value)}, {value.op.name})"
                if isinstance(value, Reduce)
                else format_expr(value)
            )
            cond = "otherwise" if case.cond is None else format_expr(case.cond)
            lines.append(f"      {cond}: {text}")
    return "\n".join(lines)


def random_pipeline(seed: int) -> RandomPipeline:
    """The pipeline of `seed` (deterministic)."""
    return _Builder(seed).build()


def random_mixed_pipeline(seed: int) -> RandomPipeline:
    """A pipeline of `seed` whose one group of all stages tiles 3-D with a 2-D live-out at
    half resolution (_Builder.build_mixed)."""
    return _Builder(seed).build_mixed()


# -- schedules -----------------------------------------------------------------------------


def _random_topological_order(graph, rng) -> list:
    computed = [s.name for s in graph.computed]
    members = set(computed)
    preds = {n: {p for p in graph.stage(n).producers if p in members} for n in computed}
    order, done = [], set()
    while len(order) < len(computed):
        ready = [n for n in computed if n not in done and preds[n] <= done]
        # mostly the given order, sometimes another valid one
        n = ready[0] if rng.random() < 0.6 else rng.choice(ready)
        order.append(n)
        done.add(n)
    return order


def random_tile_sizes(rank, rng, tiled=True) -> tuple:
    """(), one level or two levels of `rank` sizes; outer sizes from TILE_SIZES, and each inner
    size (INNER_SHAPES) equal to its outer one, a proper divisor of it, smaller without
    dividing it, or larger; sometimes the whole inner level equals the outer one."""
    if not tiled:
        return ()
    levels = rng.choice((0, 1, 1, 2, 2))
    if levels == 0:
        return ()
    outer = tuple(rng.choice(TILE_SIZES) for _ in range(rank))
    if levels == 1:
        return (outer,)
    if rng.random() < 0.2:
        return (outer, outer)
    return (outer, tuple(inner_tile_size(o, rng)[1] for o in outer))


INNER_SHAPES = ("equal", "dividing", "non-dividing", "larger")


def inner_tile_size(outer: int, rng) -> tuple:
    """(shape, size): an inner tile size for `outer` of a random shape among INNER_SHAPES
    that `outer` admits (1 has no smaller sizes, 2 no smaller non-divisor)."""
    sizes = {
        "equal": [outer],
        "dividing": [d for d in range(1, outer) if outer % d == 0],
        "non-dividing": [t for t in range(2, outer) if outer % t],
        "larger": [t for t in TILE_SIZES if t > outer] or [outer + 1],
    }
    shape = rng.choice([s for s in INNER_SHAPES if sizes[s]])
    return shape, rng.choice(sizes[shape])


def random_schedule(graph, rng, tiled=True) -> Schedule:
    """A valid Schedule for `graph` (a stage graph after inlining): contiguous segments of a
    random topological order (sometimes one group, sometimes one per stage), each with random
    tile sizes (none when `tiled` is false). Validated before it is returned."""
    order = _random_topological_order(graph, rng)
    shape = rng.random()
    if shape < 0.2:
        cuts = set()
    elif shape < 0.35:
        cuts = set(range(1, len(order)))
    else:
        p = rng.choice((0.25, 0.5, 0.75))
        cuts = {i for i in range(1, len(order)) if rng.random() < p}
    groups, start = [], 0
    for i in sorted(cuts) + [len(order)]:
        groups.append(tuple(order[start:i]))
        start = i
    schedule = Schedule(
        tuple(
            GroupSchedule(stages, random_tile_sizes(tile_rank(graph, stages), rng, tiled))
            for stages in groups
        )
    )
    return schedule.validate(graph)


def untiled_schedule(graph, rng) -> Schedule:
    """A random grouping with every group untiled."""
    return random_schedule(graph, rng, tiled=False)


if __name__ == "__main__":
    # python -m polyimage.autotune.random_pipelines SEED [SCHEDULE_SEED ...]: print the pipeline
    # of SEED and the schedules the tests draw (random.Random(SEED * 1000 + k) for the k-th one)
    import sys

    import polyimage

    _seed = int(sys.argv[1])
    _rp = random_pipeline(_seed)
    print(_rp.description)
    print(f"inline={_rp.inline}, features: {', '.join(sorted(_rp.features))}")
    _graph = polyimage.compile(_rp.outputs, inline=_rp.inline).stage_graph
    for _arg in sys.argv[2:] or [str(_seed * 1000), str(_seed * 1000 + 1)]:
        print(f"schedule random.Random({_arg}):")
        print(random_schedule(_graph, random.Random(int(_arg))))
