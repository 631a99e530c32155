"""The facts the cost model (grouping.cost) prices groups from that no weight changes: stage
sizes and operations per point, group plans, the tile space and the volumes of one tile, each
computed once per graph and parameter values and shared by a model's reweighted copies."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..algebra.affine import data_dependent, is_affine
from ..algebra.compiled import compile_expressions, wrapped
from ..algebra.evaluate import Evaluator, extent, scalar
from ..dsl import expr as E
from ..dsl import libm
from ..dsl.reduction import Reduction
from ..graph.dag import definition_exprs
from ..schedule.blocking import vector_ready
from ..schedule.reductions import reduction_strategy
from ..schedule.regions import NumericRegions, flat_box
from ..schedule.tiling import (
    PlanMemo,
    slide_dimension,
    tile_origin,
    tile_scale,
    tiling_plan,
)

# a point of a loop the compiler cannot vectorize costs about a vector's lanes of points
SCALAR_LOOP = 8
# the moves of its cell (a load and a store) an update makes outside a register block
CELL_MOVES = 2
# a byte that stays in cache only beyond L1 costs this share of a byte moved to memory
L2_BYTE = 0.1


def known_scalar(func) -> bool:
    """Whether the stage calls the C library's log, sin, cos or pow, which leave its loop
    scalar: CostModel prices it at SCALAR_LOOP times its vector price."""
    return any(
        isinstance(n, E.Call) and libm.is_library_call(n.fn)
        for e in definition_exprs(func)
        for n in priced_nodes(e)
    )


def narrow_gather(node) -> bool:
    """Whether `node` reads 8- or 16-bit values at data-dependent indices."""
    return isinstance(node, E.Reference) and node.func.typ.bits < 32 and data_dependent(node)


class CostFacts:
    """What pricing groups of one graph at fixed parameter values needs apart from the
    weights: the cost model (grouping.cost.CostModel) is one of these with weights."""

    def __init__(self, graph, params, machine, scalar=frozenset()):
        self.graph, self.params, self.machine = graph, params, machine
        self.scalar = frozenset(scalar)
        self.evaluate = Evaluator({}, {}, params)
        self._points, self._ops, self._plans, self._volumes = {}, {}, {}, {}
        self._layouts = {}
        self._scales, self._spreads, self._in_memory = {}, {}, {}
        self._itemsizes = {s.name: s.func.typ.dtype.itemsize for s in graph.stages}
        self._plan_memo = PlanMemo()
        self._owned_functions = {}  # {id(owned box): (it, its compiled function)}
        self._regions = NumericRegions(graph, params)
        self._bounds, self._resolutions, self._extents, self._origins = {}, {}, {}, {}

    def plan(self, stages):
        """The tile-size-free plan of a group (schedule.tiling.tiling_plan), made once."""
        key = tuple(stages)
        if key not in self._plans:
            self._plans[key] = tiling_plan(
                self.graph, key, self.params, outline=True, memo=self._plan_memo
            )
        return self._plans[key]

    def points(self, name) -> int:
        """Points of the stage's whole domain at the parameters."""
        if name not in self._points:
            func = self.graph.stage(name).func
            self._points[name] = math.prod(extent(self.evaluate, iv) for iv in func.intervals)
        return self._points[name]

    def ops(self, name) -> float:
        """Operations per point: the arithmetic nodes of the definition outside arithmetic on
        indices and parameters alone (priced_nodes; at least one), a read
        at data-dependent indices (a gather), and a Reduction's update of a cell chosen by the
        data (a scatter: a histogram's), as Machine.gather_ops of them, our exp as its
        operations (dsl.exp_poly), times SCALAR_LOOP
        for a stage whose loop cannot vectorize (known_scalar, or a build of this pipeline
        found it scalar: `scalar`), times a Reduction's updates per cell."""
        if name not in self._ops:
            func = self.graph.stage(name).func
            nodes = [n for e in definition_exprs(func) for n in priced_nodes(e)]
            count = _operations(nodes)
            gathers = sum(
                1 for n in nodes if isinstance(n, E.Reference) and data_dependent(n)
            ) + scatters(func)
            scalar = name in self.scalar or known_scalar(func)
            gather_ops = self.machine.gather_ops if self.machine is not None else 0
            self._ops[name] = (
                max(1, count + gathers * gather_ops)
                * (SCALAR_LOOP if scalar else 1)
                * self.updates_per_point(name)
            )
        return self._ops[name]

    def register_share(self, name) -> float:
        """The share of its operations a stage run alone pays: a Reduction whose strategy is
        register blocks in vector variables (schedule.blocking) keeps its cells in registers,
        saving each update the load and store of its cell (CELL_MOVES) that other loops
        make; 1 elsewhere."""
        func = self.graph.stage(name).func
        if not isinstance(func, Reduction) or self.machine is None:
            return 1.0
        strategy = reduction_strategy(func, self.evaluate, self.machine)
        if strategy.kind != "blocked" or not vector_ready(func):
            return 1.0
        per_update = self.ops(name) / self.updates_per_point(name)
        return per_update / (per_update + CELL_MOVES)

    def updates_per_point(self, name) -> float:
        """Updates per cell: a Reduction's points over its cells (at least 1), else 1."""
        func = self.graph.stage(name).func
        if not isinstance(func, Reduction):
            return 1
        points = math.prod(extent(self.evaluate, iv) for iv in func.reduction_intervals)
        return max(points / self.points(name), 1.0)

    def anchor_bounds(self, plan) -> tuple:
        """(lb, ub) of every dimension of the group's anchor counted from its tile origin
        (schedule.tiling.tile_origin), the tile space's extent, once per anchor and alignment:
        a domain's tiles and their cost do not depend on where it starts."""
        key = (plan.anchor, plan.spans)
        if key not in self._bounds:
            evaluate = self.evaluate
            intervals = self.graph.stage(plan.anchor).func.intervals
            origins = self.tile_origins(plan)
            self._bounds[key] = tuple(
                (scalar(evaluate, iv.lb) - o, scalar(evaluate, iv.ub) - o)
                for iv, o in zip(intervals, origins)
            )
        return self._bounds[key]

    def tile_origins(self, plan) -> tuple:
        """Where tile 0 starts along every dimension of the tile space, at the estimates (once
        per anchor: schedule.tiling.tile_origin)."""
        key = (plan.anchor, len(plan.tile_lo))
        if key not in self._origins:
            self._origins[key] = tuple(
                scalar(self.evaluate, tile_origin(self.graph, plan, d))
                for d in range(len(plan.tile_lo))
            )
        return self._origins[key]

    def resolution(self, plan, name) -> float:
        """Points of member `name` per point of the group's anchor along the dimensions both
        have (aligned by variable name): a pyramid level's scale. A dimension only one of
        them has (the anchor's channels, a member's search offsets) is computed whole in
        every tile, so it makes the member no coarser or finer than the anchor."""
        key = (plan.anchor, name)
        if key not in self._resolutions:
            ratio = 1.0
            for d in range(len(plan.anchor_variables)):
                ratio *= self.scale_along(plan, name, d) or 1.0
            self._resolutions[key] = ratio
        return self._resolutions[key]

    def scale_along(self, plan, name, d) -> float | None:
        """Points of member `name` per point of the anchor along tile dimension `d`, None
        where the member has no dimension of that variable."""
        key = (plan.anchor, name)
        if key not in self._scales:
            func, anchor = self.graph.stage(name).func, self.graph.stage(plan.anchor).func
            self._scales[key] = tuple(
                None
                if j is None
                else extent(self.evaluate, func.intervals[j])
                / max(extent(self.evaluate, anchor.intervals[d]), 1)
                for d, j in enumerate(self.aligned_dimensions(plan, name))
            )
        return self._scales[key][d]

    def spread(self, plan) -> float:
        """The standard deviation of the members' resolutions (0 for one member)."""
        key = tuple(plan.members)
        if key not in self._spreads:
            ratios = [self.resolution(plan, n) for n in plan.members]
            self._spreads[key] = float(np.std(ratios)) if len(ratios) > 1 else 0.0
        return self._spreads[key]

    def slides_every_member(self, plan, outer, inner) -> bool:
        """Whether every member has the dimension a sliding tiling slides along, with at
        least one row of it in an inner tile: a member without it (a 2-D stage in a group
        over the levels of a 3-D one) or a coarse pyramid level with less than a row has
        nothing to reuse from the inner tile before, and pays each inner tile's bookkeeping
        all the same (measured slower on local_laplacian and lens_blur)."""
        d = slide_dimension(outer, inner)
        scales = [self.scale_along(plan, name, d) for name in plan.members]
        return all(scale is not None and inner[d] * scale >= 1 for scale in scales)

    def aligned_dimensions(self, plan, name) -> tuple:
        """Per dimension of the tile space, the dimension of member `name` of the same
        variable (schedule.tiling aligns live-outs so), or None where it has none."""
        names = [v.name for v in self.graph.stage(name).func.variables]
        return tuple(names.index(v) if v in names else None for v in plan.anchor_variables)

    def itemsize(self, name) -> int:
        return self._itemsizes[name]

    def in_memory(self, name) -> bool:
        """Whether the full buffer of `name` outgrows L2, so that tiles read or write it in
        memory (a smaller one stays in cache across the tiles that read it)."""
        if name not in self._in_memory:
            l2 = self.machine.l2_bytes if self.machine is not None else 0
            self._in_memory[name] = math.prod(self.extents(name)) * self.itemsize(name) > l2
        return self._in_memory[name]

    def extents(self, name) -> tuple:
        """The extent of every dimension of the stage's (or image's) full buffer."""
        if name not in self._extents:
            func = self.graph.stage(name).func
            self._extents[name] = tuple(extent(self.evaluate, iv) for iv in func.intervals)
        return self._extents[name]

    def measure(self, plan, candidates) -> list:
        """Volumes of one tile in the middle of the anchor's domain, for each tile-size tuple
        in `candidates` (each once per model). The tile starts at
        the tile origin plus a multiple of its size times every live-out's scale down along
        each dimension, as a tile of the generated code does, so it
        owns a part of each live-out (a half-resolution live-out's rows are owned by every
        other tile of one row: the others compute none of it)."""
        results = []
        for sizes in candidates:
            row = tuple(int(t) for t in sizes)
            key = (tuple(plan.members), row)
            if key not in self._volumes:
                self._volumes[key] = self._measure(plan, row, *self._tile(plan, row))
            results.append(self._volumes[key])
        return results

    def probe(self, plan, row) -> dict:
        """`measure`'s volumes of the tile of sizes `row`, with what sizing tiles from it
        takes: per tile dimension, how far the members' regions reach beyond the tile on
        average (`halo`; `aligned_halo` along each member's dimension of the same variable),
        and the bytes of each member's full buffer (`full_bytes`)."""
        along, row = self._layout(plan).aligned, tuple(int(t) for t in row)
        boxes, regions = self._tile(plan, row)
        key = (tuple(plan.members), row)
        if key not in self._volumes:
            self._volumes[key] = self._measure(plan, row, boxes, regions)
        return {
            **self._volumes[key],
            "halo": _reach(regions, plan.members, row, lambda n, d: d),
            "aligned_halo": _reach(regions, plan.members, row, lambda n, d: along[n][d]),
            "full_bytes": {n: self.points(n) * self.itemsize(n) for n in plan.members},
        }

    def _layout(self, plan) -> _PlanLayout:
        """What measuring tiles of `plan` needs that no tile size changes, made once."""
        key = tuple(plan.members)
        if key not in self._layouts:
            variables = tuple(plan.tile_lo + plan.tile_hi + plan.first)
            self._layouts[key] = _PlanLayout(
                self.anchor_bounds(plan),
                self.tile_origins(plan),
                tuple(tile_scale(plan, d) for d in range(len(plan.tile_lo))),
                tuple(
                    (name, self._owned_function(box, variables)) for name, box in plan.owned.items()
                ),
                {n: self.aligned_dimensions(plan, n) for n in plan.members},
                max(self.points(plan.anchor), 1),
                frozenset(plan.members),
            )
        return self._layouts[key]

    def _owned_function(self, box, variables):
        """The compiled function of a tile's `variables` giving the owned box `box`, flat (as
        regions.NumericRegions takes it), once per box (plans of one model share their
        live-outs' boxes: tiling.PlanMemo)."""
        hit = self._owned_functions.get(id(box))
        if hit is None or hit[0] is not box:
            function = compile_expressions(flat_box(box), variables, self.params)
            hit = self._owned_functions[id(box)] = (box, function)  # the box kept: its id too
        return hit[1]

    def _tile(self, plan, row) -> tuple:
        """({live-out: its owned box}, {stage: its region (schedule.regions.NumericRegions)})
        of the tile of sizes `row` that `measure` measures."""
        layout = self._layout(plan)
        lows = [
            o + ((lo + hi) // 2 // (t * s)) * t * s
            for (lo, hi), o, t, s in zip(layout.bounds, layout.origins, row, layout.scale)
        ]
        tile = (*lows, *[lo + t - 1 for lo, t in zip(lows, row)], *lows)
        boxes = {name: function(*tile) for name, function in layout.liveouts}
        return boxes, self._regions.tile_regions(plan.members, boxes)

    def _measure(self, plan, row, boxes, regions) -> dict:
        """`measure`'s volumes of the tile of sizes `row` whose live-outs own `boxes` and
        whose stages have `regions` (from _tile)."""
        layout = self._layout(plan)
        itemsize, members = self._itemsizes, layout.members
        owned = {}
        for n, box in boxes.items():
            owned[n] = 1
            for lo, hi in zip(box[::2], box[1::2]):
                owned[n] *= hi - lo + 1 if hi >= lo else 0
        volume, live_in, streams = {}, 0, 0
        for n, (box, points, _) in regions.items():
            volume[n] = points
            if n not in members:
                live_in += points * itemsize[n]
                if self.in_memory(n):
                    streams += memory_streams(box[::2], box[1::2], self.extents(n))
        computed, rows, scratch_bytes, live_out = 0, 0, 0, 0
        for n in plan.members:
            _, points, member_rows = regions[n]
            computed += points
            rows += member_rows
        for n in plan.scratch:
            scratch_bytes += volume[n] * itemsize[n]
        for n in plan.liveouts:
            live_out += owned[n] * itemsize[n]
        tile_points = wrapped(math.prod(row), 64)
        anchor_points = layout.anchor_points
        own = sum(max(tile_points * self.points(n) / anchor_points, 1.0) for n in plan.members)
        return {
            "computed": computed,
            "own": own,
            "redundant": max(computed - own, 0.0),
            "volumes": volume,
            "scratch_bytes": scratch_bytes,
            "live_in": live_in,
            "live_out": live_out,
            "copied": sum(
                owned[n] * itemsize[n] * (1.0 if self.in_memory(n) else L2_BYTE)
                for n in plan.liveouts
                if n in plan.scratch
            ),
            "streams": streams,
            "rows": rows,
        }


@dataclass(frozen=True)
class _PlanLayout:
    """Of a plan: the anchor's bounds from its tile origins, those origins, the scale per
    tile dimension (schedule.tiling.tile_scale), each live-out's name and the function of a
    tile's lows, highs and firsts giving its owned box, the members' aligned dimensions, the
    anchor's points and the members."""

    bounds: tuple
    origins: tuple
    scale: tuple
    liveouts: tuple
    aligned: dict
    anchor_points: int
    members: frozenset


def _reach(regions, members, tiles, dimension) -> list:
    """Per tile dimension, how far the members' regions reach beyond the tile of sizes
    `tiles`, on average over the members; `dimension(member, d)` is the member's dimension
    measured along tile dimension d (None, or past its last: none)."""
    reach = []
    for d, size in enumerate(tiles):
        total = 0
        for n in members:
            j = dimension(n, d)
            box = regions[n][0]
            if j is not None and 2 * j < len(box):
                total += max(box[2 * j + 1] - box[2 * j] + 1 - size, 0)
        reach.append(total / max(len(members), 1))
    return reach


def memory_streams(lows, highs, extents) -> int:
    """Runs of memory the box [lows, highs] of a row-major buffer of `extents` starts beyond a
    loop over whole rows: one a row where it is narrower than the rows, else (or empty) none."""
    sizes = [int(b) - int(a) + 1 for a, b in zip(lows, highs)]
    if any(s <= 0 for s in sizes):
        return 0
    return math.prod(sizes[:-1]) if sizes and sizes[-1] < extents[-1] else 0


def scatters(func) -> int:
    """1 where a Reduction updates cells at data-dependent indices (its Reduce target is not
    affine: a histogram, a bilateral grid), else 0: each update is a read-modify-write at an
    address known only at run time, which no vector instruction does."""
    if not isinstance(func, Reduction):
        return 0
    return int(any(data_dependent(c.value.target) for c in func.cases))


def arithmetic_ops(exprs) -> int:
    """The operations a point of `exprs` computes: their arithmetic nodes (operations, calls,
    selects, casts, conditions) the model prices (priced_nodes), our exp as its operations
    (dsl.exp_poly)."""
    return _operations([n for e in exprs for n in priced_nodes(e)])


def _operations(nodes) -> int:
    """arithmetic_ops of the priced nodes `nodes`."""
    return sum(
        1 for n in nodes if isinstance(n, (E.BinOp, E.Call, E.Select, E.Cast, E.Condition))
    ) + sum(
        libm.OWN[n.fn].operations(n.typ.c_name) - 1
        for n in nodes
        if isinstance(n, E.Call) and n.fn in libm.OWN
    )


def priced_nodes(e):
    """The nodes of `e` whose work the model prices per point: all but the insides of its
    affine integer subexpressions (indices, bounds, a condition's sides), which the C compiler
    folds into addressing and induction variables, so that `f(x + 2)` costs what `f(x)`
    does and a pipeline costs the same wherever its domains start."""
    stack = [e]
    while stack:
        node = stack.pop()
        if not is_affine(node):
            yield node
            stack.extend(reversed(node.children()))
