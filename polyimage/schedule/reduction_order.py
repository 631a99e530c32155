"""The order a Reduction's loops run in: the written order, or one with a contiguous innermost
loop that vectorizes (a convolution written (n, co, x, y, ci, kx, ky) runs as
(n, co, x, ci, kx, ky, y)).

Legality. Call a reduction variable *cell-fixed* when some target dimension is `v + c` in every
Case (the same dimension and constant c: `owned_forms` of size 1): two
reduction points that update the same cell then have the same value of v. An order is legal
when it is a permutation of the reduction variables that keeps the variables that are not
cell-fixed in their written relative order. Proof: take two points p, q updating one cell.
They agree on every cell-fixed variable, so their first difference, in any order, is at a
variable that is not cell-fixed, and the first such one is the same in the written order and in
a legal one (those variables keep their relative order). So p comes before q in both, every
cell receives its updates in the written sequence (at one point, the Cases still apply in
order), and the result is the interpreter's bit for bit, for any operator and type. A
Reduction cannot read itself (dsl), so the target cells are the only dependences.
The rule is conservative: data-dependent or blocked target indices (a histogram bin,
`u // 2`) fix no variable, so those variables keep their order.
"""

from __future__ import annotations

from ..algebra.affine import coefficient, linear_form
from ..dsl import expr as E
from ..dsl.types import Half, Int

# reduction variables of at most this many constant values that own target cells one each run
# innermost, unrolled (unrolled_variables)
UNROLL_POINTS = 4
# the largest step along their last index that reads may take per lane of a lane_variable
# (gcc loads strides of 2 to 4 as whole vectors and permutes them)
MAX_LANE_STRIDE = 4


def single_update(func):
    """The update of Reduction `func` where it has one unconditional Case, not of Half, whose
    value does not read the Reduction (its cells may then be held in variables); else None."""
    if len(func.cases) != 1 or func.cases[0].cond is not None or func.typ is Half:
        return None
    update = func.cases[0].value
    if any(isinstance(n, E.Reference) and n.func is func for n in E.walk(update.value)):
        return None
    return update


def unrolled_variables(func) -> tuple:
    """Indices of the reduction variables that run innermost, unrolled (a value channel and a
    weight channel, say): each has constant bounds, at most UNROLL_POINTS values in all, and
    indexes its own target dimension as `r + c` in every Case. Distinct values then update
    distinct cells, so moving them innermost keeps every cell's updates in the serial order,
    and their copies of the update share the loads and index arithmetic."""
    unrolled: list
    unrolled, points, fixed = [], 1, cell_fixed(func)
    for index, iv in enumerate(func.reduction_intervals):
        if len(unrolled) + 1 >= len(func.reduction_variables):
            break
        if not (isinstance(iv.lb, E.Const) and isinstance(iv.ub, E.Const)):
            continue
        values = iv.ub.value - iv.lb.value + 1
        if index in fixed and 1 <= values and points * values <= UNROLL_POINTS:
            unrolled.append(index)
            points *= values
    return tuple(unrolled)


def cell_fixed(func) -> frozenset:
    """Indices of the reduction variables whose value the target cell fixes: each is `v + c`
    along one target dimension, the same in every Case."""
    return frozenset(
        k
        for k, var in enumerate(func.reduction_variables)
        if any(form is not None and form[0] == 1 for form in owned_forms(func, var))
    )


def is_legal_order(func, order) -> bool:
    """Whether running the reduction variables in `order` (indices, outermost first) gives
    every cell its updates in the written sequence (see the module's proof)."""
    count = len(func.reduction_variables)
    if sorted(order) != list(range(count)):
        return False
    fixed = cell_fixed(func)
    rest = [k for k in order if k not in fixed]
    return rest == sorted(rest)


def loop_order(func) -> tuple:
    """The order (indices, outermost first) the Reduction's loops run in: the looped
    variables, then the unrolled ones (`unrolled_variables`). The looped
    ones keep their written order, except that the contiguous variable (`contiguous_variable`)
    moves innermost when it is not already."""
    unrolled = unrolled_variables(func)
    looped = [k for k in range(len(func.reduction_variables)) if k not in unrolled]
    inner = contiguous_variable(func, unrolled)
    if inner is not None and looped[-1] != inner:
        looped = [k for k in looped if k != inner] + [inner]
    return tuple(looped) + tuple(unrolled)


