"""`polyimage bench`: every polyimage schedule of each app against NumPy, the library calls a
user would make instead (numpy.matmul, SciPy, OpenCV: apps/baselines), Halide's autoschedulers
and hand-written Halide schedules (when installed) and a plain memory copy, as medians over
repeated runs."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import importlib
import json
import os
import platform
import resource
import tempfile
import time
from pathlib import Path
from typing import Callable, Final

import numpy as np

import polyimage
from polyimage.apps import APP_NAMES, app_schedules, default_schedule, load_app
from polyimage.apps.baselines import halide_variants, library_variants, opencv_variants
from polyimage.apps.baselines.halide_runner import AUTOSCHEDULERS, MANUAL
from polyimage.apps.inputs import bundled
from polyimage.config import Options
from polyimage.errors import ArgumentError
from polyimage.grouping.machine import available_cores
from polyimage.io import load_image
from polyimage.jit.calibrate import calibrate, load_calibration
from polyimage.timing import collector_paused, round_orders

from . import contention
from .cli_arguments import check_folder
from .plot import check_plot, draw, draw_ratios, halide_ratios
from .targets import describe, header, parse_machine, target_options

# optional baselines: (name, module to import, the timings it adds)
OPTIONAL_BASELINES = (
    (
        "OpenCV",
        "cv2",
        "the opencv timings (of unsharp_mask, harris, histogram_equalize and integral_box)",
    ),
    ("Halide", "halide", "the halide:<autoscheduler> and halide:manual timings"),
)
# the labels of the variants built with multiply-add contraction (bench --contract) and with
# float reassociation (bench --reassociate)
CONTRACTED = "+fma"
REASSOCIATED = "+reassoc"
FLOAT_VARIANTS = {CONTRACTED: "multiply-add contraction", REASSOCIATED: "float reassociation"}
# the schedule timed beside the app's: the fastest of a few candidates on this machine, its
# choice kept in the cache (polyimage.driver.measured)
MEASURED: Final = "measured"
INSTALL_HINT = 'pip install "polyimage[bench]" (in a checkout: pip install -e ".[bench]")'


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def missing_baselines(importable=_importable) -> list:
    """A note for each optional baseline left out because its module does not import, with
    how to install it; `importable(module) -> bool` decides (for tests)."""
    return [
        f"{what} is not installed ({module} does not import), so {variants} are left out; "
        f"install it with {INSTALL_HINT}"
        for what, module, variants in OPTIONAL_BASELINES
        if not importable(module)
    ]


def measure(fn, runs: int) -> dict:
    """Median, min and max wall time in seconds of `runs` calls after one warm-up call, and the
    minor page faults per call (memory the call maps afresh)."""
    return measure_interleaved({"": fn}, runs)[""]


def measure_interleaved(calls: dict, runs: int, report=None) -> dict:
    """measure() of every function in `calls` ({label: fn}), each warmed up once and then in
    one untimed round, then timed in rounds of one call each (the garbage collector paused:
    timing.collector_paused), in an order shuffled every round (timing.round_orders), so
    that a noisy moment of a shared machine falls on every variant alike rather than on one,
    and no variant always runs after the same one. The untimed
    round lets the machine settle after the variants' first calls (on pyramid_blend the first
    timed round ran every polyimage variant 1.5-2.7x slower without it). `report(text)` hears
    of each round."""
    for fn in calls.values():
        fn()
    labels = list(calls)
    times: dict[str, list] = {label: [] for label in labels}
    faults = dict.fromkeys(labels, 0)
    next_order = round_orders()
    with collector_paused():
        for round_number in range(-1, max(runs, 1)):
            if report is not None and round_number >= 0:
                report(f"round {round_number + 1} of {max(runs, 1)}")
            for label in next_order(labels):
                before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                start = time.perf_counter()
                calls[label]()
                if round_number >= 0:
                    times[label].append(time.perf_counter() - start)
                    faults[label] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    return {
        label: {**contention.spread(times[label]), "faults": faults[label] / max(runs, 1)}
        for label in labels
    }


def copy_floor(inputs: dict, outputs, threads=None) -> Callable[[], None]:
    """A memory copy that reads as many bytes as the inputs hold and writes as many as the
    outputs, on as many threads as the pipelines run: the bandwidth floor of any pipeline."""
    in_bytes = sum(a.nbytes for a in inputs.values())
    out_bytes = sum(o.nbytes for o in outputs)
    src = (np.arange(in_bytes) % 251).astype(np.uint8)
    dst = np.empty(out_bytes, np.uint8)
    workers = max(1, threads or available_cores())
    pool = concurrent.futures.ThreadPoolExecutor(workers)  # np.copyto releases the GIL

    def part(k):
        lo, hi = out_bytes * k // workers, out_bytes * (k + 1) // workers
        while lo < hi:
            start = lo % in_bytes
            n = min(in_bytes - start, hi - lo)
            np.copyto(dst[lo : lo + n], src[start : start + n])
            lo += n

    def run():
        list(pool.map(part, range(workers)))

    run.source, run.target, run.close = src, dst, pool.shutdown  # type: ignore[attr-defined]  # read by callers
    return run


def compile_times(outputs, name: str, schedule="naive", estimates=None, options=None) -> dict:
    """Seconds to compile from scratch (fresh cache) and again from the cache."""
    kwargs = {"name": name, "schedule": schedule, "estimates": estimates}
    with tempfile.TemporaryDirectory() as cache_dir:
        options = dataclasses.replace(options or Options(), cache_dir=cache_dir)
        start = time.perf_counter()
        pipe = polyimage.compile(outputs, options=options, **kwargs)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        polyimage.compile(outputs, options=options, **kwargs)
        cached = time.perf_counter() - start
    return {"cold": cold, "cached": cached, "passes": dict(pipe.pass_seconds)}


def bench_app(
    name: str,
    size: str,
    threads,
    runs: int,
    report=print,
    options=None,
    target="native",
    contract=False,
    load=0,
    callers=None,
    reassociate=False,
) -> dict:
    """Time every variant of one app; returns {variant: timing} plus compile times. polyimage
    compiles with `options` (commands.targets.target_options) under each of the app's
    schedules and "measured" (its first call times its candidates, unless an earlier run kept
    the choice), Halide for `target`; with `contract` (`reassociate`), the default schedule
    is also built with multiply-add contraction (float reassociation) and timed as
    "polyimage:<schedule>+fma" ("+reassoc"). Given `load`, every variant is timed again
    beside that many busy processes; given `callers`, each polyimage schedule is called from
    that many threads at once (commands/contention)."""
    options = options or Options.from_env()
    app = load_app(name)
    photos = [load_image(bundled(p)) for p in app.PHOTOS]
    dims = app.PAPER_SIZE if size == "paper" else app.SMALL_SIZE
    inputs = app.prepare(photos, dims)
    params = dict(app.DEFAULTS)
    outputs, _ = app.build()
    variants, schedules = {}, {}
    result = None
    for label, schedule in app_schedules(app).items():
        pipe = polyimage.compile(
            outputs, name=name, schedule=schedule, estimates=dims, options=options
        )
        schedules[f"polyimage:{label}"] = pipe
        result, variants[f"polyimage:{label}"] = _preallocated(pipe, threads, {**inputs, **params})
    measured = polyimage.compile(
        outputs, name=name, schedule=MEASURED, estimates=dims, options=options
    )
    report(f"  {name}: timing the candidates of {MEASURED} (unless kept from an earlier run)")
    trial = measured.tune(threads=threads, **inputs, **params)
    report(f"  {name}: {trial.summary()}")
    schedules[f"polyimage:{MEASURED}"] = measured
    _, variants[f"polyimage:{MEASURED}"] = _preallocated(measured, threads, {**inputs, **params})
    label = default_schedule(app)
    for suffix, wanted, changed in (
        (CONTRACTED, contract, options.for_contract),
        (REASSOCIATED, reassociate, options.for_reassociate),
    ):
        if not wanted:
            continue
        schedule = app_schedules(app)[label]
        pipe = polyimage.compile(
            outputs, name=name, schedule=schedule, estimates=dims, options=changed(True)
        )
        _, variants[f"polyimage:{label}{suffix}"] = _preallocated(
            pipe, threads, {**inputs, **params}
        )
    for label, (build, derive) in getattr(app, "VARIANTS", {}).items():
        variant_outputs, variant_params = build()
        pipe = polyimage.compile(variant_outputs, name=name, estimates=dims, options=options)
        arguments = {**derive(inputs), **{k: v for k, v in params.items() if k in variant_params}}
        _, variants[f"polyimage:auto ({label})"] = _preallocated(pipe, threads, arguments)
    variants["numpy"] = lambda: app.reference(**inputs, **params)
    variants.update(library_variants(name, inputs, params, threads, report))
    variants.update(opencv_variants(name, inputs, params, threads))
    variants.update(
        halide_variants(
            name, inputs, params, threads, report, result, target, options.machine.get("llc_bytes")
        )
    )
    results = result if isinstance(result, tuple) else (result,)
    variants["copy floor"] = copy_floor(inputs, results, threads)
    if load or callers:
        runs = contention.calls_per_variant(runs, size)
    report(f"  {name}: timing {len(variants)} variants, interleaved ...")

    def heard(text):
        report(f"  {name}: {text}")

    loaded = None
    try:
        if load:
            report(f"  {name}: alternately beside {load} busy process(es) and without ...")
            with contention.busy_processes(load, report) as busy:
                timings, loaded = contention.measure_under_load(
                    measure_interleaved, variants, runs, busy, heard
                )
        else:
            timings = measure_interleaved(variants, runs, heard)
    finally:
        variants["copy floor"].close()
    timed = {
        "size": {k: int(v) for k, v in dims.items()},
        "timings": timings,
        "compile": compile_times(
            outputs, name, app_schedules(app)[default_schedule(app)], dims, options
        ),
    }
    if loaded is not None:
        timed["loaded"] = {"busy": load, "timings": loaded}
    if callers:
        timed["callers"] = _time_callers(
            name, schedules, {**inputs, **params}, threads, callers, runs, report
        )
    return timed


def _time_callers(name, pipes: dict, arguments: dict, threads, callers, calls, report) -> dict:
    """contention.measure_callers of each of `pipes` ({variant: compiled pipeline}), every
    caller writing into its own outputs."""
    note = contention.threads_note(threads)
    report(f"  {name}: {callers} callers at once, {calls} calls each ({note}) ...")
    return {
        "callers": callers,
        "calls": calls,
        "threads": note,
        "variants": {
            variant: contention.measure_callers(
                lambda pipe=pipe: _preallocated(pipe, threads, arguments)[1], callers, calls
            )
            for variant, pipe in pipes.items()
        },
    }


def _preallocated(pipe, threads, arguments: dict) -> tuple:
    """(the result of one call, a callable that calls again into that result), so that the
    timed calls, like Halide's, write into outputs allocated beforehand."""
    result = pipe(threads=threads, **arguments)
    return result, lambda: pipe(threads=threads, out=result, **arguments)


