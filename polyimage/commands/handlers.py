"""What each `polyimage` sub-command does with its parsed arguments: one handler per command,
each importing the modules it needs only when it runs (so that `--help` and `cache` stay quick).
"""

from __future__ import annotations

import collections

from polyimage.config import Options
from polyimage.errors import ArgumentError


def _print_flushed(text: str) -> None:
    """Print `text` at once: the long commands report as they go."""
    print(text, flush=True)


def run_command(args, options: Options) -> None:
    """`polyimage run`: run, time and check one app (commands.runner)."""
    from .runner import run_app

    run_app(
        args.app,
        args.inputs,
        args.output,
        args.param,
        args.threads,
        args.runs,
        args.check,
        schedule=args.schedule,
        profile=args.profile,
        chunks=args.chunks,
        scheduler=args.scheduler,
        contract=args.contract,
    )


def bench_command(args, options: Options) -> None:
    """`polyimage bench`: draw a saved run (--from), time the apps on Dask (--dask), or time
    them against the baselines."""
    if args.groups:
        _group_bench(args)
    elif args.saved_run:
        _draw_saved_run(args)
    elif args.dask:
        _dask_bench(args)
    else:
        from .bench import run_bench

        if "x" in args.size:
            raise ArgumentError(
                f"--size {args.size} goes with --groups; the apps take paper or small"
            )
        run_bench(
            args.apps,
            args.size,
            args.threads,
            args.runs,
            args.json,
            report=_print_flushed,
            compare=args.compare,
            target=args.target,
            machine=args.machine,
            plot=args.plot,
            contract=args.contract,
            load=args.load,
            callers=args.callers,
            reassociate=args.reassociate,
            ratios=args.ratios,
        )


def _group_bench(args) -> None:
    """`polyimage bench --groups`: random pipelines, auto against naive (commands.bench_groups)."""
    from .bench_groups import run_group_bench

    if args.apps:
        raise ArgumentError("--groups draws random pipelines: give no APP")
    refused = [
        option
        for option, given in (
            ("--json", args.json),
            ("--plot", args.plot),
            ("--from", args.saved_run),
            ("--ratios", args.ratios),
            ("--compare", args.compare),
            ("--dask", args.dask),
            ("--target", args.target != "native"),
            ("--machine", args.machine),
            ("--contract", args.contract),
            ("--reassociate", args.reassociate),
            ("--load", args.load),
            ("--callers", args.callers),
        )
        if given
    ]
    if refused:
        raise ArgumentError(f"--groups does not take {', '.join(refused)}")
    run_group_bench(args.count, args.seed, args.size, args.runs, args.threads, _print_flushed)


def _draw_saved_run(args) -> None:
    """`polyimage bench --from RUN.json --plot FILE`: the graph of a run kept on disk; with
    --ratios, auto against Halide in one or more runs (`--from` repeated)."""
    from pathlib import Path

    from .plot import check_plot, draw, draw_ratios, load_run

    if not args.plot:
        raise ArgumentError("--from draws a saved run: give --plot FILE.svg too")
    if len(args.saved_run) > 1 and not args.ratios:
        raise ArgumentError("--from more than once draws the runs' --ratios: give --ratios too")
    path = check_plot(args.plot)
    runs = [(Path(saved).name, load_run(saved)) for saved in args.saved_run]
    if args.ratios:
        draw_ratios(runs, path)
    else:
        draw(runs[0][1], path)
    print(f"wrote {args.plot}")


def _dask_bench(args) -> None:
    """`polyimage bench --dask`: the apps on large images on Dask; the options of the plain
    bench that mean nothing there are refused."""
    from .dask_bench import run_dask_bench

    refused = [
        option
        for option, given in (
            ("--plot", args.plot),
            ("--ratios", args.ratios),
            ("--compare", args.compare),
            ("--target", args.target != "native"),
            ("--machine", args.machine),
            ("--size", args.size != "paper"),
            ("--contract", args.contract),
            ("--reassociate", args.reassociate),
            ("--load", args.load),
            ("--callers", args.callers),
        )
        if given
    ]
    if refused:
        raise ArgumentError(f"--dask does not take {', '.join(refused)}")
    run_dask_bench(
        args.apps,
        args.dask_size,
        args.chunks,
        args.threads,
        args.runs,
        args.json,
        report=_print_flushed,
    )


