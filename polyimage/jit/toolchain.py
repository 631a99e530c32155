"""The C compiler as cffi will invoke it, a fingerprint of it for the cache key, and what it
builds for (vector width, flags for the target)."""

from __future__ import annotations

import functools
import os
import shlex
import subprocess
import sysconfig
from dataclasses import dataclass

from ..errors import CompileError


def compiler_command() -> str:
    """The compiler Python extensions are built with (CC overrides sysconfig's)."""
    return os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"


@functools.lru_cache(maxsize=8)
def compiler_fingerprint(command: str, flags: tuple) -> str:
    """Version line of the compiler and the target its `-march` flag resolves to."""
    try:
        version = subprocess.run(
            shlex.split(command) + ["--version"], capture_output=True, text=True, timeout=30
        ).stdout.splitlines()[:1]
    except (OSError, subprocess.SubprocessError) as exc:
        raise CompileError(f"cannot run the C compiler {command!r}: {exc}") from exc
    return " ".join(version + list(resolved_target(command, flags).values()))


@functools.lru_cache(maxsize=8)
def resolved_target(command: str, flags: tuple) -> dict:
    """{"-march=": cpu, "-mtune=": cpu} as the compiler resolves `flags` (`native`: the
    host's CPU), from gcc's `-Q --help=target`; {} from a compiler that does not say."""
    try:
        target = subprocess.run(
            shlex.split(command) + list(flags) + ["-Q", "--help=target"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise CompileError(f"cannot run the C compiler {command!r}: {exc}") from exc
    return {
        line.split()[0]: line.split()[-1]
        for line in target.splitlines()
        if line.strip().startswith(("-march=", "-mtune=")) and len(line.split()) > 1
    }


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


@functools.lru_cache(maxsize=8)
def target_facts(command: str, flags: tuple) -> TargetFacts:
    """TargetFacts of `command` with `flags`, read off its predefined macros."""
    argv = shlex.split(command) + list(flags)
    try:
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
    return TargetFacts(vector_bytes, extra)
