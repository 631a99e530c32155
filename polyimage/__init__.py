"""polyimage: an image-processing pipeline DSL compiled to OpenMP C.

`from polyimage import *` gives the DSL; `polyimage.compile(outputs, ...)` builds a callable
pipeline, and `polyimage.interpret(outputs, ...)` evaluates one with NumPy (the reference).

The modules form layers, each importing only its own and those below (tests/test_layers.py):
errors, version | config, io | dsl (what users write) | algebra (evaluation, affine forms,
simplification, interval bounds) | graph (the stage DAG, inlining) | poly (isl analysis: domains,
accesses, bounds checks) | schedule (schedules, group plans, regions, memory) | grouping (cost
model, DP, baselines) | codegen (C) | jit (build, cache) | arguments, interp (calls, the
reference interpreter) | pipeline, lower, record, report, dump, profile, vectorization (the
driver, lowering to a Compiled record, whole compiles kept on disk) | cli, commands, apps (the
command line, its sub-commands and the example pipelines, installed as polyimage.apps from the
top-level apps/ folder), autotune (the cost weights' tuner), testing (random pipelines and
schedules for tests and the tuner).

`compile`, `Pipeline` and `interpret` are loaded on first use, so that `import polyimage` does
not load isl, cffi and the compiler until a pipeline is compiled or interpreted.
"""

import importlib
from typing import TYPE_CHECKING, Any

from .dsl import *  # noqa: F401,F403  (the DSL is the public surface)
from .dsl import __all__ as _dsl_all
from .errors import (
    ArgumentError,
    ArgumentTypeError,
    BoundsError,
    CacheWarning,
    CheckError,
    CompileError,
    EstimateWarning,
    PipelineError,
    PolyimageError,
    SerialBuildWarning,
    UncoveredReadWarning,
    WeightsWarning,
)
from .schedule import GroupSchedule, Schedule, ScheduleError
from .version import __version__

if TYPE_CHECKING:  # what __getattr__ loads on first use, as type checkers and editors see it
    from .driver.background import BackgroundPipeline
    from .driver.compiling import compile
    from .driver.measured import MeasuredPipeline
    from .driver.pipeline import Pipeline
    from .interp import interpret
    from .tools.deploy import load

__all__ = list(_dsl_all) + [
    "ArgumentError",
    "ArgumentTypeError",
    "BoundsError",
    "CacheWarning",
    "CheckError",
    "CompileError",
    "EstimateWarning",
    "PipelineError",
    "PolyimageError",
    "SerialBuildWarning",
    "UncoveredReadWarning",
    "WeightsWarning",
    "GroupSchedule",
    "Schedule",
    "ScheduleError",
]

LAYERS = (
    ("errors", "version"),
    ("config", "io", "calls", "timing"),
    ("dsl",),
    ("algebra",),
    ("graph",),
    ("poly",),
    ("schedule",),
    ("grouping",),
    ("codegen",),
    ("jit",),
    ("interp",),
    ("driver", "tools"),
    ("scale", "dask"),
    ("commands", "apps", "autotune", "testing"),
)

# public names whose modules load isl and cffi: imported on first use (PEP 562)
_LAZY = {
    "compile": "driver.compiling",
    "Pipeline": "driver.pipeline",
    "BackgroundPipeline": "driver.background",
    "MeasuredPipeline": "driver.measured",
    "interpret": "interp",
    "load": "tools.deploy",
}
_SUBMODULES = {name for layer in LAYERS for name in layer}


def __getattr__(name: str) -> Any:
    """`compile`, `Pipeline`, `interpret` and the submodules, imported when first asked for."""
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The names loaded so far and those `__getattr__` loads on first use."""
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES)
