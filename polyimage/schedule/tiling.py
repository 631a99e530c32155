"""Group plans: what code generation needs to run a group as overlapped tiles, or why not.

A tiled group tiles the space of its anchor (the live-out with most dimensions, the last such in
topological order). Every live-out dimension is aligned to an anchor dimension by variable name
and scaled by a power of two (from the domain extents at the estimates), and a tile `[a, b]` of
the tile space owns the points whose scaled coordinate lies in it, so each live-out value is
written by exactly one tile, whatever the alignment. Members are computed over their regions
(schedule/regions.py) into per-thread scratchpads; live-outs read by no other member are
computed straight into their full buffers over the owned box. A Reduction member computes its
region from the reduction points that own its cells (schedule.reductions.tile_owned), the other
reduction variables whole, and its producers in the group over the footprint of those points
(schedule.regions); a Reduction live-out is computed in its scratchpad (its region spans its
unowned dimensions whole) and its owned part copied out.

A scan member (graph.dag.scan_dimension) computes its region from the start of its domain along
the dimension it scans, in order (schedule.regions), so it is right for any tile; to keep it
from recomputing that prefix, the tile dimensions whose variable a member scans are held whole
(`TiledGroup.whole`): `with_tiles` widens any size along them to WHOLE_TILE, so tiles are strips
cut only along the other dimensions. A group whose scans run along two dimensions (down the
columns, then along the rows) is then cut along neither: one tile per channel, or one in all.
Only given schedules fuse scans: auto leaves each alone and untiled (grouping.cost.SCAN_ALONE).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ..algebra.affine import data_dependent
from ..algebra.evaluate import Evaluator, extent
from ..algebra.intervals import as_long
from ..algebra.simplify import expr_key, simplify
from ..dsl import expr as E
from ..dsl.reduction import Reduction
from .plan import liveouts as group_liveouts
from .plan import tile_rank
from .reductions import tile_owned
from .regions import Regions, either, infer_group_regions

MAX_SCALE_LOG2 = 8
# a tile size that holds any dimension whole (what a size along a scanned dimension becomes)
WHOLE_TILE = 1 << 30


@dataclass(frozen=True)
class UntiledGroup:
    """Members run one after another as full loop nests over full buffers."""

    members: tuple
    reason: str


@dataclass(frozen=True)
class Nest:
    """One loop nest of a tile: several sibling stages computed over the same bounds."""

    stages: tuple
    scratch: bool


@dataclass(frozen=True)
class TiledGroup:
    """Everything about one overlapped-tiled group, as DSL expressions and names.

    slide: (tile dimension, its variable name) along which inner tiles of a two-level tiling
    walk, sliding: each computes only what the previous ones in its row did not; or None.
    tile_lo/tile_hi: Variables for the tile's interval per tile dimension; first: the start of
    the first tile per dimension (owns the live-out dimensions the anchor lacks); spans: the
    tile space's extent per dimension as (live-out, dimension, scale p/q) triples to bound the
    tile loops; owned: each live-out's normalized owned box; regions: per member region;
    anchor_variables: the names of the anchor's variables (the tile space's dimensions);
    whole: the tile dimensions a member scans, which every tile holds whole (WHOLE_TILE).
    """

    members: tuple
    liveouts: tuple
    scratch: tuple
    tile_sizes: tuple
    slide: object
    tile_lo: tuple
    tile_hi: tuple
    first: tuple
    spans: tuple
    owned: dict
    regions: Regions
    nests: tuple
    anchor: str = ""
    anchor_variables: tuple = ()
    whole: tuple = ()

    @property
    def levels(self) -> int:
        return len(self.tile_sizes)


def plan_groups(graph, schedule, params) -> tuple:
    """One UntiledGroup or TiledGroup per group of `schedule`, in order; `params` holds a value
    for every parameter that sizes a domain (the estimates, resolved by the driver)."""
    return tuple(plan_group(graph, g.stages, g.tile_sizes, params) for g in schedule.groups)


def plan_group(graph, stages, tile_sizes, params):
    """The UntiledGroup or TiledGroup of `stages` run with `tile_sizes` (one or two levels)."""
    if not tile_sizes:
        return UntiledGroup(_ordered(graph, stages), "untiled in the schedule")
    return with_tiles(tiling_plan(graph, stages, params), tile_sizes)


def with_tiles(plan, tile_sizes):
    """`plan` (from tiling_plan) run with `tile_sizes`: an UntiledGroup stays one, and () makes
    one of a TiledGroup. Sizes along the dimensions the plan holds whole are widened to
    WHOLE_TILE (a schedule may give any size there)."""
    if isinstance(plan, UntiledGroup):
        return plan
    if not tile_sizes:
        return UntiledGroup(plan.members, "untiled in the schedule")
    tile_sizes = tuple(widened(plan, sizes) for sizes in tile_sizes)
    slide = slide_dimension(*tile_sizes) if len(tile_sizes) == 2 else None
    if slide is not None:
        slide = (slide, plan.anchor_variables[slide])
    return dataclasses.replace(plan, tile_sizes=tuple(tile_sizes), slide=slide)


def slide_dimension(outer, inner) -> int | None:
    """The dimension inner tiles of sizes `inner` slide along in outer tiles of sizes
    `outer`: the first where they are smaller."""
    return next((d for d, (o, i) in enumerate(zip(outer, inner)) if i < o), None)


def widened(plan, sizes) -> tuple:
    """`sizes` with WHOLE_TILE along every tile dimension `plan` holds whole."""
    return tuple(WHOLE_TILE if d in plan.whole else t for d, t in enumerate(sizes))


def _ordered(graph, stages) -> tuple:
    order = [s.name for s in graph.stages]
    return tuple(sorted(stages, key=order.index))


class PlanMemo:
    """What tiling_plan derives per live-out, shared by the outline plans of one cost model
    (one graph at fixed parameters): the tile variables of each rank, and each live-out's
    alignment to an anchor and owned box, one box per equal box (live-outs of equal domains
    aligned alike to tile spaces of equal origins own equal boxes)."""

    def __init__(self):
        self.variables = {}
        self.pairs = {}  # {(live-out, anchor): (alignment, owned box)}
        self.owned = {}  # {key of _owned_box's arguments: the box}

    def tile_variables(self, rank: int) -> tuple:
        """(tile_lo, tile_hi, first) Variables of a tile space of `rank` dimensions."""
        if rank not in self.variables:
            self.variables[rank] = _tile_variables(rank)
        return self.variables[rank]

    def owned_box(self, func, anchor, params) -> tuple:
        """(_align of live-out `func` to `anchor`, its _owned_box in the anchor's tile space),
        the box made once per key of _owned_box's arguments (expressions by expr_key: the
        graph keeps alive the symbols whose ids the keys hold)."""
        pair = (func.name, anchor.name)
        if pair not in self.pairs:
            alignment = _align(func, anchor, params)
            origin = tuple(as_long(iv.lb) for iv in anchor.intervals)
            bounds = [(as_long(iv.lb), as_long(iv.ub)) for iv in func.intervals]
            key = (
                alignment,
                tuple(expr_key(o) for o in origin),
                tuple((expr_key(lb), expr_key(ub)) for lb, ub in bounds),
            )
            if key not in self.owned:
                tile_lo, tile_hi, first = self.tile_variables(len(origin))
                self.owned[key] = _owned_box(func, alignment, tile_lo, tile_hi, first, origin)
            self.pairs[pair] = (alignment, self.owned[key])
        return self.pairs[pair]


def _tile_variables(rank: int) -> tuple:
    """Fresh (tile_lo, tile_hi, first) Variables of a tile space of `rank` dimensions."""
    return tuple(
        tuple(E.Variable(E.Long, f"{kind}{d}") for d in range(rank))
        for kind in ("tile_lo", "tile_hi", "tile_first")
    )


def tiling_plan(graph, stages, params, outline=False, memo=None):
    """Everything about running `stages` as overlapped tiles that does not depend on the tile
    sizes (a TiledGroup without them), or the UntiledGroup saying why they cannot be tiled.
    Tile sizes are added by `with_tiles`. With `outline`, the plan lacks the symbolic regions
    and loop nests that only code generation needs: the cost model plans every group it
    prices this way, and evaluates regions numerically (regions.NumericRegions); its
    PlanMemo `memo` shares their live-outs' owned boxes."""
    members = _ordered(graph, stages)
    reason = untileable_reason(graph, members)
    if reason:
        return UntiledGroup(members, reason)
    outs = group_liveouts(graph, members)
    rank = tile_rank(graph, members)
    anchor = max(reversed(outs), key=lambda n: graph.stage(n).func.ndim)
    memo = memo if outline else None
    tile_lo, tile_hi, first = _tile_variables(rank) if memo is None else memo.tile_variables(rank)
    spans, owned = [], {}
    anchor_func = graph.stage(anchor).func
    origin = tuple(as_long(iv.lb) for iv in anchor_func.intervals)
    for name in outs:
        func = graph.stage(name).func
        if memo is None:
            alignment = _align(func, anchor_func, params)
            owned[name] = _owned_box(func, alignment, tile_lo, tile_hi, first, origin)
        else:
            alignment, owned[name] = memo.owned_box(func, anchor_func, params)
        for j, (d, p, q) in enumerate(alignment):
            if d is not None:
                spans.append((name, j, d, p, q))
    names = [v.name for v in anchor_func.variables]
    scanned = {n: graph.scan(n) for n in members if graph.scan(n) is not None}
    whole = tuple(
        sorted(
            {
                names.index(v)
                for v in (graph.stage(n).func.variables[k].name for n, k in scanned.items())
                if v in names
            }
        )
    )
    scratch = tuple(
        n
        for n in members
        if n not in outs
        or isinstance(graph.stage(n).func, Reduction)
        or any(c in members for c in graph.stage(n).consumers)
    )
    regions = (
        None if outline else infer_group_regions(graph, members, owned, tile_lo + tile_hi + first)
    )
    return TiledGroup(
        members,
        outs,
        scratch,
        (),
        None,
        tile_lo,
        tile_hi,
        first,
        tuple(spans),
        owned,
        regions,
        () if outline else _nests(graph, members, scratch, regions, owned),
        anchor,
        tuple(names),
        whole,
    )


