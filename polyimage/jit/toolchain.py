"""The C compiler as cffi will invoke it, a fingerprint of it for the cache key, and what it
builds for (its family, OpenMP, vector width, flags for the target)."""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sysconfig
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..config import flags_for
from ..errors import CompileError, SerialBuildWarning
from .cache import fields_digest

# beside the compile cache: what the compiler said about itself, per binary and flags
TOOLCHAIN_DIR = ".toolchain"
# the format of those records: a change asks every compiler again
_FACTS_FORMAT = "3"


def compiler_command() -> str:
    """The compiler Python extensions are built with (CC overrides sysconfig's)."""
    return os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"


def facts_dir(options):
    """Where the compiler's answers about itself are kept under `options`: their cache folder,
    or None when the cache is off."""
    return options.cache_dir if options.use_cache else None


def compiler_fingerprint(command: str, flags: tuple, cache_dir=None) -> str:
    """Version line of the compiler, the target its `-march` flag resolves to, and a digest of
    the macros it predefines under `flags` (which tell any compiler's targets apart)."""
    facts = _queried(command, tuple(flags), cache_dir and str(cache_dir))
    return " ".join(facts["version"] + list(facts["target"].values()) + [facts["macros"]])


def resolved_target(command: str, flags: tuple, cache_dir=None) -> dict:
    """{"-march=": cpu, "-mtune=": cpu} as the compiler resolves `flags` (`native`: the
    host's CPU), from gcc's `-Q --help=target` or clang's `-###`; {} from another compiler."""
    return dict(_queried(command, tuple(flags), cache_dir and str(cache_dir))["target"])


@dataclass(frozen=True)
class CompilerFacts:
    """What the compiler is: its family ("gcc", "clang" or "other", from its macros), whether
    it compiles and links `-fopenmp`, and the flags asked as it builds with them
    (config.flags_for)."""

    family: str
    openmp: bool
    flags: tuple


def compiler_facts(command: str, flags: tuple, cache_dir=None) -> CompilerFacts:
    """CompilerFacts of `command` asked to build with `flags`."""
    facts = _queried(command, tuple(flags), cache_dir and str(cache_dir))
    return CompilerFacts(facts["family"], facts["openmp"], tuple(facts["flags"]))


def serial_build(command: str, flags: tuple, cache_dir=None) -> bool:
    """Whether `flags` ask for OpenMP from a compiler that has none (the build is serial)."""
    return "-fopenmp" in flags and not compiler_facts(command, flags, cache_dir).openmp


_warned_serial: set = set()


def warn_serial(command: str) -> None:
    """One SerialBuildWarning per process and compiler without OpenMP."""
    if command in _warned_serial:
        return
    _warned_serial.add(command)
    warnings.warn(
        f"the C compiler {command!r} has no OpenMP: pipelines build serial and every call "
        "runs on one thread; for threads, build with gcc or a clang with LLVM's OpenMP "
        "runtime (Debian: apt install libomp-dev; macOS: brew install gcc, then CC=gcc-<N>)",
        SerialBuildWarning,
        stacklevel=3,
    )


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


def facts_for(options) -> TargetFacts:
    """TargetFacts of the C compiler and flags `options` build with (kept in its cache)."""
    return target_facts(compiler_command(), options.flags, facts_dir(options))


@functools.lru_cache(maxsize=16)
def _queried(command: str, flags: tuple, cache_dir) -> dict:
    """Everything this module asks the compiler under `flags` (some 30 ms a run, a link
    included), once per process, and with a `cache_dir` once per compiler binary: kept in
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
    fields = [_FACTS_FORMAT, command, *flags, binary, str(stat.st_size), str(stat.st_mtime_ns)]
    return Path(cache_dir) / TOOLCHAIN_DIR / f"{fields_digest(fields)}.json"


_MACROS = ["-dM", "-E", "-x", "c", os.devnull]
_OPENMP_PROBE = "#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n"
_CLANG_CPU = re.compile(r'"-(target|tune)-cpu" "([^"]+)"')


def _ask(command: str, flags: tuple) -> dict:
    base = shlex.split(command)
    try:
        version = _run(base + ["--version"]).stdout.splitlines()[:1]
        family = _family(_defined(_run(base + _MACROS).stdout))
        openmp = _links(base + ["-fopenmp"], _OPENMP_PROBE)
        simd = not openmp and _run(base + ["-fopenmp-simd"] + _MACROS).returncode == 0
        usable = _known_params(base, flags_for(flags, family, openmp, simd))
        argv = base + list(usable)
        macros = _run(argv + _MACROS).stdout
        target = _target(argv, family)
        defined = _defined(macros)
        extra: tuple[str, ...] = ()
        if "__AVX2__" in defined and family == "gcc":
            probe = _run(argv + list(GATHER_FLAGS) + ["-E", "-x", "c", os.devnull])
            extra = GATHER_FLAGS if probe.returncode == 0 else ()
    except (OSError, subprocess.SubprocessError) as exc:
        raise CompileError(f"cannot run the C compiler {command!r}: {exc}") from exc
    return {
        "version": version,
        "family": family,
        "openmp": openmp,
        "flags": list(usable),
        "target": target,
        "macros": "macros:" + fields_digest(sorted(macros.splitlines()))[:16],
        "vector_bytes": 64 if "__AVX512F__" in defined else 32 if "__AVX__" in defined else 16,
        "extra_flags": list(extra),
    }


def _known_params(base: list, flags: tuple) -> tuple:
    """`flags` without the `--param NAME=VALUE` pairs the compiler refuses: gcc renames and
    retires its parameters between releases (gcc 12's max-unswitch-level is unknown to gcc
    13.3), and an unknown one fails every build."""
    kept: list
    kept, k = [], 0
    while k < len(flags):
        pair = flags[k : k + 2] if flags[k] == "--param" else flags[k : k + 1]
        k += len(pair)
        if len(pair) == 2 and _run(base + list(pair) + _MACROS).returncode != 0:
            continue
        kept += pair
    return tuple(kept)


def _run(argv: list) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


def _defined(macros: str) -> set:
    return {line.split()[1] for line in macros.splitlines() if line.startswith("#define ")}


def _family(defined: set) -> str:
    return "clang" if "__clang__" in defined else "gcc" if "__GNUC__" in defined else "other"


def _links(argv: list, program: str) -> bool:
    """Whether `argv` compiles and links `program` into an executable."""
    with tempfile.TemporaryDirectory(prefix="polyimage-probe-") as folder:
        source = Path(folder) / "probe.c"
        source.write_text(program)
        return _run(argv + [str(source), "-o", str(Path(folder) / "probe")]).returncode == 0


def _target(argv: list, family: str) -> dict:
    """{"-march=": cpu, "-mtune=": cpu} the flags in `argv` resolve to: gcc prints them under
    `-Q --help=target`, clang names them in the command lines `-###` prints."""
    if family == "gcc":
        listing = _run(argv + ["-Q", "--help=target"]).stdout
        return {
            line.split()[0]: line.split()[-1]
            for line in listing.splitlines()
            if line.strip().startswith(("-march=", "-mtune=")) and len(line.split()) > 1
        }
    if family == "clang":
        listing = _run(argv + ["-###", "-c", "-x", "c", os.devnull]).stderr
        names = {"target": "-march=", "tune": "-mtune="}
        return {names[kind]: cpu for kind, cpu in _CLANG_CPU.findall(listing)}
    return {}
