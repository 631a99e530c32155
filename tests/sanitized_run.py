"""Differential runs for the sanitizers: the pipelines of tests/memory_cases.py, then random
pipelines under random schedules, random mixed-dimension groups under random two-level
tiles and random feature pipelines (Half, integer operations at their limits, borders of tiny
images, Reductions against the memory layout) under auto and a random schedule, each compiled
(with the flags in POLYIMAGE_CFLAGS: AddressSanitizer and UndefinedBehaviorSanitizer) and
called with 1 and 2 threads, every result compared with the interpreter's (bit for bit where
the docs promise it: tests/oracle.py), and the feature pipelines' interpreted results with
NumPy's semantics. `--self-test` instead calls a pipeline made to overflow a scratchpad, to
show that the sanitizers see our generated code.

tests/test_sanitizers.py runs this file as a child process, the sanitizers' runtime loaded
first (LD_PRELOAD); the compiler's own processes run without it (gcc under an AddressSanitizer
allocator it does not need builds 2-3 times slower). By hand:
`python tests/sanitized_run.py --seeds 3 --seconds 600 --first-seed 1000`. A sanitizer
report ends the process with a nonzero status; so does a mismatch, named by its seed. The
last line counts what was covered: `covered {"pipelines": ..., ...}`.
"""

import argparse
import dataclasses
import json
import os
import random
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from memory_cases import CASES, short_scratchpad  # noqa: E402
from oracle import as_outputs, assert_calls_match, assert_same_bits  # noqa: E402
from pixel_cases import pixel_pipeline  # noqa: E402

import polyimage  # noqa: E402
from polyimage.config import Options  # noqa: E402
from polyimage.schedule import GroupSchedule, Schedule  # noqa: E402
from polyimage.schedule.plan import tile_rank  # noqa: E402
from polyimage.schedule.tiling import TiledGroup  # noqa: E402
from polyimage.testing import (  # noqa: E402
    random_feature_pipeline,
    random_mixed_pipeline,
    random_pipeline,
    random_schedule,
    random_tile_sizes,
)

SCHEDULES_PER_PIPELINE = 3
# the pixel-type pipeline's sizes: one point, and odd sizes that tile unevenly
PIXEL_SIZES = ((1, 1), (23, 37), (70, 9))


def run(outputs, arguments, schedule, inline, what, covered, machine=None):
    """Compile `outputs` with `schedule` (planned for `machine`, Machine fields, where
    given), call it with 1 and 2 threads, compare."""
    print(what.replace("\n", "; "), flush=True)  # the last line names what a report stops
    expected = polyimage.interpret(outputs, **arguments)
    options = None
    if machine:
        from_env = Options.from_env()
        options = dataclasses.replace(from_env, machine={**from_env.machine, **machine})
    pipe = polyimage.compile(outputs, schedule=schedule, inline=inline, options=options)
    covered["calls"] += assert_calls_match(pipe, expected, arguments, what)
    covered["schedules"] += 1
    graph = pipe.stage_graph
    for plan in pipe.group_plans:
        if isinstance(plan, TiledGroup) and any(
            m in pipe.reductions and set(graph.stage(m).producers) & set(plan.members)
            for m in plan.members
        ):
            covered["tiled Reductions reading their group"] += 1
    for group in getattr(schedule, "groups", ()):
        if len(group.tile_sizes) == 2:
            covered["two-level groups"] += 1
            for o, i in zip(*group.tile_sizes):
                shape = "equal" if i == o else "larger" if i > o else "dividing"
                shape = "non-dividing" if i < o and o % i else shape
                covered[f"inner {shape}"] += 1
    return pipe


def random_schedules(seed, covered):
    borders = seed % 2 == 1  # odd seeds mirror or wrap some border reads (dsl.borders)
    rp = random_pipeline(seed, borders=borders)
    covered["pipelines with borders"] += borders
    naive = run(rp.outputs, rp.arguments, "naive", rp.inline, f"seed {seed}, naive", covered)
    for k in range(SCHEDULES_PER_PIPELINE):
        schedule = random_schedule(naive.stage_graph, random.Random(seed * 1000 + k))
        what = f"seed {seed}, random.Random({seed * 1000 + k}):\n{schedule}"
        run(rp.outputs, rp.arguments, schedule, rp.inline, what, covered)
    covered["pipelines"] += 1


