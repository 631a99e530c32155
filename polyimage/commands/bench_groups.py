"""`polyimage bench --groups`: random pipelines (polyimage.testing) compiled under auto and
naive and timed side by side, and every fused group of auto timed against its stages run
apart (from the profiles of both builds), so that a grouping slower than none shows up."""

from __future__ import annotations

import math
import statistics
import sys
import time
from dataclasses import dataclass

import numpy as np

import polyimage
from polyimage.algebra.evaluate import evaluate_scalar
from polyimage.errors import ArgumentError, PolyimageError
from polyimage.graph import build_graph
from polyimage.testing import random_feature_pipeline, random_pipeline
from polyimage.timing import collector_paused, round_orders

# R x C of the pipelines for `--size paper` (the default) and `--size small`
NAMED_SIZES = {"paper": "1536x2560", "small": "96x128"}
# the share of the seeds drawn from the feature generator (integer types, Half, borders)
FEATURE_SHARE = 0.25
# the profiles run in at least this many interleaved rounds
MIN_PROFILE_ROUNDS = 3


@dataclass(frozen=True)
class Timing:
    """Seconds of one variant's calls, one a round."""

    seconds: tuple

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def spread(self) -> float:
        """The interquartile range of the calls (0 for fewer than 2)."""
        if len(self.seconds) < 2:
            return 0.0
        low, _, high = statistics.quantiles(self.seconds, n=4, method="inclusive")
        return high - low


@dataclass(frozen=True)
class GroupTiming:
    """A fused group of auto: its seconds in auto's profile, its stages' in naive's."""

    stages: tuple
    tiles: str
    fused: Timing
    apart: Timing

    @property
    def ratio(self) -> float:
        return self.fused.median / max(self.apart.median, 1e-12)

    @property
    def slower(self) -> bool:
        return slower_beyond_spread(self.fused, self.apart)


@dataclass(frozen=True)
class PipelineResult:
    """One random pipeline: its label, auto's and naive's calls, auto's fused groups, and
    whether auto chose naive's schedule (the same code: it was not timed again)."""

    label: str
    auto: Timing
    naive: Timing
    groups: tuple
    same_schedule: bool = False

    @property
    def ratio(self) -> float:
        return self.auto.median / max(self.naive.median, 1e-12)

    @property
    def slower(self) -> bool:
        return not self.same_schedule and slower_beyond_spread(self.auto, self.naive)


def slower_beyond_spread(first: Timing, second: Timing) -> bool:
    """Whether `first`'s median exceeds `second`'s by more than the larger of their spreads:
    slower, not merely noisier."""
    return first.median - second.median > max(first.spread, second.spread)


def parse_size(text: str) -> tuple:
    """(R, C) of an `RxC` text (or of a name in NAMED_SIZES), both at least 16."""
    parts = NAMED_SIZES.get(text, text).lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() for p in parts) or min(map(int, parts)) < 16:
        raise ArgumentError(f"--size with --groups takes RxC, both at least 16, got {text!r}")
    return int(parts[0]), int(parts[1])


def draw_pipeline(seed: int, sizes: tuple):
    """(label, generated pipeline, arguments at `sizes`) of `seed`: a random pipeline, or a
    feature pipeline for a share of the seeds, its inputs redrawn at R x C from the range of
    the generator's own (`python -m polyimage.testing.print_pipeline [--features] SEED`
    prints it)."""
    if np.random.default_rng(seed).random() < FEATURE_SHARE:
        generated, label = random_feature_pipeline(seed), f"feature {seed}"
    else:
        generated, label = random_pipeline(seed), f"random {seed}"
    params = {"R": sizes[0], "C": sizes[1]}
    rng = np.random.default_rng(seed)
    images = {s.func.name: s.func for s in build_graph(generated.outputs).stages}
    arguments = dict(params)
    for name, value in generated.arguments.items():
        if isinstance(value, np.ndarray):
            shape = tuple(int(evaluate_scalar(e, params)) for e in images[name].extents)
            arguments[name] = values_like(value, shape, rng)
        elif name not in params:
            arguments[name] = value
    return label, generated, arguments


def values_like(example: np.ndarray, shape: tuple, rng) -> np.ndarray:
    """An array of `shape` and `example`'s dtype with values drawn from `example`'s range."""
    low, high = example.min(), example.max()
    if np.issubdtype(example.dtype, np.floating):
        return (low + (high - low) * rng.random(shape)).astype(example.dtype)
    return rng.integers(low, high, shape, dtype=example.dtype, endpoint=True)


def interleaved(calls: dict, rounds: int) -> dict:
    """{label: [what each call returned, one a round]} after one untimed round, the calls in
    an order shuffled every round (timing.round_orders), so that a busy moment of a shared
    machine falls on every variant alike."""
    for call in calls.values():
        call()
    results: dict = {label: [] for label in calls}
    next_order = round_orders()
    with collector_paused():
        for _ in range(rounds):
            for label in next_order(list(calls)):
                results[label].append(calls[label]())
    return results


def timed(pipe, arguments: dict, threads):
    """A call of `pipe` on `arguments` that returns its seconds."""

    def call():
        start = time.perf_counter()
        pipe(threads=threads, **arguments)
        return time.perf_counter() - start

    return call


def fused_groups(pipe) -> list:
    """(stages, tile sizes as text) of every tiled group of more than one stage of `pipe`."""
    return [
        (g.stages, " then ".join("x".join(map(str, t)) for t in g.tile_sizes))
        for g in pipe.schedule.groups
        if len(g.stages) > 1 and g.tile_sizes
    ]


