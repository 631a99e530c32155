"""Random feature pipelines (polyimage.testing.random_feature_pipeline): Half, the integer
operations at their types' limits, borders of tiny boxes and of domains starting elsewhere than
0, Reductions listed against the memory layout. The interpreter equals NumPy's own semantics
bit for bit (so a bug it shares with the C shows too), and compiled pipelines, under auto and
a random schedule on 1 and 2 threads, equal the interpreter bit for bit where the docs promise
it (tests/oracle.py: bit_exact)."""

import random

import numpy as np
import pytest
from oracle import as_outputs, assert_calls_match, assert_same, assert_same_bits

import polyimage
from polyimage.algebra import evaluate
from polyimage.dsl import image_ops
from polyimage.testing import random_feature_pipeline, random_schedule

# NaNs and infinities cast to integers (defined: saturated, NaN gives 0) warn in NumPy
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

COMPILED_SEEDS = range(18)
INTERPRETED_SEEDS = range(120)
# what the compiled seeds must draw between them (issue 50, item 5)
FEATURES = {
    "Half",
    "saturating_add",
    "saturating_sub",
    "absd",
    "halving_add",
    "rounding_halving_add",
    "widening_mul",
    "saturating_cast",
    "wrapping arithmetic",
    "border repeat_edge",
    "border mirror",
    "border mirror_interior",
    "border wrap",
    "border constant_exterior",
    "border of a tiny box",
    "offset domain",
    "Reduction rows",
    "Reduction cols",
    "Reduction window",
    "Reduction hist",
    "Reduction with Cases",
    "f Sum Reduction",
}


def _interpreted(rp) -> tuple:
    """The interpreter's outputs of `rp`, checked bit for bit against NumPy's semantics."""
    interpreted = as_outputs(polyimage.interpret(rp.outputs, **rp.arguments))
    assert len(interpreted) == len(rp.expected)
    for func, got, want in zip(rp.outputs, interpreted, rp.expected):
        assert_same_bits(got, want, f"seed {rp.seed}, {func.name}: interpreter vs NumPy")
    return interpreted


def test_the_interpreter_follows_numpys_semantics():
    for seed in INTERPRETED_SEEDS:
        _interpreted(random_feature_pipeline(seed))


@pytest.mark.parametrize("seed", COMPILED_SEEDS)
def test_compiled_feature_pipelines_match_the_interpreter(seed):
    rp = random_feature_pipeline(seed)
    interpreted = _interpreted(rp)
    auto = polyimage.compile(rp.outputs, inline=rp.inline)
    assert_calls_match(auto, interpreted, rp.arguments, f"{rp}\nauto")
    schedule = random_schedule(auto.stage_graph, random.Random(seed * 1000))
    pipe = polyimage.compile(rp.outputs, schedule=schedule, inline=rp.inline)
    assert_calls_match(pipe, interpreted, rp.arguments, f"{rp}\n{schedule}")


def test_the_compiled_seeds_draw_every_feature():
    drawn = set().union(*(random_feature_pipeline(s).features for s in COMPILED_SEEDS))
    assert FEATURES <= drawn, sorted(FEATURES - drawn)


def test_a_seed_gives_the_same_pipeline_and_values():
    for seed in range(5):
        first, second = random_feature_pipeline(seed), random_feature_pipeline(seed)
        assert first.description == second.description
        assert first.arguments.keys() == second.arguments.keys()
        for a, b in zip(first.expected, second.expected):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize(
    "broken",
    ["mirror_interior folds as mirror", "halving_add rounds up"],
)
def test_numpys_semantics_catch_a_bug_the_interpreter_would_share_with_the_c(monkeypatch, broken):
    """An interpreter made wrong (as a shared misreading of the docs would make both it and
    the C) fails the comparison with NumPy's semantics on some seed."""
    if broken.startswith("mirror_interior"):
        monkeypatch.setitem(evaluate._MATH, "reflect_index", evaluate._MATH["mirror_index"])
    else:
        apply = image_ops.apply
        swapped = {"halving_add": "rounding_halving_add"}
        monkeypatch.setattr(
            image_ops, "apply", lambda fn, a, b, typ: apply(swapped.get(fn, fn), a, b, typ)
        )
    caught = 0
    for seed in INTERPRETED_SEEDS:
        try:
            _interpreted(random_feature_pipeline(seed))
        except AssertionError:
            caught += 1
    assert caught > 0


def test_the_bit_exact_check_sees_an_ulp_and_a_zeros_sign():
    """The tolerance passes one ulp; the exact mode refuses it and a zero of the other sign,
    and takes any NaN for a NaN, which assert_same_bits refuses."""
    values = np.array([1.0, 0.0, np.nan], np.float32)
    bits = values.view(np.uint32)
    ulp, zero, payload = (bits.copy() for _ in range(3))
    ulp[0] += 1
    zero[1] = 0x80000000
    payload[2] |= 1
    assert_same(ulp.view(np.float32), values)
    for changed in (ulp, zero):
        with pytest.raises(AssertionError, match="differ in their bits"):
            assert_same(changed.view(np.float32), values, exact=True)
    assert_same(payload.view(np.float32), values, exact=True)
    with pytest.raises(AssertionError, match="differ in their bits"):
        assert_same_bits(payload.view(np.float32), values)
    with pytest.raises(AssertionError, match="differ in their bits"):
        assert_same(np.array([65504.0], np.float16), np.array([np.inf], np.float16), exact=True)
