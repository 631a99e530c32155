"""polyimage: an image-processing pipeline DSL compiled to OpenMP C.

`from polyimage import *` gives the DSL; `polyimage.compile(outputs, ...)` builds a callable
pipeline, and `polyimage.interpret(outputs, ...)` evaluates one with NumPy (the reference).
"""
from .dsl import *  # noqa: F401,F403  (the DSL is the public surface)
from .dsl import __all__ as _dsl_all
from .errors import (BoundsError, CacheWarning, CompileError, PipelineError, PolyimageError,
                     UncoveredReadWarning)
from .interp import interpret
from .pipeline import Pipeline, compile
from .schedule import GroupSchedule, Schedule, ScheduleError
from .version import __version__

__all__ = list(_dsl_all) + ["BoundsError", "CacheWarning", "CompileError", "PipelineError",
                            "PolyimageError",
                            "UncoveredReadWarning", "GroupSchedule", "Schedule", "ScheduleError"]
