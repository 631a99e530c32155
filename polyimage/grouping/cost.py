"""The cost of a group and its tile sizes (after TOPLAS 2020, Algorithm 2), from exact regions.

The paper's four criteria, made extensive (in units of one byte moved) so that the DP can add
the costs of groups:
  tile time = w1 * bytes a tile reads or writes outside its scratchpads (live-ins, live-outs,
              and its scratchpads too when they overflow L2; a live-out other members read
              is copied out of its scratchpad, COPY_OUT_BYTES a byte more; every row of a
              live-in in memory narrower than the buffer's rows, STREAM_START_BYTES more)
            + w3 * operations it performs (overlap: recomputed halo points cost their work)
  cost      = tiles * tile time / cores
            + w2 * tile time * cores idle in the last round of tiles / cores   (clean-up)
            + w4 * the spread of member scales against the anchor * tiles * tile time / cores
Tile sizes (grouping.tile_search) fill a cache budget (L1, half of L2, L2: the cheapest wins):
the innermost dimension gets min(extent, innermost), the others sizes in proportion to their
reuse (how far regions reach beyond the tile along them); full-width strips (every column, as
many rows as fill the budget, one along the outer dimensions) compete with them, and every run
of an innermost loop adds `row_start` bytes to the tile time, so short rows pay for restarting
the prefetcher. A scan alone runs untiled (SCAN_ALONE); a group with scans is priced as strips
whole along the dimensions they scan, the strips code generation runs (schedule.tiling widens
any size there): auto's candidates are those of _scan_strips, a given schedule's are widened.
Regions are those the code generator uses, composed numerically from each stage's reads
(schedule.regions.NumericRegions: no symbolic regions are built for the groups the search
prices), for one tile in the middle of the image at the estimates. They, the stages' operations
and the other facts no weight changes come from grouping.facts.CostFacts, which CostModel extends.
With `multilevel` (Algorithm 4), a two-level candidate competes too: outer tiles of the L2
size walked by inner tiles that fit L1; scratch bytes that stay in cache only beyond L1 then
cost L2_BYTE of a memory byte, so inner tiles in L1 can pay for their bookkeeping.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass

from ..algebra.evaluate import extent
from ..dsl.reduction import Reduction
from ..graph.dag import definition_exprs
from ..schedule.reductions import foldable, reduction_strategy
from ..schedule.tiling import UntiledGroup
from .facts import L2_BYTE, CostFacts, known_scalar, narrow_gather, priced_nodes, scatters
from .tile_search import (  # noqa: F401  (read from here too)
    SLIDE_FACTORS,
    WHOLE_EXTENT,
    scan_strips,
    sliding_tiles,
    strip_sizes,
    tile_count,
    tile_sizes,
    whole_along_scans,
)

DEFAULT_INNERMOST = 256
# a scan alone runs untiled; fused with others, its group runs in strips (_scan_strips)
SCAN_ALONE = "a scan runs alone and untiled"
# auto fuses a scan along its first dimension (its lines in vector lanes) or its last (lines
# side by side: codegen.scans); along another, the steps of a line run a few elements wide
# (a 3-channel recursive filter's scan along the columns: 1.2x slower fused in strips of rows)
SCAN_MIDDLE = "a scan along a middle dimension runs alone under auto"
# lines of a scan along the last dimension that run side by side (codegen.scans.LINES)
SCAN_LINES = 4
# strips of scans a core takes at least: a strip is long (a scan's whole dimension), and fewer
# left a core idle behind a slow one (integral_box, 2 cores, AMD EPYC Zen 4: strips of 512
# columns 3.1 ms, of 1296 (two) 3.7)
SCAN_TASKS_PER_CORE = 4
# a strip of scans writes each member's region and reads it once, in order: this many times L2
# of it stays in the caches (integral_box's strips of 1.6-3.3 MB ran faster than the scans
# alone on a 1 MiB L2, a 3-channel recursive filter's of 5.9 MB 1.3x slower: AMD EPYC Zen 4,
# 2 cores)
STREAMED_L2 = 2
# a live-out that other members read is computed into its scratchpad and copied out to its full
# buffer in a pass of its own, not overlapped with the computation as a store straight into the
# buffer is: each owned byte of a buffer that outgrows L2 costs this many bytes moved more (one
# L2_BYTE in cache). Measured at 1536 x 2560 floats: a stage fused with its consumer ran 1.3x
# its stages apart while also an output, 0.7x when not; the copy took a third of the group
COPY_OUT_BYTES = 1.0
# a tile narrower than the rows of a live-in that outgrows L2 reads each of its rows as a run of
# memory of its own, which starts with a miss the prefetcher did not see coming (rows of whole
# width follow one another, as an untiled loop's do). Tiles of 512 x 256 reading three planes
# ran 1.5x slower than strips of whole rows reading the same bytes (over 1 KiB a row); priced
# at a quarter of that, so that it settles near ties toward strips (pyramid_blend's last group)
STREAM_START_BYTES = 256.0


@dataclass(frozen=True)
class Weights:
    """w1..w4 of the cost, and the bytes one run of an innermost loop costs (`row_start`: the
    prefetcher restarts, loop and region setup; short rows lose to full-width strips). The
    paper's Table 2 values weigh terms in other units; these defaults price one operation at
    0.3 bytes moved on the machine they were fit on (2 cores with 16-lane vectors against about
    40 GB/s), and at 0.3 times Machine.op_scale on another."""

    live_data: float = 1.0
    cleanup: float = 1.0
    overlap: float = 0.3
    spread: float = 0.5
    row_start: float = 64.0


@dataclass(frozen=True)
class CostTerms:
    """What a group's cost is made of, per tile: bytes moved outside the scratchpads (with
    copies out of them and row starts in memory as bytes), operations, the share of
    recomputed points; and over the group: tiles, cores idle in the last round, the spread of
    member sizes. An untiled group has only `untiled`, the reason."""

    bytes_per_tile: float = 0.0
    ops_per_tile: float = 0.0
    tiles: int = 0
    redundant_fraction: float = 0.0
    idle_cores: int = 0
    size_spread: float = 0.0
    inner_tile: tuple = ()
    untiled: str = ""

    def describe(self) -> str:
        if self.untiled:
            return f"untiled: {self.untiled}"
        text = (
            f"bytes per tile {self.bytes_per_tile:.3g}, ops per tile {self.ops_per_tile:.3g}"
            f", tiles {self.tiles}, redundant fraction {self.redundant_fraction:.3g}, idle "
            f"cores in the last round {self.idle_cores}, size spread {self.size_spread:.3g}"
        )
        if self.inner_tile:
            text += f", inner tile {'x'.join(map(str, self.inner_tile))}"
        return text


@dataclass(frozen=True)
class GroupCost:
    """A group's cost, the tile sizes per level it was computed for (() when untiled: one
    level, or an outer and an inner level) and its terms."""

    cost: float
    levels: tuple
    terms: CostTerms

    @property
    def tile_sizes(self) -> tuple:
        """The outer level's tile sizes (() when untiled)."""
        return self.levels[0] if self.levels else ()