def format_table(results: dict, saved=None) -> str:
    """One block per app: median, min, max in ms, minor page faults per call, the ratio to the
    app's best polyimage schedule and, given `saved` (the "apps" of an earlier JSON), the saved
    median and the ratio to it; then polyimage:auto against Halide (`halide_line`)."""
    lines = []
    for name, res in results.items():
        timings = res["timings"]
        best = min(t["median"] for v, t in timings.items() if _schedule_of_app(v))
        size = "x".join(str(v) for v in res["size"].values())
        old = (saved or {}).get(name, {}).get("timings", {})
        lines.append(f"{name} ({size})")
        width = max([28] + [len(v) + 2 for v in timings])
        loaded = res.get("loaded", {}).get("timings")
        p90, under_load = contention.load_header() if loaded else ("", "")
        header = (
            f"  {'variant':<{width}}{'median ms':>11}{'min ms':>10}{p90}{'max ms':>10}"
            f"{'faults':>9}{'vs best polyimage':>19}{under_load}"
        )
        lines.append(header + (f"{'saved ms':>11}{'vs saved':>10}" if saved is not None else ""))
        for variant, t in sorted(timings.items(), key=lambda kv: kv[1]["median"]):
            p90, under_load = contention.load_cells(t, loaded[variant]) if loaded else ("", "")
            line = (
                f"  {variant:<{width}}{t['median'] * 1e3:>11.2f}{t['min'] * 1e3:>10.2f}{p90}"
                f"{t['max'] * 1e3:>10.2f}{t.get('faults', 0):>9.0f}{t['median'] / best:>18.2f}x"
                f"{under_load}"
            )
            if saved is not None:
                before = old.get(variant, {}).get("median")
                line += (
                    f"{before * 1e3:>11.2f}{t['median'] / before:>9.2f}x"
                    if before
                    else f"{'-':>11}{'-':>10}"
                )
            lines.append(line)
        lines += filter(None, [halide_line(timings), contract_line(timings)])
        if loaded:
            busy = res["loaded"]["busy"]
            summary = contention.load_summary(timings, loaded, busy, AUTOSCHEDULERS)
            lines.extend([summary] if summary else [])
        if "callers" in res:
            lines.extend(contention.format_callers(res["callers"]))
        comp = res["compile"]
        lines.append(f"  compile: {comp['cold']:.2f} s cold, {comp['cached'] * 1e3:.0f} ms cached")
        lines.append("")
    return "\n".join(lines)


