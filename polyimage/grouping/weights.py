"""Where the cost weights come from: a compile argument, else POLYIMAGE_WEIGHTS, else the weights
file (written by the autotuner; POLYIMAGE_WEIGHTS_FILE, default
$XDG_CONFIG_HOME/polyimage/weights.json), else the defaults of `Weights`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from .cost import Weights

NAMES = tuple(f.name for f in dataclasses.fields(Weights))


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
        try:
            values = json.loads(path.read_text())
        except ValueError as exc:
            raise ValueError(f"weights file {path}: not JSON ({exc})") from None
        return weights_from(values, f"weights file {path}"), f"weights file {path}"
    return Weights(), "defaults"
