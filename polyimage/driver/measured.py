"""Measured schedules: `compile(..., schedule="measured")` returns a `MeasuredPipeline`. Its first
call times a few candidate schedules (auto's choice, greedy-cost, greedy, naive, and auto's
tiles halved and doubled) on the call's own arrays and runs on the fastest from then on.

The choice is kept in the cache (driver/trial.py), so that a later compile in any process
with the same compile, CPU, thread count and shapes finds it without timing.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import warnings
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Generic,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    TypeVar,
)

from ..algebra.evaluate import Evaluator, extent
from ..errors import CacheWarning, PolyimageError
from ..graph.arguments import bind_arguments, bind_positional, check_threads
from ..schedule.plan import GroupSchedule, Schedule
from ..schedule.tiling import TiledGroup
from ..timing import Timing, collector_paused, time_interleaved
from .record import compile_key
from .trial import Trial, load_trial, save_trial, store_path, warn_damaged

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..config import Options
    from ..tools.profile import Profile
    from .lower import Compiled
    from .request import Request

log = logging.getLogger("polyimage")
# candidates compiled by their name; auto's tile variants are compiled from their text
NAMED = ("auto", "greedy-cost", "greedy", "naive")
HALVED, DOUBLED = "auto-halved", "auto-doubled"
RUNS = 7  # timed calls of a candidate at most, after one warm-up
BUDGET_SECONDS = 5.0  # past MIN_RUNS, the rounds stop once the timed calls took this long

# progress(done, total, what): the steps of a trial (compiles, rounds of calls) as they end
ProgressCallback = Callable[[int, int, str], None]


class Candidate(Protocol):
    """What a trial uses of a compiled candidate (a polyimage.driver.pipeline.Pipeline, whose module
    imports this one)."""

    compiled: Any
    schedule: Any

    def __call__(self, *images: Any, **arguments: Any) -> Any: ...

    def report(self, vectorization: bool = False) -> str: ...

    def release(self) -> None: ...

    def profile(self, *images: Any, **arguments: Any) -> Any: ...


Built = TypeVar("Built", bound=Candidate)


def tile_variants(compiled: Compiled) -> dict[str, Schedule]:
    """auto's schedule (`compiled`) with every tiled group's outer tiles halved, then doubled,
    along its outermost dimension cut into several tiles of several points (else of several
    points, halved only): {label: Schedule}, leaving out a variant that changes nothing."""
    evaluate = Evaluator({}, {}, compiled.request.param_values)
    variants = {}
    for label, factor in ((HALVED, 0.5), (DOUBLED, 2.0)):
        groups = []
        for group, plan in zip(compiled.schedule.groups, compiled.group_plans):
            extents: tuple[int, ...] = ()
            if isinstance(plan, TiledGroup) and group.tile_sizes:
                anchor = compiled.stage_graph.stage(plan.anchor).func
                extents = tuple(extent(evaluate, iv) for iv in anchor.intervals)
            groups.append(scaled_group(group, extents, plan_whole(plan), factor))
        varied = Schedule(tuple(groups))
        if varied != compiled.schedule:
            variants[label] = varied
    return variants


def plan_whole(plan: object) -> tuple:
    """The tile dimensions a group's plan holds whole (a scan's), which no size changes."""
    return plan.whole if isinstance(plan, TiledGroup) else ()


def scaled_group(
    group: GroupSchedule, extents: Sequence[int], whole: Sequence[int], factor: float
) -> GroupSchedule:
    """`group` with its outer tile size along the varied dimension times `factor` (at least 1,
    at most the extent; inner sizes no larger); unchanged without tiles or extents."""
    if not group.tile_sizes or len(extents) != len(group.tile_sizes[0]):
        return group
    outer = group.tile_sizes[0]
    several = [d for d, size in enumerate(outer) if size > 1 and d not in whole]
    cut = [d for d in several if outer[d] < extents[d]]
    if not (cut or several):
        return group
    d = (cut or several)[0]
    size = min(max(int(outer[d] * factor), 1), max(extents[d], outer[d]))
    levels = [
        sizes[:d] + (size if level == 0 else min(sizes[d], size),) + sizes[d + 1 :]
        for level, sizes in enumerate(group.tile_sizes)
    ]
    return GroupSchedule(group.stages, tuple(levels))


def time_candidates(
    calls: Mapping[str, Callable[[], object]], step: Callable[[str], None]
) -> dict[str, Timing]:
    """{label: Timing} of the candidates `calls`, timed side by side (timing.time_interleaved)
    with the garbage collector paused: at most RUNS calls each, a candidate trial.SLOWER times
    the best dropped from MIN_RUNS calls on, the rounds ending when one is left or once
    BUDGET_SECONDS were spent timing. `step(text)` hears of each round."""
    with collector_paused():
        return time_interleaved(
            dict(calls),
            RUNS,
            on_round=lambda number: step(f"round {number} of at most {RUNS}"),
            budget_seconds=BUDGET_SECONDS,
            until_one=True,
        )


@dataclass(frozen=True)
class CallArguments:
    """The arguments of the call a trial times the candidates on."""

    images: tuple
    out: Any
    threads: Optional[int]
    arguments: Mapping[str, Any]

    def repeated(self, pipe: Candidate) -> Callable[[], object]:
        """A call of `pipe` on these arguments writing into `out`, else (after the first)
        into the first call's outputs, allocated once as a caller's would be."""
        into = [self.out]

        def call() -> object:
            result = pipe(*self.images, out=into[0], threads=self.threads, **self.arguments)
            if into[0] is None:
                into[0] = result
            return result

        return call


def _requested(field: str, doc: str) -> Any:
    """A read-only attribute read off the compile's request (the same for every candidate),
    without compiling one."""
    return property(lambda pipe: getattr(pipe._request, field), doc=doc)


class MeasuredPipeline(Generic[Built]):
    """A pipeline that chooses its schedule by timing: its first call (or `tune()`) times the
    candidates on its arguments, or finds the choice kept for them, and runs on the fastest
    from then on; every attribute of a `Pipeline` (`schedule`, `report()`, `profile()`...) is
    the winner's, auto's before the first call. `trial` says what was measured. Made by
    `compile(..., schedule="measured")`."""

    def __init__(self, make_pipeline: Callable[[Any, Optional[Options]], Built], request: Request):
        self._make_pipeline, self._request = make_pipeline, request
        self._key = compile_key(request)
        self._candidates: dict[str, Built] = {}
        self._trial: Trial | None = None
        self._winner: Built | None = None
        self._lock = threading.Lock()

    graph = _requested("graph", "The pipeline as written (calls are checked against it).")
    name = _requested("name", "The pipeline's name; the C entry is `pipeline_<name>`.")
    options = _requested("options", "The Options every candidate compiles under.")
    estimates = _requested("estimates", "The estimates given, by parameter name.")
    param_values = _requested("param_values", "Every parameter's value for planning.")

    @property
    def trial(self) -> Trial | None:
        """The measurement the winner came from, None before the first call."""
        return self._trial

    @property
    def candidates(self) -> dict[str, Built]:
        """The candidates compiled so far, by label (only the winner when it came from the
        store); the losers' buffers are released after the trial."""
        return dict(self._candidates)

    def tune(
        self,
        *images: ArrayLike,
        out: ArrayLike | Sequence[ArrayLike] | None = None,
        threads: int | None = None,
        force: bool = False,
        progress: ProgressCallback | None = None,
        **arguments: ArrayLike,
    ) -> Trial:
        """Choose the schedule for calls like this one: the choice kept for them, else the
        fastest candidate, timed and kept. Only the first choice counts: later calls with
        other shapes run its winner.

        Args:
            *images: the input image by position, as in a call.
            out: preallocated outputs, as in a call (the timed calls write into them).
            threads: the threads of each timed call, as in a call.
            force: time the candidates again even where a choice is kept for these
                arguments.
            progress: `progress(done, total, what)` hears of each compile and round of
                calls (a progress bar, say).
            **arguments: the images and Parameters by name, as in a call.

        Returns:
            The `Trial`: the winner, and what each candidate measured.
        """
        return self._tune(CallArguments(images, out, threads, arguments), force, progress)

    def _tune(
        self, call: CallArguments, force: bool = False, progress: ProgressCallback | None = None
    ) -> Trial:
        """`tune` of one call's arguments: the first trial, or a new one with `force`; calls
        from other threads meanwhile wait for it."""
        with self._lock:
            if self._trial is None or force:
                self._trial = self._choose(call, force, progress or _silent)
            return self._trial

    def _choose(self, call: CallArguments, force: bool, progress: ProgressCallback) -> Trial:
        """The stored choice for these arguments, its winner compiled; else a new trial."""
        nthreads = check_threads(call.threads)
        named = dict(call.arguments)
        if call.images:
            named = bind_positional(self.graph, call.images, named)
        binding = bind_arguments(self.graph, named, self._request.constraints)
        path = store_path(self.options, self._key, binding.arrays, binding.params, nthreads)
        keep = self.options.use_cache
        stored = load_trial(path) if keep and not force else None
        if stored is not None:
            try:
                self._winner = self._candidate(stored.winner, stored.schedules[stored.winner])
                return stored
            except PolyimageError as exc:
                warn_damaged(path, exc)
        trial = self._measure(call, progress)
        if keep:
            try:
                save_trial(path, trial)
                trial = dataclasses.replace(trial, path=str(path))
            except OSError as exc:
                warnings.warn(f"could not keep the measured schedule: {exc}", CacheWarning)
        return trial

    def _candidate(self, label: str, text: str | None) -> Built:
        """Candidate `label` compiled (once): by name, or from its schedule's text."""
        if label not in self._candidates:
            schedule = label if label in NAMED else Schedule.parse(text or "")
            self._candidates[label] = self._make_pipeline(schedule, None)
        return self._candidates[label]

    def _measure(self, call: CallArguments, progress: ProgressCallback) -> Trial:
        """Compile the candidates, time the distinct ones on these arguments, keep the fastest."""
        auto = self._candidate("auto", None)
        variants = {label: str(s) for label, s in tile_variants(auto.compiled).items()}
        labels = [*NAMED, *variants]
        total, done = len(labels) + RUNS, 0
        schedules: dict[str, str] = {}
        same_as: dict[str, str] = {}
        calls: dict[str, Callable[[], object]] = {}
        for label in labels:
            progress(done, total, f"compiling {label}")
            done += 1
            known = {text: k for k, text in schedules.items()}
            text = variants.get(label)
            if text is None or text not in known:
                try:
                    text = str(self._candidate(label, text).schedule)
                except PolyimageError as exc:
                    if label == "auto":
                        raise
                    log.warning("measured schedule: candidate %s left out: %s", label, exc)
                    continue
            schedules[label] = text
            if text in known:
                same_as[label] = known[text]
            else:
                calls[label] = call.repeated(self._candidates[label])

        def step(what: str) -> None:
            nonlocal done
            done += 1
            progress(done, total, f"timing: {what}")

        timings = time_candidates(calls, step)
        progress(total, total, "timed")
        medians = {label: timing.seconds for label, timing in timings.items()}
        most = max(timing.runs for timing in timings.values())
        winner = min((k for k in medians if timings[k].runs == most), key=medians.__getitem__)
        self._winner = self._candidates[winner]
        for label, pipe in self._candidates.items():
            if label != winner:
                pipe.release()
        return Trial(
            winner=winner,
            schedules=schedules,
            medians=medians,
            calls={label: timing.runs for label, timing in timings.items()},
            same_as=same_as,
            measured=time.strftime("%Y-%m-%d %H:%M"),
            from_store=False,
            path="",
        )

    def _current(self) -> Built:
        """The winner, else (before the first call) auto's compile."""
        with self._lock:
            return self._winner or self._candidate("auto", None)

    def __call__(
        self,
        *images: ArrayLike,
        out: ArrayLike | Sequence[ArrayLike] | None = None,
        threads: int | None = None,
        **arguments: ArrayLike,
    ) -> Any:
        """Run as `Pipeline.__call__` does, on the winner; the first call chooses it (`tune`).

        Args:
            *images: the input image by position, as in `Pipeline.__call__`.
            out: preallocated outputs, as there.
            threads: the threads of this call, as there.
            **arguments: the images and Parameters by name, as there.

        Returns:
            The output array, or a tuple of them for several outputs.
        """
        winner = self._winner
        if winner is None:
            self._tune(CallArguments(images, out, threads, arguments))
            winner = self._current()
        return winner(*images, out=out, threads=threads, **arguments)

    def profile(
        self, *images: ArrayLike, runs: int = 5, threads: int | None = None, **arguments: ArrayLike
    ) -> Profile:
        """`Pipeline.profile` of the winner, chosen first for these arguments if need be.

        Args:
            *images: the input image by position, as in a call.
            runs: the calls timed, as in `Pipeline.profile`.
            threads: the threads of each call.
            **arguments: the images and Parameters by name.

        Returns:
            The winner's `Profile`.
        """
        self._tune(CallArguments(images, None, threads, arguments))
        return self._current().profile(*images, runs=runs, threads=threads, **arguments)

    def report(self, vectorization: bool = False) -> str:
        """What was measured (`Trial.describe`: the winner, each candidate's median, the gain
        over auto, whether the choice came from the store), then the winner's report.

        Args:
            vectorization: as in `Pipeline.report`: say which innermost loops the C
                compiler vectorized.

        Returns:
            The report, several lines of text.
        """
        trial = self._trial
        head = (
            trial.describe()
            if trial is not None
            else "measured schedule: not measured yet (the first call times the candidates); "
            "auto's compile until then"
        )
        return f"{head}\n\n{self._current().report(vectorization)}"

    def release(self) -> None:
        """Free the buffers every compiled candidate keeps for its next call."""
        for pipe in self.candidates.values():
            pipe.release()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._current(), name)

    def __repr__(self) -> str:
        trial = self._trial
        state = "not measured yet" if trial is None else trial.summary().partition(": ")[2]
        return f"<MeasuredPipeline {self.name}: {state}>"


def _silent(done: int, total: int, what: str) -> None:
    """A progress callback that says nothing."""
