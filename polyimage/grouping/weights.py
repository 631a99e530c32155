"""Where the cost weights come from: a compile argument, else POLYIMAGE_WEIGHTS, else the weights
file (written by `polyimage tune`, polyimage.autotune; POLYIMAGE_WEIGHTS_FILE, default
$XDG_CONFIG_HOME/polyimage/weights.json), else the defaults of `Weights`. The file and its
format live here: compile reads what the tuner writes."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from .cost import Weights

NAMES = tuple(f.name for f in dataclasses.fields(Weights))
# where the tuner records the CPU and the -march it tuned for
TARGET_KEY = "target"
# the key of the weights in the tuner's file; the rest of that file says how they were found
WEIGHTS_KEY = "weights"


def weights_from(values, source: str) -> Weights:
    """Weights from a mapping of some of NAMES to non-negative numbers (the rest default)."""
    if isinstance(values, Weights):
        return values
    if not isinstance(values, dict):
        raise TypeError(
            f"{source}: weights must be a Weights or a dict, got {type(values).__name__}"
        )
    checked = {}
    for name, value in values.items():
        if name not in NAMES:
            raise ValueError(f"{source}: unknown weight {name!r}; known: {', '.join(NAMES)}")
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or value < 0
            or value != value
        ):
            raise ValueError(f"{source}: weight {name} must be a number >= 0, got {value!r}")
        checked[name] = float(value)
    return Weights(**checked)


def resolve_weights(given, options) -> tuple:
    """(Weights, where they came from) by the precedence in the module docstring."""
    if given is not None:
        return weights_from(given, "compile(weights=...)"), "compile argument"
    if options.weights:
        return weights_from(dict(options.weights), "POLYIMAGE_WEIGHTS"), "POLYIMAGE_WEIGHTS"
    path = Path(options.weights_file) if options.weights_file else None
    if path is not None and path.is_file():
        return read_weights_file(path), f"weights file {path}"
    return Weights(), "defaults"


def read_weights_file(path) -> Weights:
    """The weights of a weights file: the tuner's ({"weights": {...}} beside what it measured)
    or a plain {name: value} object."""
    try:
        data = json.loads(Path(path).read_text())
    except ValueError as exc:
        raise ValueError(f"weights file {path}: not JSON ({exc})") from None
    values = data.get(WEIGHTS_KEY) if isinstance(data, dict) and WEIGHTS_KEY in data else data
    return weights_from(values, f"weights file {path}")


def write_weights_file(path, weights: Weights, metadata: dict) -> None:
    """Write `weights` with `metadata` (machine, date, measurements: anything JSON) as a weights
    file, replacing any earlier one at once (a reader never sees half a file)."""
    path = Path(path)
    data = {WEIGHTS_KEY: dataclasses.asdict(weights), **metadata}
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(partial, path)


def foreign_weights(path, cpu: str, march: str) -> str:
    """Why the weights file at `path` may not fit a compile for `cpu` and `-march=<march>`:
    it records another CPU or target ('' when it matches or records neither)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return ""
    target = data.get(TARGET_KEY) if isinstance(data, dict) else None
    if not isinstance(target, dict):
        return ""
    theirs = (target.get("cpu"), target.get("march"))
    if theirs == (cpu, march) or None in theirs:
        return ""
    return (
        f"weights file {path} was tuned on {theirs[0]} for -march={theirs[1]}; this compile is "
        f"for {cpu} with -march={march}, where its weights may not fit: run `polyimage tune` "
        f"here, or set POLYIMAGE_WEIGHTS_FILE to a file tuned for this machine"
    )