def untileable_reason(graph, members):
    """Why the group cannot be tiled (a Reduction none of whose variables owns cells, so that
    a tile cannot compute only its own cells; a data-dependent read of a member), or None (the
    cost model gives such groups of several stages an infinite cost). A Reduction's affine
    reads of members are tileable (a tile computes them over the footprint of its reduction
    points), and so are scans: see the module's docstring."""
    inside = set(members)
    for name in members:
        func = graph.stage(name).func
        if isinstance(func, Reduction) and not tile_owned(func):
            return f"{name} is a Reduction none of whose variables owns cells of it"
        for ref in graph.reads(name):
            if ref.func.name in inside and data_dependent(ref):
                return f"{name} reads {ref.func.name} at a data-dependent index"
    return None


def tile_scale(plan, d: int) -> int:
    """The anchor points along tile dimension `d` per point of its coarsest live-out (the lcm
    of the live-outs' scales down)."""
    return math.lcm(1, *(q for _, _, dim, _, q in plan.spans if dim == d))


def tile_origin(graph, plan, d: int):
    """Where tile 0 starts along tile dimension `d`, as a Long expression of the parameters:
    the anchor's lower bound. Tiles follow the domain, so that a schedule does not depend on
    where its author numbers from."""
    return as_long(graph.stage(plan.anchor).func.intervals[d].lb)


