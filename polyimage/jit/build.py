"""Build generated C as a shared library that cffi opens in ABI mode, through the disk cache;
call it on NumPy arrays."""

from __future__ import annotations

import json
import logging
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..calls import affinity_cores, open_library
from ..codegen.checked import CHECK_FAILED
from ..codegen.cmodule import CModule
from ..codegen.units import SOURCE_NAME, Unit
from ..config import Options
from ..dsl.types import C_ARRAYS
from ..errors import CheckError, CompileError
from . import cache
from . import objects as object_cache
from .toolchain import (
    compiler_command,
    compiler_facts,
    compiler_fingerprint,
    facts_dir,
    serial_build,
    target_facts,
    warn_serial,
)

log = logging.getLogger("polyimage")

# a shared library cffi opens in ABI mode (the OpenMP runtime comes with -fopenmp in the flags)
LINK_FLAGS = ("-fPIC", "-dynamiclib") if sys.platform == "darwin" else ("-fPIC", "-shared")
# how a built library is loaded: part of the cache key (entries of Python extension modules,
# as builds made before, are not this kind)
LOADER = "cffi ABI mode (ffi.dlopen)"
# the units of a module of at least this much C build with -O2 where the flags ask for -O3:
# as fast in the bench (pyramid_blend 11% faster, the other large apps within 2%) for about
# 40% less compile time; smaller modules keep -O3 (harris runs 7% faster with it, and builds
# in 0.3 s). The module decides, not the unit, so that how the code is cut changes nothing.
O2_MODULE_BYTES = 64 * 1024
# the optimization level of such a module's driver unit (the entry's tile loops and the tiles'
# regions, run once per tile): -O0 builds local_laplacian's in a third of -O1's time (0.29
# against 0.87 s of CPU) and the large apps ran as fast (medians within their spread)
DRIVER_LEVEL = "-O0"
# gcc's flags for a unit of a long jammed nest (codegen.units.long_chains): built without TER,
# its long loop body left gcc 12's combine pass retrying for seconds (3.4 s of nl_means' 3.6);
# with combinations of two instructions the object came out the same in half the time
LONG_CHAIN_FLAGS = ("--param", "max-combine-insns=2")
# gcc's flags for the other units of such a module: no second, narrower vectorized copy of
# each vectorized loop for its remainder (the remainder runs scalar): a third less of gcc's
# time on most large apps (nl_means 1.77 -> 0.98 s, bilateral_filter's one unit 2.2 -> 1.4),
# their run times within the spread
LARGE_MODULE_GCC_FLAGS = ("--param", "vect-epilogues-nomask=0")
UNIT_POLICY = (
    f"-O2 for every unit of a module of {O2_MODULE_BYTES} bytes or more ({DRIVER_LEVEL} for its "
    f"driver unit, {' '.join(LARGE_MODULE_GCC_FLAGS)} for its other units with gcc); "
    f"{' '.join(LONG_CHAIN_FLAGS)} for gcc on units of long chains"
)
# compiled units kept by their text, so that a compile which changes other code relinks them
OBJECTS = "objects"
# gcc's vectorization report, written to build.log by every build (polyimage.tools.vectorization
# reads it); messages only: the cache key, the object keys and the code are the same without
VECTOR_REPORT_FLAGS = ("-fopt-info-vec-optimized", "-fopt-info-vec-missed")
_LOAD_LOCK = threading.Lock()
_LOADED: dict = {}  # the libraries opened in this process, by module name
progress = logging.getLogger("polyimage.progress")


@dataclass(frozen=True)
class UnitTime:
    """Seconds the C compiler took on one translation unit ("main", "nests K") or the link;
    `reused` when the unit's object came from the object cache instead (0 seconds)."""

    name: str
    seconds: float
    reused: bool = False

    def describe(self) -> str:
        return f"{self.name} reused" if self.reused else f"{self.name} {self.seconds:.2f} s"


