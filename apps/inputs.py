"""Input preparation shared by the apps: photos to float arrays of a requested size."""

from pathlib import Path

import numpy as np

from polyimage.io import bundled_photo

DEFAULT_PHOTO = "astronaut.png"


def bundled(name: str = DEFAULT_PHOTO) -> Path:
    """Path of a photo shipped with polyimage (polyimage.io.bundled_photo)."""
    try:
        return bundled_photo(name)
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"{exc}; pass an INPUT image instead") from None


def to_float(photo: np.ndarray, channels: int) -> np.ndarray:
    """HWC (or HW) integer or float photo -> float32 HWC in [0, 1] with `channels` channels
    (alpha dropped)."""
    photo = np.asarray(photo)
    if photo.dtype.kind in "ui":
        photo = photo.astype(np.float32) / np.float32(np.iinfo(photo.dtype).max)
    photo = photo.astype(np.float32)
    if photo.ndim == 2:
        photo = photo[:, :, None]
    if photo.shape[2] == 2:  # grey + alpha: the alpha is not part of the picture
        photo = photo[:, :, :1]
    if photo.shape[2] >= 3 and channels == 1:
        return np.ascontiguousarray(photo[:, :, :3] @ np.float32([0.299, 0.587, 0.114])[:, None])
    if photo.shape[2] == 1 and channels > 1:
        photo = np.repeat(photo, channels, axis=2)
    return np.ascontiguousarray(photo[:, :, :channels])


def fit(photo: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Crop, or tile with mirroring, to exactly rows x cols (keeps real image content)."""
    reps_r = -(-rows // photo.shape[0])
    reps_c = -(-cols // photo.shape[1])
    if reps_r > 1 or reps_c > 1:
        photo = np.pad(
            photo,
            ((0, photo.shape[0] * (reps_r - 1)), (0, photo.shape[1] * (reps_c - 1)), (0, 0)),
            mode="symmetric",
        )
    return np.ascontiguousarray(photo[:rows, :cols])
