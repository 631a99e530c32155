"""Compiling in the background: `compile(..., background=True)` returns at once, and calls run
on a naive compile of the same pipeline (cheap to build) until the schedule asked for is built in
a thread."""

from __future__ import annotations

import threading

from .errors import ArgumentError

FALLBACK_SCHEDULE = "naive"


class BackgroundPipeline:
    """A pipeline whose compile runs in a thread. Calls made before it is built go to a naive
    compile, made on the first call that needs it; `wait()` returns the optimized `Pipeline`
    (raising its compile error, if any), and every attribute other than calling waits for it."""

    def __init__(self, make_pipeline, schedule):
        self._make_pipeline = make_pipeline
        self._schedule = schedule
        self._fallback = self._optimized = self._error = None
        self._fallback_lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._build, name="polyimage-background-compile", daemon=True
        )
        self._thread.start()

    def _build(self) -> None:
        try:
            self._optimized = self._make_pipeline(self._schedule)
        except BaseException as exc:  # raised again by wait() and by calls
            self._error = exc
        finally:
            self._done.set()

    def ready(self) -> bool:
        """Whether the compile in the background has ended (built or failed)."""
        return self._done.is_set()

    def wait(self, timeout=None):
        """The optimized `Pipeline`, once built: blocks up to `timeout` seconds (None: as long
        as it takes), raising TimeoutError after that, or the compile's own error."""
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout >= 0):
            raise ArgumentError(f"timeout must be a number of seconds >= 0, got {timeout!r}")
        if not self._done.wait(timeout):
            raise TimeoutError(f"the background compile did not end within {timeout} s")
        if self._error is not None:
            raise self._error
        return self._optimized

    @property
    def serving(self) -> str:
        """Which compile the next call runs on: "optimized" or "fallback" (the naive one)."""
        return "optimized" if self._done.is_set() else "fallback"

    def _current(self):
        if self._done.is_set():
            return self.wait()
        with self._fallback_lock:
            if self._fallback is None and not self._done.is_set():
                self._fallback = self._make_pipeline(FALLBACK_SCHEDULE)
        return self.wait() if self._done.is_set() else self._fallback

    def __call__(self, *images, **arguments):
        """Run as `Pipeline.__call__` does, on whichever compile is ready."""
        return self._current()(*images, **arguments)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.wait(), name)

    def __repr__(self):
        state = "ended" if self._done.is_set() else "compiling"
        schedule = self._schedule if isinstance(self._schedule, str) else "given schedule"
        return f"<BackgroundPipeline ({schedule}, {state})>"
