"""What a measured schedule's trial found (`Trial`: the candidates' times and the winner) and
the store that keeps it, so that a later compile in any process runs the winner without timing.

The choice is kept under <cache>/measured/<key>.json, the key a digest of the compile (the key
of its auto compile: pipeline, estimates, options, target, weights, compiler), the CPU, the
thread count and the call's shapes. Files are written whole (a temporary file renamed into
place); one that cannot be read is ignored with a CacheWarning, measured again and replaced.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from ..calls import available_cores
from ..errors import CacheWarning
from ..grouping.machine import cpu_model
from ..jit.cache import fields_digest, touch, write_whole
from ..timing import GIVE_UP

if TYPE_CHECKING:
    from ..config import Options

STORE = "measured"
STORE_FORMAT = 1
SLOWER = GIVE_UP  # a median over the best one's times this drops its candidate (after MIN_RUNS)


@dataclass(frozen=True)
class Trial:
    """The candidates of one measurement and the winner: each candidate's schedule text, the
    median seconds and number of timed calls of those timed, the candidates left untimed as
    the same schedule as an earlier one (`same_as`), when it was measured, whether it came
    from the store, and the store file ("" when none was written or read). Made by a
    measured pipeline's first call or `tune()`, and kept as its `trial`."""

    winner: str
    schedules: Mapping[str, str]
    medians: Mapping[str, float]
    calls: Mapping[str, int]
    same_as: Mapping[str, str]
    measured: str
    from_store: bool
    path: str

    @property
    def speedup(self) -> float:
        """auto's median over the winner's: how much faster the winner ran than auto."""
        return self.medians["auto"] / self.medians[self.winner]

    def summary(self) -> str:
        """One line: the winner, its gain over auto, and where the choice came from."""
        if self.winner == "auto":
            won = "auto won, the cost model's own choice"
        else:
            won = f"{self.winner} won, {self.speedup:.2f}x as fast as auto"
        origin = f"from the store, measured {self.measured}" if self.from_store else "timed now"
        return f"measured schedule: {won} ({origin})"

    def describe(self) -> str:
        """`summary()`, then a line per candidate: its median and timed calls, or why not."""
        lines = [self.summary(), f"  {'candidate':<16}{'median ms':>11}{'calls':>7}"]
        most = self.calls[self.winner]
        for label in sorted(self.schedules, key=lambda k: self.medians.get(k, float("inf"))):
            if label not in self.medians:
                same = f"the same schedule as {self.same_as.get(label, 'another')}"
                lines.append(f"  {label:<16}{'-':>11}{'-':>7}  {same}")
                continue
            note = (
                "  <- chosen"
                if label == self.winner
                else f"  dropped: over {SLOWER}x the best"
                if self.calls[label] < most
                else ""
            )
            median, calls = self.medians[label] * 1e3, self.calls[label]
            lines.append(f"  {label:<16}{median:>11.3f}{calls:>7}{note}")
        if self.path:
            lines.append(f"  kept in {self.path}")
        return "\n".join(lines)

    def to_json(self) -> str:
        """What the store keeps of the trial, as JSON text."""
        fields = ("winner", "schedules", "medians", "calls", "same_as", "measured")
        data = {"format": STORE_FORMAT, **{name: getattr(self, name) for name in fields}}
        return json.dumps(data, indent=1) + "\n"


def store_path(
    options: Options, key: str, arrays: Mapping[str, Any], params: Mapping[str, Any], threads: int
) -> Path:
    """The store file of a compile (`key`, its auto compile's) called on `arrays` with the
    parameter values `params` (integers count) on `threads` threads (0: the default) here."""
    shapes = sorted((name, tuple(a.shape), str(a.dtype)) for name, a in arrays.items())
    sizes = sorted((name, int(v)) for name, v in params.items() if isinstance(v, (int, np.integer)))
    digest = fields_digest(
        [
            f"measured {STORE_FORMAT}",
            key,
            cpu_model(),
            f"threads {threads or f'default of {available_cores()}'}",
            f"shapes {shapes}",
            f"sizes {sizes}",
        ]
    )
    return Path(options.cache_dir) / STORE / f"{digest[:40]}.json"


def load_trial(path: Path) -> Trial | None:
    """The Trial kept in `path`, or None: none kept, or (with a CacheWarning) one that cannot
    be read back, to be measured again."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as exc:
        warn_damaged(path, exc)
        return None
    try:
        data = json.loads(text)
        trial = Trial(
            winner=data["winner"],
            schedules=_typed(data["schedules"], str),
            medians=_typed(data["medians"], float),
            calls=_typed(data["calls"], int),
            same_as=_typed(data["same_as"], str),
            measured=str(data["measured"]),
            from_store=True,
            path=str(path),
        )
        if (
            data["format"] != STORE_FORMAT
            or not isinstance(trial.winner, str)
            or trial.winner not in trial.schedules
            or not {trial.winner, "auto"} <= trial.medians.keys() <= trial.calls.keys()
        ):
            raise ValueError("not a measured choice of this version")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        warn_damaged(path, exc)
        return None
    touch(path)  # recently used, for the cache's eviction
    return trial


def _typed(data: Any, kind: type) -> dict:
    """`data`, a JSON object, as a dict of `kind` values (numbers for float); TypeError else."""
    kinds = (int, float) if kind is float else (kind,)
    if not isinstance(data, dict) or not all(
        isinstance(v, kinds) and not isinstance(v, bool) for v in data.values()
    ):
        raise TypeError(f"expected an object of {kind.__name__} values")
    return {str(k): kind(v) for k, v in data.items()}


def warn_damaged(path: Path, exc: BaseException) -> None:
    """Warn that the choice kept in `path` is ignored, and why."""
    warnings.warn(
        f"measured schedule {path} cannot be read ({type(exc).__name__}); measuring again",
        CacheWarning,
        stacklevel=5,
    )


def save_trial(path: Path, trial: Trial) -> None:
    """Write `trial` to `path` whole (readers see the old file, none, or the new one)."""
    write_whole(path, trial.to_json())
