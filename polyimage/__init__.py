"""polyimage: an image-processing pipeline DSL compiled to OpenMP C.

`from polyimage import *` gives the DSL; `polyimage.compile(outputs, ...)` builds a callable
pipeline, and `polyimage.interpret(outputs, ...)` evaluates one with NumPy (the reference).

The modules form layers, each importing only its own and those below (tests/test_layers.py):
errors, version | config, io | dsl (what users write) | algebra (evaluation, affine forms,
simplification, interval bounds) | graph (the stage DAG, inlining) | poly (isl analysis: domains,
accesses, bounds checks) | schedule (schedules, group plans, regions, memory) | grouping (cost
model, DP, baselines) | codegen (C) | jit (build, cache) | arguments, interp (calls, the
reference interpreter) | pipeline, report, dump, profile, vectorization (the driver) | cli,
apps (the command line and the example pipelines, installed as polyimage.apps from the
top-level apps/ folder).
"""

from .dsl import *  # noqa: F401,F403  (the DSL is the public surface)
from .dsl import __all__ as _dsl_all
from .errors import (
    ArgumentError,
    ArgumentTypeError,
    BoundsError,
    CacheWarning,
    CompileError,
    EstimateWarning,
    PipelineError,
    PolyimageError,
    UncoveredReadWarning,
)
from .interp import interpret
from .pipeline import Pipeline, compile
from .schedule import GroupSchedule, Schedule, ScheduleError
from .version import __version__

__all__ = list(_dsl_all) + [
    "ArgumentError",
    "ArgumentTypeError",
    "BoundsError",
    "CacheWarning",
    "CompileError",
    "EstimateWarning",
    "PipelineError",
    "PolyimageError",
    "UncoveredReadWarning",
    "GroupSchedule",
    "Schedule",
    "ScheduleError",
]

LAYERS = (
    ("errors", "version"),
    ("config", "io"),
    ("dsl",),
    ("algebra",),
    ("graph",),
    ("poly",),
    ("schedule",),
    ("grouping",),
    ("codegen",),
    ("jit",),
    ("arguments", "interp"),
    ("pipeline", "report", "dump", "profile", "vectorization"),
    ("cli", "apps"),
)
