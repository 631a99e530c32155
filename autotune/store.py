"""The measurement store: one JSON line per measured schedule, appended and flushed as it is
made, keyed by pipeline, schedule, machine and threads, so that `--resume` after Ctrl-C or a
crash measures nothing twice."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from polyimage.errors import PolyimageError


class TuneError(PolyimageError):
    """A mistake in what `polyimage tune` was asked to do, or a store it cannot use."""


@dataclass(frozen=True)
class Measurement:
    """The median seconds of a schedule of a pipeline (None: it failed to compile or run, with
    the reason in `error`), how many timed runs it took and whether it was stopped early as
    clearly slower than the best."""

    pipeline: str
    schedule: str
    machine: str
    threads: int
    label: str
    seconds: float | None
    runs: int = 0
    stopped: bool = False
    error: str = ""

    @property
    def key(self) -> tuple:
        return (self.pipeline, self.schedule, self.machine, self.threads)


FIELDS = tuple(Measurement.__dataclass_fields__)


class MeasurementStore:
    """Measurements in a JSON-lines file: every line is read when it is opened (a line that is
    not a measurement is an error naming the line, and the file is left as it is); those of an
    earlier run are reused only with `resume`."""

    def __init__(self, path, resume: bool):
        self.path = Path(path)
        self.known = {}
        earlier = read_measurements(self.path)
        self.resumed = len(earlier) if resume else 0
        if resume:
            for measurement in earlier:
                self.known[measurement.key] = measurement
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a")

    def get(self, pipeline, schedule, machine, threads) -> Measurement | None:
        return self.known.get((pipeline, schedule, machine, threads))

    def add(self, measurement: Measurement) -> None:
        """Keep `measurement` and append it to the file at once."""
        self.known[measurement.key] = measurement
        self._file.write(json.dumps(asdict(measurement)) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def read_measurements(path: Path) -> list:
    """The measurements a store file holds ([] when there is none), later lines last."""
    if not path.exists():
        return []
    found = []
    with open(path) as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if set(data) != set(FIELDS):
                    raise ValueError(f"expected the fields {', '.join(FIELDS)}")
                found.append(Measurement(**data))
            except (ValueError, TypeError) as exc:
                raise TuneError(
                    f"measurement store {path} is corrupt at line {number} ({exc}); nothing was "
                    f"changed: repair or remove that line, or give another --store"
                ) from None
    return found
