"""The training set: pipelines to tune on (the apps, and seeded random pipelines), each with the
arguments of one call at the chosen size and its stage graph after inlining."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import polyimage
from polyimage.algebra.evaluate import evaluate_scalar
from polyimage.apps import APP_NAMES, load_app
from polyimage.apps.inputs import bundled
from polyimage.io import load_image

SIZES = ("small", "medium", "paper")
# the side of a random pipeline's images at each size
RANDOM_SIDE = {"small": 96, "medium": 768, "paper": 1536}


@dataclass
class Subject:
    """A pipeline of the training set: what `compile` takes, the arguments of a call, and the
    stage graph with the parameter values at the estimates (what the cost model prices)."""

    name: str
    key: str
    outputs: list
    estimates: dict
    arguments: dict
    inline: bool = True
    graph: object = None
    params: dict = field(default_factory=dict)
    is_app: bool = True

    def compile(self, schedule, options):
        """The pipeline compiled under `schedule` (compiles are cached on disk)."""
        return polyimage.compile(
            self.outputs,
            estimates=self.estimates,
            schedule=schedule,
            name=self.name,
            inline=self.inline,
            options=options,
        )

    def analyze(self, options) -> "Subject":
        """Fill in the stage graph and parameter values (from a naive compile)."""
        pipe = self.compile("naive", options)
        self.graph, self.params = pipe.stage_graph, pipe.param_values
        return self


def app_size(app, size: str) -> dict:
    """The app's size parameters at `size`: SMALL_SIZE, PAPER_SIZE, or half of PAPER_SIZE."""
    if size == "small":
        return dict(app.SMALL_SIZE)
    if size == "paper":
        return dict(app.PAPER_SIZE)
    return {name: max(value // 2, 1) for name, value in app.PAPER_SIZE.items()}


def app_subject(name: str, size: str) -> Subject:
    """App `name` at `size` on its bundled photos, with its default parameters."""
    app = load_app(name)
    dims = app_size(app, size)
    inputs = app.prepare([load_image(bundled(p)) for p in app.PHOTOS], dims)
    outputs, _ = app.build()
    return Subject(name, f"{name} {_dims(dims)}", outputs, dims, {**inputs, **dict(app.DEFAULTS)})


def random_subject(seed: int, size: str) -> Subject:
    """The random pipeline of `seed` (see polyimage.testing) on square images of RANDOM_SIDE,
    filled with data of the same kind as the generator's own arguments."""
    from polyimage.testing import random_pipeline

    generated = random_pipeline(seed)
    side = RANDOM_SIDE[size]
    sizes = {"R": side, "C": side}
    pipe = polyimage.compile(
        generated.outputs, estimates=sizes, schedule="naive", inline=generated.inline
    )
    rng = np.random.default_rng(seed)
    arguments = {}
    for name, value in generated.arguments.items():
        if isinstance(value, np.ndarray):
            func = next(s.func for s in pipe.graph.stages if s.name == name)
            shape = tuple(int(evaluate_scalar(e, pipe.param_values)) for e in func.extents)
            arguments[name] = _like(value, shape, rng)
        elif name not in sizes:
            arguments[name] = value
    return Subject(
        f"random{seed}",
        f"random{seed} {_dims(sizes)}",
        generated.outputs,
        sizes,
        {**arguments, **sizes},
        inline=generated.inline,
        is_app=False,
    )


def _like(example: np.ndarray, shape: tuple, rng) -> np.ndarray:
    """An array of `shape` with values drawn from the range of `example`."""
    low, high = example.min(), example.max()
    if np.issubdtype(example.dtype, np.floating):
        return (low + (high - low) * rng.random(shape)).astype(example.dtype)
    return rng.integers(int(low), int(high) + 1, shape).astype(example.dtype)


def _dims(sizes: dict) -> str:
    return "x".join(str(v) for v in sizes.values())


def training_set(apps, size: str, random_count: int, seed: int) -> list:
    """The subjects of `apps` (default: all) and of `random_count` random pipelines."""
    names = list(apps) or list(APP_NAMES)
    for name in names:
        load_app(name)  # an unknown name is an error before anything runs
    subjects = [app_subject(name, size) for name in names]
    subjects += [random_subject(seed * 1000 + k, size) for k in range(random_count)]
    return subjects
