"""Exceptions raised to users; each message names the stage, image or parameter at fault."""

from __future__ import annotations

from pathlib import Path


class PolyimageError(Exception):
    """Base class of polyimage's own errors."""


class PipelineError(PolyimageError, ValueError):
    """A malformed pipeline: a missing definition, a cycle, clashing names."""


class BoundsError(PolyimageError, ValueError):
    """A read or write outside the domain of the stage it refers to."""


class ArgumentError(PolyimageError, ValueError):
    """A wrong value given to a call or a command: an image of the wrong shape, a parameter out
    of range, a file that is not an image, an unknown option."""


class ArgumentTypeError(PolyimageError, TypeError):
    """An argument of the wrong kind: a list for an image, a float for an integer parameter."""


class MissingExtraError(PolyimageError, ImportError):
    """An optional extra a feature needs is not installed; the message says how to install it."""


class CompileError(PolyimageError, RuntimeError):
    """The C compiler failed; `log_path` holds its full output."""

    def __init__(self, message: str, log_path: Path | None = None):
        super().__init__(message)
        self.log_path = log_path


class CheckError(PolyimageError, RuntimeError):
    """The checked build (POLYIMAGE_CHECK=1) found an index outside its buffer: a compiler
    bug; the message names the buffer, the index, the group and the tile."""


class UncoveredReadWarning(UserWarning):
    """A stage reads producer points that no Case of the producer defines (they hold 0)."""


class EstimateWarning(UserWarning):
    """A parameter that sizes a domain has no estimate; the optimizer assumes a value."""


class WeightsWarning(UserWarning):
    """The cost weights were tuned on another CPU or target."""


class SerialBuildWarning(UserWarning):
    """The C compiler has no OpenMP: pipelines build serial and every call runs on one thread."""


class CacheWarning(UserWarning):
    """A build cache entry was damaged (truncated, garbled, half-deleted) and is rebuilt."""
