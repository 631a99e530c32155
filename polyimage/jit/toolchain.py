"""The C compiler as cffi will invoke it, a fingerprint of it for the cache key, and what it
builds for (vector width, flags for the target)."""

from __future__ import annotations

import functools
import json
import os
import shlex
import shutil
import subprocess
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import CompileError
from .cache import fields_digest

# beside the compile cache: what the compiler said about itself, per binary and flags
TOOLCHAIN_DIR = ".toolchain"


def compiler_command() -> str:
    """The compiler Python extensions are built with (CC overrides sysconfig's)."""
    return os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"


def facts_dir(options):
    """Where the compiler's answers about itself are kept under `options`: their cache folder,
    or None when the cache is off."""
    return options.cache_dir if options.use_cache else None


def compiler_fingerprint(command: str, flags: tuple, cache_dir=None) -> str:
    """Version line of the compiler and the target its `-march` flag resolves to."""
    facts = _queried(command, tuple(flags), cache_dir and str(cache_dir))
    return " ".join(facts["version"] + list(facts["target"].values()))


def resolved_target(command: str, flags: tuple, cache_dir=None) -> dict:
    """{"-march=": cpu, "-mtune=": cpu} as the compiler resolves `flags` (`native`: the
    host's CPU), from gcc's `-Q --help=target`; {} from a compiler that does not say."""
    return dict(_queried(command, tuple(flags), cache_dir and str(cache_dir))["target"])


# gcc's tuning for generic x86-64 and early Zen leaves hardware gathers off; a loop that reads a
# lookup table then stays scalar altogether, 2-3x slower than with gathers even where they are slow
GATHER_FLAGS = ("-mtune-ctrl=use_gather",)


@dataclass(frozen=True)
class TargetFacts:
    """What the compiler builds for under some flags: the widest vector its target has, in
    bytes, and the flags added to build with (hardware gathers on where gcc's tuning has them
    off)."""

    vector_bytes: int
    flags: tuple


def target_facts(command: str, flags: tuple, cache_dir=None) -> TargetFacts:
    """TargetFacts of `command` with `flags`, read off its predefined macros."""
    facts = _queried(command, tuple(flags), cache_dir and str(cache_dir))
    return TargetFacts(facts["vector_bytes"], tuple(facts["extra_flags"]))


@functools.lru_cache(maxsize=16)
def _queried(command: str, flags: tuple, cache_dir) -> dict:
    """Everything this module asks the compiler under `flags` (four runs of it, some 30 ms),
    once per process, and with a `cache_dir` once per compiler binary: kept in
    <cache_dir>/.toolchain/, keyed by the command, the flags and the binary's path, size and
    modification time, so a cached compile in a fresh process runs no compiler at all."""
    path = _facts_path(command, flags, cache_dir)
    if path is not None:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass
    facts = _ask(command, flags)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as tmp:
                json.dump(facts, tmp)
            os.replace(tmp.name, path)
        except OSError:
            pass  # an unwritable cache only costs the next process the compiler runs
    return facts


def _facts_path(command: str, flags: tuple, cache_dir):
    if not cache_dir:
        return None
    found = shutil.which(shlex.split(command)[0]) if command.strip() else None
    if found is None:
        return None
    binary = os.path.realpath(found)
    stat = os.stat(binary)
    key = fields_digest([command, *flags, binary, str(stat.st_size), str(stat.st_mtime_ns)])
    return Path(cache_dir) / TOOLCHAIN_DIR / f"{key}.json"


def _ask(command: str, flags: tuple) -> dict:
    argv = shlex.split(command) + list(flags)
    try:
        version = subprocess.run(
            shlex.split(command) + ["--version"], capture_output=True, text=True, timeout=30
        ).stdout.splitlines()[:1]
        target = subprocess.run(
            argv + ["-Q", "--help=target"], capture_output=True, text=True, timeout=30
        ).stdout
        macros = subprocess.run(
            argv + ["-dM", "-E", "-x", "c", os.devnull], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise CompileError(f"cannot run the C compiler {command!r}: {exc}") from exc
    defined = {line.split()[1] for line in macros.splitlines() if line.startswith("#define ")}
    vector_bytes = 64 if "__AVX512F__" in defined else 32 if "__AVX__" in defined else 16
    extra = ()
    if "__AVX2__" in defined and "__GNUC__" in defined and "__clang__" not in defined:
        probe = subprocess.run(
            argv + list(GATHER_FLAGS) + ["-E", "-x", "c", os.devnull],
            capture_output=True,
            timeout=30,
        )
        extra = GATHER_FLAGS if probe.returncode == 0 else ()
    return {
        "version": version,
        "target": {
            line.split()[0]: line.split()[-1]
            for line in target.splitlines()
            if line.strip().startswith(("-march=", "-mtune=")) and len(line.split()) > 1
        },
        "vector_bytes": vector_bytes,
        "extra_flags": list(extra),
    }
