"""Float reassociation (`compile(..., reassociate=True)`): the C compiler may regroup float
sums and products and divide by a constant as a multiplication by its reciprocal, as Halide
does by default. A sum along a Reduction's loop then runs in vectors; results stay within
TOLERANCE of the interpreter's; the build has a cache key, a record and flags of its own, and
the report, an export and the bench say so.

The tolerance: a sum of n terms regrouped into partial sums moves it by at most about n ulps
of the sum of the terms' magnitudes (each partial sum rounds once more or once less), and a
reciprocal moves a quotient by an ulp. The rows summed here hold 1000 terms in [0, 1): we allow
TOLERANCE of the terms' total magnitude, far above those roundings (1000 * 6e-8) and far below
a lost or doubled term (1e-3 of the total at least).
"""

import json

import numpy as np
import pytest

import polyimage
from polyimage import Float, Image, Int, Interval, Op, Parameter, Reduce, Reduction, Variable
from polyimage.commands.parser import build_parser
from polyimage.config import DEFAULT_CFLAGS, REASSOCIATE_FLAGS, Options
from polyimage.driver.record import compile_key

TOLERANCE = 1e-4


def _row_means():
    """mean(x) = sum over y of img(x, y) / 7: a float sum along the contiguous loop (in order,
    scalar, without reassociation) and a division by a constant."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    img = Image(Float, "img", [R, C])
    x, y = Variable(Int, "x"), Variable(Int, "y")
    total = Reduction(
        ([x], [Interval(Int, 0, R - 1)]),
        ([x, y], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]),
        Float,
        "total",
    )
    total.defn = [Reduce(total(x), img(x, y) / 7.0, Op.Sum)]
    return total


def test_a_reassociated_sum_is_regrouped_within_the_tolerance(rng):
    out = _row_means()
    sizes = {"R": 64, "C": 1000}
    exact = polyimage.compile([out], estimates=sizes)
    loose = polyimage.compile([out], estimates=sizes, reassociate=True)
    img = rng.random((64, 1000), dtype=np.float32)
    want = polyimage.interpret([out], img=img)
    np.testing.assert_array_equal(exact(img=img), want)
    scale = np.abs(img).sum(axis=1) / 7
    assert np.all(np.abs(loose(img=img) - want) <= TOLERANCE * scale)
    # the sums were regrouped (gcc sums in order in vector lanes, then the lanes) and the
    # division became a multiplication: some rows round differently
    assert not np.array_equal(loose(img=img), want)
    text = loose.report()
    assert "float reassociation: on" in text and "reassociation" not in exact.report()


def test_reassociated_and_exact_builds_are_apart_in_the_cache():
    out = _row_means()
    exact = polyimage.compile([out], estimates={"R": 64, "C": 1000})
    loose = polyimage.compile([out], estimates={"R": 64, "C": 1000}, reassociate=True)
    assert exact.c_source == loose.c_source
    assert compile_key(exact.compiled.request) != compile_key(loose.compiled.request)
    assert exact.build_info.path != loose.build_info.path
    flags = json.loads((loose.build_info.path / "meta.json").read_text())["flags"]
    assert all(flag in flags for flag in REASSOCIATE_FLAGS)
    again = polyimage.compile([out], estimates={"R": 64, "C": 1000}, reassociate=True)
    assert again.build_info.cache_hit and again.build_info.path == loose.build_info.path


def test_the_options_read_reassociation_off_the_flags():
    assert not Options().reassociate
    assert Options().for_reassociate(True).reassociate
    assert not Options().for_reassociate(True).for_reassociate(False).reassociate
    assert Options().for_reassociate(True).flags.count("-fassociative-math") == 1
    loose = Options(cflags=("-O2",)).for_reassociate(True)
    assert loose.flags == ("-O2", "-march=native", "-ffp-contract=off", *REASSOCIATE_FLAGS)
    # the three flags given in cflags move into the typed field
    given = Options(cflags=DEFAULT_CFLAGS + REASSOCIATE_FLAGS)
    assert given.reassociate and given.cflags == DEFAULT_CFLAGS


@pytest.mark.parametrize("bad", ["yes", 1, None.__class__])
def test_a_reassociate_that_is_not_a_bool_is_refused_naming_it(bad):
    with pytest.raises(polyimage.ArgumentError, match="reassociate must be True or False"):
        polyimage.compile([_row_means()], reassociate=bad, build=False)


def test_an_export_of_a_reassociated_compile_says_so(tmp_path):
    pipe = polyimage.compile([_row_means()], reassociate=True, build=False)
    exported = pipe.export(tmp_path / "lib")
    manifest = json.loads(exported.files["manifest"].read_text())
    assert all(flag in manifest["flags"] for flag in REASSOCIATE_FLAGS)
    assert "float reassociation" in exported.files["readme"].read_text()


def test_the_bench_takes_reassociate():
    """`polyimage bench --reassociate` parses; tests/test_contract.py times the variant beside
    auto and auto+fma."""
    assert build_parser().parse_args(["bench", "harris", "--reassociate"]).reassociate
    assert not build_parser().parse_args(["bench", "harris"]).reassociate
