"""The candidate tile sizes the cost model prices for a group (grouping.cost): Algorithm 2's
sizes for a cache budget, full-width strips, sliding two-level tilings, how many tiles cover a
box, and a given schedule's sizes widened along the dimensions a scan member scans."""

from __future__ import annotations

import math

# outer dimensions this small (colour channels) may be taken whole by a strip
WHOLE_EXTENT = 4
# the shortest row of a strip of scans: shorter rows, a row apart in memory, stream badly
# (integral_box, 2 cores, AMD EPYC Zen 4: strips of 80 ints (320 bytes) 4.9 ms, of 320 (1280
# bytes) 3.2, the scans alone 4.5)
SCAN_ROW_BYTES = 1024
# how many inner tiles a sliding outer tile holds along its slide dimension
SLIDE_FACTORS = (2, 4, 8, 16)


def sliding_tiles(candidates, bounds, halo, narrow=False) -> list:
    """(outer, inner) tile sizes of sliding two-level tilings: each candidate becomes the inner
    tile of an outer tile SLIDE_FACTORS times as long along a dimension with a halo (not the
    innermost, not a few channels, whose regions an inner tile spans all the same), for the
    candidates that span the whole innermost dimension (strips), or with `narrow` (every strip
    overflows L2) for all of them. Inner tiles walk the outer one
    in order and compute only what the previous ones did not, into
    scratchpads folded to about one inner tile's rows: the outer tile recomputes one halo where
    its inner tiles alone would recompute one each, with the inner tile's working set."""
    slides = []
    lb_last, ub_last = bounds[-1]
    for dim in (d for d, h in enumerate(halo[:-1]) if h > 0):
        lb, ub = bounds[dim]
        if ub - lb + 1 <= WHOLE_EXTENT:
            continue
        for inner in candidates:
            if inner[-1] <= ub_last - lb_last and not narrow:
                continue  # rows of a strip only: narrower tiles measured slower sliding
            for factor in SLIDE_FACTORS:
                if inner[dim] * factor > ub - lb + 1 + inner[dim]:
                    break
                widened = list(inner)
                widened[dim] = inner[dim] * factor
                outer = tuple(widened)
                # the code slides along the first dimension where inner tiles are smaller
                if outer[:dim] == inner[:dim]:
                    slides.append((outer, tuple(inner)))
    return slides


def tile_count(bounds, tiles) -> int:
    """Tiles of sizes `tiles` that cover the box `bounds` ((lb, ub) per dimension, counted
    from the tile origin): tiles start at multiples of their size from there
    (schedule.tiling.tile_span), so a box not starting at one takes a tile more than its
    extent over the size."""
    return math.prod(ub // t - lb // t + 1 for (lb, ub), t in zip(bounds, tiles))


def strip_sizes(graph, plan, sizes, cache, bytes_per_point=None) -> list:
    """Full-width strips: every row of the innermost dimension, as many rows of the next one
    as fill `cache`, and along the others one, or (a second strip) the whole of those as small
    as a channel dimension, so that stages without it are not recomputed per channel. Rows
    fill the cache as if every member were as large as the tile, and (when given) by the bytes
    a probe tile touched per point of it: members on coarser grids or without channels take
    less. Empty for one-dimensional groups."""
    if len(sizes) < 2:
        return []
    itemsize = max(graph.stage(n).func.typ.dtype.itemsize for n in plan.members)
    per_point = [len(plan.members) * itemsize] + ([bytes_per_point] if bytes_per_point else [])
    strips = []
    for whole in (False, True):
        outer = tuple(s if whole and s <= WHOLE_EXTENT else 1 for s in sizes[:-2])
        for footprint in per_point:
            rows = int(cache // (footprint * sizes[-1] * math.prod(outer)))
            strip = outer + (max(1, min(sizes[-2], rows)), sizes[-1])
            if strip not in strips:
                strips.append(strip)
    return strips


def whole_along_scans(plan, bounds, tiles) -> tuple:
    """`tiles` with every size along a dimension the plan holds whole (a member scans it:
    schedule.tiling) spanning the dimension's extent in `bounds`: one tile from the origin."""
    return tuple(
        max(ub - lb + 1, 1) if d in plan.whole else t
        for d, ((lb, ub), t) in enumerate(zip(bounds, tiles))
    )


def scan_strips(plan, bounds, budgets, footprint, lanes, lines, least=1, itemsize=4) -> list:
    """Candidate strips of a group with scans: whole along the dimensions it holds whole
    (plan.whole) and those as small as a channel dimension, cut along the other dimension
    nearest the last: as many points as fill each of `budgets` at `footprint` bytes a point
    of the tile (and twice and four times that), in multiples of `lanes` along the last
    dimension or of `lines` along another, narrow enough to make `least` strips where the
    dimension allows, wide enough that a row of a strip (`itemsize` bytes a point) spans
    SCAN_ROW_BYTES where the dimension allows; one along the rest (a batch)."""
    sizes = [max(ub - lb + 1, 1) for lb, ub in bounds]
    held = {d for d, s in enumerate(sizes) if d in plan.whole or s <= WHOLE_EXTENT}
    free = [d for d in range(len(sizes)) if d not in held]
    if not free:
        return [tuple(sizes)]
    cut = free[-1]
    step = lanes if cut == len(sizes) - 1 else lines
    others = math.prod(sizes[d] for d in free[:-1])
    widest = max(step, sizes[cut] * others // max(least, 1) // step * step)
    run = itemsize * math.prod(sizes[cut + 1 :])  # bytes of a row of the strip a point wide
    narrowest = min(sizes[cut], -(-SCAN_ROW_BYTES // max(run, 1) // step) * step)
    across = math.prod(sizes[d] for d in held)
    strips = []
    for cache in budgets:
        for factor in (1, 2, 4):
            fit = int(cache * factor // max(footprint * across, 1))
            width = max(narrowest, min(sizes[cut], widest, max(step, fit // step * step)))
            strip = tuple(
                s if d in held else (width if d == cut else 1) for d, s in enumerate(sizes)
            )
            if strip not in strips:
                strips.append(strip)
    return strips


def tile_sizes(graph, plan, probe, sizes, cache, cores, innermost) -> tuple:
    """Algorithm 2's COMPUTE TILE SIZES with reuse scores from the regions' halos."""
    itemsize = max(graph.stage(n).func.typ.dtype.itemsize for n in plan.members)
    total = sum(probe["full_bytes"].values())
    footprint = min(total / cores, cache)
    points = max(footprint / (len(plan.members) * itemsize), 1.0)
    rank = len(sizes)
    last = min(sizes[-1], innermost)
    if rank == 1:
        return (max(1, min(sizes[0], int(points))),)
    reuse = [1.0 + h for h in probe["halo"][:-1]]
    gamma = [r / max(reuse) for r in reuse]
    tau = (points / last / math.prod(gamma)) ** (1.0 / (rank - 1))
    outer = [max(1, min(s, int(round(g * tau)))) for s, g in zip(sizes, gamma)]
    return tuple(outer) + (last,)
