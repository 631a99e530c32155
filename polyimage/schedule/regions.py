"""Per-tile regions by interval arithmetic (bounds inference in Halide's style).

For a group, its live-outs and a tile `[lb + t*o, lb + t*o + t - 1]` per dimension, every
member's region is a box whose bounds are DSL expressions in the tile coordinates `o` and the
parameters: each index is evaluated on intervals (sums, scaling, floor division, Min/Max are
exact on intervals; `%` and data-dependent indices give the producer's whole interval), the
union over references is the Min of lower and the Max of upper bounds, and the result is
clipped to the stage's domain. The bounds can be evaluated with NumPy for all tiles at once, or
printed as C to compute tile regions at run time; a region's bounds refer to its consumers'
bound symbols, not to their expressions, so their size stays linear in the group. Case and
Select guards are ignored, so a region may be larger than the exact footprint (the tests check
it against isl footprints, tests/footprint.py), never smaller. Members with
equal bounds share bound symbols, so their consumers' bounds compare equal too. A scan's region
reaches back to the start of its domain along the dimension it scans, and its reads of its own
earlier points lie inside it (they add nothing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..algebra.compiled import compile_expressions
from ..algebra.evaluate import Evaluator, column, scalar
from ..algebra.intervals import as_long, index_interval
from ..algebra.simplify import expr_key, extremum, simplify
from ..dsl import expr as E
from ..dsl.reduction import Reduction
from ..graph.dag import definition_exprs
from .reductions import tile_owned


@dataclass(frozen=True)
class Region:
    """Inclusive bounds per dimension, (low, high) DSL expressions in the tile coordinates, the
    parameters and the bound symbols of regions computed before it; `symbols` are this
    region's own bound symbols, which later regions use."""

    bounds: tuple
    symbols: tuple


@dataclass(frozen=True)
class Regions:
    """Regions in the order they are computed (consumers before producers)."""

    tile_vars: tuple
    by_stage: dict

    def __getitem__(self, name) -> Region:
        return self.by_stage[name]

    def __iter__(self):
        return iter(self.by_stage)

    def evaluate(self, tiles, params) -> dict:
        """{stage: (lows, highs)} arrays of shape (ntiles, ndim) for tile coordinates `tiles`."""
        n = len(tiles)
        points = {v: np.asarray(tiles[:, k], np.int64) for k, v in enumerate(self.tile_vars)}
        evaluate = Evaluator({}, {}, params)
        result = {}
        for name, region in self.by_stage.items():
            lows, highs = [], []
            for (lo, hi), (lo_sym, hi_sym) in zip(region.bounds, region.symbols):
                lows.append(column(evaluate(lo, points, n), n).astype(np.int64))
                highs.append(column(evaluate(hi, points, n), n).astype(np.int64))
                points[lo_sym], points[hi_sym] = lows[-1], highs[-1]
            result[name] = (np.stack(lows, axis=1), np.stack(highs, axis=1))
        return result


def tile_variables(ndim: int) -> tuple:
    return tuple(E.Variable(E.Long, f"o{k}") for k in range(ndim))


def infer_regions(graph, group, liveouts, tile_sizes, tile_vars=None) -> Regions:
    """Regions of every member of `group` and of every producer outside it that the tile reads
    (the live-ins), for one tile of `liveouts`."""
    tile_vars = tile_vars or tile_variables(len(tile_sizes))
    boxes = {}
    for name in liveouts:
        func = graph.stage(name).func
        box = []
        for o, t, iv in zip(tile_vars, tile_sizes, func.intervals):
            lo = as_long(iv.lb) + o * t
            box.append((lo, lo + (t - 1)))
        boxes[name] = box
    return infer_group_regions(graph, group, boxes, tile_vars)


