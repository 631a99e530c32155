"""`polyimage run FILE.py:function`: a user's pipeline on photos, as `run` does an app: each
input image gets a photo (grey for a 2-D image, channels first for a 3-D one, in the image's
pixel type), the sizes come from the photos, and the first output is saved as a photo."""

from __future__ import annotations

import numpy as np

import polyimage
from polyimage.apps.inputs import bundled, to_float
from polyimage.dsl import expr as E
from polyimage.errors import ArgumentError
from polyimage.graph import build_graph
from polyimage.graph.arguments import bind_arguments
from polyimage.io import load_image, save_image

from .cli_arguments import (
    check_output_path,
    load_input,
    note_bundled_photos,
    pipeline_source,
    resolve_schedule,
    typed_values,
)
from .timing import compile_timed, time_calls


def is_user_pipeline(target: str) -> bool:
    """Whether `target` names a function of a file (FILE.py:function), not an app."""
    path, sep, _ = target.rpartition(":")
    return bool(sep) and path.endswith(".py")


def run_user_pipeline(
    target, inputs, output, params, threads, runs, check, schedule, report, contract=None
) -> dict:
    """Compile the pipeline `target` returns (with multiply-add contraction as `contract`
    says, None: as the options do), run it on photos (the bundled astronaut for each image by
    default), time it, compare it with the interpreter with `check`, and save its first
    output to `output`. Returns the timings in seconds."""
    if output:
        check_output_path(output)
    outputs, _, _ = pipeline_source(target)
    graph = build_graph(outputs)
    images = sorted(graph.images, key=lambda img: img.name)
    if inputs and len(inputs) != len(images):
        names = ", ".join(img.name for img in images)
        raise ArgumentError(
            f"{target} takes {len(images)} input image(s) ({names}), got {len(inputs)} photo(s)"
        )
    photos = [load_input(p) for p in inputs] or [load_image(bundled())] * len(images)
    arguments = {img.name: photo_array(img, photo) for img, photo in zip(images, photos)}
    arguments.update(typed_values({p.name: p for p in graph.parameters}, params))
    sizes = bind_arguments(graph, arguments).params
    estimates = {p.name: sizes[p.name] for p in graph.parameters if p.typ.is_int}
    chosen = resolve_schedule(None, schedule)
    if not inputs:
        note_bundled_photos(target, [bundled().name], [img.name for img in images])
    pipe, compile_seconds = compile_timed(
        outputs, report, estimates=estimates, schedule=chosen, contract=contract
    )
    result, median = time_calls(pipe, arguments, threads, runs, report)
    first = result[0] if isinstance(result, tuple) else result
    if check:
        expected = polyimage.interpret(outputs, (), **arguments)
        expected = expected[0] if isinstance(expected, tuple) else expected
        err = float(np.max(np.abs(first.astype(np.float64) - expected), initial=0.0))
        report(f"{pipe.name}: max abs difference from the interpreter {err:.3g}")
    if output:
        save_image(output, to_photo(first))
        report(f"{pipe.name}: wrote {output}")
    return {"compile": compile_seconds, "run": median}


def photo_array(image, photo) -> np.ndarray:
    """`photo` (HWC or HW, any dtype) as Image `image` takes it: grey HxW for a 2-D image,
    CxHxW for a 3-D one (C its first extent when that is a constant, else 3), in its pixel
    type (floats in [0, 1], integers over their range)."""
    if image.ndim == 2:
        array = to_float(photo, 1)[:, :, 0]
    elif image.ndim == 3:
        first = image.extents[0]
        channels = int(first.value) if isinstance(first, E.Const) else 3
        array = np.moveaxis(to_float(photo, channels), 2, 0)
    else:
        raise ArgumentError(
            f"image {image.name} has {image.ndim} dimensions: a photo fills a 2-D (grey) or 3-D "
            f"(channels first) image; call the pipeline from Python for other inputs"
        )
    dtype = np.dtype(image.typ.dtype)
    if dtype.kind in "ui":
        array = np.round(array * np.iinfo(dtype).max)
    return np.ascontiguousarray(array.astype(dtype))


def to_photo(result: np.ndarray) -> np.ndarray:
    """An output array as a photo: HW grey, or CxHxW (1, 3 or 4 channels first) as HWC;
    floats clipped to [0, 1], integers scaled from their range to 8 bits."""
    array = np.asarray(result)
    if array.ndim == 3 and array.shape[0] in (1, 3, 4):
        array = np.moveaxis(array, 0, 2)
        array = array[:, :, 0] if array.shape[2] == 1 else array
    if array.ndim not in (2, 3):
        raise ArgumentError(
            f"the output is {array.ndim}-D ({'x'.join(map(str, array.shape))}): only a 2-D or "
            f"channels-first 3-D output can be saved as a photo"
        )
    if array.dtype.kind == "f":
        return np.clip(array, 0.0, 1.0).astype(np.float32)
    if array.dtype == np.uint8:
        return array
    info = np.iinfo(array.dtype)
    scaled = (array.astype(np.float64) - max(info.min, 0)) / (info.max - max(info.min, 0))
    return np.clip(scaled, 0.0, 1.0).astype(np.float32)
