"""polyimage.io: PNG/JPEG round trips, the 16-bit PNG codec, bundled images, errors."""

import re
import struct
import zlib

import numpy as np
import pytest
from helpers import IMAGES
from PIL import Image

from polyimage.io import load_image, save_format, save_image

SHAPES = {"gray": (37, 23), "rgb": (37, 23, 3), "rgba": (37, 23, 4)}


def _random(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, np.iinfo(dtype).max, size=shape, dtype=dtype, endpoint=True)


# -- a tiny independent 16-bit PNG encoder using every row filter ----------------------------


def _chunk(tag, body):
    return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body))


def _png16_by_hand(arr, filters, interlace=0):
    """Encode (H, W, C) uint16 with the given per-row filter types, split over two IDATs."""
    h, w, c = arr.shape
    bpp = 2 * c
    rows = arr.astype(">u2").view(np.uint8).reshape(h, -1).astype(np.int64)
    prev = np.zeros(rows.shape[1], np.int64)
    raw = bytearray()
    for x, ftype in zip(rows, filters):
        a = np.concatenate([np.zeros(bpp, np.int64), x[:-bpp]])
        b = prev
        cc = np.concatenate([np.zeros(bpp, np.int64), prev[:-bpp]])
        p = a + b - cc
        pa, pb, pc = abs(p - a), abs(p - b), abs(p - cc)
        paeth = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, cc))
        pred = [0, a, b, (a + b) // 2, paeth][ftype] if ftype < 5 else 0
        raw.append(ftype)
        raw += ((x - pred) % 256).astype(np.uint8).tobytes()
        prev = x
    z = zlib.compress(bytes(raw))
    ctype = {2: 4, 3: 2, 4: 6}[c]
    ihdr = struct.pack(">IIBBBBB", w, h, 16, ctype, 0, 0, interlace)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", ihdr)
        + _chunk(b"IDAT", z[: len(z) // 2])
        + _chunk(b"IDAT", z[len(z) // 2 :])
        + _chunk(b"IEND", b"")
    )


# -- round trips -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(SHAPES))
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_png_roundtrip_exact(tmp_path, kind, dtype):
    arr = _random(SHAPES[kind], dtype)
    path = tmp_path / f"{kind}.png"
    save_image(path, arr)
    out = load_image(path)
    assert out.dtype == dtype and out.shape == arr.shape
    np.testing.assert_array_equal(out, arr)
    assert path.read_bytes()[24] == 8 * np.dtype(dtype).itemsize  # IHDR bit depth


@pytest.mark.parametrize("kind", ["rgb", "rgba"])
def test_png16_colour_readable_by_pillow(tmp_path, kind):
    # Pillow reduces 16-bit colour to 8 bits, but must be able to decode what we write.
    arr = _random(SHAPES[kind], np.uint16, seed=1)
    save_image(tmp_path / "c.png", arr)
    with Image.open(tmp_path / "c.png") as im:
        np.testing.assert_array_equal(np.asarray(im), (arr >> 8).astype(np.uint8))


def test_png16_gray_is_pillow_i16(tmp_path):
    arr = _random((5, 9), np.uint16)
    save_image(tmp_path / "g.png", arr)
    with Image.open(tmp_path / "g.png") as im:
        assert im.mode in ("I;16", "I")
        np.testing.assert_array_equal(np.asarray(im), arr)


@pytest.mark.parametrize("bits, tol", [(8, 1 / 255), (16, 1 / 65535)])
@pytest.mark.parametrize("kind", list(SHAPES))
def test_float_roundtrip(tmp_path, bits, tol, kind):
    arr = np.random.default_rng(2).random(SHAPES[kind], dtype=np.float32)
    save_image(tmp_path / "f.png", arr, bits=bits)
    native = load_image(tmp_path / "f.png")
    assert native.dtype == (np.uint8 if bits == 8 else np.uint16)
    out = load_image(tmp_path / "f.png", dtype="float32")
    assert out.dtype == np.float32 and out.shape == arr.shape
    assert np.abs(out - arr).max() <= tol
    assert load_image(tmp_path / "f.png", dtype=np.float64).dtype == np.float64


def test_float_clip_nan_and_rounding(tmp_path):
    arr = np.array([[-0.5, np.nan, 2.0, 0.5, np.inf, 1 / 255]], dtype=np.float64)
    save_image(tmp_path / "c.png", arr)
    np.testing.assert_array_equal(load_image(tmp_path / "c.png"), [[0, 0, 255, 128, 255, 1]])
    save_image(tmp_path / "c16.png", arr, bits=16)
    np.testing.assert_array_equal(
        load_image(tmp_path / "c16.png"), [[0, 0, 65535, 32768, 65535, 257]]
    )


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_layouts_are_transposes(tmp_path, dtype):
    hwc = _random(SHAPES["rgba"], dtype, seed=3)
    save_image(tmp_path / "hwc.png", hwc)
    save_image(tmp_path / "chw.png", hwc.transpose(2, 0, 1), layout="CHW")
    a = load_image(tmp_path / "hwc.png")
    b = load_image(tmp_path / "chw.png", layout="CHW")
    assert b.shape == (4, 37, 23) and b.flags.c_contiguous
    np.testing.assert_array_equal(b, a.transpose(2, 0, 1))
    np.testing.assert_array_equal(load_image(tmp_path / "chw.png"), hwc)


def test_gray_is_2d_in_both_layouts_and_single_channel_saves_gray(tmp_path):
    gray = _random((37, 23), np.uint8)
    save_image(tmp_path / "g.png", gray[None], layout="CHW")
    save_image(tmp_path / "h.png", gray[..., None])
    for name in ("g.png", "h.png"):
        with Image.open(tmp_path / name) as im:
            assert im.mode == "L"
        np.testing.assert_array_equal(load_image(tmp_path / name, layout="CHW"), gray)


@pytest.mark.parametrize("suffix", [".jpg", ".jpeg", ".JPG"])
@pytest.mark.parametrize("kind", ["gray", "rgb"])
def test_jpeg_roundtrip_close(tmp_path, suffix, kind):
    yy, xx = np.mgrid[0:64, 0:96]
    base = (127 + 100 * np.sin(xx / 9.0) * np.cos(yy / 7.0)).astype(np.uint8)
    arr = base if kind == "gray" else np.stack([base, base[::-1], 255 - base], axis=-1)
    save_image(tmp_path / f"p{suffix}", arr)
    out = load_image(tmp_path / f"p{suffix}")
    assert out.shape == arr.shape and out.dtype == np.uint8
    assert np.abs(out.astype(int) - arr).mean() < 2.0
    assert (tmp_path / f"p{suffix}").read_bytes()[:2] == b"\xff\xd8"


# -- bundled photos --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, shape, dtype",
    [
        ("astronaut.png", (512, 512, 3), np.uint8),
        ("coffee.png", (400, 600, 3), np.uint8),
        ("chelsea.png", (300, 451, 3), np.uint8),
        ("camera.png", (512, 512), np.uint8),
        ("camera16.png", (512, 512), np.uint16),
    ],
)
def test_bundled_images(name, shape, dtype):
    arr = load_image(IMAGES / name)
    assert arr.shape == shape and arr.dtype == dtype and arr.flags.c_contiguous
    assert arr.max() > arr.min()


def test_camera16_is_camera_times_257():
    cam = load_image(IMAGES / "camera.png")
    np.testing.assert_array_equal(load_image(IMAGES / "camera16.png"), cam.astype(np.uint16) * 257)
    np.testing.assert_allclose(
        load_image(IMAGES / "camera16.png", dtype=np.float32),
        load_image(IMAGES / "camera.png", dtype=np.float32),
        atol=1e-6,
    )


# -- mode conversion -------------------------------------------------------------------------


def test_mode_l_on_rgb_matches_pillow():
    gray = load_image(IMAGES / "chelsea.png", mode="L")
    assert gray.shape == (300, 451) and gray.dtype == np.uint8
    with Image.open(IMAGES / "chelsea.png") as im:
        np.testing.assert_array_equal(gray, np.asarray(im.convert("L")))
    assert load_image(IMAGES / "chelsea.png", mode="L", layout="CHW").shape == (300, 451)


def test_mode_conversions(tmp_path):
    rgba = _random(SHAPES["rgba"], np.uint8, seed=4)
    save_image(tmp_path / "a.png", rgba)
    np.testing.assert_array_equal(load_image(tmp_path / "a.png", mode="RGB"), rgba[..., :3])
    gray = _random(SHAPES["gray"], np.uint8, seed=5)
    save_image(tmp_path / "g.png", gray)
    out = load_image(tmp_path / "g.png", mode="RGBA", layout="CHW")
    assert out.shape == (4, 37, 23)
    np.testing.assert_array_equal(out[:3], np.stack([gray] * 3))
    assert (out[3] == 255).all()


def test_mode_conversions_16bit(tmp_path):
    rgb = _random(SHAPES["rgb"], np.uint16, seed=6)
    save_image(tmp_path / "c.png", rgb)
    gray = load_image(tmp_path / "c.png", mode="L")
    assert gray.shape == (37, 23) and gray.dtype == np.uint16
    expect = np.rint(rgb @ np.array([0.299, 0.587, 0.114]))
    assert np.abs(gray - expect).max() <= 1
    rgba = load_image(tmp_path / "c.png", mode="RGBA")
    np.testing.assert_array_equal(rgba[..., :3], rgb)
    assert (rgba[..., 3] == 65535).all()


# -- the 16-bit reader on hand-made files ---------------------------------------------------


@pytest.mark.parametrize("channels", [2, 3, 4])
def test_png16_reader_all_filters(tmp_path, channels):
    arr = _random((11, 13, channels), np.uint16, seed=7)
    arr[5:8] = arr[4]  # repeated rows make Up/Average/Paeth predictions non-trivial
    filters = [1, 2, 3, 4, 0, 1, 2, 3, 4, 4, 3]
    path = tmp_path / "f.png"
    path.write_bytes(_png16_by_hand(arr, filters))
    out = load_image(path)
    assert out.dtype == np.uint16 and out.shape == arr.shape
    np.testing.assert_array_equal(out, arr)


def test_png16_reader_smooth_paeth(tmp_path):
    yy, xx = np.mgrid[0:9, 0:17]
    arr = np.stack([xx * 3000, yy * 7000, (xx * yy * 400) % 65536], axis=-1).astype(np.uint16)
    path = tmp_path / "s.png"
    path.write_bytes(_png16_by_hand(arr, [4] * 9))
    np.testing.assert_array_equal(load_image(path, layout="CHW"), arr.transpose(2, 0, 1))


# -- errors ----------------------------------------------------------------------------------


def test_load_bad_dtype(tmp_path):
    save_image(tmp_path / "a.png", _random((4, 4), np.uint8))
    with pytest.raises(TypeError, match="int32"):
        load_image(tmp_path / "a.png", dtype=np.int32)
    with pytest.raises(TypeError, match="uint8"):
        load_image(tmp_path / "a.png", dtype="uint8")


def test_bad_layout(tmp_path):
    save_image(tmp_path / "a.png", _random((4, 4), np.uint8))
    with pytest.raises(ValueError, match="'WHC'.*HWC, CHW"):
        load_image(tmp_path / "a.png", layout="WHC")
    with pytest.raises(ValueError, match="'hwc'.*HWC, CHW"):
        save_image(tmp_path / "b.png", _random((4, 4, 3), np.uint8), layout="hwc")


def test_load_bad_mode(tmp_path):
    save_image(tmp_path / "a.png", _random((4, 4), np.uint8))
    with pytest.raises(ValueError, match="'CMYK'"):
        load_image(tmp_path / "a.png", mode="CMYK")


def test_missing_file(tmp_path):
    path = tmp_path / "nope.png"
    with pytest.raises(FileNotFoundError, match=re.escape(str(path))):
        load_image(path)


@pytest.mark.parametrize("content", [b"not an image at all", b"\x89PNG\r\n\x1a\n" + b"\0" * 40])
def test_unreadable_file(tmp_path, content):
    path = tmp_path / "junk.png"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=re.escape(str(path))):
        load_image(path)


@pytest.mark.parametrize("damage", ["crc", "filter", "truncated", "short_data"])
def test_corrupt_png16(tmp_path, damage):
    arr = _random((3, 4, 3), np.uint16)
    good = _png16_by_hand(arr, [0, 1, 2])
    data = {
        "crc": good[:30] + bytes([good[30] ^ 0xFF]) + good[31:],  # a byte of the IHDR CRC
        "filter": _png16_by_hand(arr, [0, 5, 2]),  # 5 is not a PNG filter type
        "truncated": good[: len(good) // 2],
        "short_data": good[:8]
        + _chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 16, 2, 0, 0, 0))
        + good[33:],  # IHDR claims 4 rows, IDAT holds 3
    }[damage]
    path = tmp_path / f"{damage}.png"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=re.escape(str(path))):
        load_image(path)


