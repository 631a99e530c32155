"""Test oracle: exact footprints of a tile of a group (the regions the compiler infers by interval
arithmetic must contain them): backward slicing through access maps ("Modeling the Interplay
between Loop Tiling and Fusion in Optimizing Compilers Using Affine Relations").

Given a group of stages, its live-outs and tile sizes, a tile `T[o]` of the live-outs' iteration
space covers `lb + t*o <= x < lb + t*(o+1)`. Composing access maps backwards (consumers before
producers, union over consumers) gives, for every member, the exact points the tile needs
(where a member's footprint splits into more than PIECE_LIMIT pieces, as in deep pyramids whose
clamped reads split by border case and residue of the tile index, it is replaced by its simple
hull in (tile, point) space: a superset, whose boxes can be larger, e.g. 30 rows instead of 23
on interpolate's coarse levels, but which keeps queries fast); from
them come per-stage boxes as functions of `o` (scratchpad origins and extents), the redundant
(overlapped) volume per tile, the live-in volume per tile, and whether the footprint is bounded
independently of the image size (the condition for overlapped tiling).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import islpy as isl

from polyimage.algebra.evaluate import evaluate_scalar
from polyimage.dsl import expr as E
from polyimage.poly.analysis import PolyAnalysis
from polyimage.poly.isl_util import StageSpace

TILE = "T"
PIECE_LIMIT = 4


@dataclass(frozen=True)
class StageBox:
    """The bounding box of a stage's footprint: origin per dimension as a function of the
    parameters and tile coordinates `o0...`, and the largest extent over all tiles (None where
    it grows with the image)."""

    footprint_map: isl.Map
    origin: tuple
    extent: tuple

    @property
    def bounded(self) -> bool:
        return all(e is not None for e in self.extent)

    @property
    def volume(self):
        return math.prod(self.extent) if self.bounded else None


@dataclass(frozen=True)
class GroupFootprint:
    """What one tile of a group needs, member by member and from outside the group."""

    group: tuple
    liveouts: tuple
    tile_sizes: tuple
    members: dict
    live_ins: dict
    redundant_volume: float
    live_in_volume: float
    seconds: float

    @property
    def bounded(self) -> bool:
        """True when every member's footprint per tile is bounded independently of image size."""
        return all(box.bounded for box in self.members.values())

    def unbounded_dims(self) -> dict:
        return {
            name: [d for d, e in enumerate(box.extent) if e is None]
            for name, box in self.members.items()
            if not box.bounded
        }


