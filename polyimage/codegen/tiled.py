"""The C tree of one overlapped-tiled group (schedule/tiling.py plans it).

Before the tiles run, a serial pass over the tile indices evaluates every region to size the
scratchpads; each thread then takes its scratchpads from the workspace (codegen/workspace.py,
growing them when needed) and takes tiles from an
`omp for collapse` loop. A tile computes its regions (consumers first), runs its loop nests in
topological order, and copies the owned part of scratch live-outs to the full buffers. With two
levels, each tile walks inner tiles in order along the slide dimension, and a nest computes
only the rows its previous inner tile did not (checked at run time, so it is always safe).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..dsl.reduction import Reduction
from ..schedule.reductions import PARALLEL_MIN_POINTS
from ..schedule.tiling import tile_origin, tile_span
from . import ctext, sliding
from .cexpr import wide_name
from .checked import tile_note
from .ctext import assign, cat, declare, reading, writing
from .ctree import (
    Assign,
    Block,
    Call,
    Comment,
    Declare,
    For,
    Function,
    If,
    Line,
    Parallel,
    Pragma,
)
from .jam import jam_plan, specialized_nest
from .loops import LoopEmitter
from .names import PREFIX
from .prelude import IN_ORDER, tile_schedule
from .storage import StageStorage, buffer_arguments
from .workspace import WORKSPACE


@dataclass(frozen=True)
class GroupCode:
    """C trees of a tiled group: the statements for the entry function, and the static
    functions they call (ctree.Function nodes)."""

    body: tuple
    functions: tuple


class TiledEmitter(LoopEmitter):
    """Builds one TiledGroup; scratch members are addressed in their tile's scratchpad."""

    def __init__(
        self,
        graph,
        names,
        storage,
        plan,
        index: int,
        scratch_stride: int,
        branch_free=frozenset(),
        profile_slot=None,
        check=False,
        plain=frozenset(),
    ):
        """`scratch_stride`: scratchpad slots per thread in the workspace (the most any group
        has); `profile_slot`: with a profile, the index of the first of the nests' timers;
        `check`: the checked build (codegen.checked)."""
        self.profile_slot = profile_slot
        for v in plan.tile_lo + plan.tile_hi + plan.first:
            names.name(v, v.name)
        self.plan, self.index, self.scratch_stride = plan, index, scratch_stride
        self.slot: dict = {}
        for name in plan.members:
            for sym in (s for pair in plan.regions[name].symbols for s in pair):
                self.slot.setdefault(id(sym), len(self.slot))
        self.full = storage
        local = dict(storage)
        self.scratch = {}
        for name in plan.scratch:
            func = graph.stage(name).func
            store = StageStorage(
                f"{PREFIX}sp{index}_{names[func]}", func.ndim, func.typ.c_name, f"{name} scratchpad"
            )
            store.lb = [f"{PREFIX}org{index}_{names[func]}_{d}" for d in range(func.ndim)]
            store.n = [f"{PREFIX}ext{index}_{names[func]}_{d}" for d in range(func.ndim)]
            local[name] = self.scratch[name] = store
        self.folded = self._folded(graph, plan)
        for name, dim in self.folded.items():
            self.scratch[name].fold[dim] = f"{PREFIX}fold{index}_{names[graph.stage(name).func]}"
        for name, dim in self._padded(graph, plan, self.folded).items():
            self.scratch[name].pitch[dim] = f"{PREFIX}pitch{index}_{names[graph.stage(name).func]}"
        super().__init__(
            graph,
            _SymbolNames(self, names),
            local,
            branch_free,
            plain=plain,
            check_group=index if check else None,
        )

    @staticmethod
    def _folded(graph, plan) -> dict:
        """Scratchpads of a sliding two-level tiling stored folded along the slide dimension
        (rows modulo a power of two that holds one inner tile's region): a stage's dimension
        when it has the slide variable and it is not the innermost, contiguous one."""
        if plan.levels != 2 or plan.slide is None:
            return {}
        folded = {}
        for name in plan.scratch:
            names = [v.name for v in graph.stage(name).func.variables]
            if plan.slide[1] in names[:-1]:
                folded[name] = names.index(plan.slide[1])
        return folded

    @staticmethod
    def _padded(graph, plan, folded: dict) -> dict:
        """Scratchpads whose rows (the innermost dimension) are padded (pim_row): a long row
        of a power-of-two length puts the same point of consecutive rows and planes on a few
        cache sets, which a stage reading many of them at once (49 offsets of a search
        window) evicts from one another. A Reduction keeps dense storage (it is merged as a
        flat array), as does a row that is folded."""
        padded = {}
        for name in plan.scratch:
            func = graph.stage(name).func
            last = func.ndim - 1
            if last >= 0 and not isinstance(func, Reduction) and folded.get(name) != last:
                padded[name] = last
        return padded

    def _row(self, name: str, extent: str) -> str:
        """The row length that holds `extent` elements of scratchpad `name` (pim_row)."""
        c_type = self.scratch[name].c_type
        return f"{PREFIX}row({extent}, (int64_t)(64 / sizeof({c_type})))"

    def symbol(self, sym) -> str | None:
        """The C name of a region bound (copied from the region function's array), or None
        for other symbols."""
        k = self.slot.get(id(sym))
        return None if k is None else f"{PREFIX}r{k}"

    def v(self, name: str) -> str:
        return f"{PREFIX}{name}{self.index}"

    def code(self) -> GroupCode:
        """The group's code: the statements of the entry function and the static functions
        they call (the region function first, then the outlined nests). The result depends
        only on the plan."""
        body, functions = self._group()
        return GroupCode(body, (self._regions_function(), *functions))

    def _group(self) -> tuple[tuple, list]:
        """The group's statements, and the functions of its outlined nests."""
        plan, rank = self.plan, len(self.plan.tile_sizes[0])
        outer = plan.tile_sizes[0]
        levels = " then ".join("x".join(map(str, t)) for t in plan.tile_sizes)
        label = Comment(f"group {self.index}: {', '.join(plan.members)} (tiles {levels})")
        setup = []
        for d in range(rank):
            lo, hi = (self.printer(e) for e in tile_span(self.graph, plan, d, outer[d]))
            origin = self.printer(tile_origin(self.graph, plan, d))
            setup.append(
                declare(
                    "int64_t",
                    [
                        (f"{self.v('olo')}_{d}", lo),
                        (f"{self.v('ohi')}_{d}", hi),
                        (f"{self.v('org')}_{d}", origin),
                    ],
                )
            )
            setup.append(
                Declare(
                    "int64_t",
                    ((self.names[plan.first[d]], self._tile_start(d, f"{self.v('olo')}_{d}")),),
                    True,
                )
            )
        setup += self._sizing(rank, outer)
        failed, ok = self.v("failed"), self.v("ok")
        setup.append(Declare("int", ((failed, "0"),)))
        tiles = " * ".join(f"({self.v('ohi')}_{d} - {self.v('olo')}_{d} + 1)" for d in range(rank))
        team: list
        team, checks = [], []
        if self.scratch:
            stride = f"(size_t)omp_get_thread_num() * {self.scratch_stride}"
            team.append(Declare("size_t", ((self.v("tid"), stride),), True))
        for k, (name, store) in enumerate(self.scratch.items()):
            c_type, slot = store.c_type, f"{self.v('tid')} + {k}"
            reserve = (
                f"({c_type} *){PREFIX}reserve(&{WORKSPACE}->scratch[{slot}], "
                f"&{WORKSPACE}->scratch_bytes[{slot}], "
                f"sizeof({c_type}) * {self.v('cap')}_{self._cname(name)})"
            )
            team.append(Declare(f"{c_type} *restrict", ((store.buffer, reserve),)))
            checks.append(f"{store.buffer} != NULL")
        team.append(Declare("int", ((ok, " && ".join(checks) or "1"),), True))
        team.append(If(f"!{ok}", Block((Pragma("omp atomic write"), Assign(failed, "1")))))
        tile = self.tile_interval(*self._outer_tile(rank), level=1)
        tile += self.regions(self.v("rg"))
        for name, store in self.scratch.items():
            for d, (lo, hi) in enumerate(self.plan.regions[name].symbols):
                extent = f"{self.names[hi]} - {self.names[lo]} + 1"
                tile.append(
                    Declare("int64_t", ((store.lb[d], self.names[lo]), (store.n[d], extent)), True)
                )
                if d in store.pitch:
                    pitch = self._row(name, store.n[d])
                    tile.append(Declare("int64_t", ((store.pitch[d], pitch),), True))
        if plan.levels == 2 and plan.slide is not None:
            nests, functions = sliding.inner_tiles(self, rank)
        else:
            nests, functions = self.nests(tracked=False)
        tile += nests
        loops = self._tile_loops(rank, If(ok, Block(tuple(tile))), shared_tiles=tiles)
        team.append(loops)
        parallel = Parallel(Block(tuple(team)), f"{PREFIX}nthreads", self._worth_threads(tiles))
        bail = If(failed, Line(f"goto {PREFIX}fail;"))
        return (label, Block((*setup, parallel, bail))), functions

    def _cname(self, name: str) -> str:
        return self.names[self.graph.stage(name).func]

    def _worth_threads(self, tiles: str) -> str:
        """When the tiles run on the team: several tiles, and at least PARALLEL_MIN_POINTS
        points in all (waking the other threads costs more than a few thousand points)."""
        tile_points = math.prod(self.plan.tile_sizes[0])
        if tile_points >= PARALLEL_MIN_POINTS:
            return f"{tiles} > 1"
        return f"{tiles} > 1 && ({tiles}) * {tile_points} >= {PARALLEL_MIN_POINTS}"

    def _tile_start(self, d: int, index: str) -> str:
        """The first point of outer tile `index` along tile dimension `d`."""
        return f"{self.v('org')}_{d} + {index} * {self.plan.tile_sizes[0][d]}"

    def _outer_tile(self, rank: int) -> tuple[list, list]:
        """(lows, highs) of the outer tile the loops are at."""
        lows = [self._tile_start(d, f"{self.v('o')}_{d}") for d in range(rank)]
        sizes = self.plan.tile_sizes[0]
        return lows, [f"{lo} + {sizes[d] - 1}" for d, lo in enumerate(lows)]

    def _tile_loops(self, rank: int, body, shared_tiles=None):
        """The loops over the outer tiles around `body`; with `shared_tiles` (their number, a C
        expression), collapsed and shared by the team, handed out by tile_schedule."""
        clauses: dict = {}
        if shared_tiles is not None:
            work = math.prod(self.plan.tile_sizes[0]) * len(self.plan.members)
            schedule = tile_schedule(shared_tiles, f"{PREFIX}nthreads", work)
            clauses = dict(parallel="for", collapse=rank, schedule=schedule)
        node = body
        for d in reversed(range(rank)):
            o = f"{self.v('o')}_{d}"
            node = For(
                o,
                f"{self.v('olo')}_{d}",
                f"{self.v('ohi')}_{d}",
                node,
                **(clauses if d == 0 else {}),
            )
        return node

    def tile_interval(self, lows, highs, level=None) -> list:
        """The tile's bounds; with `level` (1 outer, 2 inner) in the checked build, noted as
        the tile the thread computes."""
        nodes: list = [
            Declare(
                "int64_t",
                ((self.names[self.plan.tile_lo[d]], lo), (self.names[self.plan.tile_hi[d]], hi)),
                True,
            )
            for d, (lo, hi) in enumerate(zip(lows, highs))
        ]
        if level is not None and self.check_group is not None:
            lows = [self.names[v] for v in self.plan.tile_lo]
            highs = [self.names[v] for v in self.plan.tile_hi]
            nodes.append(Line(tile_note(self.index, level, lows, highs)))
        return nodes

    def regions(self, array: str) -> list:
        """Bounds of every member's region, by a call of the group's region function into
        `array` (the C array of the tile's level), then copied to scalars."""
        plan = self.plan
        tile = ", ".join(
            self.names[v]
            for d in range(len(plan.tile_lo))
            for v in (plan.tile_lo[d], plan.tile_hi[d], plan.first[d])
        )
        params = tuple(self.names[p] for p in self.graph.parameters)
        t = self.v("t")
        call = Call(self.v("regions"), (array, t, *params))
        copies = tuple((f"{PREFIX}r{k}", f"{array}[{k}]") for k in range(len(self.slot)))
        return [
            Declare("int64_t", ((f"{array}[{max(len(self.slot), 1)}]", None),)),
            Block((Declare("int64_t", ((f"{t}[]", "{" + tile + "}"),), True), call)),
            Declare("int64_t", copies, True),
        ]

    def _regions_function(self) -> Function:
        """A function computing every member's region, consumers first (live-ins are not
        needed), from the tile's bounds: kept out of the tile loops, whose register
        allocation it would otherwise swamp."""
        plan = self.plan
        params = (
            f"int64_t *restrict {PREFIX}rg",
            f"const int64_t *restrict {PREFIX}tile",
            *(f"{p.typ.c_name} {self.names[p]}" for p in self.graph.parameters),
        )
        body: list = [
            Declare("int64_t", ((self.names[v], f"{PREFIX}tile[{3 * d + k}]"),), True)
            for d, vs in enumerate(zip(plan.tile_lo, plan.tile_hi, plan.first))
            for k, v in enumerate(vs)
        ]
        declared = set()
        for name, region in plan.regions.by_stage.items():
            if name not in plan.members or region.symbols in declared:
                continue
            declared.add(region.symbols)
            for (lo, hi), (lo_sym, hi_sym) in zip(region.bounds, region.symbols):
                bounds = [(self.names[lo_sym], self.printer(lo))]
                bounds.append((self.names[hi_sym], self.printer(hi)))
                body.append(declare("int64_t", bounds))
        body += [Assign(f"{PREFIX}rg[{k}]", f"{PREFIX}r{k}") for k in range(len(self.slot))]
        return Function("void", self.v("regions"), params, tuple(body))

    def _sizing(self, rank: int, outer) -> list:
        """Serial pass over the tiles: the largest region of every scratch member."""
        nodes: list = [
            Declare("int64_t", ((f"{self.v('cap')}_{self._cname(name)}", "0"),))
            for name in self.scratch
        ]
        nodes += [
            Declare("int64_t", ((self.scratch[name].fold[dim], "1"),))
            for name, dim in self.folded.items()
        ]
        if not self.scratch:
            return nodes
        tile = self.tile_interval(*self._outer_tile(rank))
        tile += self.regions(self.v("rg"))
        for name in self.scratch:
            symbols = self.plan.regions[name].symbols
            extents = {
                d: f"{PREFIX}extent({self.names[lo]}, {self.names[hi]})"
                for d, (lo, hi) in enumerate(symbols)
                if d != self.folded.get(name)
            }
            pitch = self.scratch[name].pitch
            volume = " * ".join(
                self._row(name, extent) if d in pitch else extent for d, extent in extents.items()
            )
            cap, vol = f"{self.v('cap')}_{self._cname(name)}", f"{PREFIX}vol"
            tile.append(
                Block(
                    (
                        Declare("int64_t", ((vol, volume or "1"),), True),
                        If(f"{vol} > {cap}", Assign(cap, vol)),
                    )
                )
            )
        if self.folded:
            tile += sliding.fold_sizes(self, rank)
        nodes.append(self._tile_loops(rank, Block(tuple(tile))))
        for name in self.folded:
            cap = f"{self.v('cap')}_{self._cname(name)}"
            nodes.append(Assign(cap, self.scratch[name].fold[self.folded[name]], "*="))
        return nodes

    def nests(self, tracked: bool) -> tuple[list, list]:
        """The calls of the group's nests, each outlined (_outlined), and their functions;
        where `tracked`, a nest over scratch starts after what the previous inner tile
        computed (sliding.track)."""
        nodes, functions = [], []
        for n, nest in enumerate(self.plan.nests):
            funcs = [self.graph.stage(name).func for name in nest.stages]
            head = nest.stages[0]
            if nest.scratch:
                bounds = [
                    (self.names[lo], self.names[hi]) for lo, hi in self.plan.regions[head].symbols
                ]
            else:
                bounds = [(self.printer(lo), self.printer(hi)) for lo, hi in self.plan.owned[head]]
            dim = sliding.slide_dim(self, funcs[0]) if tracked and nest.scratch else None
            if dim is not None:
                folds = [
                    self.scratch[name].fold[self.folded[name]]
                    for name in nest.stages
                    if name in self.folded
                ]
                nodes += sliding.track(self, n, bounds, dim, folds)
                bounds = list(bounds)
                bounds[dim] = (f"{self.v('from')}_{n}", bounds[dim][1])
            call, function = self._outlined(n, funcs, nest, bounds)
            nodes.append(call)
            functions.append(function)
        return nodes, functions

    def _outlined(self, n: int, funcs, nest, bounds) -> tuple:
        """(its call, the function) of the nest (and the copy-out of its scratch live-outs)
        as a function of its own, with the buffers its tree uses as arguments: one function
        of many loops would cost the C compiler far more than many small ones."""
        args = [(f"{PREFIX}blo{d}", lo) for d, (lo, _) in enumerate(bounds)]
        args += [(f"{PREFIX}bhi{d}", hi) for d, (_, hi) in enumerate(bounds)]
        box = [(f"{PREFIX}blo{d}", f"{PREFIX}bhi{d}") for d in range(len(bounds))]
        jam = jam_plan(funcs[0]) if len(funcs) == 1 else None
        body = [specialized_nest(self, funcs, box, jam)]
        for name in nest.stages:
            if name in self.plan.liveouts and nest.scratch:
                owned = [(self.printer(lo), self.printer(hi)) for lo, hi in self.plan.owned[name]]
                local = [
                    (f"{PREFIX}clo_{self._cname(name)}_{d}", f"{PREFIX}chi_{self._cname(name)}_{d}")
                    for d in range(len(owned))
                ]
                args += [(a, b) for pair in zip(local, owned) for a, b in zip(*pair)]
                body.append(self._copy_out(name, local))
        params = [f"int64_t {name}" for name, _ in args]
        values = [value for _, value in args]
        stores = {store.buffer: store for store in (*self.full.values(), *self.storage.values())}
        buffers = buffer_arguments(Block(tuple(body)), stores)
        params += buffers[0]
        values += buffers[1]
        for p in self.graph.parameters:
            params.append(f"{p.typ.c_name} {self.names[p]}")
            values.append(self.names[p])
        function = f"{self.v('nest')}_{n}"
        attributes = IN_ORDER if jam is not None else ""
        outlined = Function(
            "void",
            function,
            tuple(params),
            tuple(body),
            stages=nest.stages,
            attributes=attributes,
        )
        call = ctext.call(function, values)
        if self.profile_slot is None:
            return call, outlined
        t, dt = f"{PREFIX}t", f"{PREFIX}dt"
        timed = Block(
            (
                Declare("double", ((t, "omp_get_wtime()"),), True),
                call,
                Declare("double", ((dt, f"omp_get_wtime() - {t}"),), True),
                Pragma("omp atomic"),
                Assign(f"{PREFIX}prof[{self.profile_slot + n}]", dt, "+="),
            )
        )
        return timed, outlined

    def _copy_out(self, name: str, bounds):
        """Owned part of a scratch live-out to its full buffer."""
        func = self.graph.stage(name).func
        full, scratch = self.full[name], self.scratch[name]
        idx = [wide_name(self.names[v]) for v in func.variables]

        def body(_printer):
            target = cat(full.buffer, "[", full.offset(idx, check=self.check_group), "]")
            value = cat(scratch.buffer, "[", scratch.offset(idx, check=self.check_group), "]")
            return assign(cat(target, writing(full.buffer)), cat(value, reading(scratch.buffer)))

        return self._loops(
            func.variables, name, parallel=False, body=body, bounds=bounds, simd=True
        )


class _SymbolNames:
    """C names as the registry gives them, except region bounds (TiledEmitter.symbol)."""

    def __init__(self, emitter, names):
        self.emitter, self.names = emitter, names

    def __getitem__(self, obj) -> str:
        return self.emitter.symbol(obj) or self.names[obj]

    def name(self, obj, wanted: str) -> str:
        return self.names.name(obj, wanted)