def test_interlaced_png16_rejected(tmp_path):
    path = tmp_path / "adam7.png"
    path.write_bytes(_png16_by_hand(_random((3, 4, 3), np.uint16), [0, 0, 0], interlace=1))
    with pytest.raises(ValueError, match="interlaced"):
        load_image(path)


def test_save_unknown_extension(tmp_path):
    with pytest.raises(ValueError, match=r"\.bmp"):
        save_image(tmp_path / "a.bmp", _random((4, 4), np.uint8))
    with pytest.raises(ValueError, match="extension"):
        save_image(tmp_path / "noext", _random((4, 4), np.uint8))


def test_save_uint16_jpeg(tmp_path):
    with pytest.raises(ValueError, match="JPEG"):
        save_image(tmp_path / "a.jpg", _random((4, 4), np.uint16))
    with pytest.raises(ValueError, match="JPEG"):
        save_image(tmp_path / "b.jpg", np.zeros((4, 4)), bits=16)
    assert not (tmp_path / "a.jpg").exists()


def test_save_rgba_jpeg(tmp_path):
    with pytest.raises(ValueError, match="alpha"):
        save_image(tmp_path / "a.jpg", _random((4, 4, 4), np.uint8))


@pytest.mark.parametrize("bits", [12, 32, 0])
def test_save_bad_bits(tmp_path, bits):
    with pytest.raises(ValueError, match=f"bits.*{bits}"):
        save_image(tmp_path / "a.png", np.zeros((4, 4)), bits=bits)


