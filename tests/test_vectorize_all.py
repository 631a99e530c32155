"""Every innermost loop vectorizes (issue 51): random pipelines of the stages users write
(polyimage.testing.random_vector_pipeline: bilateral windows, gradients and non-maximum
suppression, every pixel type and border mode, integer operations, guarded reads, Reductions),
under schedules naive and auto, built for this machine and for AVX2 without AVX-512: gcc's
report (polyimage.tools.vectorization) says every innermost loop vectorized, or gives a reason this
file allows, and the results equal the interpreter's."""

import re
import warnings

import pytest
from oracle import as_outputs, assert_same, bit_exact

import polyimage
from polyimage.testing import random_vector_pipeline
from polyimage.tools.vectorization import describe, vectorization

# the first seeds, and seeds that draw what those do not (FEATURES)
SEEDS = (0, 1, 2, 6, 10, 26, 35, 45, 75, 184)
# (schedule, march): both schedules for this machine, naive for AVX2 without AVX-512 (what
# the target changes does not depend on the schedule)
BUILDS = (("naive", None), ("auto", None), ("naive", "x86-64-v3"))
ESTIMATES = {"R": 1024, "C": 1024}
# the loops that stay scalar whatever the C is, as the report says it
ALLOWED = {
    # no vector instruction divides 64-bit integers (AVX-512 neither), and a double is not
    # exact for them
    "64-bit division": re.compile(r"^64-bit integer division by a variable"),
    # lanes of one vector may update the same bin; gcc has no conflict detection
    "histogram": re.compile(r"^a Reduction's scatter"),
    # a float Min, Max or Mul Reduction along the innermost loop runs in order (a Sum is
    # vectorized in order): bit-exact results
    "in-order float reduction": re.compile(r"^a float Reduction along the loop, in order"),
    # Long and ULong to or from Float and Double: AVX2 has no vector instruction for them
    "64-bit conversion without AVX-512": re.compile(r"^converts 64-bit integers"),
}
# what the seeds draw between them: every pixel type, border mode and stage kind
FEATURES = {
    *(f"{t} input" for t in polyimage.dsl.types.ALL_TYPES),
    *(f"border {m}" for m in ("repeat_edge", "mirror", "mirror_interior", "wrap")),
    "border constant_exterior",
    "window",
    "exp weights",
    "sqrt weights",
    "abs weights",
    "non-maximum suppression",
    "guarded read",
    "integer //",
    "integer %",
    "Reduction cols",
    "Reduction rows",
    "Reduction hist",
}


def _compiled(seed, schedule, march):
    rp = random_vector_pipeline(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", polyimage.UncoveredReadWarning)
        pipe = polyimage.compile(
            rp.outputs, ESTIMATES, schedule=schedule, inline=rp.inline, march=march
        )
    return rp, pipe


def _allowed(verdict) -> bool:
    return any(pattern.search(verdict.detail) for pattern in ALLOWED.values())


@pytest.mark.parametrize("schedule, march", BUILDS, ids=["naive", "auto", "naive-avx2"])
@pytest.mark.parametrize("seed", SEEDS)
def test_every_innermost_loop_vectorizes(seed, schedule, march):
    rp, pipe = _compiled(seed, schedule, march)
    verdicts = vectorization(pipe)
    scalar = [v for v in verdicts if not v.vectorized and not _allowed(v)]
    assert not scalar, f"{rp}\n{describe(scalar)}"
    assert set(pipe.scalar_stages) == {s for v in verdicts if not v.vectorized for s in v.stages}
    interpreted = as_outputs(polyimage.interpret(rp.outputs, **rp.arguments))
    compiled = as_outputs(pipe(**rp.arguments))
    for func, got, want in zip(rp.outputs, compiled, interpreted):
        assert_same(got, want, f"seed {seed}, {func.name}", exact=bit_exact(pipe))


def test_the_seeds_draw_every_type_border_and_kind():
    drawn = set().union(*(random_vector_pipeline(seed).features for seed in SEEDS))
    assert FEATURES <= drawn, sorted(FEATURES - drawn)


def test_a_loop_allowed_scalar_says_why():
    """A histogram of bins read as they are (too little work a point to stage:
    codegen.reduction_loops.staged_scatter) and a 64-bit division by data stay scalar, and
    the report names the cause (not gcc's follow-on message) and the stages in
    pipe.scalar_stages."""
    from polyimage import (
        Function,
        Image,
        Int,
        Interval,
        Long,
        Op,
        Parameter,
        Reduce,
        Reduction,
        Variable,
    )

    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    a, b = Image(Long, "a", [R, C]), Image(Long, "b", [R, C])
    quotient = Function.like(a, Long, "quotient")
    x, y = quotient.variables
    quotient.defn = [a(x, y) // b(x, y)]
    i, j, k = Variable(Int, "i"), Variable(Int, "j"), Variable(Int, "k")
    rows, cols = Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)
    hist = Reduction(([k], [Interval(Int, 0, 15)]), ([i, j], [rows, cols]), Int, "hist")
    hist.default = 0
    bins = Image(Int, "bins", [R, C])
    hist.defn = [Reduce(hist(bins(i, j)), 1, Op.Sum)]
    pipe = polyimage.compile([quotient, hist], ESTIMATES, schedule="naive")
    verdicts = {v.stages[0]: v for v in vectorization(pipe) if not v.vectorized}
    assert ALLOWED["64-bit division"].search(verdicts["quotient"].detail)
    assert ALLOWED["histogram"].search(verdicts["hist"].detail)
    assert set(pipe.scalar_stages) == {"quotient", "hist"}
    assert "warning: the innermost loop of quotient, hist did not vectorize" in pipe.report()
