"""`polyimage tune`: measure candidate schedules of the training set, fit the cost weights to
the measurements, check them on each app left out of the fit, and write the weights file that
`compile` reads.

The budget is shared by phases, each ending at a share of it (PHASES); whatever a phase leaves
undone is skipped, and every measurement is in the store the moment it is made."""

from __future__ import annotations

import dataclasses
import datetime
import os
import random
import re
import time
from pathlib import Path

import numpy as np

import polyimage
from polyimage.config import Options, is_count
from polyimage.driver.request import target_machine
from polyimage.errors import PolyimageError
from polyimage.graph.arguments import MAX_THREADS
from polyimage.grouping.cost import CostModel, Weights
from polyimage.grouping.machine import Machine, available_cores, cpu_model
from polyimage.grouping.weights import TARGET_KEY, write_weights_file
from polyimage.schedule.plan import Schedule
from polyimage.timing import time_interleaved

from . import tuning_report as tables
from .candidates import auto_pick, base_candidates, schedule_cost
from .fit import geometric_mean, log_uniform_samples, search
from .progress import Progress
from .store import Measurement, MeasurementStore, TuneError
from .subjects import SIZES, training_set

DEFAULT_BUDGET = "20m"
DEFAULT_RUNS = 7
DEFAULT_SAMPLES = 16
SAMPLES_PER_ROUND = 4
MAX_EVALUATIONS = 60
MIN_BUDGET_SECONDS = 10.0
# the share of the budget at which each phase stops starting new work
PHASES = {"candidates": 0.45, "samples": 0.6, "fit": 0.8, "held out": 0.95, "end": 1.0}
_BUDGET = re.compile(r"(\d+(?:\.\d*)?)\s*(s|m|min|h)?", re.IGNORECASE)
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "min": 60, "h": 3600}


def parse_budget(text) -> float:
    """`90`, `90s`, `3m`, `1.5h` as seconds; too little for one measurement is an error."""
    match = _BUDGET.fullmatch(str(text).strip())
    if not match:
        raise TuneError(f"--budget must be a duration such as 90s, 20m or 1h, got {text!r}")
    seconds = float(match[1]) * _UNIT_SECONDS[(match[2] or "").lower()]
    if seconds < MIN_BUDGET_SECONDS:
        raise TuneError(
            f"--budget {text} is too small for one measurement (a compile and its timed runs): "
            f"give at least {MIN_BUDGET_SECONDS:g}s"
        )
    return seconds


class Clock:
    """Seconds since the start against the budget."""

    def __init__(self, budget: float):
        self.budget, self.start = budget, time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def past(self, phase: str) -> bool:
        return self.elapsed() >= PHASES[phase] * self.budget


def machine_key(machine: Machine) -> str:
    """The processor, the cache sizes the model plans for and the target's vector width
    (measurements are per machine and target)."""
    return (
        f"{cpu_model()}; L1 {machine.l1_bytes}, L2 {machine.l2_bytes}, "
        f"LLC {machine.llc_bytes} bytes; {machine.cores} cores; {machine.vector_bytes}-byte "
        f"vectors"
    )


