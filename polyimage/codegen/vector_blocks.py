"""A register block written in the C compiler's vector types (the vector extensions gcc and
clang share): its accumulators are named vector variables, so they stay in registers across
the reduction loops whatever the compiler's loop passes do. Kept in an array under `omp simd`,
gcc 12 loaded and stored every accumulator at every update (a conv layer 3-4x slower).

Each lane computes what the scalar code computes at its column, with the same operations in
the same order: results stay the interpreter's bit for bit."""

from __future__ import annotations

from ..dsl import expr as E
from .addresses import offset_of
from .cexpr import wide_name
from .ctext import CText, assign, cat, writing
from .ctree import Block, Declare, Line, Node, Seq
from .names import PREFIX, VECTOR_TYPES

P = PREFIX
VECTOR = f"{P}vec"
UNALIGNED = f"{P}vecu"  # the same vector at any element's address, aliasing its elements


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


def vector_kernel(emitter, printer, func, block, names, vectors: int, start: str, loops) -> Block:
    """The register block of block.height rows (from `{P}r0`) by `vectors` vectors of
    block.lanes columns (from `start`) as vector variables printed by `printer`: loaded,
    updated inside `loops(body)` (the reduction-only loops), stored.
    blocking.vector_ready(func) holds."""
    variables = func.reduction_variables
    rows, cols = variables[block.rows], variables[block.columns]
    r, c = names[block.rows], names[block.columns]
    update = func.cases[0].value
    store = emitter.storage[func.name]
    typ = func.typ
    step = block.lanes

    def name(u: int, v: int) -> str:
        return f"{P}a{u}_{v}"

    def at(u: int, v: int, body) -> Block:
        point = (
            Declare("int64_t", ((wide_name(r), f"{P}r0 + {u}"),), True),
            *emitter.aliases([rows]),
            Declare("int64_t", ((wide_name(c), f"{start} + {v * step}"),), True),
            *emitter.aliases([cols]),
        )
        return Block((*point, body()))

    def cell() -> CText:
        offset = offset_of(update.target, printer)
        return cat(f"*({UNALIGNED} *)&{store.buffer}[", offset, "]", writing(store.buffer))

    def lanes(e) -> CText:
        if not any(n is cols for n in E.walk(e)):
            return printer(e)
        if isinstance(e, E.Reference):
            source = emitter.storage[e.func.name]
            offset = offset_of(e, printer)
            return cat(f"(*(const {UNALIGNED} *)&{source.buffer}[", offset, "])")
        if isinstance(e, E.BinOp):
            return cat("(", lanes(e.a), f" {e.op} ", lanes(e.b), ")")
        if isinstance(e, E.Neg):
            return cat("(-", lanes(e.a), ")")
        return lanes(e.a)  # a Cast to its own type

    def each(body) -> Seq:
        cells = [(u, v) for u in range(block.height) for v in range(vectors)]
        return Seq(tuple(at(u, v, lambda u=u, v=v: body(u, v)) for u, v in cells))

    op = update.op.value
    declared = Declare(
        VECTOR,
        tuple((name(u, v), None) for u in range(block.height) for v in range(vectors)),
    )
    loaded = each(lambda u, v: assign(name(u, v), cell()))
    updated: Node = loops(
        lambda: each(
            lambda u, v: assign(name(u, v), cat(f"{name(u, v)} {op} ", lanes(update.value)))
        )
    )
    stored = each(lambda u, v: assign(cell(), name(u, v)))
    types = vector_types(typ, step * typ.dtype.itemsize)
    return Block((types, declared, loaded, updated, stored), note=VECTOR_TYPES)
