"""Build generated C as a cffi (API mode) extension, through the disk cache; call it on NumPy
arrays."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..codegen.cmodule import CModule
from ..config import Options
from ..dsl.types import ALL_TYPES
from ..errors import CompileError
from . import cache
from .toolchain import compiler_command, compiler_fingerprint

log = logging.getLogger("polyimage")

# a Python extension module (the OpenMP runtime comes with -fopenmp in the flags)
LINK_FLAGS = (
    ("-fPIC", "-bundle", "-undefined", "dynamic_lookup")
    if sys.platform == "darwin"
    else ("-fPIC", "-shared")
)
_LOAD_LOCK = threading.Lock()
# the build log's first line: where kernel.c begins in the C file the compiler saw
KERNEL_AT = "# kernel.c starts at line"
_C_ARRAY = {t.dtype: f"{t.c_name}[]" for t in ALL_TYPES}


@dataclass(frozen=True)
class BuildInfo:
    """What the build step did: the cache key, where the module is, whether it was cached."""

    key: str
    path: Path
    cache_hit: bool
    seconds: float


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
        buffers = [ffi.from_buffer(_C_ARRAY[a.dtype], a) for a in inputs]
        buffers += [ffi.from_buffer(_C_ARRAY[a.dtype], a, require_writable=True) for a in outputs]
        workspace = ffi.NULL if workspace is None else workspace
        extra = [] if timers is None else [ffi.from_buffer("double[]", timers)]
        status = self.function(workspace, nthreads, *extra, *params, *buffers)
        if status == 1:
            raise MemoryError(f"{self.cmodule.function}: could not allocate its buffers")
        if status != 0:
            raise RuntimeError(f"{self.cmodule.function} returned status {status}")


def build(cmodule: CModule, options: Options) -> Kernel:
    """Load `cmodule` from the cache, or compile, load and install it, then evict the least
    recently used entries over the cap. Safe from any number of threads and processes at once:
    the C compiler runs as a child process whose output is captured, and nothing process-wide
    (descriptors, working directory) changes."""
    start = time.perf_counter()
    compiler = compiler_command()
    flags = tuple(options.cflags) + LINK_FLAGS
    key = cache.cache_key(
        cmodule.source, compiler, compiler_fingerprint(compiler, options.cflags), flags
    )
    module_name = f"_pim_{key[:24]}"
    module_file = module_name + _suffix()
    root = Path(options.cache_dir) if options.use_cache else Path(tempfile.mkdtemp())
    try:
        entry = cache.lookup(root, key) if options.use_cache else None
        module = _load_entry(module_name, entry / module_file) if entry else None
        hit = module is not None
        if not hit:
            staging = cache.staging_dir(root)
            _compile(cmodule, module_name, staging, compiler, options.cflags)
            # loaded before it is installed, so that no other process can evict it first
            try:
                module = _load(module_name, staging / module_file)
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
                },
            )
            if options.use_cache:
                _evict(root, options.cache_max_bytes, entry)
    finally:
        if not options.use_cache:
            shutil.rmtree(root, ignore_errors=True)
    seconds = time.perf_counter() - start
    info = BuildInfo(key=key, path=entry, cache_hit=hit, seconds=seconds)
    if hit:
        log.info("%s: loaded from the cache in %.3f s (%s)", cmodule.function, seconds, entry)
    else:
        log.info("%s: compiled in %.2f s with %s (%s)", cmodule.function, seconds, compiler, entry)
    return Kernel(module, cmodule, info)


def _compile(
    cmodule: CModule, module_name: str, staging: Path, compiler: str, cflags: tuple
) -> None:
    """cffi writes the extension's C (our source plus its wrappers); the compiler builds it
    in a child process, its output captured into build.log."""
    from cffi import FFI
    from cffi.recompiler import make_c_source

    ffi = FFI()
    ffi.cdef(cmodule.cdef)
    (staging / "kernel.c").write_text(cmodule.source)
    wrapper = staging / f"{module_name}.c"
    make_c_source(ffi, module_name, cmodule.source, str(wrapper))
    wrapped = wrapper.read_text()
    first_line = wrapped[: wrapped.index(cmodule.source)].count("\n") + 1
    argv = (
        shlex.split(compiler)
        + list(cflags)
        + list(LINK_FLAGS)
        + _include_flags()
        + [wrapper.name, "-o", module_name + _suffix()]
    )
    try:
        done = subprocess.run(argv, cwd=staging, capture_output=True, text=True, errors="replace")
        failure = None if done.returncode == 0 else f"exit status {done.returncode}"
        output = done.stdout + done.stderr
    except OSError as exc:
        failure, output = exc.__class__.__name__, str(exc)
    log_path = staging / "build.log"
    log_path.write_text(
        f"{KERNEL_AT} {first_line} of {wrapper.name}\n" + shlex.join(argv) + "\n" + output
    )
    wrapper.unlink()
    if failure:
        kept = Path(tempfile.mkdtemp(prefix="polyimage-failed-"))
        shutil.copy(log_path, kept / "build.log")
        shutil.copy(staging / "kernel.c", kept / "kernel.c")
        shutil.rmtree(staging, ignore_errors=True)
        raise CompileError(
            f"the C compiler failed on {cmodule.function} ({failure}); see {kept / 'build.log'}",
            kept / "build.log",
        )


def _include_flags() -> list:
    paths = sysconfig.get_paths()
    folders = dict.fromkeys(paths[k] for k in ("include", "platinclude") if paths.get(k))
    return [f"-I{folder}" for folder in folders]


def _suffix() -> str:
    return importlib.machinery.EXTENSION_SUFFIXES[0]


def _load_entry(module_name: str, path: Path):
    """The module of a cache hit, or None when another process removed the entry between
    lookup and load (it is then built again)."""
    try:
        return _load(module_name, path)
    except (ImportError, OSError):
        if path.exists():
            raise
        log.info("%s: the cache entry was removed before it was loaded; building it", path.parent)
        return None


def _evict(root: Path, max_bytes: int, entry: Path) -> None:
    """Keep the cache under its cap, the entry just built included."""
    removed = cache.evict(root, max_bytes, keep=[entry])
    if removed:
        log.info(
            "removed %d least recently used entries from the cache at %s (cap %d bytes, "
            "POLYIMAGE_CACHE_MAX)",
            len(removed),
            root,
            max_bytes,
        )


def _load(module_name: str, path: Path):
    """Import the built extension once per process (threads racing here load it once)."""
    with _LOAD_LOCK:
        if module_name in sys.modules:
            return sys.modules[module_name]
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[module_name] = module
        return module