def halide_line(timings: dict):
    """polyimage:auto's median over the best of Halide's autoschedulers' and over the
    hand-written Halide schedule's (halide:manual), or None without those timings."""
    ratios = halide_ratios(timings)
    if ratios is None:
        return None
    parts = []
    if ratios.autoscheduler is not None:
        parts.append(f"{ratios.autoscheduler:.2f}x best Halide autoscheduler ({ratios.best})")
    if ratios.manual is not None:
        parts.append(f"{ratios.manual:.2f}x halide:{MANUAL}")
    return "  polyimage:auto / Halide: " + ", ".join(parts)


def contract_line(timings: dict):
    """Each contracted and each reassociated variant's median over its exact build's (bench
    --contract, --reassociate), or None without one."""
    segments = []
    for suffix, title in FLOAT_VARIANTS.items():
        parts = [
            f"{variant} / {variant[: -len(suffix)]}: "
            f"{t['median'] / timings[variant[: -len(suffix)]]['median']:.2f}x"
            for variant, t in timings.items()
            if variant.endswith(suffix) and variant[: -len(suffix)] in timings
        ]
        if parts:
            segments.append(f"{title}: " + ", ".join(parts))
    return "  " + "; ".join(segments) if segments else None


def _schedule_of_app(variant: str) -> bool:
    """Whether `variant` is the app under one of polyimage's exact schedules (not another
    pipeline from the app's VARIANTS, labelled "polyimage:auto (label)", nor a contracted
    or reassociated build, "polyimage:auto+fma", "polyimage:auto+reassoc")."""
    return (
        variant.startswith("polyimage:")
        and " (" not in variant
        and not variant.endswith(tuple(FLOAT_VARIANTS))
    )


