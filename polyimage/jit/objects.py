"""The object cache of jit.build: each translation unit's object kept by its code (a compile
that changes other code relinks it), with the compiler's output on it, whose messages a build
reusing the object replays at the lines of kernel.c the unit now stands at."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from pathlib import Path

from ..codegen.units import SOURCE_NAME
from ..version import __version__
from . import cache


def object_path(root, fingerprint: str, command: list, code: str):
    """Where the object of a unit compiled by `command` from `code` (codegen.units.Unit.code:
    without its `#line` directives, which move with the code before the unit in kernel.c and
    change nothing in the object without -g) is kept, or None without an object cache."""
    if root is None:
        return None
    argv = [a for a in command if not a.endswith((".c", ".o"))]
    key = cache.fields_digest([code, fingerprint, " ".join(argv), __version__])
    return Path(root) / key[:2] / f"{key}.o"


def reuse_object(kept, target: Path) -> bool:
    """Copies a kept object to `target` and marks it used; False when there is none."""
    if kept is None:
        return False
    try:
        shutil.copyfile(kept, target)
        cache.touch(kept)
        return True
    except OSError:
        return False


def keep_log(log: str, lines: tuple, kept: Path) -> None:
    """Keeps the compiler's output on a unit beside its object, with the `lines` its `#line`
    directives named (codegen.units.Unit.lines), so that a build reusing the object replays
    its messages (replayed_log); an unwritable cache only loses them."""
    try:
        data = json.dumps({"lines": list(lines), "log": log})
        cache.write_whole(kept.with_suffix(".log"), data)
    except OSError:
        pass


def replayed_log(kept, lines: tuple):
    """The output kept with a reused object (keep_log), its messages moved to the `lines` of
    kernel.c the unit's pieces now stand at (its code is the same, its `#line` directives may
    name other lines), or None when none is kept."""
    if kept is None:
        return None
    try:
        stored = json.loads(Path(kept).with_suffix(".log").read_text())
        old, log = list(stored["lines"]), str(stored["log"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
    new = list(lines)
    if len(old) != len(new) or old != sorted(old):
        return None
    cache.touch(Path(kept).with_suffix(".log"))

    def moved(match) -> str:
        line = int(match[1])
        k = max((k for k, start in enumerate(old) if start <= line), default=0)
        return f"{SOURCE_NAME}:{line - old[k] + new[k]}:"

    rest = log.partition("\n")[2]
    pattern = re.compile(rf"^{re.escape(SOURCE_NAME)}:(\d+):", re.M)
    return f"# 0.00 s, reused {Path(kept).name}\n" + pattern.sub(moved, rest)


def keep_object(built: Path, kept: Path) -> None:
    """Keeps a freshly built object (written under a hidden name, then renamed into place, so
    a reader never sees half of one); an unwritable cache only loses the reuse."""
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        partial = kept.parent / f".{kept.name}.{os.getpid()}.{threading.get_ident()}"
        shutil.copyfile(built, partial)
        os.replace(partial, kept)
    except OSError:
        pass
