"""The resize app: compiled == interpreter == NumPy reference, downsampling (the app's 3/4)
and upsampling (8/5); a constant image stays constant and a linear ramp is resampled, away
from the border, exactly when upsampling (Keys' cubic reproduces linear functions on the unit
grid) and within a fiftieth of a pixel when downsampling (the widened kernel does not)."""

import numpy as np
import pytest
from oracle import run_both

import polyimage
from polyimage.apps import resize
from polyimage.apps.inputs import bundled
from polyimage.io import load_image


@pytest.mark.parametrize(
    "size, scale",
    [
        (resize.SMALL_SIZE, resize.SCALE),
        ({"R": 37, "C": 53}, resize.SCALE),
        ({"R": 37, "C": 53}, (8, 5)),
    ],
)
def test_matches_reference_on_the_photo(size, scale):
    photo = load_image(bundled(resize.PHOTOS[0]))
    arrays = resize.prepare([photo], size)
    outputs, _ = resize.build(scale)
    expected = resize.reference(**arrays, scale=scale)
    result = run_both(outputs, reference=expected, **arrays)
    p, q = scale
    assert result.shape == (3, -(-size["R"] * p // q), -(-size["C"] * p // q))
    np.testing.assert_array_equal(result, expected)  # the same operations in the same order


# how far the resampled position of a ramp may be from the true one, in input pixels
POSITION_ERROR = {resize.SCALE: 0.02, (8, 5): 1e-4}


@pytest.mark.parametrize("scale", sorted(POSITION_ERROR))
def test_weights_sum_to_one_and_move_with_the_scale(scale):
    index, weight = resize.axis_weights(41, scale)
    np.testing.assert_allclose(weight.sum(axis=0), 1, rtol=1e-6)
    p, q = scale
    assert len(weight) == (6 if p < q else 4)
    centre = (weight * index).sum(axis=0)  # the weighted mean tap: the source position
    source = (np.arange(weight.shape[1]) + 0.5) * q / p - 0.5
    inside = (index.min(axis=0) > 0) & (index.max(axis=0) < 40)
    assert inside.sum() > weight.shape[1] // 2
    np.testing.assert_allclose(centre[inside], source[inside], atol=POSITION_ERROR[scale])


@pytest.mark.parametrize("scale", sorted(POSITION_ERROR))
def test_constant_stays_and_a_ramp_is_resampled(scale):
    rows, cols = 29, 43
    outputs, _ = resize.build(scale)
    pipe = polyimage.compile(outputs)
    constant = pipe(img=np.full((3, rows, cols), 0.375, np.float32))
    np.testing.assert_allclose(constant, 0.375, rtol=1e-6)
    ramp = np.broadcast_to(np.arange(cols, dtype=np.float32) / cols, (3, rows, cols))
    out = pipe(img=np.ascontiguousarray(ramp))
    p, q = scale
    source = ((np.arange(out.shape[2]) + 0.5) * q / p - 0.5) / cols
    inside = slice(4, -4)  # the taps of these columns fall inside the image
    expected = np.broadcast_to(source, out.shape)[:, :, inside]
    np.testing.assert_allclose(out[:, :, inside], expected, atol=POSITION_ERROR[scale] / cols)
    assert np.ptp(out, axis=1).max() < 1e-6, "every row the same"