@dataclass(frozen=True)
class BuildInfo:
    """What the build step did: the cache key, where the module is, whether it was cached, and
    the compiler's time per unit when the module was built (now or, on a hit, earlier); the
    compiler, and `serial` when it has no OpenMP (the module runs on one thread); `log`, the
    compiler's output of a build without the cache, whose folder is gone (else build.log in
    the entry holds it)."""

    key: str
    path: Path
    cache_hit: bool
    seconds: float
    units: tuple = ()
    compiler: str = ""
    serial: bool = False
    log: str = field(default="", repr=False, compare=False)

    def describe(self) -> str:
        """Where the module came from and the compiler's seconds per translation unit."""
        units = ", ".join(u.describe() for u in self.units)
        if self.cache_hit:
            return f"loaded from the cache in {self.seconds * 1e3:.1f} ms" + (
                f"; when built: {units}" if units else ""
            )
        count = sum(u.name != "link" and not u.reused for u in self.units)
        reused = sum(u.reused for u in self.units)
        apart = f", {count} units in parallel" if count > 1 else ""
        apart += f", {reused} reused" if reused else ""
        return f"built in {self.seconds:.2f} s{apart}: {units}"


class Kernel:
    """A loaded pipeline function; call with NumPy arrays already checked by the caller."""

    def __init__(self, module, cmodule: CModule, info: BuildInfo):
        self.ffi, self.lib = module.ffi, module.lib
        self.function = getattr(module.lib, cmodule.function)
        self._new = getattr(module.lib, cmodule.function + "_workspace_new")
        self._free = getattr(module.lib, cmodule.function + "_workspace_free")
        self.cmodule = cmodule
        self.info = info

    def workspace(self):
        """A fresh workspace (the memory a call keeps for the next), freed when collected or
        by `release(workspace)`."""
        pointer = self._new()
        if pointer == self.ffi.NULL:
            raise MemoryError(f"{self.cmodule.function}: could not allocate a workspace")
        return self.ffi.gc(pointer, self._free)

    def release(self, workspace) -> None:
        """Free a workspace's memory now."""
        self.ffi.release(workspace)

    def __call__(
        self, workspace, nthreads: int, params: list, inputs: list, outputs: list, timers=None
    ):
        """Run with `workspace` (None: a temporary one) on checked arrays; a profiled module
        adds its seconds to `timers` (float64, one per CModule.profile entry)."""
        ffi = self.ffi
        buffers = [ffi.from_buffer(C_ARRAYS[a.dtype], a) for a in inputs]
        buffers += [ffi.from_buffer(C_ARRAYS[a.dtype], a, require_writable=True) for a in outputs]
        workspace = ffi.NULL if workspace is None else workspace
        extra = [] if timers is None else [ffi.from_buffer("double[]", timers)]
        status = self.function(workspace, nthreads, *extra, *params, *buffers)
        if status == 1:
            raise MemoryError(f"{self.cmodule.function}: could not allocate its buffers")
        if status == CHECK_FAILED and self.cmodule.checked:
            message = getattr(self.lib, self.cmodule.function + "_check_message")()
            raise CheckError(
                f"{self.cmodule.function}: checked build: {ffi.string(message).decode()}"
            )
        if status != 0:
            raise RuntimeError(f"{self.cmodule.function} returned status {status}")


