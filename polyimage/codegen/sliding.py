"""The sliding two-level tiling of a tiled group (codegen/tiled.py) as C trees: inner tiles
walked in order along the slide dimension, each nest computing only the rows the previous inner
tile did not (checked at run time), and folded scratchpads sized to hold one inner tile's rows."""

from __future__ import annotations

from .ctree import Assign, Block, Declare, For, If, Line, Node
from .names import PREFIX


def fold_sizes(emitter, rank: int) -> list:
    """Within the sizing pass's outer tile: the fold of every folded scratchpad, the power
    of two covering its region along the slide dimension in every inner tile."""
    body = emitter.regions(emitter.v("rgi"))
    for name, dim in emitter.folded.items():
        lo, hi = emitter.plan.regions[name].symbols[dim]
        fold = emitter.scratch[name].fold[dim]
        extent = f"{PREFIX}extent({emitter.names[lo]}, {emitter.names[hi]})"
        body.append(Line(f"while ({fold} < {extent}) {fold} *= 2;"))
    return inner_loops(emitter, rank, body, level=None)


def inner_tiles(emitter, rank: int) -> tuple[list, list]:
    """Sequential inner tiles of a two-level tiling, the slide dimension innermost, and the
    functions of the nests they call."""
    plan = emitter.plan
    ndim = max(emitter.graph.stage(n).func.ndim for n in plan.members)
    nodes = []
    for n in range(len(plan.nests)):
        nodes.append(Declare("int", ((f"{emitter.v('trk')}_{n}", "0"),)))
        nodes.append(
            Declare(
                "int64_t",
                (
                    (f"{emitter.v('tlo')}_{n}[{ndim}]", None),
                    (f"{emitter.v('thi')}_{n}[{ndim}]", None),
                ),
            )
        )
    body = emitter.regions(emitter.v("rgi"))
    nests, functions = emitter.nests(tracked=True)
    body += nests
    return nodes + inner_loops(emitter, rank, body, level=2), functions


def inner_loops(emitter, rank: int, body: list, level) -> list:
    """The loops over an outer tile's inner tiles (the slide dimension innermost) around
    the block of one: its bounds, then `body`."""
    plan = emitter.plan
    outer, inner = plan.tile_sizes
    slide = plan.slide[0]
    nodes = [
        Declare(
            "int64_t",
            (
                (f"{emitter.v('l2lo')}_{d}", emitter.names[plan.tile_lo[d]]),
                (f"{emitter.v('l2hi')}_{d}", emitter.names[plan.tile_hi[d]]),
            ),
            True,
        )
        for d in range(rank)
    ]
    order = [d for d in range(rank) if d != slide] + [slide]
    tile = emitter.tile_interval(
        [f"{emitter.v('k')}_{d}" for d in range(rank)],
        [
            f"({emitter.v('k')}_{d} + {min(inner[d], outer[d]) - 1} < "
            f"{emitter.v('l2hi')}_{d} ? {emitter.v('k')}_{d} + "
            f"{min(inner[d], outer[d]) - 1} : {emitter.v('l2hi')}_{d})"
            for d in range(rank)
        ],
        level=level,
    )
    node: Node = Block((*tile, *body))
    for d in reversed(order):
        k = f"{emitter.v('k')}_{d}"
        step = str(min(inner[d], outer[d]))
        node = For(k, f"{emitter.v('l2lo')}_{d}", f"{emitter.v('l2hi')}_{d}", node, step=step)
    return nodes + [node]


def slide_dim(emitter, func):
    names = [v.name for v in func.variables]
    return names.index(emitter.plan.slide[1]) if emitter.plan.slide[1] in names else None


def track(emitter, n: int, bounds, dim: int, folds) -> list:
    """Start of the slide dimension: after what the previous inner tile computed when it
    covered the same range in every other dimension and reaches this one (and, for folded
    scratchpads, when every row it reuses is still held in each of `folds`)."""
    trk, tlo, thi = (f"{emitter.v(x)}_{n}" for x in ("trk", "tlo", "thi"))
    start = f"{emitter.v('from')}_{n}"
    nonempty = " && ".join(f"{lo} <= {hi}" for lo, hi in bounds)
    same = [
        f"{lo} == {tlo}[{d}] && {hi} == {thi}[{d}]" for d, (lo, hi) in enumerate(bounds) if d != dim
    ]
    lo, hi = bounds[dim]
    held = [f"{thi}[{dim}] - {lo} < {fold}" for fold in folds]
    reach = " && ".join(
        [trk] + same + [f"{lo} >= {tlo}[{dim}]", f"{lo} <= {thi}[{dim}] + 1"] + held
    )
    extend = If(f"{hi} > {thi}[{dim}]", Assign(f"{thi}[{dim}]", hi))
    follow = Block((Assign(start, f"{thi}[{dim}] + 1"), extend))
    saves = [
        node
        for d, (a, b) in enumerate(bounds)
        for node in (Assign(f"{tlo}[{d}]", a), Assign(f"{thi}[{d}]", b))
    ]
    restart = Block((Assign(trk, "1"), *saves))
    return [
        Declare("int64_t", ((start, bounds[dim][0]),)),
        If(nonempty, Block((If(reach, follow, restart),))),
    ]