def infer_group_regions(graph, group, liveout_boxes, tile_vars) -> Regions:
    """Regions as in `infer_regions`, from given boxes of the live-outs: {name: [(low, high)
    per dimension]} as Long DSL expressions in `tile_vars` and the parameters."""
    order = [s.name for s in graph.stages]
    members = sorted(set(group), key=order.index)
    pending = {name: [box] for name, box in liveout_boxes.items()}
    same: dict
    regions, same = {}, {}
    for name in reversed(members):
        if name not in pending:
            continue
        func = graph.stage(name).func
        region = _clip(
            name, _computed_cells(func, _union(pending.pop(name)), graph.scan(name)), func
        )
        key = tuple(expr_key(e) for bound in region.bounds for e in bound)
        region = regions[name] = Region(region.bounds, same.setdefault(key, region.symbols))
        for producer, box, empty, intervals in read_boxes(func, region.symbols):
            pending.setdefault(producer, []).append(_unless_empty(box, empty, intervals))
    for name in sorted(pending, key=order.index):
        regions[name] = _clip(name, _union(pending[name]), graph.stage(name).func)
    return Regions(tuple(tile_vars), regions)


def read_boxes(func, symbols) -> list:
    """(producer, box, emptiness, the producer's intervals) of what `func` reads over the
    region whose bounds are `symbols`: one box per producer and emptiness condition (None or
    a condition under which the box reads nothing, see _unless_empty), in terms of those
    symbols and the parameters. A scan's reads of itself are left out."""
    boxes: dict = {}
    for ref, env, empty in _reads(func, Region((), symbols)):  # its reads need no bounds
        if ref.func is func:
            continue
        intervals = ref.func.intervals
        box = [index_interval(a, env, intervals[d]) for d, a in enumerate(ref.args)]
        key = (ref.func.name, None if empty is None else expr_key(empty))
        boxes.setdefault(key, (ref.func, empty, []))[2].append(box)
    return [
        (producer, _union(read), empty, ref_func.intervals)
        for (producer, _), (ref_func, empty, read) in boxes.items()
    ]


