"""Seeded random DSL pipelines and random valid schedules, for differential tests
(tests/test_schedules_random.py) and as extra training pipelines of `polyimage tune --random`.

`random_pipeline(seed)` builds a small pipeline (2 to 8 computed stages over Parameters R and C)
from a `random.Random(seed)`, together with the arguments of one call: input arrays of the
declared shapes and dtypes, and the parameter values. The same seed always gives the same
pipeline (stage names, expressions, data). `random_schedule(graph, rng)` draws a Schedule for
a stage graph (`pipe.stage_graph`): contiguous segments of a random topological order, each
untiled or tiled with one or two levels.

Every read of a producer is inside the producer's domain for every parameter value, so that
`compile` never raises BoundsError: a stage's domain is derived from its producer's by the
operation that reads it (shrunk by the stencil radius, halved for down-sampling, doubled for
up-sampling), or the read is guarded (a Case or a Select on the loop variables) or its indices
are clamped to the producer's domain with Min/Max (affine, so still checked at compile time).
Data-dependent indices (lookup tables, histogram bins) are clamped explicitly, as the
compiler would do anyway.

Shapes of the building blocks:
  - 2-D stages (x, y) over [lo, ub] boxes; 3-D stages (c, x, y) with c in 0..2 first;
  - 1-D stages: lookup tables (bins 0..15), row sums and column maxima (Reductions);
  - pointwise ops, stencils of radius 1-2 along x, y or both (cross or box), down-sampling by
    2 (`g(2*x, y) + g(2*x + 1, y)` on a half-size domain), up-sampling (`g(x // 2, y)`),
    Cases on affine conditions (borders, halves, parities), Selects (affine or data
    dependent), binary ops mixing two producers (diamonds), channel expand/collapse/shuffle,
    Reductions (row sums, column maxima, histograms, block sums, channel sums);
  - Float (float32) pipelines on [0, 1) or small-integer-valued inputs, and Int (int32)
    pipelines on small integers (some from a UChar image) for bit-exact checks.

`random_feature_pipeline(seed)` draws, from seeds of its own, what `random_pipeline` does not:
Half stages and images, the integer operations (saturating, halving, absd, widening_mul,
saturating_cast, wrapping + - * // %) at their types' limits, border modes on boxes of 1 to 3
points and on domains starting elsewhere than 0, and Reductions whose reduction variables run
against the memory layout; its `expected` holds its outputs' values by NumPy's own semantics
(np.pad's modes, float16 casts, Python integers), computed apart from the interpreter.

`random_vector_pipeline(seed)` draws the stages users write (bilateral windows, gradients and
their non-maximum suppression, every pixel type and border mode, guarded reads, Reductions),
for the test that every innermost loop vectorizes; its outputs are checked against the
interpreter.

`python -m polyimage.testing.print_pipeline [--features] SEED [SCHEDULE_SEED ...]` prints a
seed's pipeline and the schedules the tests draw for it.
"""

from .feature_pipelines import random_feature_pipeline
from .random_pipelines import RandomPipeline, describe, random_mixed_pipeline, random_pipeline
from .random_schedules import (
    INNER_SHAPES,
    inner_tile_size,
    random_schedule,
    random_tile_sizes,
    untiled_schedule,
)
from .stage_domains import LUT_BINS, MAX_STAGES, SIZE_WEIGHTS, SIZES, TILE_SIZES, Dim, Node
from .vector_pipelines import random_vector_pipeline

__all__ = [
    "INNER_SHAPES",
    "LUT_BINS",
    "MAX_STAGES",
    "SIZES",
    "SIZE_WEIGHTS",
    "TILE_SIZES",
    "Dim",
    "Node",
    "RandomPipeline",
    "describe",
    "inner_tile_size",
    "random_feature_pipeline",
    "random_mixed_pipeline",
    "random_pipeline",
    "random_schedule",
    "random_tile_sizes",
    "random_vector_pipeline",
    "untiled_schedule",
]
