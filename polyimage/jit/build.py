"""Build generated C with cffi (API mode), through the disk cache, and call it on NumPy arrays."""
from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import logging
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..codegen.cmodule import CModule
from ..config import Options
from ..errors import CompileError
from . import cache
from .toolchain import compiler_command, compiler_fingerprint

log = logging.getLogger("polyimage")


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
        self.cmodule = cmodule
        self.info = info

    def __call__(self, nthreads: int, params: list, inputs: list, outputs: list) -> None:
        ffi = self.ffi
        buffers = [ffi.from_buffer(_c_array(a), a) for a in inputs]
        buffers += [ffi.from_buffer(_c_array(a), a, require_writable=True) for a in outputs]
        status = self.function(nthreads, *params, *buffers)
        if status == 1:
            raise MemoryError(f"{self.cmodule.function}: could not allocate its buffers")
        if status != 0:
            raise RuntimeError(f"{self.cmodule.function} returned status {status}")


def _c_array(array: np.ndarray) -> str:
    from ..dsl.types import type_of_dtype
    return f"{type_of_dtype(array.dtype).c_name}[]"


def build(cmodule: CModule, options: Options) -> Kernel:
    """Load `cmodule` from the cache, or compile and install it first."""
    start = time.perf_counter()
    compiler = compiler_command()
    key = cache.cache_key(cmodule.source, compiler,
                          compiler_fingerprint(compiler, options.cflags), options.cflags)
    module_name = f"_pim_{key[:24]}"
    root = Path(options.cache_dir) if options.use_cache else Path(tempfile.mkdtemp())
    entry = cache.lookup(root, key) if options.use_cache else None
    hit = entry is not None
    try:
        if not hit:
            staging = cache.staging_dir(root)
            _compile(cmodule, module_name, staging, options.cflags)
            entry = cache.install(staging, root, key, {
                "pipeline": cmodule.function, "compiler": compiler,
                "flags": list(options.cflags), "module": module_name,
                "seconds": round(time.perf_counter() - start, 3)})
        module = _load(module_name, entry)
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


def _compile(cmodule: CModule, module_name: str, staging: Path, cflags: tuple) -> None:
    from cffi import FFI
    ffi = FFI()
    ffi.cdef(cmodule.cdef)
    ffi.set_source(module_name, cmodule.source, extra_compile_args=list(cflags),
                   extra_link_args=["-fopenmp"])
    (staging / "kernel.c").write_text(cmodule.source)
    log_path = staging / "build.log"
    try:
        with _output_to(log_path):
            ffi.compile(tmpdir=str(staging / "build"), verbose=True)
    except Exception as exc:
        kept = Path(tempfile.mkdtemp(prefix="polyimage-failed-"))
        shutil.copy(log_path, kept / "build.log")
        shutil.copy(staging / "kernel.c", kept / "kernel.c")
        shutil.rmtree(staging, ignore_errors=True)
        raise CompileError(f"the C compiler failed on {cmodule.function} ({exc.__class__.__name__});"
                           f" see {kept / 'build.log'}", kept / "build.log") from exc
    built = next((staging / "build").glob(module_name + "*" + _suffix()))
    shutil.move(str(built), staging / (module_name + _suffix()))
    shutil.rmtree(staging / "build", ignore_errors=True)


def _suffix() -> str:
    return importlib.machinery.EXTENSION_SUFFIXES[0]


def _load(module_name: str, entry: Path):
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = entry / (module_name + _suffix())
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[module_name] = module
    return module


@contextlib.contextmanager
def _output_to(path: Path):
    """Send this process's stdout and stderr (file descriptors 1 and 2) to a file."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(path, "wb") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
