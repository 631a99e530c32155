"""Versions of an innermost loop (C trees, codegen.ctree) that keep branches and clamps out of
its body: segments that each compute one Case (codegen.split), blocks of residues of a
constant divisor (algebra.residues), and a head, interior and tail around the points where
clamps bind (codegen.clamps)."""

from __future__ import annotations

from .cexpr import helper, wide_name
from .ctext import CText, assign, cat, declare, if_chain
from .ctree import Assign, Block, Declare, For, If, Line, Node, Seq
from .names import PREFIX


def residue_loops(emitter, printer, var, residues, body) -> Seq:
    """The innermost loop as a loop over q computing residues 0..M-1 of v = M*q + r, each
    with its own Cases and divisions made affine, between a prologue and an epilogue of
    fewer than M points each (computed as usual: `body(printer)`)."""
    func, period_, per_residue, q, inside = residues
    it, w = emitter.names[var], wide_name(emitter.names[var])
    qname = emitter.names[q]
    qw = wide_name(qname)
    lo, hi = f"{PREFIX}lo_{it}", f"{PREFIX}hi_{it}"
    qlo, qhi, head_end, tail_start = (f"{PREFIX}{k}_{it}" for k in ("qlo", "qhi", "pe", "es"))
    floordiv = helper("floordiv", "int64_t")
    nodes: list[Node] = [
        declare(
            "int64_t",
            [
                (qlo, cat(floordiv, f"({lo} + {period_ - 1}, INT64_C({period_}))")),
                (qhi, cat(floordiv, f"({hi} + 1, INT64_C({period_})) - 1")),
            ],
        ),
        Declare(
            "int64_t",
            (
                (head_end, f"{qlo} <= {qhi} ? {qlo} * {period_} - 1 : {hi}"),
                (tail_start, f"{qlo} <= {qhi} ? ({qhi} + 1) * {period_} : {hi} + 1"),
            ),
            True,
        ),
    ]
    ends = ((lo, head_end), (tail_start, hi))
    nodes.append(
        in_turn(
            it,
            ends,
            lambda start, end: emitter.innermost(var, start, end, body(printer), simd=False),
        )
    )

    def loop(printer, start, end, simd=True):
        blocks = [Declare(q.typ.c_name, ((qname, f"({q.typ.c_name}){qw}"),), True)]
        for r, cases in enumerate(per_residue):
            position = Declare("int64_t", ((w, f"{qw} * {period_} + {r}"),), True)
            blocks.append(
                Block(
                    (position, *emitter.aliases([var]), emitter.chosen_cases(func, cases, printer))
                )
            )
        return For(qw, start, end, Block(tuple(blocks)), simd=simd)

    if inside is None:
        nodes.append(loop(printer, qlo, qhi))
    else:
        nodes.append(interior_loops(printer, qname, qlo, qhi, inside, loop))
    return Seq(tuple(nodes))


def interior_loops(printer, it, lo, hi, inside, loop, first=None) -> Seq:
    """`loop(printer, start, end, simd)` over lo..hi cut into head, interior and tail, the
    interior printed with the clamps of `inside` (an Interior, or None where there are none)
    replaced by the operands they pick and starting at `first` at the earliest (C text; `lo`
    by default); the head and tail, a few points at the borders, are left to the compiler
    (no omp simd)."""
    low, high = CText(first or lo), CText(hi)
    bigger, smaller = helper("max", "int64_t"), helper("min", "int64_t")
    lows, highs = (inside.lows, inside.highs) if inside is not None else ((), ())
    for e in lows:
        low = cat(bigger, "(", low, ", ", printer.wide(e), ")")
    for e in highs:
        high = cat(smaller, "(", high, ", ", printer.wide(e), ")")
    chosen = printer.with_(chosen=inside.chosen) if inside is not None else printer
    ilo, ihi, head_end, tail_start = (f"{PREFIX}{k}_{it}" for k in ("ilo", "ihi", "ie", "is"))
    nodes = [
        declare("int64_t", [(ilo, low), (ihi, high)]),
        Declare(
            "int64_t",
            (
                (head_end, f"{ilo} <= {ihi} ? {ilo} - 1 : {hi}"),
                (tail_start, f"{ilo} <= {ihi} ? {ihi} + 1 : {hi} + 1"),
            ),
            True,
        ),
        in_turn(
            it,
            ((lo, head_end), (tail_start, hi)),
            lambda start, end: loop(printer, start, end, False),
            loop(chosen, ilo, ihi),
        ),
    ]
    return Seq(tuple(nodes))