def build(cmodule: CModule, options: Options) -> Kernel:
    """Load `cmodule` from the cache, or compile, load and install it, then evict the least
    recently used entries over the cap. Safe from any number of threads and processes at once:
    the C compiler runs as a child process whose output is captured, and nothing process-wide
    (descriptors, working directory) changes."""
    start = time.perf_counter()
    compiler, cflags, fingerprint = compile_flags(options)
    flags = cflags + LINK_FLAGS
    key = cache.cache_key(cmodule.source, compiler, fingerprint, flags + (UNIT_POLICY, LOADER))
    module_name = f"_pim_{key[:24]}"
    module_file = module_name + _suffix()
    root = Path(options.cache_dir) if options.use_cache else Path(tempfile.mkdtemp())
    try:
        entry = cache.lookup(root, key) if options.use_cache else None
        module = _load_entry(module_name, entry / module_file, cmodule.cdef) if entry else None
        hit = module is not None
        units = _recorded_units(entry) if hit and entry is not None else ()
        log_text = ""
        if not hit:
            staging = cache.staging_dir(root)
            objects = root / OBJECTS if options.use_cache else None
            reuse = (objects, fingerprint)
            family = compiler_facts(compiler, options.flags, facts_dir(options)).family
            report = report_flags(family, cflags)
            chains = LONG_CHAIN_FLAGS if family == "gcc" else ()
            units = _compile(
                cmodule, module_name, staging, compiler, cflags, reuse, report, chains, family
            )
            if not options.use_cache:  # its folder goes: the log stays on the BuildInfo
                log_text = (staging / "build.log").read_text(errors="replace")
            # loaded before it is installed, so that no other process can evict it first
            try:
                module = _load(module_name, staging / module_file, cmodule.cdef)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            entry = cache.install(
                staging,
                root,
                key,
                module_file,
                {
                    "pipeline": cmodule.function,
                    "compiler": compiler,
                    "flags": list(flags),
                    "module": module_name,
                    "seconds": round(time.perf_counter() - start, 3),
                    "units": [[u.name, round(u.seconds, 3), u.reused] for u in units],
                },
            )
            if options.use_cache:
                evict_over_cap(root, options.cache_max_bytes, keep=[entry])
    finally:
        if not options.use_cache:
            shutil.rmtree(root, ignore_errors=True)
    seconds = time.perf_counter() - start
    serial = serial_build(compiler, options.flags, facts_dir(options))
    assert entry is not None  # found in the cache, or installed there just now
    info = BuildInfo(key, entry, hit, seconds, units, compiler, serial, log_text)
    if hit:
        log.info("%s: loaded from the cache in %.3f s (%s)", cmodule.function, seconds, entry)
    else:
        log.info("%s: compiled in %.2f s with %s (%s)", cmodule.function, seconds, compiler, entry)
    return Kernel(module, cmodule, info)


def compile_flags(options: Options) -> tuple:
    """(the compiler command, the flags it builds generated C with under `options`, its
    fingerprint for cache keys): the JIT build and `polyimage export` share them. The flags
    are those the compiler takes (config.flags_for: gcc's own only for gcc, and only the
    `--param`s it knows; -fopenmp only with OpenMP, warning once when it has none) and the
    target's."""
    compiler = compiler_command()
    given = options.flags
    remembered = facts_dir(options)
    if serial_build(compiler, given, remembered):
        warn_serial(compiler)
    cflags = compiler_facts(compiler, given, remembered).flags
    cflags += target_facts(compiler, given, remembered).flags
    # the target's flags are in `cflags`; they change no -march or -mtune the fingerprint reads
    return compiler, cflags, compiler_fingerprint(compiler, given, remembered)


def report_flags(family: str, cflags: tuple) -> tuple:
    """The flags of gcc's vectorization report (VECTOR_REPORT_FLAGS) that `cflags` lack, for
    gcc only (`family`: the compiler's; clang's remarks say other things, in another form)."""
    return tuple(f for f in VECTOR_REPORT_FLAGS if f not in cflags) if family == "gcc" else ()


