"""The matrix product app: compiled == interpreter == NumPy reference under every schedule,
bit for bit (every cell sums k in order); it agrees with numpy.matmul, keeps A times the
identity exactly, and its DCT basis keeps each row's energy."""

import numpy as np
import pytest
from oracle import assert_calls_match, run_both

import polyimage
from polyimage.apps import app_schedules, gemm
from polyimage.apps.inputs import bundled
from polyimage.io import load_image


def photo_arrays(size):
    return gemm.prepare([load_image(bundled(gemm.PHOTOS[0]))], size)


@pytest.mark.parametrize("size", [gemm.SMALL_SIZE, {"M": 5, "N": 1, "K": 3}])
def test_matches_reference_on_the_photo(size):
    arrays = photo_arrays(size)
    assert arrays["A"].shape == (size["M"], size["K"])
    assert arrays["B"].shape == (size["K"], size["N"])
    outputs, _ = gemm.build()
    expected = gemm.reference(**arrays)
    result = run_both(outputs, reference=expected, **arrays)
    assert result.shape == (size["M"], size["N"])
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("schedule", list(app_schedules(gemm)))
def test_every_schedule_equals_the_interpreter(schedule, rng):
    arrays = {
        "A": rng.standard_normal((37, 41)).astype(np.float32),
        "B": rng.standard_normal((41, 29)).astype(np.float32),
    }
    outputs, _ = gemm.build()
    pipe = polyimage.compile(outputs, schedule=schedule, estimates=gemm.PAPER_SIZE)
    expected = polyimage.interpret(outputs, **arrays)
    np.testing.assert_array_equal(expected, gemm.reference(**arrays))
    assert_calls_match(pipe, expected, arrays, f"gemm under {schedule}", exact=True)


@pytest.fixture(scope="module")
def pipe():
    outputs, _ = gemm.build()
    return polyimage.compile(outputs, estimates=gemm.PAPER_SIZE)


def test_agrees_with_numpy_matmul_and_the_identity(pipe, rng):
    a = rng.standard_normal((23, 64)).astype(np.float32)
    b = rng.standard_normal((64, 19)).astype(np.float32)
    # a float32 sum of 64 products in another order: a few ulps of the terms' size
    np.testing.assert_allclose(pipe(A=a, B=b), np.matmul(a, b), rtol=1e-5, atol=1e-4)
    identity = np.eye(64, dtype=np.float32)
    np.testing.assert_array_equal(pipe(A=a, B=identity), a)
    np.testing.assert_array_equal(pipe(A=identity[:19], B=b[:, :7]), b[:19, :7])


def test_the_dct_keeps_each_rows_energy(pipe):
    """The basis is orthonormal: every row of C has its row of A's sum of squares (Parseval),
    and a constant row has only its first coefficient."""
    arrays = photo_arrays({"M": 16, "N": 48, "K": 48})
    arrays["A"][3] = 0.5
    spectrum = pipe(**arrays)
    energy = (arrays["A"].astype(np.float64) ** 2).sum(axis=1)
    np.testing.assert_allclose((spectrum.astype(np.float64) ** 2).sum(axis=1), energy, rtol=1e-5)
    np.testing.assert_allclose(spectrum[3, 0], 0.5 * np.sqrt(48), rtol=1e-6)
    np.testing.assert_allclose(spectrum[3, 1:], 0, atol=1e-6)
