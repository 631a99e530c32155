"""Compiling in the background: `compile(..., background=True)` returns at once; a thread builds a
quick compile of the pipeline first, which calls run on, then the schedule asked for, which calls
run on once it is built. One after the other, since both are mostly Python (one interpreter
lock) and C compiles (the same cores): at once, each would take as long as both."""

from __future__ import annotations

import dataclasses
import threading
from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar

from ..errors import ArgumentError

if TYPE_CHECKING:
    from ..config import Options

# the compiled pipeline (polyimage.driver.pipeline.Pipeline, which imports this module): anything
# callable
Built = TypeVar("Built", bound=Callable[..., Any])

FALLBACK_SCHEDULE = "naive"


def quick_options(options: Options) -> Options:
    """`options` for the fallback: -O1 and one plain loop nest per stage (no versions of
    innermost loops), which the C compiler builds several times faster."""
    return dataclasses.replace(
        options, cflags=tuple(options.cflags) + ("-O1",), plain_points=1 << 62
    )


class BackgroundPipeline(Generic[Built]):
    """A pipeline compiled in a thread: first a naive compile built quickly (`quick_options`),
    then the one asked for. A call runs on the latter once it is built, else on the former
    (waiting for it if need be); `wait()` returns the optimized `Pipeline` (raising its compile
    error, if any), and every attribute other than calling waits for it. Made by
    `compile(..., background=True)`."""

    def __init__(
        self,
        make_pipeline: Callable[[Any, Options | None], Built],
        schedule: Any,
        options: Options,
    ):
        self._make_pipeline, self._fallback_options = make_pipeline, quick_options(options)
        self._schedule = schedule
        self._fallback: Built | None = None
        self._optimized: Built | None = None
        self._error: BaseException | None = None
        self._changed = threading.Condition()
        self._ended = False
        self._thread = threading.Thread(
            target=self._build, name="polyimage-background-compile", daemon=True
        )
        self._thread.start()

    def _build(self) -> None:
        try:
            self._fallback = self._make_pipeline(FALLBACK_SCHEDULE, self._fallback_options)
        except Exception:  # the compile asked for fails the same way, and says so
            pass
        with self._changed:
            self._changed.notify_all()
        try:
            self._optimized = self._make_pipeline(self._schedule, None)
        except BaseException as exc:  # raised again by wait() and by calls
            self._error = exc
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def ready(self) -> bool:
        """Whether the compile asked for has ended (built or failed)."""
        return self._ended

    def wait(self, timeout: float | None = None) -> Built:
        """The optimized `Pipeline`, once built.

        Args:
            timeout: the seconds to wait at most (None: as long as it takes).

        Returns:
            The `Pipeline` of the compile asked for.

        Raises:
            TimeoutError: it is not built after `timeout` seconds.
            ArgumentError: `timeout` is negative or not a number.
            PolyimageError: the compile's own error, such as a BoundsError.
        """
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout >= 0):
            raise ArgumentError(f"timeout must be a number of seconds >= 0, got {timeout!r}")
        with self._changed:
            if not self._changed.wait_for(lambda: self._ended, timeout):
                raise TimeoutError(f"the background compile did not end within {timeout} s")
        if self._error is not None:
            raise self._error
        assert self._optimized is not None  # built, as the compile ended without an error
        return self._optimized

    @property
    def serving(self) -> str:
        """Which compile a call made now runs on: "optimized", or "fallback" (the quick naive
        one, once built)."""
        return "optimized" if self._ended else "fallback"

    def _current(self) -> Built:
        with self._changed:
            self._changed.wait_for(lambda: self._ended or self._fallback is not None)
            fallback = None if self._ended else self._fallback
        return fallback if fallback is not None else self.wait()

    def __call__(self, *images: Any, **arguments: Any) -> Any:
        """Run as `Pipeline.__call__` does, on whichever compile is ready.

        Args:
            *images: the input image by position, as in `Pipeline.__call__`.
            **arguments: the images, Parameters, `out=` and `threads=`, as there.

        Returns:
            The output array, or a tuple of them for several outputs.
        """
        return self._current()(*images, **arguments)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.wait(), name)

    def __repr__(self) -> str:
        state = "ended" if self._ended else "compiling"
        schedule = self._schedule if isinstance(self._schedule, str) else "given schedule"
        return f"<BackgroundPipeline ({schedule}, {state})>"
