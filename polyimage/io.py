"""Image loading and saving (PNG and JPEG via Pillow, 16-bit colour PNG via a small
built-in codec) to and from NumPy arrays."""

from __future__ import annotations

import os
import struct
import zlib
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image, UnidentifiedImageError

from .errors import ArgumentError, ArgumentTypeError

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

__all__ = ["load_image", "save_image", "save_format", "bundled_photo", "BUNDLED_PHOTOS"]

# the photos shipped with polyimage (images/README.md says where each comes from)
BUNDLED_PHOTOS = ("astronaut.png", "camera.png", "camera16.png", "chelsea.png", "coffee.png")

_LAYOUTS = ("HWC", "CHW")
_MODES = {"L": 1, "RGB": 3, "RGBA": 4}
_PNG_SIG = b"\x89PNG\r\n\x1a\n"
_PNG_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # PNG colour type -> number of channels
_PNG_COLOUR_TYPE = {c: t for t, c in _PNG_CHANNELS.items()}
_FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG"}
_LUMA = np.array([19595, 38470, 7471], dtype=np.int64)  # Pillow's ITU-R 601-2 weights / 2**16


def _check_layout(layout):
    if layout not in _LAYOUTS:
        raise ArgumentError(f"unknown layout {layout!r}; expected one of {', '.join(_LAYOUTS)}")


def _maxval(dtype):
    return 65535 if dtype == np.uint16 else 255


# -- minimal 16-bit PNG codec (Pillow reduces 16-bit colour PNGs to 8 bits) ----------------


def _is_png16_colour(data):
    # IHDR: bit depth at byte 24, colour type at byte 25 (2 RGB, 4 gray+alpha, 6 RGBA)
    return (
        data[:8] == _PNG_SIG
        and data[12:16] == b"IHDR"
        and len(data) > 28
        and data[24] == 16
        and data[25] in (2, 4, 6)
    )


def _unfilter_row(ftype, line, prev, bpp):
    if ftype == 0:
        return line
    if ftype == 1:  # Sub: running sum (mod 256) along each byte lane of a pixel
        return np.cumsum(line.reshape(-1, bpp), axis=0, dtype=np.uint8).ravel()
    if ftype == 2:  # Up
        return line + prev
    if ftype not in (3, 4):
        raise ArgumentError(f"invalid PNG filter type {ftype}")
    cur, up = bytearray(line.tobytes()), prev.tolist()
    for i in range(len(cur)):  # Average and Paeth depend on the byte just decoded
        a = cur[i - bpp] if i >= bpp else 0
        b = up[i]
        if ftype == 3:
            p = (a + b) >> 1
        else:
            c = up[i - bpp] if i >= bpp else 0
            pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
            p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
        cur[i] = (cur[i] + p) & 255
    return np.frombuffer(bytes(cur), np.uint8)


def _read_png16(data):
    width, height, _, ctype, _, _, interlace = struct.unpack(">IIBBBBB", data[16:29])
    if interlace:
        raise ArgumentError("interlaced 16-bit colour PNGs are not supported")
    idat, pos = [], 8
    while pos + 12 <= len(data):
        length, tag = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        if zlib.crc32(tag + body) != crc:
            raise ArgumentError(f"CRC mismatch in PNG chunk {tag!r}")
        if tag == b"IDAT":
            idat.append(body)
        elif tag == b"IEND":
            break
        pos += 12 + length
    channels = _PNG_CHANNELS[ctype]
    bpp, stride = 2 * channels, 2 * channels * width
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8)
    if raw.size != height * (stride + 1):
        raise ArgumentError("PNG image data has the wrong size")
    raw = raw.reshape(height, stride + 1)
    out = np.empty((height, stride), np.uint8)
    prev = np.zeros(stride, np.uint8)
    for y in range(height):
        prev = out[y] = _unfilter_row(raw[y, 0], raw[y, 1:], prev, bpp)
    return out.view(">u2").reshape(height, width, channels).astype(np.uint16)


def _chunk(tag, body):
    return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body))