def _compile(
    cmodule: CModule,
    module_name: str,
    staging: Path,
    compiler: str,
    cflags: tuple,
    reuse,
    report: tuple = (),
    chains: tuple = (),
    family: str = "other",
) -> tuple:
    """cffi writes the main unit's extension C (our code plus its wrappers); the compiler builds
    it and the other units in child processes, in parallel on the available cores, their
    output captured into build.log. `reuse` is (the object cache folder or None, the
    compiler's fingerprint): a unit other than the main one whose object is there is not
    compiled again. `report`: flags that only add messages (no part of an object's key);
    `chains`: flags added for units of long chains (codegen.units.long_chains); `family`: the
    compiler's (unit_flags). Returns the UnitTime of each unit, then of the link."""
    (staging / SOURCE_NAME).write_text(cmodule.source)
    laid = cmodule.units or (Unit(((1, cmodule.source),)),)
    units = [unit.text for unit in laid]
    main = staging / f"{module_name}.c"
    main.write_text(units[0])
    files = [main.name]
    for k, text in enumerate(units[1:], 1):
        files.append(f"unit{k}.c")
        (staging / files[-1]).write_text(text)
    base = shlex.split(compiler) + list(cflags)
    bases = [
        shlex.split(compiler)
        + list(unit_flags(cflags, len(cmodule.source), unit.driver, family == "gcc"))
        + list(chains if unit.long_chains else ())
        for unit in laid
    ]
    module_file = module_name + _suffix()
    objects = [Path(f).with_suffix(".o").name for f in files]
    if len(files) == 1:
        commands = [bases[0] + list(LINK_FLAGS) + [files[0], "-o", module_file]]
    else:
        commands = [b + ["-fPIC", "-c", f, "-o", o] for b, f, o in zip(bases, files, objects)]
    names = ["main"] + [f"nests {k}" for k in range(1, len(files))]
    objects_root, fingerprint = reuse
    cached = [None] + [
        object_cache.object_path(objects_root, fingerprint, command, unit.code)
        for command, unit in zip(commands[1:], laid[1:])
    ]
    reuse_object = object_cache.reuse_object
    todo = [k for k in range(len(commands)) if not reuse_object(cached[k], staging / objects[k])]
    reused = [k for k in range(len(commands)) if k not in todo]
    replayed = {k: object_cache.replayed_log(cached[k], laid[k].lines) for k in reused}
    ran = _run_all(
        [commands[k] + list(report) for k in todo],
        [units[k].count("\n") for k in todo],
        staging,
        cmodule.function,
        [names[k] for k in todo],
    )
    results = [
        _Done(None, 0.0, replayed.get(k) or f"reused {cached[k]}\n") for k in range(len(commands))
    ]
    for k, done in zip(todo, ran):
        results[k] = done
        if done.failure is None and cached[k] is not None:
            object_cache.keep_object(staging / objects[k], cached[k])
            object_cache.keep_log(done.log, laid[k].lines, cached[k])
    if len(files) > 1 and all(r.failure is None for r in results):
        results.append(_run(base + list(LINK_FLAGS) + objects + ["-o", module_file], staging))
        names.append("link")
    log_path = staging / "build.log"
    log_path.write_text("".join(r.log for r in results))
    main.unlink()
    failed = next((r for r in results if r.failure), None)
    if failed:
        kept = Path(tempfile.mkdtemp(prefix="polyimage-failed-"))
        shutil.copy(log_path, kept / "build.log")
        shutil.copy(staging / SOURCE_NAME, kept / SOURCE_NAME)
        shutil.rmtree(staging, ignore_errors=True)
        raise CompileError(
            f"the C compiler failed on {cmodule.function} ({failed.failure}); see "
            f"{kept / 'build.log'}",
            kept / "build.log",
        )
    return tuple(
        UnitTime(name, r.seconds, k in reused) for k, (name, r) in enumerate(zip(names, results))
    )


