"""`random_vector_pipeline(seed)`: a small random pipeline of the stages users write, for the
test that every innermost loop vectorizes (tests/test_vectorize_all.py): windows weighted by
Exp, Sqrt or Abs of their taps' differences (a bilateral filter), gradients and their
non-maximum suppression (Selects among neighbours chosen by comparing two gradient stages),
conversions between every pixel type, the integer operations (divisions by data included),
reads guarded by Selects on the loop variables, and Reductions; every border mode, on images
and on stages, along all or some dimensions. No values are computed apart: its outputs are
checked against the interpreter."""

from __future__ import annotations

import random

import numpy as np

from polyimage import (
    Abs,
    Cast,
    Clamp,
    Exp,
    Function,
    Image,
    Max,
    Min,
    Op,
    Reduce,
    Reduction,
    Select,
    Sqrt,
    saturating_cast,
)
from polyimage.dsl.types import ALL_TYPES, Double, Float, Int
from polyimage.graph import build_graph

from . import feature_values as fv
from .feature_stages import BINS, BORDERS, HALIDE_OPS, WRAPPING_OPS, FeatureStages, Valued
from .random_pipelines import describe
from .stage_domains import RandomPipeline

KINDS: tuple[tuple[str, float], ...] = (
    ("window", 3),
    ("edges", 1.5),
    ("convert", 2),
    ("integer", 2),
    ("guarded", 1.5),
    ("reduction", 1),
)
# (R, C) of the calls: past a vector of the widest lanes (64 bytes of UChar) and its tail
SIZES = ((9, 37), (33, 70), (17, 130), (5, 7))
MAX_VECTOR_STAGES = 5
WEIGHTS = ("exp", "sqrt", "abs")
# every pixel type, each seed's first input drawn in turn (FeatureStages.first)
PIXEL_TYPES = ALL_TYPES