def export_command(args, options: Options) -> None:
    """`polyimage export`: compile an app or a user's pipeline into a deployable library."""
    from .exporting import export_command as export

    export(
        args.pipeline,
        args.output,
        schedule=args.schedule,
        estimates=args.estimates,
        cpu=args.target,
        march=args.march,
        name=args.name,
    )


def report_command(args, options: Options) -> None:
    """`polyimage report`: what the compiler made of an app, or (--all) the grouping search
    over every app."""
    from .runner import grouping_table, report_app

    if args.all:
        print(grouping_table(report=_print_flushed))
    elif args.app:
        print(
            report_app(
                args.app,
                inline=not args.no_inline,
                schedule=args.schedule,
                vectorization=args.vec,
                estimates=args.estimates,
            )
        )
    else:
        raise ArgumentError("report needs an app name, or --all")


def cache_command(args, options: Options) -> None:
    """`polyimage cache info|clear`."""
    print(describe_cache(args.action, options))


def describe_cache(action: str, options: Options) -> str:
    """What `polyimage cache info|clear` prints, after clearing for `clear`."""
    from polyimage.jit import cache

    root = options.cache_dir
    listed = cache.entries(root)
    kinds = collections.Counter(
        "built modules" if e.kind == cache.MODULE else e.kind for e in listed
    )
    breakdown = ", ".join(f"{kind}: {n}" for kind, n in sorted(kinds.items()))
    detail = f" ({breakdown})" if breakdown else ""
    if action == "clear":
        cache.clear(root)
        noun = "entry" if len(listed) == 1 else "entries"
        return f"removed {len(listed)} {noun}{detail} from {root}"
    size = sum(e.size for e in listed)
    lines = [
        f"location: {root}" + ("" if root.is_dir() else " (not created yet)"),
        f"entries:  {len(listed)}{detail}",
        f"size:     {human_size(size)} ({size} bytes) of at most "
        f"{human_size(options.cache_max_bytes)} (POLYIMAGE_CACHE_MAX)",
    ]
    if not options.use_cache:
        lines.append("caching is off (POLYIMAGE_NO_CACHE): compiles neither read nor fill it")
    return "\n".join(lines)


def human_size(size: float) -> str:
    """`size` bytes as `512 B`, `1.5 KiB`, `84.3 MiB`, `1.0 GiB`."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            break
        size /= 1024
    return f"{size} B" if unit == "B" else f"{size:.1f} {unit}"


def calibrate_command(args, options: Options) -> None:
    """`polyimage calibrate`: measure what an operation costs on this CPU."""
    from polyimage.jit.calibrate import calibrate

    from .targets import target_options

    print(calibrate(target_options(args.target, {}), force=args.force).describe())


def tune_command(args, options: Options) -> None:
    """`polyimage tune`: fit the cost model's weights to this machine (polyimage.autotune)."""
    from polyimage.autotune.tuner import tune

    from .targets import TARGETS

    tune(
        args.apps,
        size=args.size,
        budget=args.budget,
        threads=args.threads,
        out=args.out,
        resume=args.resume,
        plot=args.plot,
        seed=args.seed,
        random_count=args.random,
        runs=args.runs,
        samples=args.samples,
        store=args.store,
        report=_print_flushed,
        march=TARGETS[args.target][0] if args.target else None,
    )


def tune_schedule_command(args, options: Options) -> None:
    """`polyimage tune-schedule`: time the candidates of schedule="measured" and keep the
    fastest (commands.tune_schedule)."""
    from .tune_schedule import tune_schedule

    tune_schedule(
        args.pipeline,
        estimates=args.estimates,
        params=args.param,
        threads=args.threads,
        force=args.force,
        report=_print_flushed,
    )


def graph_command(args, options: Options) -> None:
    """`polyimage graph`: draw the stage graph of an app or a user's pipeline."""
    from .runner import draw_graph

    draw_graph(
        args.app,
        args.output,
        schedule=args.schedule,
        estimates=args.estimates,
        as_written=args.as_written,
    )


HANDLERS = {
    "run": run_command,
    "bench": bench_command,
    "export": export_command,
    "report": report_command,
    "cache": cache_command,
    "calibrate": calibrate_command,
    "tune": tune_command,
    "tune-schedule": tune_schedule_command,
    "graph": graph_command,
}