def unit_flags(cflags: tuple, module_bytes: int, driver: bool = False, gcc: bool = False) -> tuple:
    """The flags of the translation units of a module of `module_bytes` of C: `cflags`, with
    -O2 where they ask for -O3 and the module holds O2_MODULE_BYTES or more: -O2 builds in
    half the time and ran as fast in the bench, except on small hot nests (harris 5%
    slower), which sit in small modules. Such a module's `driver` unit (codegen.units: tile
    loops and regions, no stage's loops) gets DRIVER_LEVEL: it computes no pixel; its other
    units get LARGE_MODULE_GCC_FLAGS where the compiler is gcc (`gcc`)."""
    levels = [f for f in cflags if f.startswith("-O")]
    if levels and levels[-1] == "-O3" and module_bytes >= O2_MODULE_BYTES:
        if driver:
            return (*cflags, DRIVER_LEVEL)
        return (*cflags, "-O2", *(LARGE_MODULE_GCC_FLAGS if gcc else ()))
    return tuple(cflags)


def _run_all(commands: list, sizes: list, cwd: Path, function: str, names: list) -> list:
    """Run the unit compiles, the largest first, as many at once as there are cores; with
    several units, each is reported on the progress logger as it finishes."""
    order = sorted(range(len(commands)), key=lambda k: (-sizes[k], k))
    results: list = [None] * len(commands)
    with ThreadPoolExecutor(max_workers=min(len(commands), affinity_cores())) as pool:
        running = {pool.submit(_run, commands[k], cwd): k for k in order}
        for finished, future in enumerate(as_completed(running), 1):
            k = running[future]
            results[k] = future.result()
            if len(commands) > 1:
                progress.info(
                    "%s: C unit %s compiled in %.2f s (%d of %d)",
                    function,
                    names[k],
                    results[k].seconds,
                    finished,
                    len(commands),
                )
    return results


@dataclass(frozen=True)
class _Done:
    failure: object
    seconds: float
    log: str


def _run(argv: list, cwd: Path) -> _Done:
    """Run one compiler command; its exit status, seconds and log text (command and output)."""
    start = time.perf_counter()
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, errors="replace")
        failure = None if done.returncode == 0 else f"exit status {done.returncode}"
        output = done.stdout + done.stderr
    except OSError as exc:
        failure, output = exc.__class__.__name__, str(exc)
    seconds = time.perf_counter() - start
    return _Done(failure, seconds, f"# {seconds:.2f} s\n{shlex.join(argv)}\n{output}")


def _recorded_units(entry: Path) -> tuple:
    """The UnitTimes a cache entry's build recorded (none for entries of older versions)."""
    try:
        recorded = json.loads((entry / "meta.json").read_text()).get("units", [])
        return tuple(
            UnitTime(str(unit[0]), float(unit[1]), bool(unit[2:3] and unit[2])) for unit in recorded
        )
    except (OSError, ValueError, TypeError, AttributeError):
        return ()


def _suffix() -> str:
    return ".dylib" if sys.platform == "darwin" else ".so"


def _load_entry(module_name: str, path: Path, cdef: str):
    """The module of a cache hit, or None when another process removed the entry between
    lookup and load (it is then built again)."""
    try:
        return _load(module_name, path, cdef)
    except OSError:
        if path.exists():
            raise
        log.info("%s: the cache entry was removed before it was loaded; building it", path.parent)
        return None


def evict_over_cap(root: Path, max_bytes: int, keep=()) -> None:
    """Keep the cache under its cap, the paths in `keep` (just written) included."""
    removed = cache.evict(root, max_bytes, keep=keep)
    if removed:
        log.info(
            "removed %d least recently used entries from the cache at %s (cap %d bytes, "
            "POLYIMAGE_CACHE_MAX)",
            len(removed),
            root,
            max_bytes,
        )


@dataclass(frozen=True)
class Loaded:
    """A built library opened by cffi in ABI mode (`ffi.dlopen`): no Python extension, so
    the build needs no Python headers (a tenth of a second of every small build)."""

    ffi: Any
    lib: Any


def _load(module_name: str, path: Path, cdef: str):
    """Open the built library once per process (threads racing here open it once)."""
    with _LOAD_LOCK:
        if module_name not in _LOADED:
            _LOADED[module_name] = Loaded(*open_library(path, cdef))
        return _LOADED[module_name]
