"""Benchmark pipelines: one module per app, holding the algorithm only.

Every app module defines:
  NAME        its name, as on the command line
  DESCRIPTION one line: what the output shows (listed by `polyimage run --help`)
  PAPER_SIZE  the size parameters of the TOPLAS 2020 paper's Table 1, e.g. {"R": 2848, "C": 4256}
  SMALL_SIZE  odd small sizes for tests, e.g. {"R": 67, "C": 93}
  DEFAULTS    values of the other (non-size) parameters
  PHOTOS      bundled photos (in images/) used when the user gives none
  SCHEDULES   (optional) hand-written schedules by name, as `Schedule.parse` text; the first
              is what `polyimage run` uses by default
  build()                -> (outputs, {name: Parameter})
  prepare(photos, size)  -> {image name: array} from loaded photos (HWC arrays, any dtype),
                            cropped or mirror-tiled to `size` when given, else the photo's size
  reference(**inputs, **params) -> the output array(s), computed with NumPy independently of
                            polyimage.interpret
  to_photo(output)       -> a viewable HWC or HW array (float in [0, 1] or uint8) to save
  VARIANTS    (optional) other pipelines the bench times beside the app under "auto":
              {label: (build, inputs)}, inputs(app inputs) -> that pipeline's inputs (and
              the app's DEFAULTS that its parameters name)
polyimage.commands.runner runs, times and checks any of them; nothing of that is repeated per app.
"""

import importlib

from polyimage.errors import ArgumentError

APP_NAMES = (
    "unsharp_mask",
    "harris",
    "bilateral_grid",
    "pyramid_blend",
    "interpolate",
    "camera_pipe",
    "local_laplacian",
    "histogram_equalize",
    "median_filter",
    "depthwise_conv",
    "resize",
    "nl_means",
    "lens_blur",
    "bilateral_filter",
    "canny_nms",
    "gemm",
    "conv_nchw",
    "conv_nhwc",
    "recursive_filter",
    "integral_box",
)


def app_schedules(app) -> dict:
    """{name: schedule} of an app: the compiler's own ("naive", "auto", "greedy",
    "greedy-cost"), then the app's hand-written ones (as text)."""
    from polyimage.driver.lower import SCHEDULES

    return {**{name: name for name in SCHEDULES}, **getattr(app, "SCHEDULES", {})}


def default_schedule(app) -> str:
    """The schedule `polyimage run` uses: auto, as fast as the apps' hand-written schedules or
    faster in the bench (unsharp_mask's 14.2 against 20.7 ms natively, harris's within 2%);
    those stay a --schedule away."""
    return "auto"


def app_descriptions() -> dict:
    """{app name: (DESCRIPTION, PHOTOS)} of every app, importing the app modules (on demand,
    so that commands that do not list the apps stay quick)."""
    modules = {name: load_app(name) for name in APP_NAMES}
    return {name: (app.DESCRIPTION, app.PHOTOS) for name, app in modules.items()}


def load_app(name: str):
    """The module of app `name`."""
    if name not in APP_NAMES:
        raise ArgumentError(
            f"unknown app {name!r}; available: {', '.join(APP_NAMES)}, or FILE.py:FUNCTION for "
            f"a pipeline of your own"
        )
    return importlib.import_module(f"{__name__}.{name}")