class NumericRegions:
    """Regions of groups evaluated for one tile at a time in plain ints, without building
    their symbolic bounds: what each stage reads is derived once per stage (`read_boxes` over
    symbols of its own) and compiled to a Python function (algebra.compiled), and a group's
    regions compose those boxes numerically, consumers first, as `infer_group_regions`
    composes them symbolically. The cost model's regions. A box is a tuple of ints, the
    inclusive low and high of each dimension in turn; a region in one tile is (box, points,
    rows): its box clipped to the stage's domain, its points and its rows (the points of all
    its dimensions but the last; 0 when it is empty). Plain tuples of ints, which the garbage
    collector stops tracking (the search makes tens of thousands)."""

    def __init__(self, graph, params):
        self.graph, self.params = graph, params
        self.evaluate = Evaluator({}, {}, params)
        self._order = {s.name: k for k, s in enumerate(graph.stages)}
        self._reads, self._domains = {}, {}
        self._computed = {}  # {(member, box it computes): _compute's}
        self._read = {}  # {(stage, box read of it): its region}
        self._backwards = {}  # {members: they, consumers first}

    def _stage(self, name) -> tuple:
        """(the producers it reads, one per read; the function of the bounds of its region's
        box giving the box of each read, the producer's empty box [ub + 1, lb - 1] where the
        read is empty (as _unless_empty); how a box of it grows into the cells it computes:
        _growth)."""
        if name not in self._reads:
            func = self.graph.stage(name).func
            symbols = _symbols(name, func.ndim)
            producers, boxes = [], []
            for producer, read, empty, _ in read_boxes(func, symbols):
                if empty is not None:
                    read = [
                        (
                            E.Select(empty, E.Const(ub + 1, E.Long), lo),
                            E.Select(empty, E.Const(lb - 1, E.Long), hi),
                        )
                        for (lo, hi), (lb, ub) in zip(read, self._domain(producer))
                    ]
                producers.append(producer)
                boxes.append(flat_box(read))
            variables = flat_box(symbols)
            self._reads[name] = (
                tuple(producers),
                compile_expressions(tuple(boxes), variables, self.params),
                self._growth(func),
            )
        return self._reads[name]

    def _growth(self, func) -> tuple | None:
        """How a box of `func` grows into the cells a tile computes, as _computed_cells grows
        a region: per bound of a box (low, high per dimension, flat), the value it takes
        whatever the box, or None where it keeps the box's; None when it keeps every one."""
        domain = self._domain(func.name)
        scan = self.graph.scan(func.name)
        if scan is not None:
            return tuple(b if k == 2 * scan else None for k, b in enumerate(flat_box(domain)))
        if not isinstance(func, Reduction):
            return None
        owned = {o.dim for o in tile_owned(func)}
        return tuple(None if k // 2 in owned else b for k, b in enumerate(flat_box(domain)))

    def _domain(self, name) -> list:
        """(lb, ub) of every dimension of the stage's domain at the parameters."""
        if name not in self._domains:
            self._domains[name] = [
                (scalar(self.evaluate, as_long(iv.lb)), scalar(self.evaluate, as_long(iv.ub)))
                for iv in self.graph.stage(name).func.intervals
            ]
        return self._domains[name]

    def tile_regions(self, members: tuple, liveout_boxes) -> dict:
        """{stage: its region} for the members and the stages they read, for one tile whose
        live-outs own {live-out: its box}; each stage's region and reads are computed once
        per box it computes (tiles of many groups share them)."""
        order, computed = self._order, self._computed
        pending = {name: [box] for name, box in liveout_boxes.items()}
        result = {}
        if members not in self._backwards:
            self._backwards[members] = sorted(members, key=order.__getitem__, reverse=True)
        for name in self._backwards[members]:
            boxes = pending.pop(name, None)
            if boxes is None:
                continue
            key = (name, _union_values(boxes))
            hit = computed.get(key)
            if hit is None:
                hit = computed[key] = self._compute(name, key[1])
            result[name], producers, reads = hit
            for producer, box in zip(producers, reads):
                if producer in pending:
                    pending[producer].append(box)
                else:
                    pending[producer] = [box]
        for name in sorted(pending, key=order.__getitem__):
            key = (name, _union_values(pending[name]))
            region = self._read.get(key)
            if region is None:
                region = self._read[key] = self._region(name, key[1])
            result[name] = region
        return result

    def _compute(self, name, box) -> tuple:
        """(the region of member `name` computing `box` of it, the producers it reads, the
        box of each read)."""
        producers, reads, growth = self._stage(name)
        if growth is not None:
            box = tuple(b if grown is None else grown for b, grown in zip(box, growth))
        region = self._region(name, box)
        return region, producers, reads(*region[0])

    def _region(self, name, box) -> tuple:
        """The region `box` of stage `name` clipped to its domain."""
        clipped: list = []
        sizes = []
        for lo, hi, (lb, ub) in zip(box[::2], box[1::2], self._domain(name)):
            lo, hi = lo if lo > lb else lb, hi if hi < ub else ub
            clipped += (lo, hi)
            sizes.append(hi - lo + 1 if hi >= lo else 0)
        points = math.prod(sizes)
        return tuple(clipped), points, math.prod(sizes[:-1]) if points else 0


def _union_values(boxes) -> tuple:
    """The bounding box of boxes."""
    if len(boxes) == 1:
        return boxes[0]
    union = list(boxes[0])
    for box in boxes[1:]:
        for k in range(0, len(union), 2):
            if box[k] < union[k]:
                union[k] = box[k]
            if box[k + 1] > union[k + 1]:
                union[k + 1] = box[k + 1]
    return tuple(union)


def flat_box(pairs) -> tuple:
    """(low, high) pairs as a box of NumericRegions: one tuple, low and high per dimension in
    turn."""
    return tuple(bound for pair in pairs for bound in pair)


def _reads(func, region):
    """(reference, variable intervals, emptiness) for every read of `func` over `region`:
    emptiness is a condition that holds when one of the intervals is empty (then the read
    reads nothing), or None when none can be."""
    env = {id(v): symbols for v, symbols in zip(func.variables, region.symbols)}
    region_empty = _any_empty(region.symbols)
    if isinstance(func, Reduction):
        red_env = {
            id(v): (as_long(iv.lb), as_long(iv.ub))
            for v, iv in zip(func.reduction_variables, func.reduction_intervals)
        }
        for owned in tile_owned(func):
            var = func.reduction_variables[owned.index]
            lb, ub = red_env[id(var)]
            lo, hi = region.symbols[owned.dim]
            first = lo * owned.size - owned.offset
            red_env[id(var)] = (
                E.Max(lb, first),
                E.Min(ub, hi * owned.size - owned.offset + (owned.size - 1)),
            )
        red_empty = either(region_empty, _any_empty(red_env.values()))
        for case in func.cases:
            for e in ([case.cond] if case.cond is not None else []) + [
                case.value.value,
                *case.value.target.args,
            ]:
                for ref in E.references(e):
                    yield ref, red_env, red_empty
        for ref in E.references(func.default):
            yield ref, env, region_empty
        return
    for e in definition_exprs(func):
        for ref in E.references(e):
            yield ref, env, region_empty


def _any_empty(pairs):
    """The condition that some (low, high) pair is empty, or None if none can be."""
    result = None
    for lo, hi in pairs:
        if isinstance(lo, E.Const) and isinstance(hi, E.Const) and lo.value <= hi.value:
            continue
        result = either(result, E.Condition(lo, ">", hi))
    return result


def either(a, b):
    """`a | b` of two conditions, either of which may be None (none yet)."""
    return b if a is None else a | b


def _unless_empty(box, empty, intervals) -> list:
    """`box` of the reads of one consumer, or when `empty` holds the producer's empty box
    [ub + 1, lb - 1], which leaves any union it joins unchanged once clipped. An empty
    consumer box mapped through an index is not empty in general (2 * y - 2 of y in [47, 1]
    gives [92, 0]), so the read's own emptiness decides: regions then grow with their tile,
    and an inner tile's regions lie inside its outer tile's (the scratchpads are sized and
    placed by the outer tile)."""
    if empty is None:
        return box
    return [
        (
            E.Select(empty, as_long(iv.ub) + 1, lo),
            E.Select(empty, as_long(iv.lb) - 1, hi),
        )
        for (lo, hi), iv in zip(box, intervals)
    ]


def _computed_cells(func, bounds, scan) -> tuple:
    """The box a tile computes of `func` to have `bounds` of it. A scan (along dimension
    `scan`, else None) computes its earlier points there from the start of its domain. A
    Reduction covers the whole domain along the dimensions that no reduction variable owns
    (schedule.reductions.tile_owned): its data-dependent updates may land anywhere there."""
    if scan is not None:
        lb = as_long(func.intervals[scan].lb)
        return tuple((lb, hi) if d == scan else (lo, hi) for d, (lo, hi) in enumerate(bounds))
    if not isinstance(func, Reduction):
        return bounds
    owned = {o.dim for o in tile_owned(func)}
    return tuple(
        pair if d in owned else (as_long(iv.lb), as_long(iv.ub))
        for d, (pair, iv) in enumerate(zip(bounds, func.intervals))
    )


def _union(boxes) -> tuple:
    """The bounding box of `boxes`, one term per distinct bound, a balanced tree: a stage read
    at 99 offsets gets a bound a few levels deep, not a Min nested 99 deep."""
    return tuple(
        (extremum("min", [b[d][0] for b in boxes]), extremum("max", [b[d][1] for b in boxes]))
        for d in range(len(boxes[0]))
    )


def _clip(name, bounds, func) -> Region:
    clipped = tuple(
        (simplify(E.Max(lo, as_long(iv.lb))), simplify(E.Min(hi, as_long(iv.ub))))
        for (lo, hi), iv in zip(bounds, func.intervals)
    )
    return Region(clipped, _symbols(name, func.ndim))


def _symbols(name, ndim) -> tuple:
    """Fresh (low, high) bound symbols of a region of stage `name`."""
    return tuple(
        (E.Variable(E.Long, f"{name}_lo{d}"), E.Variable(E.Long, f"{name}_hi{d}"))
        for d in range(ndim)
    )