def check_writable(path: Path, what: str) -> None:
    """An error now, before anything is measured, when `path` cannot be written."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TuneError(f"{what} {path}: cannot create its folder ({exc.strerror})") from None
    if (
        path.is_dir()
        or not os.access(folder, os.W_OK)
        or (path.exists() and not os.access(path, os.W_OK))
    ):
        raise TuneError(f"{what} {path}: not writable")


class Tuner:
    """Measures schedules of the subjects into the store, and prices weights by the measured
    time of what `auto` picks under them."""

    def __init__(self, store, machine, options, threads, runs, clock, progress):
        self.store, self.machine, self.options = store, machine, options
        self.machine_key = machine_key(machine)
        self.threads, self.runs, self.clock, self.progress = threads, runs, clock, progress
        self.picks, self.models = {}, {}
        self.new_measurements = 0

    def known(self, subject, schedule) -> Measurement | None:
        return self.store.get(subject.key, str(schedule), self.machine_key, self.threads)

    def measured(self, subject) -> list:
        """The measurements of `subject` on this machine and thread count."""
        key = (subject.key, self.machine_key, self.threads)
        return [m for m in self.store.known.values() if (m.pipeline, m.machine, m.threads) == key]

    def best(self, subject) -> Measurement | None:
        timed = [m for m in self.measured(subject) if m.seconds is not None]
        return min(timed, key=lambda m: m.seconds) if timed else None

    def measure(self, subject, schedules: dict, phase: str) -> None:
        """Compile and time those of `schedules` ({label: Schedule}) not in the store yet,
        interleaved, while `phase` lasts; each result goes into the store as it is made."""
        todo, seen = {}, set()
        for label, schedule in schedules.items():
            if self.known(subject, schedule) is None and str(schedule) not in seen:
                todo[label] = schedule
                seen.add(str(schedule))
        if not todo:
            return
        self.progress.add(len(todo))
        calls = {}
        for number, (label, schedule) in enumerate(todo.items()):
            if self.clock.past(phase):
                self.progress.add(number - len(todo))  # those left out
                break
            self.progress.start(f"{subject.name}: compiling {label}", self.clock)
            try:
                calls[label] = self._call(subject, schedule)
            except PolyimageError as exc:
                self._record(subject, label, todo[label], None, error=str(exc).splitlines()[0])
        if not calls:
            return
        noun = "schedule" if len(calls) == 1 else "schedules"
        self.progress.start(f"{subject.name}: timing {len(calls)} {noun}", self.clock)
        best = self.best(subject)
        time_interleaved(
            calls,
            self.runs,
            on_done=lambda label, t: self._record(subject, label, todo[label], t),
            best_known=best.seconds if best else None,
        )

    def _call(self, subject, schedule):
        """A function that runs `subject` under `schedule` once, into the same output."""
        pipe = subject.compile(schedule, self.options)
        result = pipe(threads=self.threads, **subject.arguments)
        return lambda: pipe(threads=self.threads, out=result, **subject.arguments)

    def _record(self, subject, label, schedule, timing, error=""):
        self.store.add(
            Measurement(
                subject.key,
                str(schedule),
                self.machine_key,
                self.threads,
                label,
                timing.seconds if timing else None,
                timing.runs if timing else 0,
                timing.stopped if timing else False,
                error,
            )
        )
        self.new_measurements += 1
        self.progress.done()

    def pick(self, subject, weights: Weights):
        """The schedule `auto` picks for `subject` under `weights` (each worked out once)."""
        key = (subject.key, dataclasses.astuple(weights))
        if key not in self.picks:
            self.progress.start(
                f"{subject.name}: auto's choice under weights #{len(self.picks)}", self.clock
            )
            if subject.key not in self.models:
                self.models[subject.key] = CostModel(
                    subject.graph, subject.params, self.machine, multilevel=self.options.multilevel
                )
            self.picks[key] = auto_pick(
                subject,
                self.machine,
                weights,
                multilevel=self.options.multilevel,
                model=self.models[subject.key],
            )
        return self.picks[key]

    def seconds(self, subject, weights: Weights, phase: str, label: str):
        """Measured seconds of the pick under `weights` (measured now if the phase lasts;
        None when it does not, inf when the schedule failed)."""
        schedule = self.pick(subject, weights)
        if self.known(subject, schedule) is None and not self.clock.past(phase):
            self.measure(subject, {label: schedule}, phase)
        found = self.known(subject, schedule)
        if found is None:
            return None
        return np.inf if found.seconds is None else found.seconds

    def fit(self, subjects, samples, phase: str):
        """The Fit of the weights on `subjects` from the defaults and `samples`, searched
        while `phase` lasts."""
        return search(
            self.score(subjects, phase),
            Weights(),
            samples,
            MAX_EVALUATIONS,
            out_of_time=lambda: self.clock.past(phase),
        )

    def score(self, subjects, phase: str):
        """score(weights): the geometric mean of the seconds of what `auto` picks under them
        (None when one cannot be measured in time)."""

        def score(weights):
            times = [self.seconds(s, weights, phase, "auto, fitted weights") for s in subjects]
            if any(t is None for t in times):
                return None
            return np.inf if np.inf in times else geometric_mean(times)

        return score


def tune(
    apps=(),
    size="medium",
    budget=DEFAULT_BUDGET,
    threads=None,
    out=None,
    resume=False,
    plot=None,
    seed=0,
    random_count=0,
    runs=DEFAULT_RUNS,
    samples=DEFAULT_SAMPLES,
    store=None,
    report=print,
    march=None,
) -> dict:
    """Tune the weights on this machine (see the module docstring); returns what the weights
    file holds. `march`: the CPU to build for, as compile's (default: POLYIMAGE_MARCH, else
    native). Checks every argument before measuring anything."""
    clock = Clock(parse_budget(budget))
    if size not in SIZES:
        raise TuneError(f"--size must be one of {', '.join(SIZES)}, got {size!r}")
    if threads is not None and not (is_count(threads) and threads <= MAX_THREADS):
        raise TuneError(f"--threads must be between 1 and {MAX_THREADS}, got {threads!r}")
    for name, value, least in (
        ("--random", random_count, 0),
        ("--samples", samples, 0),
        ("--seed", seed, 0),
        ("--runs", runs, 1),
    ):
        if not is_count(value, least):
            raise TuneError(f"{name} must be an integer >= {least}, got {value!r}")
    options = Options.from_env()
    if march is not None:
        try:
            options = options.for_march(march)
        except ValueError as exc:
            raise TuneError(str(exc)) from None
    out = Path(out or options.weights_file)
    check_writable(out, "weights file")
    store_path = Path(store) if store else out.with_name(out.stem + ".measurements.jsonl")
    check_writable(store_path, "measurement store")
    if plot:
        tables.check_plot_path(Path(plot))
        check_writable(Path(plot), "--plot")
    plot_note = tables.plot_unavailable(plot) if plot else None
    if plot_note:
        report(plot_note)
    threads = threads or available_cores()
    options = dataclasses.replace(options, machine={**options.machine, "cores": threads})
    machine, _ = target_machine(options)
    subjects = training_set(apps, size, random_count, seed)
    measurements = MeasurementStore(store_path, resume)
    report(
        f"tuning on {len(subjects)} pipelines at size {size}, {threads} threads, budget "
        f"{clock.budget:.0f} s; measurements go to {store_path}"
        + (f" ({measurements.resumed} from earlier runs)" if resume else "")
    )
    progress = Progress()
    tuner = Tuner(measurements, machine, options, threads, runs, clock, progress)
    try:
        result = _tune(
            tuner, subjects, clock, seed, samples, size, report, bool(plot and not plot_note)
        )
    except KeyboardInterrupt:
        count = tuner.new_measurements
        raise TuneError(
            f"interrupted; {count} measurement{'' if count == 1 else 's'} of this run kept in "
            f"{store_path}: run again with --resume to go on"
        ) from None
    finally:
        progress.close()
        measurements.close()
    write_weights_file(out, result["weights"], result["metadata"])
    report(tables.summary(result, tuner.new_measurements, clock.elapsed()))
    report(f"wrote {out}")
    if plot and not plot_note:
        tables.plot_costs(plot, result["points"])
        report(f"wrote {plot}")
    return result


def _tune(tuner, subjects, clock, seed, sample_count, size, report, with_points) -> dict:
    for subject in subjects:
        tuner.progress.start(f"{subject.name}: analysing", clock)
        subject.analyze(tuner.options)
    base = {}
    for subject in subjects:
        if clock.past("candidates"):
            report(f"note: the budget ran out before {subject.name}'s candidates; left out")
            continue
        tuner.progress.start(f"{subject.name}: finding candidates", clock)
        base[subject.key] = base_candidates(subject, tuner.machine, tuner.options.multilevel)
        tuner.measure(subject, base[subject.key], "candidates")
    trained = [
        s for s in subjects if s.key in base and tuner.known(s, base[s.key]["auto"]) is not None
    ]
    if not trained:
        raise TuneError(
            f"the budget ({clock.budget:.0f} s) ran out before one pipeline was measured; "
            f"give a larger --budget ({len(tuner.store.known)} measurements kept, --resume "
            f"reuses them)"
        )
    samples = log_uniform_samples(random.Random(seed), sample_count)
    for first in range(0, len(samples), SAMPLES_PER_ROUND):
        for subject in trained:
            if clock.past("samples"):
                break
            chunk = samples[first : first + SAMPLES_PER_ROUND]
            picks = {
                f"auto, weights sample {first + k}": tuner.pick(subject, w)
                for k, w in enumerate(chunk)
            }
            tuner.measure(subject, picks, "samples")
    fitted = tuner.fit(trained, samples, "fit")
    held_out = {}
    apps = [s for s in trained if s.is_app]
    for subject in apps if len(apps) > 1 else ():
        if clock.past("held out"):
            report(f"note: the budget ran out before the held-out check of {subject.name}")
            break
        others = [s for s in trained if s is not subject]
        alone = tuner.fit(others, samples, "held out")
        held_out[subject.key] = tuner.seconds(subject, alone.weights, "end", "auto, held out")
    return results(tuner, trained, fitted, held_out, size, clock.elapsed(), with_points)


def results(tuner, trained, fitted, held_out, size, seconds, with_points=False) -> dict:
    """The weights, the weights file's metadata, a row per pipeline (seconds of naive, of
    `auto` under the default and the tuned weights, held out, and of the best candidate) and,
    `with_points`, (pipeline, seconds, model cost under defaults, under tuned) per schedule."""
    rows, points = {}, []
    for subject in trained:
        best = tuner.best(subject)

        def seconds_of(schedule):
            found = tuner.known(subject, schedule)
            return found.seconds if found else None

        rows[subject.key] = {
            "naive": seconds_of(Schedule.naive(subject.graph)),
            "defaults": seconds_of(tuner.pick(subject, Weights())),
            "tuned": seconds_of(tuner.pick(subject, fitted.weights)),
            "held_out": held_out.get(subject.key),
            "best": best.seconds,
            "best_schedule": best.label,
        }
        if with_points:
            models = [
                CostModel(subject.graph, subject.params, tuner.machine, w)
                for w in (Weights(), fitted.weights)
            ]
            for m in tuner.measured(subject):
                if m.seconds is not None:
                    schedule = Schedule.parse(m.schedule)
                    costs = [schedule_cost(model, schedule) for model in models]
                    points.append((subject.key, m.seconds, *costs))
    metadata = {
        "polyimage": polyimage.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {**dataclasses.asdict(tuner.machine), "processor": cpu_model()},
        TARGET_KEY: {"cpu": cpu_model(), "march": tuner.options.march},
        "threads": tuner.threads,
        "size": size,
        "score": {"defaults": fitted.start_score, "tuned": fitted.score},
        "tuning_seconds": round(seconds, 1),
        "pipelines": rows,
        "measurements": [
            {k: v for k, v in dataclasses.asdict(m).items() if k not in ("machine", "threads")}
            for subject in trained
            for m in tuner.measured(subject)
        ],
    }
    return {"weights": fitted.weights, "metadata": metadata, "rows": rows, "points": points}