def tile_span(graph, plan, d: int, size: int) -> tuple:
    """(first, last) outer tile index along tile dimension `d` for tiles of `size` from
    `tile_origin`, as Long expressions of the parameters: 0, and the tile holding the last
    point of every live-out aligned with `d` (each live-out's first point lies at the origin:
    see _owned_box)."""
    highs = []
    for name, j, dim, p, q in plan.spans:
        if dim == d:
            iv = graph.stage(name).func.intervals[j]
            highs.append(simplify(((as_long(iv.ub) - as_long(iv.lb)) * q) // (p * size)))
    hi = highs[0]
    for b in highs[1:]:
        hi = E.Max(hi, b)
    return E.Const(0, E.Long), hi


def _align(func, anchor, params) -> tuple:
    """Per dimension of `func`: (anchor dimension or None, p, q), the coordinate being about
    p/q times the anchor's."""
    names = [v.name for v in anchor.variables]
    result: list[tuple[int | None, int, int]]
    taken, result = set(), []
    evaluate = Evaluator({}, {}, params)
    for j, var in enumerate(func.variables):
        d = names.index(var.name) if var.name in names else None
        if func is anchor:
            d = j
        if d is None or d in taken:
            result.append((None, 1, 1))
            continue
        taken.add(d)
        ratio = extent(evaluate, func.intervals[j]) / extent(evaluate, anchor.intervals[d])
        k = max(-MAX_SCALE_LOG2, min(MAX_SCALE_LOG2, round(math.log2(ratio))))
        result.append((d, 2 ** max(k, 0), 2 ** max(-k, 0)))
    return tuple(result)


def _ceil_div(e, q: int):
    return e if q == 1 else (e + (q - 1)) // q


def _owned_box(func, alignment, tile_lo, tile_hi, first, origin) -> tuple:
    """The live-out's part owned by tile [tile_lo, tile_hi], clipped to its domain: scaled by
    p/q from the tile origins, which match the live-out's first points. Dimensions of the
    tile space it lacks are owned by the tile holding `first`; other tiles get the box
    [ub + 1, lb - 1], which lies inside any box, so an inner tile's box stays inside its
    tile's."""
    box, matched = [], set()
    for (d, p, q), iv in zip(alignment, func.intervals):
        lb, ub = as_long(iv.lb), as_long(iv.ub)
        if d is None:
            box.append((lb, ub))
            continue
        matched.add(d)
        lo = lb + _ceil_div((tile_lo[d] - origin[d]) * p, q)
        hi = lb + _ceil_div((tile_hi[d] + 1 - origin[d]) * p, q) - 1
        box.append((simplify(E.Max(lo, lb)), simplify(E.Min(hi, ub))))
    empty = None
    for d in range(len(origin)):
        if d not in matched:
            empty = either(empty, (first[d] < tile_lo[d]) | (first[d] > tile_hi[d]))
    if empty is None:
        return tuple(box)
    return tuple(
        (E.Select(empty, as_long(iv.ub) + 1, lo), E.Select(empty, as_long(iv.lb) - 1, hi))
        for (lo, hi), iv in zip(box, func.intervals)
    )


def _nests(graph, members, scratch, regions, owned) -> tuple:
    """Loop nests in order (by depth in the group, then topologically): consecutive siblings
    with the same bounds and storage kind that share a producer and do not read each other are
    fused (register reuse, TOPLAS 2020 Sec. 5.3); Reductions and scans keep nests of their
    own."""
    level: dict
    inside, level = set(members), {}
    for name in members:
        level[name] = 1 + max(
            (level[p] for p in graph.stage(name).producers if p in inside), default=-1
        )
    nests: list = []
    for name in sorted(members, key=lambda n: level[n]):
        bounds = _bounds_text(owned.get(name) if name not in scratch else regions[name].bounds)
        stage = graph.stage(name)
        if nests:
            last = nests[-1]
            head = graph.stage(last["stages"][0])
            if (
                not any(
                    isinstance(graph.stage(n).func, Reduction) or graph.scan(n) is not None
                    for n in (head.name, name)
                )
                and last["bounds"] == bounds
                and last["scratch"] == (name in scratch)
                and [v.typ for v in head.func.variables] == [v.typ for v in stage.func.variables]
                and not set(stage.producers) & set(last["stages"])
                and set(stage.producers) & last["producers"]
            ):
                last["stages"].append(name)
                last["producers"] |= set(stage.producers)
                continue
        nests.append(
            {
                "stages": [name],
                "bounds": bounds,
                "scratch": name in scratch,
                "producers": set(stage.producers),
            }
        )
    return tuple(Nest(tuple(n["stages"]), n["scratch"]) for n in nests)


def _bounds_text(bounds) -> tuple:
    return tuple((expr_key(lo), expr_key(hi)) for lo, hi in bounds)