class FootprintAnalyzer:
    """Answers footprint queries at the estimated parameter values (symbolic in the tile
    coordinates); results are cached by (group, live-outs, tile sizes).

    Fixing the parameters keeps the composition exact and fast: the pieces that clamped reads
    create at image borders stay concrete instead of multiplying symbolically. Whether a
    footprint is bounded independently of the image size is decided by comparing its extents
    at the estimates and at larger ones.
    """

    def __init__(self, analysis: PolyAnalysis, estimates, _scaled=False):
        self.estimates = {
            p.name: int(estimates[p.name]) for p in analysis.params if p.name in estimates
        }
        missing = [p.name for p in analysis.params if p.name not in self.estimates]
        if missing:
            raise ValueError(
                f"footprints need estimates of every integer parameter; missing "
                f"{', '.join(missing)}"
            )
        self.analysis = _specialize(analysis, self.estimates)
        self._original = None if _scaled else analysis
        self._scaled = {}
        self._cache = {}
        self.calls = 0
        self.seconds = 0.0

    def query(self, group, liveouts, tile_sizes) -> GroupFootprint:
        """The footprint of one tile of `liveouts` (members of `group`) with `tile_sizes`."""
        order = [s.name for s in self.analysis.graph.stages]
        group = tuple(sorted(set(group), key=order.index))
        liveouts = tuple(sorted(set(liveouts), key=order.index))
        key = (group, liveouts, tuple(tile_sizes))
        if key not in self._cache:
            start = time.perf_counter()
            self._cache[key] = self._compute(group, liveouts, tuple(tile_sizes), start)
            self.calls += 1
            self.seconds += time.perf_counter() - start
        return self._cache[key]

    def _compute(self, group, liveouts, tile_sizes, start) -> GroupFootprint:
        analysis = self.analysis
        ndim = {analysis.graph.stage(n).func.ndim for n in liveouts}
        if len(ndim) != 1 or len(tile_sizes) != ndim.pop():
            raise ValueError(
                f"tile sizes {tile_sizes} do not fit live-outs {liveouts} (all "
                "live-outs must have as many dimensions as there are tile sizes)"
            )
        members = set(group)
        needed = {name: self._tile_map(name, tile_sizes) for name in liveouts}
        live_ins = {}
        for name in reversed(group):
            func = analysis.graph.stage(name).func
            if name not in needed:
                continue
            tiles = needed[name].intersect_range(analysis.domain_sets[name]).coalesce()
            if tiles.n_basic_map() > PIECE_LIMIT:
                tiles = (
                    isl.Map.from_basic_map(tiles.simple_hull())
                    .intersect_range(analysis.domain_sets[name])
                    .coalesce()
                )
            needed[name] = tiles
            for producer, part in self._reads(func, tiles):
                target = needed if producer in members else live_ins
                target[producer] = part if producer not in target else target[producer].union(part)
        boxes = {
            n: self._box(needed[n].intersect_range(analysis.domain_sets[n]))
            for n in group
            if n in needed
        }
        inputs = {
            n: self._box(m.intersect_range(analysis.domain_sets[n])) for n, m in live_ins.items()
        }
        if self._original is not None:
            boxes = self._mark_unbounded(boxes, group, liveouts, tile_sizes)
        return GroupFootprint(
            group,
            liveouts,
            tile_sizes,
            boxes,
            inputs,
            self._redundant(boxes, liveouts, tile_sizes),
            _total(inputs.values()),
            time.perf_counter() - start,
        )

    def _mark_unbounded(self, boxes, group, liveouts, tile_sizes) -> dict:
        """Extents that differ between two image sizes, both much larger than a tile, grow
        with the image: set them to None."""
        smallest = min((v for v in self.estimates.values() if v > 0), default=1)
        factor = max(2, -(-8 * max(tile_sizes) // smallest))
        extents = []
        for k in (factor, 2 * factor):
            if k not in self._scaled:
                self._scaled[k] = FootprintAnalyzer(
                    self._original, {n: k * v for n, v in self.estimates.items()}, _scaled=True
                )
            members = self._scaled[k].query(group, liveouts, tile_sizes).members
            extents.append({n: b.extent for n, b in members.items()})
        marked = {}
        for name, box in boxes.items():
            grows = [a != b for a, b in zip(extents[0][name], extents[1][name])]
            extent = tuple(None if g else e for e, g in zip(box.extent, grows))
            marked[name] = StageBox(box.footprint_map, box.origin, extent)
        return marked

    def _reads(self, func, tiles):
        """(producer, T[o] -> producer points) for every read of `func` needed by `tiles`; a
        Reduction needs its whole reduction domain for any tile."""
        analysis = self.analysis
        for a in analysis.accesses_of(func.name):
            if a.writes:
                continue
            source = tiles
            if a.space.name != func.name:
                source = isl.Map.from_domain_and_range(
                    tiles.domain(), analysis.reduction_sets[func.name]
                )
            yield a.producer, source.apply_range(a.access_map)

    def _tile_map(self, name: str, tile_sizes) -> isl.Map:
        """`T[o] -> name[x] : lb + t*o <= x <= lb + t*o + t - 1` for every dimension."""
        analysis = self.analysis
        func = analysis.graph.stage(name).func
        n = len(tile_sizes)
        tile_vars = [E.Variable(E.Long, f"o{k}") for k in range(n)]
        space = StageSpace(analysis.ctx, analysis.params, tile_vars + list(func.variables))
        box = space.universe_set
        for k, (size, iv) in enumerate(zip(tile_sizes, func.intervals)):
            x = space.pw_aff(func.variables[k])
            start = space.pw_aff(iv.lb).add(space.pw_aff(tile_vars[k]).scale_val(space.val(size)))
            box = box.intersect(x.ge_set(start)).intersect(
                x.le_set(start.add(space.constant(size - 1)))
            )
        tile_map = isl.Map.from_domain(box).move_dims(isl.dim_type.out, 0, isl.dim_type.in_, n, n)
        return tile_map.set_tuple_name(isl.dim_type.in_, TILE).set_tuple_name(
            isl.dim_type.out, name
        )

    def _box(self, footprint_map: isl.Map) -> StageBox:
        n_tile = footprint_map.dim(isl.dim_type.in_)
        n_param = footprint_map.dim(isl.dim_type.param)
        points = footprint_map.move_dims(
            isl.dim_type.param, n_param, isl.dim_type.in_, 0, n_tile
        ).range()
        origin, extent = [], []
        for d in range(points.dim(isl.dim_type.set)):
            if points.is_empty():
                origin.append(None)
                extent.append(0)
                continue
            lo, hi = points.dim_min(d), points.dim_max(d)
            size = hi.sub(lo).max_val()
            origin.append(lo.coalesce())
            extent.append(int(size.to_python()) + 1 if size.is_int() else None)
        return StageBox(footprint_map, tuple(origin), tuple(extent))

    def _redundant(self, boxes, liveouts, tile_sizes) -> float:
        """Points computed per tile beyond each stage's fair share (its domain volume times the
        fraction of the live-out a tile covers), at the estimates; NaN when unbounded."""
        if any(not b.bounded for b in boxes.values()):
            return math.nan
        share = math.prod(tile_sizes) / max(self.domain_volume(liveouts[0]), 1)
        return float(
            sum(max(box.volume - self.domain_volume(n) * share, 0.0) for n, box in boxes.items())
        )

    def domain_extents(self, name: str):
        """Extents of a stage's box at the estimates."""
        func = self.analysis.graph.stage(name).func
        return [
            evaluate_scalar(iv.ub, self.estimates) - evaluate_scalar(iv.lb, self.estimates) + 1
            for iv in func.intervals
        ]

    def domain_volume(self, name: str) -> int:
        return math.prod(max(e, 0) for e in self.domain_extents(name))


def _specialize(analysis: PolyAnalysis, values: dict) -> PolyAnalysis:
    """The analysis with every integer parameter fixed to `values`."""
    fixed = analysis.context_set
    for i, p in enumerate(analysis.params):
        fixed = fixed.fix_val(
            isl.dim_type.param, i, isl.Val.int_from_si(analysis.ctx, values[p.name])
        )
    return dataclasses.replace(
        analysis,
        context_set=fixed,
        domain_sets={k: v.intersect_params(fixed) for k, v in analysis.domain_sets.items()},
        reduction_sets={k: v.intersect_params(fixed) for k, v in analysis.reduction_sets.items()},
        accesses=[
            dataclasses.replace(
                a,
                access_map=a.access_map.intersect_params(fixed),
                guard_set=a.guard_set.intersect_params(fixed),
            )
            for a in analysis.accesses
        ],
    )


def _total(boxes) -> float:
    volumes = [b.volume for b in boxes]
    return math.nan if any(v is None for v in volumes) else float(sum(volumes))
