"""The common ground of the random pipeline generator: its seeded state, and the helpers that
pick producers, read them in bounds, and draw constants, conditions and inputs."""

from __future__ import annotations

import random

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
    Max,
    Min,
    Parameter,
    Sqrt,
    UChar,
    Variable,
)
from polyimage.dsl.borders import fold_index

from .stage_domains import LUT_BINS, SIZE_WEIGHTS, SIZES, Dim, Node


class StageBuilder:
    """The state of a pipeline under construction (its seeded generator, parameters, variables
    and stages so far) and the helpers every stage kind draws on."""

    def __init__(self, seed: int, borders: bool = False):
        self.seed = seed
        self.rng = random.Random(seed)
        # with `borders`, some clamped reads fold as a mirror or a wrap (dsl.borders), drawn from
        # a stream of their own so that every other draw of the seed stays as it was
        self.border_rng = random.Random(f"border {seed}") if borders else None
        # its own stream, so that drawing scans leaves every other draw of a seed as it was
        self.scan_rng = random.Random(f"scan {seed}")
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
        self.nodes: list = []
        self.arguments: dict[str, float] = {"R": self.sizes[0], "C": self.sizes[1]}
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
                index = self.folded(index, pd)
            args.append(index)
        return producer.func(*args)

    def folded(self, index, pd):
        """`index` clamped to the producer dimension `pd`, or now and then (with borders)
        mirrored, reflected or wrapped into it."""
        if self.border_rng is None or self.border_rng.random() < 0.6:
            return Clamp(index, pd.lo, pd.ub)
        mode = self.border_rng.choice(("mirror", "mirror_interior", "wrap"))
        return fold_index(mode, index, pd.lo, pd.ub)

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

    def scanned(self, func, dims, value) -> list:
        """A definition of `func` from `value` that runs along one of its dimensions (a scan):
        half `value` and half the previous point for floats, their maximum for integers."""
        d = self.scan_rng.randrange(len(dims))
        variables = [self.var(dim.axis) for dim in dims]
        earlier = func(*[v - 1 if k == d else v for k, v in enumerate(variables)])
        step = value * 0.5 + earlier * 0.5 if self.is_float else Max(value, earlier)
        return [Case(variables[d] == dims[d].lo, value), step]

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
