"""Options of a compilation, and the only place POLYIMAGE_* environment variables are read.

POLYIMAGE_CACHE_DIR  where built modules are kept (default: $XDG_CACHE_HOME/polyimage,
                     else ~/.cache/polyimage)
POLYIMAGE_NO_CACHE   1: build every pipeline afresh in a temporary directory
POLYIMAGE_CFLAGS     extra compiler flags, appended to the defaults
CC                   the C compiler (as for any Python extension build)
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

# one level of loop unswitching keeps its gains and cuts gcc's time on large groups 2-3x
DEFAULT_CFLAGS = ("-O3", "-march=native", "-fopenmp", "-std=c99", "-fwrapv", "-ffp-contract=off",
                  "-fno-math-errno", "-fno-trapping-math", "--param", "max-unswitch-level=1",
                  "-w")


@dataclass(frozen=True)
class Options:
    """Build options; `Options.from_env()` applies the environment variables."""

    cache_dir: Path = field(default_factory=lambda: _default_cache_dir())
    use_cache: bool = True
    cflags: tuple = DEFAULT_CFLAGS

    @classmethod
    def from_env(cls, environ=None) -> "Options":
        env = os.environ if environ is None else environ
        cache_dir = Path(env["POLYIMAGE_CACHE_DIR"]) if env.get("POLYIMAGE_CACHE_DIR") \
            else _default_cache_dir(env)
        extra = tuple(shlex.split(env.get("POLYIMAGE_CFLAGS", "")))
        return cls(cache_dir=cache_dir,
                   use_cache=env.get("POLYIMAGE_NO_CACHE", "") in ("", "0"),
                   cflags=DEFAULT_CFLAGS + extra)


def _default_cache_dir(environ=None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "polyimage"