@pytest.mark.parametrize("dtype", [np.int32, np.int16, np.uint32, np.bool_])
def test_save_bad_dtype(tmp_path, dtype):
    arr = np.zeros((4, 4), dtype=dtype)
    with pytest.raises(TypeError, match=f"{np.dtype(dtype)}.*uint8, uint16"):
        save_image(tmp_path / "a.png", arr)


@pytest.mark.parametrize(
    "shape, layout",
    [
        ((16,), "HWC"),
        ((2, 3, 4, 3), "HWC"),
        ((4, 5, 2), "HWC"),
        ((4, 5, 5), "HWC"),
        ((2, 4, 5), "CHW"),
        ((5, 4, 5), "CHW"),
    ],
)
def test_save_bad_shape(tmp_path, shape, layout):
    with pytest.raises(ValueError, match=re.escape(str(shape))):
        save_image(tmp_path / "a.png", np.zeros(shape, np.uint8), layout=layout)


@pytest.mark.parametrize(
    "name, fmt", [("a.png", "PNG"), ("a.PNG", "PNG"), ("b.jpg", "JPEG"), ("c.JPEG", "JPEG")]
)
def test_save_format_by_extension(name, fmt):
    assert save_format(name) == fmt


@pytest.mark.parametrize(
    "name, reason",
    [
        ("a.bmp", "unsupported extension '.bmp'"),
        ("a.tif", "unsupported extension '.tif'"),
        ("folder/noext", "no extension"),
    ],
)
def test_save_format_rejects_other_extensions(name, reason):
    with pytest.raises(ValueError, match=re.escape(reason) + r".*\.png, \.jpg, \.jpeg"):
        save_format(name)


def test_unreadable_file_message_says_it_is_not_an_image(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    with pytest.raises(ValueError) as info:
        load_image(path)
    assert "not an image file" in str(info.value) and "BytesIO" not in str(info.value)