def group_seconds(profile, stages) -> float:
    """Seconds of the profile's group of exactly `stages`, else the sum of its groups within
    them (naive's: one a stage)."""
    rows = [r for r in profile.rows if not r.inner]
    exact = [r.seconds for r in rows if tuple(r.stages) == tuple(stages)]
    if exact:
        return exact[0]
    return sum(r.seconds for r in rows if set(r.stages) <= set(stages))


def group_timings(pipes: dict, arguments: dict, runs: int, threads) -> tuple:
    """A GroupTiming per fused group of pipes["auto"], from profiles of auto and naive
    taken in interleaved rounds."""
    groups = fused_groups(pipes["auto"])
    if not groups:
        return ()
    profiles = interleaved(
        {
            name: lambda pipe=pipe: pipe.profile(runs=1, threads=threads, **arguments)
            for name, pipe in pipes.items()
        },
        max(runs, MIN_PROFILE_ROUNDS),
    )
    return tuple(
        GroupTiming(
            stages,
            tiles,
            Timing(tuple(group_seconds(p, stages) for p in profiles["auto"])),
            Timing(tuple(group_seconds(p, stages) for p in profiles["naive"])),
        )
        for stages, tiles in groups
    )


def bench_pipeline(seed: int, sizes: tuple, runs: int, threads) -> PipelineResult:
    """Compile the pipeline of `seed` under auto and naive, time both side by side, and each
    fused group of auto against its stages in naive's profile."""
    label, generated, arguments = draw_pipeline(seed, sizes)
    estimates = {"R": sizes[0], "C": sizes[1]}
    pipes = {
        name: polyimage.compile(
            generated.outputs, estimates=estimates, schedule=name, inline=generated.inline
        )
        for name in ("auto", "naive")
    }
    try:
        if str(pipes["auto"].schedule) == str(pipes["naive"].schedule):
            naive = Timing(
                tuple(
                    interleaved({"naive": timed(pipes["naive"], arguments, threads)}, runs)["naive"]
                )
            )
            return PipelineResult(label, naive, naive, (), same_schedule=True)
        calls = {name: timed(pipe, arguments, threads) for name, pipe in pipes.items()}
        times = interleaved(calls, runs)
        groups = group_timings(pipes, arguments, runs, threads)
        return PipelineResult(
            label, Timing(tuple(times["auto"])), Timing(tuple(times["naive"])), groups
        )
    finally:
        for pipe in pipes.values():
            pipe.release()


def describe_result(result: PipelineResult) -> list:
    """The lines of one pipeline: auto against naive, then each fused group slower than its
    stages apart."""
    if result.same_schedule:
        return [
            f"{result.label}: naive {result.naive.median * 1e3:.2f} ms; auto chose naive's schedule"
        ]
    mark = "  (auto slower)" if result.slower else ""
    lines = [
        f"{result.label}: auto {result.auto.median * 1e3:.2f} ms, naive "
        f"{result.naive.median * 1e3:.2f} ms, auto/naive {result.ratio:.2f}, "
        f"{len(result.groups)} fused group(s){mark}"
    ]
    for group in result.groups:
        if group.slower:
            lines.append(
                f"  group {', '.join(group.stages)} [{group.tiles}]: "
                f"{group.fused.median * 1e3:.2f} ms, its stages apart "
                f"{group.apart.median * 1e3:.2f} ms ({group.ratio:.2f})"
            )
    return lines


def summary(results: list, skipped: int) -> list:
    """The closing lines: how often auto lost to naive, and a fused group to its stages."""
    if not results:
        return [f"no pipeline timed ({skipped} skipped)"]
    slower = [r for r in results if r.slower]
    groups = [g for r in results for g in r.groups]
    slow_groups = [g for g in groups if g.slower]
    mean = math.exp(statistics.fmean(math.log(r.ratio) for r in results))
    same = sum(r.same_schedule for r in results)
    lines = [
        f"auto/naive: geometric mean {mean:.2f}, from {min(r.ratio for r in results):.2f} to "
        f"{max(r.ratio for r in results):.2f} ({same} pipeline(s) where auto chose naive's "
        "schedule count 1)",
        f"auto slower than naive beyond the spread: {len(slower)} of {len(results)} "
        f"pipelines ({len(slower) / len(results):.0%})"
        + (f": {', '.join(r.label for r in slower)}" if slower else ""),
        f"fused groups slower than their stages apart: {len(slow_groups)} of {len(groups)}",
    ]
    if skipped:
        lines.append(f"{skipped} pipeline(s) skipped (said above)")
    return lines


def run_group_bench(count: int, seed: int, size: str, runs: int, threads, report=print) -> list:
    """Bench `count` random pipelines from `seed` at `size` (RxC, paper or small), report
    each and a summary, with a progress line on stderr; returns the PipelineResults."""
    sizes = parse_size(size)
    report(
        f"{count} random pipelines from seed {seed} at R x C = {sizes[0]} x {sizes[1]}, "
        f"medians of {runs} interleaved runs; 'slower': by more than the larger interquartile "
        "range"
    )
    results, skipped = [], 0
    for k in range(count):
        _progress(f"bench --groups: pipeline {k + 1} of {count} (seed {seed + k})")
        try:
            result = bench_pipeline(seed + k, sizes, runs, threads)
        except (PolyimageError, ValueError, MemoryError) as exc:
            skipped += 1
            _progress("")
            report(f"seed {seed + k}: skipped ({type(exc).__name__}: {exc})")
            continue
        _progress("")
        results.append(result)
        for line in describe_result(result):
            report(line)
    for line in summary(results, skipped):
        report(line)
    return results


def _progress(text: str) -> None:
    """The progress line on stderr, rewritten in place (empty: cleared)."""
    sys.stderr.write(f"\r\x1b[K{text}")
    sys.stderr.flush()
