"""Stage kinds that change a stage's shape or type: channels added, collapsed or shuffled,
narrower types, lookup tables, Reductions and scatters."""

from __future__ import annotations

from polyimage import (
    Case,
    Cast,
    Clamp,
    Float,
    Function,
    Int,
    Max,
    Op,
    Reduce,
    Reduction,
    Select,
    Short,
    UChar,
)

from .stage_builder import StageBuilder
from .stage_domains import LUT_BINS, Dim


class ReshapingStages(StageBuilder):
    """Stages of another shape or type than their producers: 3-D from 2-D and back, tables,
    Reductions."""

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