def _encode_png16(arr):
    height, width, channels = arr.shape
    rows = np.ascontiguousarray(arr, dtype=">u2").view(np.uint8).reshape(height, -1)
    raw = np.hstack([np.zeros((height, 1), np.uint8), rows])  # filter type 0 on every row
    ihdr = struct.pack(">IIBBBBB", width, height, 16, _PNG_COLOUR_TYPE[channels], 0, 0, 0)
    return (
        _PNG_SIG
        + _chunk(b"IHDR", ihdr)
        + _chunk(b"IDAT", zlib.compress(raw.tobytes(), 6))
        + _chunk(b"IEND", b"")
    )


# -- Pillow paths ----------------------------------------------------------------------------


def _pil_array(data):
    with Image.open(BytesIO(data)) as im:
        im.load()
        if im.mode.startswith("I"):  # 16-bit gray: "I;16", "I;16B" or "I" (older Pillow)
            return np.array(im).astype(np.uint16)
        if im.mode not in ("L", "LA", "RGB", "RGBA"):  # palette, bilevel, CMYK, ...
            transparent = "transparency" in im.info or im.mode.endswith("A")
            im = im.convert("RGBA" if transparent else "L" if im.mode == "1" else "RGB")
        return np.array(im)


def _convert(arr, mode):
    """Convert an (H, W[, C]) integer array to the channels of a Pillow-style `mode`."""
    channels = 1 if arr.ndim == 2 else arr.shape[2]
    if channels == _MODES[mode]:
        return arr
    alpha = arr[..., -1] if channels in (2, 4) else None
    if channels >= 3:
        rgb = arr[..., :3]
        gray = ((rgb.astype(np.int64) @ _LUMA + 32768) >> 16).astype(arr.dtype)
    else:
        gray = arr if channels == 1 else arr[..., 0]
        rgb = np.stack([gray] * 3, axis=-1)
    if mode == "L":
        return gray
    if mode == "RGB":
        return rgb
    if alpha is None:
        alpha = np.full(arr.shape[:2], _maxval(arr.dtype), arr.dtype)
    return np.concatenate([rgb, alpha[..., None]], axis=-1)


def load_image(
    path: str | os.PathLike[str],
    *,
    dtype: DTypeLike | None = None,
    layout: str = "HWC",
    mode: str | None = None,
) -> np.ndarray:
    """Read a PNG (8 or 16 bits per sample) or JPEG file into a NumPy array.

    Args:
        path: the file to read.
        dtype: None returns the file's integer type (uint8 or uint16); `np.float16`,
            `np.float32` or `np.float64` return values scaled to [0, 1] by the largest value
            of the file's bit depth.
        layout: "HWC" or "CHW", the axis order of an image with channels; a gray image is
            always (H, W).
        mode: None keeps the file's channels; "L", "RGB" or "RGBA" converts to gray, RGB or
            RGBA.

    Returns:
        A C-contiguous array of shape (H, W), (H, W, C) or (C, H, W).

    Raises:
        ArgumentError: the file is not a PNG or JPEG image, or `layout` or `mode` is
            unknown.
        ArgumentTypeError: `dtype` is not None or a float type.
        FileNotFoundError: there is no such file.
    """
    _check_layout(layout)
    if mode is not None and mode not in _MODES:
        raise ArgumentError(f"unknown mode {mode!r}; expected None or one of {', '.join(_MODES)}")
    if dtype is not None:
        dtype = np.dtype(dtype)
        if dtype not in (np.float16, np.float32, np.float64):
            raise ArgumentTypeError(
                f"unsupported dtype {dtype}; expected None, float16, float32 or float64"
            )
    data = Path(path).read_bytes()  # FileNotFoundError propagates with the path
    try:
        arr = _read_png16(data) if _is_png16_colour(data) else _pil_array(data)
    except UnidentifiedImageError:
        raise ArgumentError(
            f"cannot read image {os.fspath(path)!r}: not an image file (or not in "
            "a format Pillow reads)"
        ) from None
    except (OSError, SyntaxError, ValueError, KeyError, zlib.error, struct.error) as exc:
        raise ArgumentError(f"cannot read image {os.fspath(path)!r}: {exc}") from exc
    if mode is not None:
        arr = _convert(arr, mode)
    if dtype is not None:  # float16 is scaled in float32 (65535 is no float16) and rounded once
        wide = np.promote_types(dtype, np.float32)
        arr = (arr.astype(wide) / wide.type(_maxval(arr.dtype))).astype(dtype)
    if arr.ndim == 3 and layout == "CHW":
        arr = arr.transpose(2, 0, 1)
    return np.ascontiguousarray(arr)


