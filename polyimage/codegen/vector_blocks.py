"""A register block written in the C compiler's vector types (the vector extensions gcc and
clang share): its accumulators are named vector variables, so they stay in registers across
the reduction loops whatever the compiler's loop passes do. Kept in an array under `omp simd`,
gcc 12 loaded and stored every accumulator at every update (a conv layer 3-4x slower).

Each lane computes what the scalar code computes at its column, with the same operations in
the same order: results stay the interpreter's bit for bit."""

from __future__ import annotations

from ..algebra.affine import linear_form
from ..dsl import expr as E
from .addresses import element_step, offset_of, shifting
from .cexpr import wide_name
from .ctext import CText, assign, cat, declare, writing
from .ctree import Block, Declare, If, Line, Node, Seq
from .names import PREFIX, VECTOR_TYPES

P = PREFIX
VECTOR = f"{P}vec"
UNALIGNED = f"{P}vecu"  # the same vector at any element's address, aliasing its elements
MASK = f"{P}vmask"  # what comparing two vectors gives: an integer of the element's width
_INTEGER = {"float": "int32_t", "double": "int64_t"}


def vector_types(typ, vector_bytes: int) -> Seq:
    """The block's vector type of `vector_bytes` and its unaligned, aliasing twin."""
    vector = f"vector_size({vector_bytes})"
    return Seq(
        (
            Line(f"typedef {typ.c_name} {VECTOR} __attribute__(({vector}));"),
            Line(
                f"typedef {typ.c_name} {UNALIGNED} __attribute__(({vector}, "
                f"aligned({typ.dtype.itemsize}), may_alias));"
            ),
        )
    )


def row_steps(emitter, func, rows) -> dict | None:
    """{id(reference): C text of the elements it moves per row} for the target and every
    read of Reduction `func`'s update that moves with `rows` (its rows' variable), where each
    moves by a fixed step per row and `rows` appears in nothing but their indices; None
    otherwise, and in the checked build (its checks read each index)."""
    if emitter.check_group is not None:
        return None
    update = func.cases[0].value
    steps: dict = {}

    def visit(e) -> bool:
        if isinstance(e, E.Reference):
            if not any(n is rows for a in e.args for n in E.walk(a)):
                return all(visit(a) for a in e.args)
            step = element_step(e, rows, emitter.storage[e.func.name])
            if step is None or any(isinstance(n, E.Reference) for a in e.args for n in E.walk(a)):
                return False
            steps[id(e)] = step
            return True
        if e is rows:
            return False
        return all(visit(child) for child in e.children())

    if not (visit(update.target) and visit(update.value)):
        return None
    return steps


def vector_kernel(
    emitter,
    printer,
    func,
    block,
    names,
    shape,
    loops,
    packed=None,
    packed_columns=None,
    epilogue=None,
) -> Block:
    """The register block of `height` rows (from `{P}r0`) by `vectors` vectors of
    block.lanes columns (from `start`; `shape` is (vectors, start, height)) as vector
    variables printed by `printer`: loaded, updated inside `loops(body)` (the reduction-only
    loops), stored. blocking.vector_ready(func) holds. Where every reference moves by a fixed
    step per row (row_steps), each row reads at its step from the first row's indices: the C
    compiler then addresses the rows at constant offsets from one pointer (a broadcast folds
    into its multiply) instead of an induction variable per row. `packed`: (the read, the C
    text of row u's packed copy of it: codegen.packing), or None; `packed_columns`: (the
    read, the C text of vector v's packed copy of it), or None. `epilogue`: (the folded
    stages, C condition of the reduction's last panel or None, whether the cells are stored
    there too): those stages computed from the accumulators (blocking.epilogue_on_vectors)."""
    vectors, start, height = shape
    variables = func.reduction_variables
    rows, cols = variables[block.rows], variables[block.columns]
    r, c = names[block.rows], names[block.columns]
    update = func.cases[0].value
    store = emitter.storage[func.name]
    typ = func.typ
    step = block.lanes
    steps = row_steps(emitter, func, rows)

    def name(u: int, v: int) -> str:
        return f"{P}a{u}_{v}"

    def row_printer(u: int):
        """The printer of row u, and the row its variables are declared at."""
        replaced = {id(packed[0]): packed[1](u)} if packed else {}
        if steps is None:
            return (shifting(printer, {}, replaced) if replaced else printer), u
        shifts = {key: f"{u} * ({text})" for key, text in steps.items()} if u else {}
        return shifting(printer, shifts, replaced), 0

    by_row = [row_printer(u) for u in range(height)]

    def at(u: int, v: int, body, row=None) -> Block:
        """`body()` at row u (declared at `row`, by default where row_printer(u) reads it),
        vector v."""
        row = by_row[u][1] if row is None else row
        point = (
            Declare("int64_t", ((wide_name(r), f"{P}r0 + {row}"),), True),
            *emitter.aliases([rows]),
            Declare("int64_t", ((wide_name(c), f"{start} + {v * step}"),), True),
            *emitter.aliases([cols]),
        )
        return Block((*point, body()))

    def cell(u: int) -> CText:
        offset = offset_of(update.target, by_row[u][0])
        return cat(f"*({UNALIGNED} *)&{store.buffer}[", offset, "]", writing(store.buffer))

    def lanes(e, row_printer, v: int) -> CText:
        """The vector `v` of the block's columns of `e`, row_printer printing the rest."""
        if not any(n is cols for n in E.walk(e)):
            return row_printer(e)
        if packed_columns and e is packed_columns[0]:
            return cat(f"(*(const {UNALIGNED} *)&", packed_columns[1](v), ")")
        if isinstance(e, E.Reference):
            return _vector_read(emitter, e, row_printer)
        if isinstance(e, E.BinOp):
            a, b = lanes(e.a, row_printer, v), lanes(e.b, row_printer, v)
            return cat("(", a, f" {e.op} ", b, ")")
        if isinstance(e, E.Neg):
            return cat("(-", lanes(e.a, row_printer, v), ")")
        return lanes(e.a, row_printer, v)  # a Cast to its own type

    def each(body) -> Seq:
        cells = [(u, v) for u in range(height) for v in range(vectors)]
        return Seq(tuple(at(u, v, lambda u=u, v=v: body(u, v)) for u, v in cells))

    op = update.op.value
    declared = Declare(
        VECTOR,
        tuple((name(u, v), None) for u in range(height) for v in range(vectors)),
    )
    loaded = each(lambda u, v: assign(name(u, v), cell(u)))
    updated: Node = loops(
        lambda: each(
            lambda u, v: assign(
                name(u, v), cat(f"{name(u, v)} {op} ", lanes(update.value, by_row[u][0], v))
            )
        )
    )
    stored: Node = each(lambda u, v: assign(cell(u), name(u, v)))
    if epilogue is not None:
        stages, last, keep_cells = epilogue
        finished = Seq(
            tuple(
                at(
                    u,
                    v,
                    lambda u=u, v=v, stage=stage: _finished(
                        emitter, printer, func, stage, name(u, v)
                    ),
                    u,  # the printer reads the folded stage at its own row
                )
                for stage in stages
                for u in range(height)
                for v in range(vectors)
            )
        )
        if keep_cells:
            stored = Seq((stored, If(last, Block((finished,))) if last else finished))
        else:
            stored = If(last, Block((finished,)), Block((stored,))) if last else finished
    types: Node = vector_types(typ, step * typ.dtype.itemsize)
    if epilogue is not None:
        width = step * typ.dtype.itemsize
        mask = f"typedef {_INTEGER[typ.c_name]} {MASK} __attribute__((vector_size({width})));"
        types = Seq((types, Line(mask)))
    return Block((types, declared, loaded, updated, stored), note=VECTOR_TYPES)


