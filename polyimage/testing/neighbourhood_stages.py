"""Stage kinds that read a producer around each point: pointwise and binary ops, stencils,
down- and up-sampling, Cases and Selects."""

from __future__ import annotations

from polyimage import (
    Case,
    Clamp,
    Max,
    Min,
    Select,
)

from .stage_builder import StageBuilder
from .stage_domains import Dim

# the share of pointwise stages made scans (graph.dag.scan_dimension)
SCAN_CHANCE = 0.15


class NeighbourhoodStages(StageBuilder):
    """Stages reading their producers at (or near) the same point, on the same, half or double
    resolution."""

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
        if self.scan_rng.random() < SCAN_CHANCE:
            f.defn = self.scanned(f, dims, value)
            node = self.add(f, dims)
            node.op = "scan"
            return node
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
