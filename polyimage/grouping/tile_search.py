"""The candidate tile sizes the cost model prices for a group (grouping.cost): Algorithm 2's
sizes for a cache budget, full-width strips, sliding two-level tilings, how many tiles cover a
box, and a given schedule's sizes widened along the dimensions a scan member scans."""

from __future__ import annotations

import math

# outer dimensions this small (colour channels) may be taken whole by a strip
WHOLE_EXTENT = 4
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