def machine_record(described: dict) -> dict:
    """What a run's JSON says it measured on: the platform, polyimage, and `described`
    (targets.describe)."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor(),
        "cpus": os.cpu_count(),
        "polyimage": polyimage.__version__,
        **described,
    }


def write_run(path, document: dict, report) -> None:
    with open(path, "w") as fh:
        json.dump(document, fh, indent=1)
    report(f"wrote {path}")


def load_saved(path) -> dict:
    """The "apps" of a JSON file `polyimage bench --json` wrote, to compare against."""
    try:
        with open(path) as fh:
            return json.load(fh)["apps"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ArgumentError(f"--compare {path}: not a bench JSON file ({exc})") from None


def run_bench(
    apps=(),
    size="paper",
    threads=None,
    runs=5,
    json_path=None,
    report=print,
    compare=None,
    target="native",
    machine="",
    plot=None,
    contract=False,
    load=0,
    callers=None,
    reassociate=False,
    ratios=False,
):
    """Benchmark `apps` (all by default) built for `target` (commands.targets.TARGETS) with the
    cache sizes `machine` ("l2=512K,llc=8M") overriding the host's, with `contract` their
    default schedule with multiply-add contraction too (`reassociate`: float reassociation);
    print what it measures on and the table (beside the saved run `compare`, a JSON file),
    and write JSON and a chart (`plot`, commands/plot.py; with `ratios`, auto's time over
    Halide's) when asked. `load` busy processes and `callers` threads at once: bench_app."""
    contention.check_contention(load, callers)
    if ratios and not plot:
        raise ArgumentError("--ratios draws a chart: give --plot FILE.svg too")
    plot = check_plot(plot) if plot else None
    if json_path:
        check_folder("--json", json_path)
    saved = load_saved(compare) if compare else None
    options = target_options(target, parse_machine(machine))
    if load_calibration(options) is None:
        report(
            "measuring what an operation costs on this CPU and target (once; polyimage calibrate)"
        )
        calibrate(options)
    described = describe(target, options, threads)
    report(header(described))
    if threads is not None:
        os.environ.setdefault("HL_NUM_THREADS", str(threads))
    names = list(apps) or list(APP_NAMES)
    for name in names:
        load_app(name)
    left_out = missing_baselines()
    for note in left_out:
        report(f"note: {note}")
    results = {}
    for name in names:
        report(f"{name}: preparing {size} inputs and compiling")
        results[name] = bench_app(
            name,
            size,
            threads,
            runs,
            report,
            options,
            target,
            contract,
            load,
            callers,
            reassociate,
        )
    report(format_table(results, saved))
    for note in left_out:
        report(f"note: {note}")
    document = {"machine": machine_record(described), "size": size, "runs": runs}
    if load or callers:
        document.update(load=load, callers=callers, calls=contention.calls_per_variant(runs, size))
    document.update(left_out=left_out, apps=results)
    if json_path:
        write_run(json_path, document, report)
    if plot and ratios:
        draw_ratios([(Path(json_path).name if json_path else "this run", document)], plot)
    elif plot:
        draw(document, plot)
    if plot:
        report(f"wrote {plot}")
    return results