def unpriced_scalar(graph, names, priced=()) -> tuple:
    """Those of the stages `names` of `graph` (found scalar by a build) that CostModel prices
    as vector code: not in `priced` (its `scalar`), nor known_scalar, nor scalar for a cause
    it prices otherwise (a Reduction's scatter, a gather of narrow values: Machine.gather_ops
    per access, measured on scalar code)."""
    return tuple(n for n in names if n not in priced and not _priced_scalar(graph.stage(n).func))


def _priced_scalar(func) -> bool:
    nodes = [n for e in definition_exprs(func) for n in priced_nodes(e)]
    return known_scalar(func) or scatters(func) > 0 or any(narrow_gather(n) for n in nodes)


class CostModel(CostFacts):
    """Costs groups of one graph at fixed parameter values; facts that do not depend on the
    weights (stage sizes and operations, plans, tile volumes: grouping.facts) are computed once
    per model and shared with its `reweighted` copies."""

    def __init__(
        self,
        graph,
        params,
        machine,
        weights=Weights(),
        innermost=DEFAULT_INNERMOST,
        multilevel=False,
        scalar=frozenset(),
    ):
        super().__init__(graph, params, machine, scalar)
        self.weights, self.innermost, self.multilevel = weights, innermost, multilevel

    def reweighted(self, weights) -> "CostModel":
        """This model under other weights, sharing what it has computed (the autotuner prices
        one graph under many weight vectors)."""
        other = copy.copy(self)
        other.weights = weights
        return other

    def __call__(self, stages) -> GroupCost:
        """GroupCost of running `stages` as one group (math.inf when they cannot be tiled)."""
        graph = self.graph
        plan = self.plan(stages)
        if isinstance(plan, UntiledGroup):
            cost = math.inf if len(stages) > 1 else self.untiled(stages[0])
            return GroupCost(cost, (), CostTerms(untiled=plan.reason))
        scans = {n: d for n in stages if (d := graph.scan(n)) is not None}
        if scans and len(stages) == 1:
            return GroupCost(self.untiled(stages[0]), (), CostTerms(untiled=SCAN_ALONE))
        if scans and not all(d in (0, graph.stage(n).func.ndim - 1) for n, d in scans.items()):
            return GroupCost(math.inf, (), CostTerms(untiled=SCAN_MIDDLE))
        if scans:
            return self._scan_strips(plan)
        folded = self._folded(stages)
        tiled = self._tiled(plan, stages)
        return folded if folded is not None and folded.cost < tiled.cost else tiled

    def _folded(self, stages) -> GroupCost | None:
        """A Reduction run by register blocks with the other `stages` computed by its tasks
        from their cells in cache (schedule.reductions.foldable: a window sum and its
        scaling, a conv layer and its ReLU): the stages each priced alone and untiled, less
        the Reduction's cells written to memory and read back. None for other groups."""
        graph = self.graph
        reductions = [n for n in stages if isinstance(graph.stage(n).func, Reduction)]
        if len(stages) < 2 or len(reductions) != 1 or self.machine is None:
            return None
        name = reductions[0]
        func = graph.stage(name).func
        if reduction_strategy(func, self.evaluate, self.machine).kind != "blocked":
            return None
        others = tuple(n for n in stages if n != name)
        ready = {s.name for s in graph.stages} - set(others)
        if foldable(graph, name, others, ready) != others:
            return None
        cells = self.weights.live_data * self.points(name) * self.itemsize(name)
        cost = sum(self.untiled(n) for n in stages) - cells * len(stages) / self.machine.cores
        why = f"{', '.join(others)} computed by the tasks of {name}'s register blocks"
        return GroupCost(cost, (), CostTerms(untiled=why))

    def _tiled(self, plan, stages) -> GroupCost:
        """The cheapest tiles of a tileable group (the best of the fitted tiles, strips,
        sliding tiles and, with `multilevel`, two levels), or the stage alone untiled."""
        graph, machine = self.graph, self.machine
        bounds = self.anchor_bounds(plan)
        sizes = [max(ub - lb + 1, 1) for lb, ub in bounds]
        probe_tile = tuple(min(s, 32) for s in sizes)
        probe = self.probe(plan, probe_tile)
        touched = probe["scratch_bytes"] + probe["live_in"] + probe["live_out"]
        per_point = touched / math.prod(probe_tile)
        candidates = []
        budgets = (machine.l1_bytes, machine.l2_bytes // 2, machine.l2_bytes)
        for cache in budgets:
            fitted = tile_sizes(graph, plan, probe, sizes, cache, machine.cores, self.innermost)
            strips = strip_sizes(graph, plan, sizes, cache, per_point)
            for tiles in [fitted] + strips:
                if tiles not in candidates:
                    candidates.append(tiles)
        l2_tiles = fitted  # Algorithm 2's tiles for the last budget, all of L2
        measures = self.measure(plan, candidates)
        strips = [m for t, m in zip(candidates, measures) if t[-1] > bounds[-1][1] - bounds[-1][0]]
        # where even a strip of one row overflows L2 (a member computed at many offsets per
        # point), the narrower tiles slide along the dimensions their members reach across
        narrow = bool(strips) and all(m["scratch_bytes"] > machine.l2_bytes for m in strips)
        if narrow:  # and narrower rows too, so that an inner tile of them fits L2
            extra = []
            for width in (self.innermost // 2, self.innermost // 4):
                for cache in budgets:
                    tiles = tile_sizes(graph, plan, probe, sizes, cache, machine.cores, width)
                    if tiles not in candidates and tiles not in extra:
                        extra.append(tiles)
            if extra:  # a one-dimensional group has no narrower rows to offer
                candidates += extra
                measures = measures + self.measure(plan, extra)
        halo = probe["aligned_halo"] if narrow else probe["halo"]
        slides = [
            (outer, inner)
            for outer, inner in sliding_tiles(candidates, bounds, halo, narrow)
            if self.slides_every_member(plan, outer, inner)
        ]
        if slides:
            measures = measures + self.measure(plan, [outer for outer, _ in slides])
        cheapest: tuple | None = None  # (cost, levels, CostTerms' fields, inner tile)
        for tiles, measured in zip(candidates, measures):
            cost, fields = self._price(plan, measured, tiles)
            if cheapest is None or cost < cheapest[0]:
                cheapest = (cost, (tuple(int(t) for t in tiles),), fields, ())
        assert cheapest is not None  # the fitted tiles are a candidate at least
        by_tiles = dict(zip(candidates, measures))
        for (outer, inner), measured in zip(slides, measures[len(candidates) :]):
            resident = by_tiles[inner]["scratch_bytes"]
            cost, fields = self._price(plan, measured, outer, resident=resident)
            if cost < cheapest[0]:
                cheapest = (cost, (outer, inner), fields, inner)
        cost, levels, (traffic, ops, n_tiles, redundant, idle, spread), inner = cheapest
        terms = CostTerms(traffic, ops, n_tiles, redundant, idle, spread, inner_tile=inner)
        best = GroupCost(cost, levels, terms)
        if self.multilevel and len(sizes) > 1:
            l2_measured = measures[candidates.index(l2_tiles)]
            two = self._two_levels(plan, l2_tiles, l2_measured, sizes, probe["halo"])
            if two is not None and two.cost < best.cost:
                best = two
        if len(stages) == 1:
            alone = self.untiled(stages[0])
            if alone < best.cost:
                return GroupCost(alone, (), CostTerms(untiled="no tiling is cheaper"))
        return best

    def _scan_strips(self, plan) -> GroupCost:
        """A group with scans, as strips (tile_search.scan_strips): one level, whole along
        the dimensions its members scan, its cheapest strip width priced as any tiles (the
        scans' regions run from the start of their domains: schedule.regions)."""
        machine = self.machine
        bounds = self.anchor_bounds(plan)
        itemsize = max(self.itemsize(n) for n in plan.members)
        lanes = max(1, machine.vector_bytes // itemsize)
        budgets = (machine.l2_bytes // 2, machine.l2_bytes)
        footprint = len(plan.members) * itemsize
        least = SCAN_TASKS_PER_CORE * machine.cores
        lines = self.scan_lines(plan)
        candidates = scan_strips(plan, bounds, budgets, footprint, lanes, lines, least, itemsize)
        priced = [
            self._combine(plan, measured, tiles, streamed=True)
            for tiles, measured in zip(candidates, self.measure(plan, candidates))
        ]
        return min(priced, key=lambda g: g.cost)

    def scan_lines(self, plan) -> int:
        """Lines a strip takes at least along the dimension before the last where a member
        scans the last (codegen.scans.LINES run side by side), else 1."""
        last = len(self.anchor_bounds(plan)) - 1
        return SCAN_LINES if last in plan.whole and last > 0 else 1

    def _two_levels(self, plan, l2_tiles, l2_measured, sizes, halo):
        """Algorithm 4: outer tiles sized for L2 walked by inner tiles that fit L1, cut along
        the first dimension with a halo (the code generator slides along it, so inner tiles
        recompute nothing). Unlike the paper, it competes even when L1-sized tiles overlap
        little: the L2 candidate wins most groups here, and the paper's test then never
        offered two levels. None when no dimension has a halo or the outer tile has a single
        row along it."""
        dim = next((d for d, h in enumerate(halo[:-1]) if h > 0 and l2_tiles[d] > 1), None)
        if dim is None:
            return None
        rest = (
            math.prod(t for d, t in enumerate(l2_tiles) if d != dim)
            * len(plan.members)
            * max(self.itemsize(n) for n in plan.members)
        )
        rows = max(1, min(l2_tiles[dim] - 1, self.machine.l1_bytes // max(rest, 1)))
        inner = tuple(rows if d == dim else t for d, t in enumerate(l2_tiles))
        inner_measured = self.measure(plan, [inner])[0]
        result = self._combine(
            plan, l2_measured, l2_tiles, resident=inner_measured["scratch_bytes"]
        )
        return GroupCost(
            result.cost,
            (tuple(l2_tiles), inner),
            dataclasses.replace(result.terms, inner_tile=inner),
        )

    def _combine(self, plan, measured, tiles, resident=None, streamed=False) -> GroupCost:
        """The cost at `tiles`, with its terms (see _price)."""
        cost, fields = self._price(plan, measured, tiles, resident, streamed)
        return GroupCost(cost, (tuple(int(t) for t in tiles),), CostTerms(*fields))

    def _price(self, plan, measured, tiles, resident=None, streamed=False) -> tuple:
        """(the cost at `tiles`, the fields of its CostTerms up to the size spread);
        `resident`: the scratch bytes in cache at a time (default: all of the tile's), which
        spill to memory beyond L2, or with `streamed` (a strip of scans, each member's region
        written and read once, in order) beyond STREAMED_L2 times L2."""
        machine, weights = self.machine, self.weights
        n_tiles = tile_count(self.anchor_bounds(plan), tiles)
        cores = machine.cores
        ops = sum(measured["volumes"][n] * self.ops(n) for n in plan.members)
        traffic = (
            measured["live_in"]
            + measured["live_out"]
            + COPY_OUT_BYTES * measured["copied"]
            + STREAM_START_BYTES * measured["streams"]
        )
        resident = measured["scratch_bytes"] if resident is None else resident
        if streamed and machine.l2_bytes < resident <= STREAMED_L2 * machine.l2_bytes:
            traffic += L2_BYTE * 2 * measured["scratch_bytes"]
        elif resident > machine.l2_bytes:
            traffic += 2 * measured["scratch_bytes"]
        elif self.multilevel and resident > machine.l1_bytes:
            traffic += L2_BYTE * 2 * measured["scratch_bytes"]
        tile_time = (
            weights.live_data * traffic
            + weights.overlap * machine.op_scale * ops
            + weights.row_start * measured["rows"]
        )
        idle = (cores - n_tiles % cores) % cores
        spread = self.spread(plan)
        time = n_tiles * tile_time / cores
        cost = time + weights.cleanup * tile_time * idle / cores + weights.spread * spread * time
        redundant = measured["redundant"] / max(measured["computed"], 1)
        return cost, (traffic, ops, n_tiles, redundant, idle, spread)

    def at_tiles(self, stages, levels) -> float:
        """The cost of `stages` as one tiled group at the tile sizes `levels` (the outer level,
        then the inner one where there are two)."""
        plan = self.plan(tuple(stages))
        levels = [whole_along_scans(plan, self.anchor_bounds(plan), t) for t in levels]
        measured = self.measure(plan, levels)
        resident = measured[1]["scratch_bytes"] if len(measured) > 1 else None
        return self._combine(plan, measured[0], levels[0], resident=resident).cost

    def untiled(self, name) -> float:
        """A stage run alone, untiled: its inputs read and its output written once, a run of
        its innermost loop per row."""
        weights, points = self.weights, self.points(name)
        func = self.graph.stage(name).func
        reads = sum(self.points(p) * self.itemsize(p) for p in self.graph.stage(name).producers)
        rows = points / max(extent(self.evaluate, func.intervals[-1]), 1) if func.ndim else 1
        ops = self.ops(name) * self.register_share(name)
        time = (
            weights.live_data * (reads + points * self.itemsize(name))
            + weights.overlap * self.machine.op_scale * points * ops
            + weights.row_start * rows
        )
        return time / self.machine.cores


def group_cost(
    graph, stages, params, machine, weights=Weights(), innermost=DEFAULT_INNERMOST, multilevel=False
):
    """GroupCost of running `stages` as one group (see CostModel)."""
    return CostModel(graph, params, machine, weights, innermost, multilevel)(stages)


def redundant_fraction(graph, stages, params, tiles):
    """The share of recomputed points of `stages` at tile sizes `tiles` (None: untileable)."""
    model = CostModel(graph, params, None)
    plan = model.plan(tuple(stages))
    if isinstance(plan, UntiledGroup):
        return None
    tiles = whole_along_scans(plan, model.anchor_bounds(plan), tuple(tiles))
    measured = model.measure(plan, [tiles])[0]
    return measured["redundant"] / max(measured["computed"], 1)
