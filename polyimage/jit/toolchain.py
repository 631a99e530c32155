"""The C compiler as cffi will invoke it, and a fingerprint of it for the cache key."""

from __future__ import annotations

import functools
import os
import shlex
import subprocess
import sysconfig

from ..errors import CompileError


def compiler_command() -> str:
    """The compiler Python extensions are built with (CC overrides sysconfig's)."""
    return os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"


@functools.lru_cache(maxsize=8)
def compiler_fingerprint(command: str, flags: tuple) -> str:
    """Version line of the compiler and the target its `-march` flag resolves to."""
    argv = shlex.split(command)
    try:
        version = subprocess.run(
            argv + ["--version"], capture_output=True, text=True, timeout=30
        ).stdout.splitlines()[:1]
        target = subprocess.run(
            argv + list(flags) + ["-Q", "--help=target"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise CompileError(f"cannot run the C compiler {command!r}: {exc}") from exc
    arch = [
        line.split()[-1]
        for line in target.splitlines()
        if line.strip().startswith(("-march=", "-mtune="))
    ]
    return " ".join(version + arch)
