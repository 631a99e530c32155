"""Loops over residues (algebra/residues.py, codegen LoopEmitter._residue_loops): up- and
downsampling by 2, 3 and 4 with offsets and negative indices, Cases on `%`, odd sizes and 1x1,
under naive, auto and random tiled schedules on 1 and 2 threads, all equal to the interpreter;
and the algebra on its own."""

import numpy as np
import pytest
from helpers import stage_trees

import polyimage
from polyimage import Case, Clamp, Float, Function, Image, Int, Interval, Parameter, Variable
from polyimage.algebra.evaluate import Evaluator
from polyimage.algebra.residues import at_residue, decide, period
from polyimage.codegen.ctree import Declare, If, for_loops, names_used, walk


def _pipeline(scale, offset, flavour):
    """down: every scale-th column (plus an offset) of img; up: back to full width over
    columns from -3, interleaving Cases on y % scale; both clamped into their producers."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    x, y = Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [R, C])
    width = (C + scale - 1) // scale
    down = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, width - 1)]), Float, "down")
    down.defn = [
        img(x, Clamp(scale * y + offset, 0, C - 1)) * 0.5
        + img(x, Clamp(scale * y + offset + 1, 0, C - 1))
    ]
    up = Function(([x, y], [Interval(Int, 0, R - 1), Interval(Int, -3, C + 2)]), Float, "up")
    at = lambda k: down(x, Clamp((y + offset + k) // scale, 0, width - 1))  # noqa: E731
    if flavour == "cases":
        up.defn = [
            Case(y % scale == 0, at(0)),
            Case(y % scale == scale - 1, at(1) * 2.0),
            at(0) + at(1),
        ]
    elif flavour == "nested":
        up.defn = [down(x, Clamp(((y + offset) // 2 + 1) // 2, 0, width - 1)) + at(2)]
    else:
        up.defn = [at(0) * 0.25 + at(1) * 0.75 - (y % scale) * 0.125]
    return up


SCALES, OFFSETS, FLAVOURS = (2, 3, 4), (-3, 0, 1), ("cases", "nested", "plain")
# every pair of scale, offset and flavour once (a Latin square: 9 of the 27 triples, each
# compiled under 3 schedules), rather than every triple
CONFIGS = [
    (scale, offset, FLAVOURS[(i + j) % 3])
    for i, scale in enumerate(SCALES)
    for j, offset in enumerate(OFFSETS)
]


@pytest.mark.parametrize("scale, offset, flavour", CONFIGS)
def test_resampling_matches_the_interpreter(scale, offset, flavour):
    up = _pipeline(scale, offset, flavour)
    rng = np.random.default_rng(scale * 100 + offset * 10 + len(flavour))
    tiles = f"{rng.integers(1, 9)}x{rng.integers(1, 40)}"
    schedules = ["naive", "auto", f"group 0: down, up [{tiles}]"]
    shapes = [(1, 1), (3, 7), (5, 2 * scale + 1), (9, 37)]
    arrays = [rng.random(shape, dtype=np.float32) for shape in shapes]
    wants = [polyimage.interpret([up], img=a) for a in arrays]
    for schedule in schedules:
        pipe = polyimage.compile(
            [up], schedule=schedule, inline=False, estimates={"R": 64, "C": 64}
        )
        for arr, want in zip(arrays, wants):
            for threads in (1, 2):
                np.testing.assert_allclose(
                    pipe(img=arr, threads=threads),
                    want,
                    rtol=1e-6,
                    err_msg=f"{schedule} {arr.shape} {threads}",
                )


def test_the_interleaved_loop_is_emitted_and_branch_free():
    up = _pipeline(2, 0, "cases")
    pipe = polyimage.compile([up], schedule="naive", inline=False)
    (tree,) = stage_trees(pipe, "up")
    (loop,) = [loop for loop in for_loops(tree) if loop.var == "pim_w_y_q" and loop.simd]
    positions = [
        value
        for node in walk(loop)
        if isinstance(node, Declare)
        for name, value in node.items
        if name == "pim_w_y"
    ]
    assert positions == ["pim_w_y_q * 2 + 0", "pim_w_y_q * 2 + 1"]  # both residues, in turn
    helpers = {name[0] for kind, name in names_used(loop) if kind == "helper"}
    assert not helpers & {"mod", "floordiv"}, helpers  # no division of y per point
    assert not any(isinstance(node, If) for node in walk(loop))  # no Case chosen per point


def test_period_is_the_smallest_that_makes_every_division_exact():
    x, y = Variable(Int, "x"), Variable(Int, "y")
    assert period([y // 2], y) == 2
    assert period([(y // 2 + 1) // 2], y) == 4
    assert period([(y + 1) // 2 - y % 3], y) == 6
    assert period([y * 2 // 4 + x // 3], y) == 2  # 2y = 4q + 2r: exact at period 2
    assert period([(y * 24 + 5) // 18], y) == 3  # a resampler's 4/3: 18 / gcd(24, 18)
    assert period([y + 1, x % 2], y) == 1
    assert period([y // 5 + y // 7], y) == 1  # beyond MAX_PERIOD: left as it is


@pytest.mark.parametrize(
    "make",
    [
        lambda x, y: (y + 1) // 2 - y % 3,
        lambda x, y: ((y - 5) // 2 + 1) // 2 + x % 4,
        lambda x, y: (3 * y + x) // 3 - (2 * y) % 6,
        lambda x, y: -y // 2 + (y % 2) * 7,
    ],
)
def test_rewritten_expressions_equal_the_originals(make):
    x, y = Variable(Int, "x"), Variable(Int, "y")
    e = make(x, y)
    M = period([e], y)
    assert M > 1
    q = Variable(Int, "q")
    ys = np.arange(-40, 41, dtype=np.int32)
    xs = np.full_like(ys, 3)
    want = Evaluator({}, {}, {})(e, {x: xs, y: ys}, len(ys))
    for r in range(M):
        rewritten = at_residue(e, y, M, r, q)
        chosen = (ys - r) % M == 0
        qs = ((ys[chosen] - r) // M).astype(np.int32)
        got = Evaluator({}, {}, {})(rewritten, {x: xs[chosen], q: qs}, len(qs))
        np.testing.assert_array_equal(np.broadcast_to(got, qs.shape), want[chosen])


def test_decide_only_conditions_of_constants():
    y = Variable(Int, "y")
    q = Variable(Int, "q")
    assert decide(None) is True
    assert decide(at_residue(y % 2 == 0, y, 2, 0, q)) is True
    assert decide(at_residue(y % 2 == 0, y, 2, 1, q)) is False
    assert decide(at_residue(y < 4, y, 2, 1, q)) is None
