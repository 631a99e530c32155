"""C for one overlapped-tiled group (schedule/tiling.py plans it).

Before the tiles run, a serial pass over the tile indices evaluates every region to size the
scratchpads; each thread then takes its scratchpads from the workspace (codegen/workspace.py,
growing them when needed) and takes tiles from an
`omp for collapse` loop. A tile computes its regions (consumers first), runs its loop nests in
topological order, and copies the owned part of scratch live-outs to the full buffers. With two
levels, each tile walks inner tiles in order along the slide dimension, and a nest computes
only the rows its previous inner tile did not (checked at run time, so it is always safe).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schedule.tiling import tile_span
from .cexpr import wide_name
from .checked import tile_note
from .loops import LoopEmitter, StageStorage
from .names import PREFIX
from .workspace import WORKSPACE


@dataclass(frozen=True)
class GroupCode:
    """C lines of a tiled group: statements for the entry function, and the static functions
    they call, each a list of lines."""

    body: list
    functions: list


class TiledEmitter(LoopEmitter):
    """Emits one TiledGroup; scratch members are addressed in their tile's scratchpad."""

    def __init__(
        self,
        graph,
        names,
        helpers,
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
        self.slot = {}
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
        self.array, self.functions = self.v("rg"), []
        super().__init__(graph, _SymbolNames(self, names), helpers, local, branch_free, plain=plain)
        self.check_group = index if check else None

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

    def symbol(self, sym) -> str:
        """The C name of a region bound (copied from the region function's array), or None
        for other symbols."""
        k = self.slot.get(id(sym))
        return None if k is None else f"{PREFIX}r{k}"

    def v(self, name: str) -> str:
        return f"{PREFIX}{name}{self.index}"

    def code(self) -> GroupCode:
        """The group's code: the statements of the entry function and the static functions
        they call (the region function first, then the outlined nests). Each call starts
        afresh, so the result depends only on the plan."""
        self.array, self.functions = self.v("rg"), []
        body = self._group()
        return GroupCode(body, [self._regions_function()] + self.functions)

    def _group(self) -> list:
        plan, rank = self.plan, len(self.plan.tile_sizes[0])
        outer = plan.tile_sizes[0]
        self.lines = []
        levels = " then ".join("x".join(map(str, t)) for t in plan.tile_sizes)
        self.emit(f"/* group {self.index}: {', '.join(plan.members)} (tiles {levels}) */", 1)
        self.emit("{", 1)
        for d in range(rank):
            lo, hi = (self.printer(e) for e in tile_span(self.graph, plan, d, outer[d]))
            self.emit(f"const int64_t {self.v('olo')}_{d} = {lo}, {self.v('ohi')}_{d} = {hi};", 2)
            self.emit(
                f"const int64_t {self.names[plan.first[d]]} = {self.v('olo')}_{d} * {outer[d]};", 2
            )
        self._sizing(rank, outer)
        self.emit(f"int {self.v('failed')} = 0;", 2)
        tiles = " * ".join(f"({self.v('ohi')}_{d} - {self.v('olo')}_{d} + 1)" for d in range(rank))
        self.emit(
            f"#pragma omp parallel num_threads({PREFIX}nthreads) if(parallel: {tiles} > 1)", 2
        )
        self.emit("{", 2)
        checks = []
        if self.scratch:
            self.emit(
                f"const size_t {self.v('tid')} = (size_t)omp_get_thread_num() * "
                f"{self.scratch_stride};",
                3,
            )
        for k, (name, store) in enumerate(self.scratch.items()):
            c_type, slot = store.c_type, f"{self.v('tid')} + {k}"
            self.emit(
                f"{c_type} *restrict {store.buffer} = ({c_type} *){PREFIX}reserve("
                f"&{WORKSPACE}->scratch[{slot}], &{WORKSPACE}->scratch_bytes[{slot}], "
                f"sizeof({c_type}) * {self.v('cap')}_{self._cname(name)});",
                3,
            )
            checks.append(f"{store.buffer} != NULL")
        self.emit(f"const int {self.v('ok')} = {' && '.join(checks) or '1'};", 3)
        self.emit(f"if (!{self.v('ok')})", 3)
        self.emit("{", 3)
        self.emit("#pragma omp atomic write", 4)
        self.emit(f"{self.v('failed')} = 1;", 4)
        self.emit("}", 3)
        collapse = f" collapse({rank})" if rank > 1 else ""
        self.emit(f"#pragma omp for{collapse} schedule(static)", 3)
        self._tile_loops(rank, 3)
        depth = 3 + rank
        self.emit(f"if ({self.v('ok')}) {{", depth)
        self._tile_interval(
            [f"{self.v('o')}_{d} * {outer[d]}" for d in range(rank)],
            [f"{self.v('o')}_{d} * {outer[d]} + {outer[d] - 1}" for d in range(rank)],
            depth + 1,
            level=1,
        )
        self._regions(depth + 1)
        for name, store in self.scratch.items():
            for d, (lo, hi) in enumerate(self.plan.regions[name].symbols):
                self.emit(
                    f"const int64_t {store.lb[d]} = {self.names[lo]}, {store.n[d]} = "
                    f"{self.names[hi]} - {self.names[lo]} + 1;",
                    depth + 1,
                )
        if plan.levels == 2 and plan.slide is not None:
            self._inner_tiles(rank, depth + 1)
        else:
            self._nests(depth + 1, tracked=False)
        self.emit("}", depth)
        self.emit("}", 2)
        self.emit(f"if ({self.v('failed')}) goto {PREFIX}fail;", 2)
        self.emit("}", 1)
        return self.lines

    def _cname(self, name: str) -> str:
        return self.names[self.graph.stage(name).func]

    def _tile_loops(self, rank: int, depth: int):
        for d in range(rank):
            o = f"{self.v('o')}_{d}"
            self.emit(
                f"for (int64_t {o} = {self.v('olo')}_{d}; {o} <= {self.v('ohi')}_{d}; {o}++)",
                depth + d,
            )

    def _tile_interval(self, lows, highs, depth: int, level=None):
        """The tile's bounds; with `level` (1 outer, 2 inner) in the checked build, noted as
        the tile the thread computes."""
        for d, (lo, hi) in enumerate(zip(lows, highs)):
            self.emit(
                f"const int64_t {self.names[self.plan.tile_lo[d]]} = {lo}, "
                f"{self.names[self.plan.tile_hi[d]]} = {hi};",
                depth,
            )
        if level is not None and self.check_group is not None:
            lows = [self.names[v] for v in self.plan.tile_lo]
            highs = [self.names[v] for v in self.plan.tile_hi]
            self.emit(tile_note(self.index, level, lows, highs), depth)

    def _regions(self, depth: int):
        """Bounds of every member's region, by a call of the group's region function into the
        current level's array, then copied to scalars."""
        plan = self.plan
        self.emit(f"int64_t {self.array}[{max(len(self.slot), 1)}];", depth)
        tile = ", ".join(
            self.names[v]
            for d in range(len(plan.tile_lo))
            for v in (plan.tile_lo[d], plan.tile_hi[d], plan.first[d])
        )
        params = "".join(f", {self.names[p]}" for p in self.graph.parameters)
        self.emit(
            f"{{ const int64_t {self.v('t')}[] = {{{tile}}}; {self.v('regions')}("
            f"{self.array}, {self.v('t')}{params}); }}",
            depth,
        )
        self.emit(
            "const int64_t "
            + ", ".join(f"{PREFIX}r{k} = {self.array}[{k}]" for k in range(len(self.slot)))
            + ";",
            depth,
        )

    def _regions_function(self) -> list:
        """A function computing every member's region, consumers first (live-ins are not
        needed), from the tile's bounds: kept out of the tile loops, whose register
        allocation it would otherwise swamp."""
        plan, self.lines = self.plan, []
        params = "".join(f", {p.typ.c_name} {self.names[p]}" for p in self.graph.parameters)
        self.emit(
            f"static PIM_NOINLINE void {self.v('regions')}(int64_t *restrict {PREFIX}rg, "
            f"const int64_t *restrict {PREFIX}tile{params})",
            0,
        )
        self.emit("{", 0)
        for d, vs in enumerate(zip(plan.tile_lo, plan.tile_hi, plan.first)):
            self.emit(
                " ".join(
                    f"const int64_t {self.names[v]} = {PREFIX}tile[{3 * d + k}];"
                    for k, v in enumerate(vs)
                ),
                1,
            )
        declared = set()
        for name, region in plan.regions.by_stage.items():
            if name not in plan.members or region.symbols in declared:
                continue
            declared.add(region.symbols)
            for (lo, hi), (lo_sym, hi_sym) in zip(region.bounds, region.symbols):
                self.emit(
                    f"const int64_t {self.names[lo_sym]} = {self.printer(lo)}, "
                    f"{self.names[hi_sym]} = {self.printer(hi)};",
                    1,
                )
        self.emit(" ".join(f"{PREFIX}rg[{k}] = {PREFIX}r{k};" for k in range(len(self.slot))), 1)
        self.emit("}", 0)
        return self.lines

    def _sizing(self, rank: int, outer):
        """Serial pass over the tiles: the largest region of every scratch member."""
        for name in self.scratch:
            self.emit(f"int64_t {self.v('cap')}_{self._cname(name)} = 0;", 2)
        for name, dim in self.folded.items():
            self.emit(f"int64_t {self.scratch[name].fold[dim]} = 1;", 2)
        if not self.scratch:
            return
        self._tile_loops(rank, 2)
        depth = 2 + rank
        self.emit("{", depth)
        self._tile_interval(
            [f"{self.v('o')}_{d} * {outer[d]}" for d in range(rank)],
            [f"{self.v('o')}_{d} * {outer[d]} + {outer[d] - 1}" for d in range(rank)],
            depth + 1,
        )
        self._regions(depth + 1)
        for name in self.scratch:
            symbols = self.plan.regions[name].symbols
            volume = " * ".join(
                f"{PREFIX}extent({self.names[lo]}, {self.names[hi]})"
                for d, (lo, hi) in enumerate(symbols)
                if d != self.folded.get(name)
            )
            cap = f"{self.v('cap')}_{self._cname(name)}"
            self.emit(
                f"{{ const int64_t {PREFIX}vol = {volume or 1}; if ({PREFIX}vol > {cap}) "
                f"{cap} = {PREFIX}vol; }}",
                depth + 1,
            )
        if self.folded:
            self._fold_sizes(rank, depth + 1)
        self.emit("}", depth)
        for name in self.folded:
            cname = self._cname(name)
            self.emit(
                f"{self.v('cap')}_{cname} *= {self.scratch[name].fold[self.folded[name]]};", 2
            )

    def _fold_sizes(self, rank: int, depth: int):
        """Within the sizing pass's outer tile: the fold of every folded scratchpad, the power
        of two covering its region along the slide dimension in every inner tile."""
        body = self._inner_loops(rank, depth, level=None)
        self.array = self.v("rgi")
        self._regions(body)
        self.array = self.v("rg")
        for name, dim in self.folded.items():
            lo, hi = self.plan.regions[name].symbols[dim]
            fold = self.scratch[name].fold[dim]
            self.emit(
                f"while ({fold} < {PREFIX}extent({self.names[lo]}, {self.names[hi]})) {fold} *= 2;",
                body,
            )
        self.emit("}", body - 1)

    def _inner_tiles(self, rank: int, depth: int):
        """Sequential inner tiles of a two-level tiling, the slide dimension innermost."""
        plan = self.plan
        ndim = max(self.graph.stage(n).func.ndim for n in plan.members)
        for n in range(len(plan.nests)):
            self.emit(
                f"int {self.v('trk')}_{n} = 0; int64_t {self.v('tlo')}_{n}[{ndim}], "
                f"{self.v('thi')}_{n}[{ndim}];",
                depth,
            )
        body = self._inner_loops(rank, depth, level=2)
        self.array = self.v("rgi")
        self._regions(body)
        self._nests(body, tracked=True)
        self.array = self.v("rg")
        self.emit("}", body - 1)

    def _inner_loops(self, rank: int, depth: int, level) -> int:
        """Opens the loops over an outer tile's inner tiles (the slide dimension innermost)
        and the block of one, with its bounds; returns the block's depth."""
        plan = self.plan
        outer, inner = plan.tile_sizes
        slide = plan.slide[0]
        for d in range(rank):
            self.emit(
                f"const int64_t {self.v('l2lo')}_{d} = {self.names[plan.tile_lo[d]]}, "
                f"{self.v('l2hi')}_{d} = {self.names[plan.tile_hi[d]]};",
                depth,
            )
        order = [d for d in range(rank) if d != slide] + [slide]
        for k, d in enumerate(order):
            step = min(inner[d], outer[d])
            self.emit(
                f"for (int64_t {self.v('k')}_{d} = {self.v('l2lo')}_{d}; "
                f"{self.v('k')}_{d} <= {self.v('l2hi')}_{d}; {self.v('k')}_{d} += {step})",
                depth + k,
            )
        body = depth + rank
        self.emit("{", body - 1)
        self._tile_interval(
            [f"{self.v('k')}_{d}" for d in range(rank)],
            [
                f"({self.v('k')}_{d} + {min(inner[d], outer[d]) - 1} < "
                f"{self.v('l2hi')}_{d} ? {self.v('k')}_{d} + "
                f"{min(inner[d], outer[d]) - 1} : {self.v('l2hi')}_{d})"
                for d in range(rank)
            ],
            body,
            level=level,
        )
        return body

    def _nests(self, depth: int, tracked: bool):
        for n, nest in enumerate(self.plan.nests):
            funcs = [self.graph.stage(name).func for name in nest.stages]
            head = nest.stages[0]
            if nest.scratch:
                bounds = [
                    (self.names[lo], self.names[hi]) for lo, hi in self.plan.regions[head].symbols
                ]
            else:
                bounds = [(self.printer(lo), self.printer(hi)) for lo, hi in self.plan.owned[head]]
            dim = self._slide_dim(funcs[0]) if tracked and nest.scratch else None
            if dim is not None:
                folds = [
                    self.scratch[name].fold[self.folded[name]]
                    for name in nest.stages
                    if name in self.folded
                ]
                self._track(n, bounds, dim, depth, folds)
                bounds = list(bounds)
                bounds[dim] = (f"{self.v('from')}_{n}", bounds[dim][1])
            self._outlined(n, funcs, nest, bounds, depth)

    def _outlined(self, n: int, funcs, nest, bounds, depth: int):
        """The nest (and the copy-out of its scratch live-outs) as a function of its own, with
        the buffers it touches as arguments: one function of many loops would cost the C
        compiler far more than many small ones."""
        outer_lines, self.lines, self.touched = self.lines, [], {}
        args = [(f"{PREFIX}blo{d}", lo) for d, (lo, _) in enumerate(bounds)]
        args += [(f"{PREFIX}bhi{d}", hi) for d, (_, hi) in enumerate(bounds)]
        self.nest(funcs, [(f"{PREFIX}blo{d}", f"{PREFIX}bhi{d}") for d in range(len(bounds))], 1)
        for name in nest.stages:
            if name in self.plan.liveouts and nest.scratch:
                owned = [(self.printer(lo), self.printer(hi)) for lo, hi in self.plan.owned[name]]
                local = [
                    (f"{PREFIX}clo_{self._cname(name)}_{d}", f"{PREFIX}chi_{self._cname(name)}_{d}")
                    for d in range(len(owned))
                ]
                args += [(a, b) for pair in zip(local, owned) for a, b in zip(*pair)]
                self._copy_out(name, 1, local)
        body, self.lines = self.lines, outer_lines
        params = [f"int64_t {name}" for name, _ in args]
        values = [value for _, value in args]
        for buffer, (store, writes) in sorted(self.touched.items()):
            params.append(f"{'' if writes else 'const '}{store.c_type} *restrict {buffer}")
            values.append(buffer)
            params += [f"int64_t {text}" for text in store.names()]
            values += store.names()
        for p in self.graph.parameters:
            params.append(f"{p.typ.c_name} {self.names[p]}")
            values.append(self.names[p])
        function = f"{self.v('nest')}_{n}"
        self.functions.append(
            [f"static PIM_NOINLINE void {function}({', '.join(params)})", "{", *body, "}"]
        )
        call = f"{function}({', '.join(values)});"
        if self.profile_slot is None:
            self.emit(call, depth)
            return
        self.emit(f"{{ const double {PREFIX}t = omp_get_wtime(); {call}", depth)
        self.emit(f"const double {PREFIX}dt = omp_get_wtime() - {PREFIX}t;", depth + 1)
        self.emit("#pragma omp atomic", depth + 1)
        self.emit(f"{PREFIX}prof[{self.profile_slot + n}] += {PREFIX}dt; }}", depth + 1)

    def _slide_dim(self, func):
        names = [v.name for v in func.variables]
        return names.index(self.plan.slide[1]) if self.plan.slide[1] in names else None

    def _track(self, n: int, bounds, dim: int, depth: int, folds):
        """Start of the slide dimension: after what the previous inner tile computed when it
        covered the same range in every other dimension and reaches this one (and, for folded
        scratchpads, when every row it reuses is still held in each of `folds`)."""
        trk, tlo, thi = (f"{self.v(x)}_{n}" for x in ("trk", "tlo", "thi"))
        start = f"{self.v('from')}_{n}"
        self.emit(f"int64_t {start} = {bounds[dim][0]};", depth)
        nonempty = " && ".join(f"{lo} <= {hi}" for lo, hi in bounds)
        same = [
            f"{lo} == {tlo}[{d}] && {hi} == {thi}[{d}]"
            for d, (lo, hi) in enumerate(bounds)
            if d != dim
        ]
        lo, hi = bounds[dim]
        held = [f"{thi}[{dim}] - {lo} < {fold}" for fold in folds]
        reach = " && ".join(
            [trk] + same + [f"{lo} >= {tlo}[{dim}]", f"{lo} <= {thi}[{dim}] + 1"] + held
        )
        self.emit(f"if ({nonempty}) {{", depth)
        self.emit(
            f"if ({reach}) {{ {start} = {thi}[{dim}] + 1; "
            f"if ({hi} > {thi}[{dim}]) {thi}[{dim}] = {hi}; }}",
            depth + 1,
        )
        saves = " ".join(f"{tlo}[{d}] = {a}; {thi}[{d}] = {b};" for d, (a, b) in enumerate(bounds))
        self.emit(f"else {{ {trk} = 1; {saves} }}", depth + 1)
        self.emit("}", depth)

    def _copy_out(self, name: str, depth: int, bounds):
        """Owned part of a scratch live-out to its full buffer."""
        func = self.graph.stage(name).func
        full, scratch = self.full[name], self.scratch[name]
        self.touch(full, True)
        self.touch(scratch, False)
        idx = [wide_name(self.names[v]) for v in func.variables]

        def body(d):
            self.emit(
                f"{full.buffer}[{full.offset(idx, check=self.check_group)}] = "
                f"{scratch.buffer}[{scratch.offset(idx, check=self.check_group)}];",
                d,
            )

        self._loops(
            func.variables, name, depth, parallel=False, body=body, bounds=bounds, simd=True
        )


class _SymbolNames:
    """C names as the registry gives them, except region bounds (TiledEmitter.symbol)."""

    def __init__(self, emitter, names):
        self.emitter, self.names = emitter, names

    def __getitem__(self, obj) -> str:
        return self.emitter.symbol(obj) or self.names[obj]

    def name(self, obj, wanted: str) -> str:
        return self.names.name(obj, wanted)