def _finished(emitter, printer, func, stage, accumulator: str) -> Block:
    """Folded stage `stage` at the point of the loops (a row of a register block, the first
    of a vector's columns) computed on vectors from Reduction `func`'s `accumulator` and
    stored: each lane computes what the scalar code computes at its column, Min and Max as
    the scalar helpers do (the first operand where it is NaN or wins, else the second)."""
    column = stage.variables[-1]
    temps: list = []

    def vector(e) -> CText:
        if not any(n is column for n in E.walk(e)):
            return cat("(", printer(e), ")")
        if isinstance(e, E.Reference):
            return CText(accumulator) if e.func is func else _vector_read(emitter, e, printer)
        if isinstance(e, E.Neg):
            return cat("(-", vector(e.a), ")")
        if isinstance(e, E.Cast):
            return vector(e.a)
        a, b = (_spread(x, vector(x), column) for x in (e.a, e.b))
        if e.op not in ("min", "max"):
            return cat("(", a, f" {e.op} ", b, ")")
        k = len(temps)
        first, second, chosen = f"{P}e{k}_a", f"{P}e{k}_b", f"{P}e{k}_m"
        wins = ">" if e.op == "max" else "<"
        temps.append(declare(VECTOR, [(first, a), (second, b)]))
        temps.append(
            Declare(
                MASK,
                ((chosen, f"({first} {wins} {second}) | ({first} != {first})"),),
                True,
            )
        )
        return CText(f"(({VECTOR})((({MASK}){first} & {chosen}) | (({MASK}){second} & ~{chosen})))")

    value = vector(stage.cases[0].value)
    store = emitter.storage[stage.name]
    indices = [wide_name(emitter.names[var]) for var in stage.variables]
    own = store.offset(indices, False, None)
    target = cat(f"*({UNALIGNED} *)&{store.buffer}[", own, "]", writing(store.buffer))
    return Block((*stage_point(emitter, func, stage), *temps, assign(target, value)))


def stage_point(emitter, func, stage) -> list:
    """The declarations of stage `stage`'s variables at the point of Reduction `func`'s
    owned ones, dimension by dimension (a stage folded into its tasks:
    schedule.blocking.folds_into_tasks), where their names differ."""
    names = emitter.names
    mine = [names[linear_form(a)[0]] for a in func.cases[0].value.target.args]
    points = [
        Declare("int64_t", ((wide_name(names[theirs]), wide_name(ours)),), True)
        for theirs, ours in zip(stage.variables, mine)
        if names[theirs] != ours
    ]
    aliased = [var for var, ours in zip(stage.variables, mine) if names[var] != ours]
    return [*points, *emitter.aliases(aliased)]


def _vector_read(emitter, ref, printer) -> CText:
    """The vector of `ref`'s elements from the one `printer` addresses on."""
    source = emitter.storage[ref.func.name]
    return cat(f"(*(const {UNALIGNED} *)&{source.buffer}[", offset_of(ref, printer), "])")


def _spread(e, text: CText, column) -> CText:
    """`text`, of `e`, as a vector: a value that does not move with the columns becomes
    every lane (x - 0 is x for every x, -0 and NaN included)."""
    if any(n is column for n in E.walk(e)):
        return text
    return cat("(", text, f" - ({VECTOR}){{0}})")
