"""The generated C of a fixed corpus of pipelines, written to a folder, and two such folders
compared: a check that a change to code generation changed no C (or only its layout).

    python tests/c_corpus.py write DIR [--seeds N]   # one file per pipeline and schedule
    python tests/c_corpus.py compare OLD NEW         # identical, whitespace only, or differing

The corpus: every app under naive, auto and greedy-cost (plain, profiled, checked, and the
exported library's source), and `--seeds` random pipelines (tests' generator) naively and under
two random schedules each. The machine model and target are pinned, so the files depend on the
compiler's code alone, not on the host.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import tempfile
import warnings
from pathlib import Path

PINNED = {
    "POLYIMAGE_L1_BYTES": "32768",
    "POLYIMAGE_L2_BYTES": "524288",
    "POLYIMAGE_LLC_BYTES": "8388608",
    "POLYIMAGE_CORES": "2",
    "POLYIMAGE_MARCH": "x86-64-v3",
    "POLYIMAGE_PLAIN_POINTS": "1",
}


def module_text(cmodule) -> str:
    """Everything a CModule holds as text: kernel.c, the cdef and each translation unit."""
    parts = [cmodule.source, "/* ---- cdef */", cmodule.cdef]
    for k, unit in enumerate(cmodule.units):
        parts += [f"/* ---- unit {k} */", unit.text]
    parts.append(f"/* ---- profile timers {cmodule.profile!r} */")
    return "\n".join(parts)


def _app_cases():
    import polyimage
    from polyimage.apps import APP_NAMES, load_app
    from polyimage.codegen.export_c import exported_c
    from polyimage.driver.lower import profiled

    for name in APP_NAMES:
        app = load_app(name)
        outputs, _ = app.build()
        for schedule in ("naive", "auto", "greedy-cost"):
            pipe = polyimage.compile(
                outputs, name=name, schedule=schedule, estimates=app.PAPER_SIZE, build=False
            )
            yield f"app-{name}-{schedule}", module_text(pipe.cmodule)
            profiled_c = profiled(pipe.compiled).cmodule
            yield f"app-{name}-{schedule}-profiled", module_text(profiled_c)
            exported = exported_c(pipe.stage_graph, pipe.cmodule, name, pipe.constraints)
            yield f"app-{name}-{schedule}-export", exported.source + exported.header
        checked = polyimage.compile(
            outputs, name=name, schedule="auto", estimates=app.PAPER_SIZE, build=False, check=True
        )
        yield f"app-{name}-auto-checked", module_text(checked.cmodule)


def _random_cases(seeds: int):
    import polyimage
    from polyimage.testing import (
        random_mixed_pipeline,
        random_pipeline,
        random_schedule,
    )

    for seed in range(seeds):
        for kind, make in (("random", random_pipeline), ("mixed", random_mixed_pipeline)):
            if kind == "mixed" and seed % 4:
                continue
            rp = make(seed)
            naive = polyimage.compile(rp.outputs, schedule="naive", inline=rp.inline, build=False)
            yield f"{kind}-{seed:04d}-naive", module_text(naive.cmodule)
            for k in range(2):
                rng = random.Random(seed * 1000 + k)
                try:
                    schedule = random_schedule(naive.stage_graph, rng)
                except Exception as exc:  # a generator that cannot schedule: recorded as such
                    yield f"{kind}-{seed:04d}-s{k}", f"no schedule: {exc}"
                    continue
                pipe = polyimage.compile(
                    rp.outputs, schedule=schedule, inline=rp.inline, build=False
                )
                yield f"{kind}-{seed:04d}-s{k}", f"/* {schedule} */\n" + module_text(pipe.cmodule)


def write(folder: Path, seeds: int) -> int:
    """Write the corpus into `folder`; the number of files."""
    os.environ.update(PINNED)
    os.environ["POLYIMAGE_CACHE_DIR"] = tempfile.mkdtemp(prefix="c-corpus-")
    warnings.simplefilter("ignore")
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, text in [*_app_cases(), *_random_cases(seeds)]:
        (folder / f"{name}.c").write_text(text)
        count += 1
    return count


_SPACE = re.compile(r"\s+")
_LINE = re.compile(r'#line \d+ "kernel.c"')


def compare(old: Path, new: Path) -> dict:
    """{"identical", "whitespace", "layout", "different", "missing": [file names]}:
    whitespace-only differences leave the same tokens in the same order; layout ones also
    move `#line` numbers (the translation units of a re-laid kernel.c)."""
    result = {"identical": [], "whitespace": [], "layout": [], "different": [], "missing": []}
    for path in sorted(old.glob("*.c")):
        other = new / path.name
        if not other.exists():
            result["missing"].append(path.name)
            continue
        a, b = path.read_text(), other.read_text()
        if a == b:
            result["identical"].append(path.name)
        elif _SPACE.sub("", a) == _SPACE.sub("", b):
            result["whitespace"].append(path.name)
        elif _SPACE.sub("", _LINE.sub("", a)) == _SPACE.sub("", _LINE.sub("", b)):
            result["layout"].append(path.name)
        else:
            result["different"].append(path.name)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    writing = commands.add_parser("write")
    writing.add_argument("folder", type=Path)
    writing.add_argument("--seeds", type=int, default=200)
    comparing = commands.add_parser("compare")
    comparing.add_argument("old", type=Path)
    comparing.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    if args.command == "write":
        print(f"{write(args.folder, args.seeds)} files in {args.folder}")
        return 0
    result = compare(args.old, args.new)
    for kind, names in result.items():
        print(
            f"{kind}: {len(names)}" + "".join(f"\n  {n}" for n in names[:20] if kind != "identical")
        )
    return 0 if not (result["different"] or result["missing"]) else 1


if __name__ == "__main__":
    sys.exit(main())