def pixel_types(covered):
    """Half stages and images, saturating and halving integer operations (tests/pixel_cases.py)
    naively and under auto, on every size of PIXEL_SIZES."""
    outputs, make = pixel_pipeline()
    rng = np.random.default_rng(0)
    for rows, cols in PIXEL_SIZES:
        arguments = make(rng, rows, cols)
        for schedule in ("naive", "auto"):
            run(
                outputs,
                arguments,
                schedule,
                True,
                f"pixel types, {schedule}, {rows}x{cols}",
                covered,
            )
        covered["pixel sizes"] += 1


def mixed_groups(seed, covered):
    rp = random_mixed_pipeline(seed)
    graph = polyimage.compile(
        rp.outputs, schedule="naive", inline=rp.inline, build=False
    ).stage_graph
    stages = tuple(s.name for s in graph.computed)
    rng = random.Random(seed)
    for _ in range(SCHEDULES_PER_PIPELINE):
        tiles = ()
        while len(tiles) != 2:
            tiles = random_tile_sizes(tile_rank(graph, stages), rng)
        schedule = Schedule((GroupSchedule(stages, tiles),))
        what = f"mixed seed {seed}:\n{schedule}"
        run(rp.outputs, rp.arguments, schedule, rp.inline, what, covered)
    covered["mixed pipelines"] += 1


def feature_pipelines(seed, covered):
    """The feature pipeline of `seed`: interpreted against NumPy's semantics, then compiled
    under auto and a random schedule."""
    rp = random_feature_pipeline(seed)
    interpreted = as_outputs(polyimage.interpret(rp.outputs, **rp.arguments))
    for func, got, want in zip(rp.outputs, interpreted, rp.expected):
        what = f"feature seed {seed}, {func.name}: interpreter vs NumPy"
        assert_same_bits(got, want, what)
    what = f"feature seed {seed}, auto"
    auto = run(rp.outputs, rp.arguments, "auto", rp.inline, what, covered)
    schedule = random_schedule(auto.stage_graph, random.Random(seed * 1000))
    what = f"feature seed {seed}, random.Random({seed * 1000}):\n{schedule}"
    run(rp.outputs, rp.arguments, schedule, rp.inline, what, covered)
    covered["feature pipelines"] += 1


MIN_SEEDS = 3


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seeds", type=int, default=MIN_SEEDS, help="seeds of each kind run whatever the time"
    )
    parser.add_argument(
        "--seconds", type=float, default=120.0, help="time budget for more seeds after those"
    )
    parser.add_argument("--first-seed", type=int, default=0, help="first random seed")
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="call a pipeline made to overflow a scratchpad (a sanitizer must stop it)",
    )
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    # the runtime is loaded in this process already; the C compiler and the other children
    # need not load it (it slowed every gcc run down 2-3 times: its allocator, its shadow)
    os.environ.pop("LD_PRELOAD", None)
    if args.self_test:
        pipe, arguments = short_scratchpad()
        pipe(threads=1, **arguments)
        print("no sanitizer report", flush=True)
        return 0
    deadline = time.monotonic() + args.seconds
    covered = Counter()
    for make in CASES:
        case = make()
        for schedule in case.schedules:
            run(case.outputs, case.arguments, schedule, True, case.name, covered, case.machine)
        covered["memory cases"] += 1
    pixel_types(covered)
    seed = args.first_seed
    # the first `--seeds` seeds, however slow a busy machine runs them; then until the deadline
    while seed < args.first_seed + args.seeds or time.monotonic() < deadline:
        random_schedules(seed, covered)
        mixed_groups(seed, covered)
        feature_pipelines(seed, covered)
        seed += 1
    print("covered " + json.dumps(dict(sorted(covered.items()))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