class _VectorBuilder(FeatureStages):
    """Inputs of any pixel type, stage kinds drawn by weight (KINDS), then the outputs; every
    stage a box of R x C points (starting at 0 or elsewhere)."""

    def __init__(self, seed: int):
        super().__init__(seed)
        self.rng = random.Random(f"vector {seed}")
        self.np_rng = np.random.default_rng([seed, 51])
        self.sizes = self.rng.choice(SIZES)
        self.extent = {"x": self.sizes[0], "y": self.sizes[1], "b": BINS}

    def add_input(self, typ) -> Valued:
        """An R x C Image of `typ` with data of its whole range and its specials."""
        n = sum(isinstance(node.func, Image) for node in self.nodes)
        values = fv.draw_values(self.np_rng, typ.dtype, self.sizes).astype(typ.dtype)
        image = Image(typ, f"in{n}", [self.R, self.C])
        self.features.add(f"{typ} input")
        return self.keep(Valued(image, {"x": 0, "y": 0}, values, "input"))

    def stage(self, lows, typ, value, op, prefix="s") -> Valued:
        """A Function over the box `lows` defined by `value`."""
        func = Function(
            ([self.vars[a] for a in lows], [self.interval(a, lo) for a, lo in lows.items()]),
            typ,
            self.name(prefix),
        )
        func.defn = [value]
        self.features.add(op)
        return self.keep(Valued(func, dict(lows), None, op))

    def pick(self, want=lambda n: True):
        """A 2-D stage (or Image) that `want` accepts: mostly a recent one."""
        return super().pick(lambda n: n.axes == "xy" and want(n))

    def ref(self, p, lows, shift=None, border=None):
        """The DSL read of `p` from the box `lows` at its own point moved by `shift`, through
        `border` (mode, dims, constant) when given."""
        self.consumed.add(id(p))
        index = [self.vars[a] + d if d else self.vars[a] for a, d in self.moved(p, lows, shift)]
        if border is None:
            return p.func(*index)
        mode, dims, constant = border
        extra = (constant,) if mode == "constant_exterior" else ()
        return BORDERS[mode](p.func, *extra, dims=dims)(*index)

    def moved(self, p, lows, shift) -> list:
        """(axis, offset of p's index from the loop variable) for each axis of `p`."""
        shift = shift or {}
        return [(a, p.lows[a] - lows[a] + shift.get(a, 0)) for a in p.axes]

    def here(self, p, lows):
        """The DSL read of `p` at the point of the box `lows`."""
        return self.ref(p, lows)

    def build(self) -> RandomPipeline:
        """The inputs, up to MAX_VECTOR_STAGES stages (an edge kind adds four; the first
        stage's kind is the seed's turn), the outputs."""
        rng = self.rng
        self.add_input(self.first("input", PIXEL_TYPES))
        if rng.random() < 0.4:
            self.add_input(rng.choice(PIXEL_TYPES))
        names, weights = zip(*KINDS)
        stages = rng.randint(1, MAX_VECTOR_STAGES)
        getattr(self, f"op_{self.first('kind', names)}")()
        while sum(not isinstance(n.func, Image) for n in self.nodes) < stages:
            getattr(self, f"op_{rng.choices(names, weights)[0]}")()
        outputs = [n.func for n in self.outputs()]
        graph = build_graph(outputs)
        used = {s.name for s in graph.stages} | {p.name for p in graph.parameters}
        arguments: dict[str, object] = {
            n.func.name: n.values for n in self.nodes if isinstance(n.func, Image)
        }
        arguments.update(R=self.sizes[0], C=self.sizes[1])
        arguments = {k: v for k, v in arguments.items() if k in used}
        features = set().union(*(n.features for n in self.nodes if n.func.name in used))
        return RandomPipeline(
            self.seed,
            outputs,
            arguments,
            describe(self.seed, outputs, arguments, "vector"),
            rng.random() < 0.7,
            self.sizes,
            frozenset(features),
        )

    def outputs(self) -> list:
        """The stages no other reads."""
        computed = [n for n in self.nodes if not isinstance(n.func, Image)]
        return [n for n in computed if id(n) not in self.consumed]

    def arithmetic(self, typ):
        """The floating type a window or gradient of `typ` computes in: Double for Double and
        the 32- and 64-bit integers (exact), Float for the others."""
        return Double if typ is Double or (typ.is_int and typ.bits >= 32) else Float

    def converted(self, value, typ):
        """`value` stored as `typ`: saturated to an integer type, else a Cast."""
        if typ.is_int and value.typ.is_float and self.rng.random() < 0.5:
            return saturating_cast(typ, value)
        return Cast(typ, value)

    # -- stage kinds ---------------------------------------------------------------------

    def op_window(self):
        """A bilateral filter: taps of a border of a stage around each point, weighted by Exp,
        Sqrt or Abs of their difference from the centre, normalized; stored as the source's
        type or Float."""
        rng = self.rng
        p = self.pick()
        lows = self.box()
        border = self.border(p)
        typ = self.arithmetic(p.func.typ)
        centre = Cast(typ, self.here(p, lows))
        along = [p.axes[d] for d in border[1]]
        radius = rng.choice((1, 1, 2))
        steps = range(-radius, radius + 1)
        shifts = [{}]
        for a in along:
            shifts = [dict(s, **{a: k}) for s in shifts for k in steps]
        if rng.random() < 0.4 and len(along) == 2:  # a cross, not a box
            shifts = [s for s in shifts if sum(v != 0 for v in s.values()) <= 1]
        form = self.first("weight", WEIGHTS)
        k = rng.choice((0.5, 2.0, 0.02))
        total = norm = None
        for shift in shifts:
            tap = Cast(typ, self.ref(p, lows, shift, border))
            d = tap - centre
            if form == "exp":
                w = Exp(-(d * d) * k)
            elif form == "sqrt":
                w = 1.0 / (Sqrt(Abs(d) * k) + 1.0)
            else:
                w = Max(1.0 - Abs(d) * k, 0.0) + 0.125
            total = w * tap if total is None else total + w * tap
            norm = w if norm is None else norm + w
        out = p.func.typ if rng.random() < 0.6 else Float
        self.features.add(f"{form} weights")
        return self.stage(lows, out, self.converted(total / norm, out), "window")

    def op_edges(self):
        """Gradients along x and y of a stage (through a border), their magnitude, and its
        non-maximum suppression: the magnitude kept where it is not smaller than its two
        neighbours across the stronger gradient, picked by Selects."""
        rng = self.rng
        p = self.pick()
        mode, _, constant = self.border(p)
        border = (mode, (0, 1), constant)
        lows = dict(p.lows)
        src = p.func.typ
        typ = Int if src.is_int and src.bits <= 16 else self.arithmetic(src)

        def tap(dx, dy):
            return Cast(typ, self.ref(p, lows, {"x": dx, "y": dy}, border))

        gx = self.stage(lows, typ, tap(1, -1) + tap(1, 1) * 2 - tap(-1, 0) * 2 - tap(-1, 1), "gx")
        gy = self.stage(lows, typ, tap(-1, 1) + tap(1, 1) * 2 - tap(0, -1) * 2 - tap(1, -1), "gy")
        ax, ay = Abs(self.here(gx, lows)), Abs(self.here(gy, lows))
        mag_typ = Float if typ is Int else typ
        if rng.random() < 0.5:
            a, b = (Cast(mag_typ, self.here(g, lows)) for g in (gx, gy))
            magnitude = Sqrt(a * a + b * b)
        else:
            magnitude = Cast(mag_typ, ax + ay)
        mag = self.stage(lows, mag_typ, magnitude, "magnitude")
        mb = self.border(mag)
        mb = (mb[0], (0, 1), mb[2])

        def m(dx, dy):
            return self.ref(mag, lows, {"x": dx, "y": dy}, mb)

        across = ax >= ay
        centre = m(0, 0)
        if rng.random() < 0.5:
            before = Select(across, m(-1, 0), m(0, -1))
            after = Select(across, m(1, 0), m(0, 1))
            value = Select((centre >= before) & (centre >= after), centre, 0.0)
        else:
            value = Select(
                across,
                Select((centre >= m(-1, 0)) & (centre > m(1, 0)), centre, 0.0),
                Select((centre >= m(0, -1)) & (centre > m(0, 1)), centre, 0.0),
            )
        return self.stage(lows, mag_typ, value, "non-maximum suppression")

    def op_convert(self):
        """A stage converted to another pixel type: a Cast, a saturating_cast, or scaled and
        offset in floating point first."""
        rng = self.rng
        p = self.pick()
        lows = self.box()
        e = self.here(p, lows)
        typ = self.first("convert", PIXEL_TYPES)
        form = rng.choice(("cast", "saturating", "scaled"))
        if form == "cast":
            value = Cast(typ, e)
        elif form == "saturating":
            value = saturating_cast(typ, e)
        else:
            value = self.converted(e * rng.choice((0.5, 3.0, -0.25)) + 1.5, typ)
        return self.stage(lows, typ, value, f"convert {form}")

    def op_integer(self):
        """A Halide integer operation, a wrapping + - * // % or a Min/Max of two integer stages
        (or one and a constant): divisions by data included."""
        rng = self.rng
        integer = [n for n in self.nodes if n.func.typ.is_int and n.axes == "xy"]
        if not integer:
            return self.op_convert()
        lows = self.box()
        p, q = rng.choice(integer), rng.choice(integer)
        a, b = self.here(p, lows), self.here(q, lows)
        if rng.random() < 0.3:
            b = self.integer_constant(p.func.typ.dtype)
        fn = self.first("integer", tuple(HALIDE_OPS) + tuple(WRAPPING_OPS) + ("min", "max"))
        if fn == "widening_mul" and (p.func.typ.bits == 64 or q.func.typ.bits == 64):
            fn = "absd"
        ops = {**HALIDE_OPS, **WRAPPING_OPS, "min": Min, "max": Max}
        value = ops[fn](a, b)
        return self.stage(lows, value.typ, value, f"integer {fn}")

    def op_guarded(self):
        """A Select on a loop variable whose taken side alone reads in bounds: a neighbour
        along x or y where there is one, the point itself elsewhere."""
        rng = self.rng
        p = self.pick()
        lows = dict(p.lows)
        axis = rng.choice("xy")
        off = rng.choice((-2, -1, 1, 2))
        v = self.vars[axis]
        last = (self.R if axis == "x" else self.C) - 1 + lows[axis]
        guard = v >= lows[axis] - off if off < 0 else v <= last - off
        shifted = self.ref(p, lows, {axis: off})
        here = self.here(p, lows)
        if rng.random() < 0.5:
            value = Select(guard, Max(shifted, here), here)
        else:
            value = Select(guard, shifted - here, here)
        return self.stage(lows, value.typ, value, "guarded read")

    def op_reduction(self):
        """Column sums, row extrema, or a histogram of a stage."""
        rng, v = self.rng, self.vars
        p = self.pick()
        shape = self.first("reduction", ("cols", "rows", "hist"))
        i, j = v["i"], v["j"]
        value = p.func(*(i if a == "x" else j for a in p.axes))
        self.consumed.add(id(p))
        over = (
            [i, j],
            [self.interval("x", p.lows["x"]), self.interval("y", p.lows["y"])],
        )
        typ = Double if p.func.typ is Double else Float if p.func.typ.is_float else Int
        value = Cast(typ, value)
        if shape == "hist":
            own, target = {"b": 0}, [Clamp(Cast(Int, value), 0, BINS - 1)]
            op, value = Op.Sum, Cast(typ, 1)
        elif shape == "cols":
            own, target, op = {"y": p.lows["y"]}, [j], Op.Sum
        else:
            own, target, op = {"x": p.lows["x"]}, [i], rng.choice((Op.Max, Op.Min))
        red = Reduction(
            ([v[a] for a in own], [self.interval(a, lo) for a, lo in own.items()]),
            over,
            typ,
            self.name("r"),
        )
        red.default = Cast(typ, 0)
        red.defn = [Reduce(red(*target), value, op)]
        self.features.add(f"Reduction {shape}")
        return self.keep(Valued(red, own, None, f"reduction {shape}"))


def random_vector_pipeline(seed: int) -> RandomPipeline:
    """The vector pipeline of `seed` (deterministic)."""
    return _VectorBuilder(seed).build()
