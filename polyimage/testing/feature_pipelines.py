"""`random_feature_pipeline(seed)`: a small random pipeline of the features `random_pipeline`
does not draw (Half, the integer operations at their type's limits, borders of tiny boxes
and of domains that start elsewhere than 0, Reductions listed against the memory layout),
with its outputs' values computed by NumPy's own semantics (feature_values), so that a bug
the interpreter shares with the compiled code shows too. Its seeds are a range of their own:
the pipelines of `random_pipeline(seed)` stay as they were."""

from __future__ import annotations

import numpy as np

from polyimage import Image
from polyimage.dsl.types import type_of_dtype
from polyimage.graph import build_graph

from . import feature_values as fv
from .feature_stages import FeatureStages, Valued
from .random_pipelines import describe
from .stage_domains import RandomPipeline

KINDS: tuple[tuple[str, float], ...] = (
    ("integer", 3),
    ("cast", 1.5),
    ("half", 2.5),
    ("border", 3),
    ("reduction", 2),
)
MAX_FEATURE_STAGES = 6


class _FeatureBuilder(FeatureStages):
    """Inputs (an integer image, then maybe a Half, an integer or a Float one), stage kinds
    drawn by weight (KINDS), then the outputs."""

    def add_input(self, dtype) -> Valued:
        """An R x C Image of `dtype` with data drawn by feature_values.draw_values."""
        n = sum(isinstance(node.func, Image) for node in self.nodes)
        typ = type_of_dtype(dtype)
        image = Image(typ, f"in{n}", [self.R, self.C])
        values = fv.draw_values(self.np_rng, dtype, self.sizes)
        return self.keep(Valued(image, {"x": 0, "y": 0}, values, "input"))

    def build(self) -> RandomPipeline:
        """The inputs, 2 to MAX_FEATURE_STAGES stages, the outputs and their values."""
        rng = self.rng
        self.add_input(rng.choice(fv.INTEGER_DTYPES))
        for _ in range(rng.choice((0, 1, 1, 2))):
            self.add_input(rng.choice((np.float16, np.float16, np.float32) + fv.INTEGER_DTYPES))
        names, weights = zip(*KINDS)
        stages = rng.randint(2, MAX_FEATURE_STAGES)
        while sum(not isinstance(n.func, Image) for n in self.nodes) < stages:
            getattr(self, f"op_{rng.choices(names, weights)[0]}")()
        chosen = self.outputs()
        outputs = [n.func for n in chosen]
        graph = build_graph(outputs)
        arguments: dict[str, object] = {
            n.func.name: n.values for n in self.nodes if isinstance(n.func, Image)
        }
        arguments.update(R=self.sizes[0], C=self.sizes[1])
        used = {s.name for s in graph.stages} | {p.name for p in graph.parameters}
        arguments = {k: v for k, v in arguments.items() if k in used}
        features = set().union(*(n.features for n in self.nodes if n.func.name in used))
        if any(n.func.typ.dtype == np.float16 for n in self.nodes if n.func.name in used):
            features.add("Half")
        return RandomPipeline(
            self.seed,
            outputs,
            arguments,
            describe(self.seed, outputs, arguments, "features"),
            rng.random() < 0.5,
            self.sizes,
            frozenset(features),
            tuple(n.values for n in chosen),
        )

    def outputs(self) -> list:
        """The stages no other reads (so that none is left out), and sometimes one another
        stage reads."""
        rng = self.rng
        computed = [n for n in self.nodes if not isinstance(n.func, Image)]
        chosen = [n for n in computed if id(n) not in self.consumed]
        inner = [n for n in computed[:-1] if id(n) in self.consumed]
        if inner and rng.random() < 0.25:
            chosen.append(rng.choice(inner))
        rng.shuffle(chosen)
        return chosen


def random_feature_pipeline(seed: int) -> RandomPipeline:
    """The feature pipeline of `seed` (deterministic), its outputs' values by NumPy's
    semantics in `expected`."""
    return _FeatureBuilder(seed).build()