def in_turn(it: str, ends, loop, middle: Node | None = None) -> For:
    """`loop(start, end)` (a loop node) over the head and then the tail of an innermost loop
    (`ends`: their (start, end) C texts), with `middle` between them where given, as one
    loop over the sides: the C compiler then builds the border code once, not twice (a
    large window's clamped head and tail had cost it as much as the interior)."""
    side, start, end = (f"{PREFIX}{k}_{it}" for k in ("side", "slo", "shi"))
    (head_start, head_end), (tail_start, tail_end) = ends
    border = Block(
        (
            Declare(
                "int64_t",
                (
                    (start, f"{side} == 0 ? {head_start} : {tail_start}"),
                    (end, f"{side} == 0 ? {head_end} : {tail_end}"),
                ),
                True,
            ),
            loop(start, end),
        )
    )
    sides, body = "2", border
    if middle is not None:
        sides, body = "3", Block((If(f"{side} == 1", Block((middle,)), border),))
    return For(side, "0", sides, body, c_type="int", inclusive=False)


def segments(emitter, printer, var, split) -> If:
    """The innermost loop cut at the breakpoints, printed by `printer`; each segment picks its
    Case at its first point and runs a branch-free loop computing that Case."""
    func, cases, points = split
    it, w = emitter.names[var], wide_name(emitter.names[var])
    lo, hi = f"{PREFIX}lo_{it}", f"{PREFIX}hi_{it}"
    n = len(points) + 2
    bp, p = f"{PREFIX}bp", f"{PREFIX}p"
    nodes = [
        Declare("int64_t", ((f"{bp}[{n}]", None),)),
        Assign(f"{bp}[0]", lo),
        Assign(f"{bp}[{n - 1}]", f"{hi} + 1"),
    ]
    for k, point in enumerate(points, 1):
        at = declare("int64_t", [(p, printer.wide(point))])
        clipped = f"{p} < {lo} ? {lo} : ({p} > {hi} + 1 ? {hi} + 1 : {p})"
        nodes.append(Block((at, Assign(f"{bp}[{k}]", clipped))))
    i, j, t = (f"{PREFIX}{x}" for x in "ijt")
    nodes.append(
        Line(
            f"for (int {i} = 2; {i} < {n - 1}; {i}++) for (int {j} = {i}; {j} > 1 && "
            f"{bp}[{j} - 1] > {bp}[{j}]; {j}--) {{ const int64_t {t} = {bp}[{j}]; "
            f"{bp}[{j}] = {bp}[{j} - 1]; {bp}[{j} - 1] = {t}; }}"
        )
    )
    a, b, case_ = f"{PREFIX}a", f"{PREFIX}b", f"{PREFIX}case"
    choice = CText(str(len(cases)))
    for k, case in reversed(list(enumerate(cases))):
        choice = (
            CText(str(k))
            if case.cond is None
            else cat("(", printer(case.cond), f" ? {k} : ", choice, ")")
        )
    first = Block(
        (
            Declare("int64_t", ((w, a),), True),
            *emitter.aliases([var]),
            assign(case_, choice),
        )
    )
    segment = [
        Declare("int64_t", ((a, f"{bp}[{PREFIX}s]"), (b, f"{bp}[{PREFIX}s + 1] - 1")), True),
        If(f"{a} > {b}", Line("continue;")),
        Declare("int", ((case_, str(len(cases))),)),
        first,
    ]
    branches: list = []
    eager = printer.with_(eager=func.name in emitter.branch_free)
    for k, case in enumerate(list(cases) + [None]):
        value = "0" if case is None else eager(case.value)
        stored = emitter.store(func, f"({func.typ.c_name})(0)" if case is None else value)
        loop = For(w, a, b, Block((*emitter.aliases([var]), stored)), simd=True)
        branches.append((f"{case_} == {k}", Block((loop,))))
        if case is not None and case.cond is None:
            break
    segment.append(if_chain(branches))
    walk = For(f"{PREFIX}s", "0", str(n - 1), Block(tuple(segment)), c_type="int", inclusive=False)
    return If(f"{lo} <= {hi}", Block((*nodes, walk)))