def reordered(func) -> bool:
    """Whether `loop_order` changes the looped variables' written order (the unrolled ones
    always run innermost)."""
    unrolled = unrolled_variables(func)
    return [k for k in loop_order(func) if k not in unrolled] != sorted(
        k for k in range(len(func.reduction_variables)) if k not in unrolled
    )


def contiguous_variable(func, unrolled=()) -> int | None:
    """The index of the cell-fixed variable, not among `unrolled`, that is `v + c` along the
    target's last (contiguous) dimension and steps every read by one element or none: run
    innermost, its loop writes and reads consecutive elements and carries no dependence, so
    it vectorizes (codegen.reduction_loops runs it under `omp simd`). None if there is none."""
    last = func.ndim - 1
    for k, var in enumerate(func.reduction_variables):
        if k in unrolled or k not in cell_fixed(func) or last < 0:
            continue
        form = owned_forms(func, var)[last]
        if form is None or form[0] != 1:
            continue
        if all(unit_stride(ref, var) for ref in _references(func)):
            return k
    return None


def lane_variable(func, unrolled=()) -> int | None:
    """contiguous_variable, else the first of the lane_candidates whose reads it steps only
    along their last index, by at most MAX_LANE_STRIDE elements (a pooling window's
    `2 y + dy`): vector lanes along it write consecutive cells and load with a stride gcc
    vectorizes (schedule.reductions.vector_owner). None if there is none."""
    found = contiguous_variable(func, unrolled)
    if found is not None:
        return found
    variables = func.reduction_variables
    return next(
        (
            k
            for k in lane_candidates(func, unrolled)
            if all(_strided(ref, variables[k]) for ref in _references(func))
        ),
        None,
    )


def lane_candidates(func, unrolled=()) -> list:
    """The cell-fixed variables, not among `unrolled`, that are `v + c` along the target's
    last dimension: lanes along one write consecutive cells."""
    last = func.ndim - 1
    found = []
    for k, var in enumerate(func.reduction_variables):
        if k in unrolled or k not in cell_fixed(func) or last < 0:
            continue
        form = owned_forms(func, var)[last]
        if form is not None and form[0] == 1:
            found.append(k)
    return found


def _strided(ref, var) -> bool:
    """Whether `var` appears in `ref` only in its last index, with a coefficient from 0 to
    MAX_LANE_STRIDE."""
    *outer, last = ref.args or (E.Const(0, Int),)
    step = coefficient(last, var)
    return all(coefficient(a, var) == 0 for a in outer) and step in range(MAX_LANE_STRIDE + 1)


def _references(func):
    """Every buffer reference in the Cases: targets, values and conditions."""
    for case in func.cases:
        roots = [case.value.target, case.value.value]
        roots += [] if case.cond is None else [case.cond]
        for root in roots:
            yield from (n for n in E.walk(root) if isinstance(n, E.Reference))


def unit_stride(ref, var) -> bool:
    """Whether stepping `var` by one moves the reference `ref` by one element or none: `var`
    appears only in its last index, with coefficient 0 or 1."""
    *outer, last = ref.args or (E.Const(0, Int),)
    return all(coefficient(a, var) == 0 for a in outer) and coefficient(last, var) in (0, 1)


def owned_forms(func, var) -> list:
    """Per target dimension, the (size, offset) of `_block_form` that `var` takes there in
    every Case alike, or None."""
    targets = [case.value.target.args for case in func.cases]
    forms = []
    for dim in range(func.ndim):
        found = {_block_form(args[dim], var) for args in targets}
        forms.append(found.pop() if len(found) == 1 and None not in found else None)
    return forms


def _block_form(arg, var):
    """(size, offset) when `arg` is `var + offset` or `(var + offset) // size`, else None."""
    size = 1
    if (
        isinstance(arg, E.BinOp)
        and arg.op == "//"
        and isinstance(arg.b, E.Const)
        and isinstance(arg.b.value, int)
        and arg.b.value > 0
    ):
        size, arg = arg.b.value, arg.a
    form = linear_form(arg)
    if form is None or form[0] is not var or form[1] != 1:
        return None
    return size, form[2]