def save_format(path: str | os.PathLike[str]) -> str:
    """The format ("PNG" or "JPEG") `save_image` writes to `path`, chosen by its extension;
    ValueError for any other extension. Lets callers reject an output path before working."""
    suffix = Path(path).suffix.lower()
    if suffix not in _FORMATS:
        found = f"unsupported extension {suffix!r}" if suffix else "no extension"
        raise ArgumentError(
            f"cannot save {os.fspath(path)!r}: {found}; images are saved as {', '.join(_FORMATS)}"
        )
    return _FORMATS[suffix]


def save_image(
    path: str | os.PathLike[str], array: ArrayLike, *, layout: str = "HWC", bits: int = 8
) -> None:
    """Write an array as PNG or JPEG, chosen by the file extension.

    Args:
        path: the file to write: `.png`, `.jpg` or `.jpeg`.
        array: (H, W) gray, or 3-D with 1, 3 or 4 channels in `layout`. uint8 is written
            as 8-bit, uint16 as 16-bit (PNG only); float values are clipped to [0, 1]
            (NaN as 0) and scaled to `bits`.
        layout: "HWC" or "CHW", the axis order of a 3-D `array`.
        bits: 8 or 16, the bit depth a float array is written at (16: PNG only).

    Raises:
        ArgumentError: an unknown extension, layout or bit depth, or an array of another
            shape.
    """
    _check_layout(layout)
    if bits not in (8, 16):
        raise ArgumentError(f"bits must be 8 or 16, got {bits!r}")
    fmt = save_format(path)
    arr = np.asarray(array)
    shape = arr.shape
    if arr.ndim == 3 and layout == "CHW":
        arr = arr.transpose(1, 2, 0)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[..., 0]
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (3, 4)):
        raise ArgumentError(
            f"cannot save array of shape {shape}: expected (H, W) or 1, 3 "
            f"or 4 channels in {layout} layout"
        )
    if arr.dtype.kind == "f":
        maxval = 2**bits - 1
        arr = arr.astype(np.promote_types(arr.dtype, np.float32))  # 65535 is no float16
        arr = np.rint(np.clip(np.nan_to_num(arr, nan=0.0), 0, 1) * maxval)
        arr = arr.astype(np.uint8 if bits == 8 else np.uint16)
    elif arr.dtype not in (np.uint8, np.uint16):
        raise ArgumentTypeError(
            f"cannot save dtype {arr.dtype}; expected uint8, uint16, float16, float32 or float64"
        )
    if fmt == "JPEG" and arr.dtype == np.uint16:
        raise ArgumentError(f"JPEG is 8-bit only; cannot save 16-bit data to {os.fspath(path)!r}")
    if fmt == "JPEG" and arr.ndim == 3 and arr.shape[2] == 4:
        raise ArgumentError(f"JPEG has no alpha channel; cannot save RGBA to {os.fspath(path)!r}")
    if arr.dtype == np.uint16 and arr.ndim == 3:
        Path(path).write_bytes(_encode_png16(arr))
        return
    if arr.dtype == np.uint16:
        height, width = arr.shape
        im = Image.frombytes("I;16", (width, height), np.ascontiguousarray(arr, "<u2").tobytes())
    else:
        im = Image.fromarray(np.ascontiguousarray(arr))
    im.save(path, format=fmt, **({"quality": 95} if fmt == "JPEG" else {}))


def bundled_photo(name: str = "astronaut.png") -> Path:
    """The path of a photo shipped with polyimage, from any folder:
    `load_image(bundled_photo("camera.png"))`.

    Args:
        name: one of BUNDLED_PHOTOS: "astronaut.png" (512 x 512, RGB), "camera.png" (512 x
            512, gray), "camera16.png" (the same at 16 bits), "chelsea.png" or "coffee.png"
            (RGB).

    Returns:
        The photo's path.

    Raises:
        FileNotFoundError: no photo of that name is shipped.
    """
    here = Path(__file__).resolve().parent
    for folder in (here / "images", here.parent / "images"):  # installed, then a checkout
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(
        f"no bundled photo {name!r}; the bundled photos are {', '.join(BUNDLED_PHOTOS)}"
    )
