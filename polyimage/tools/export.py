"""`pipe.export(DIR)` and `polyimage export`: a compile (its `Compiled` record, lower.py) as a C
library that needs no Python: its C source, a header, a static and a shared library built with
the flags `compile()` uses, a README with the line that links it into a program, and a manifest
from which `polyimage.load(DIR)` calls the shared library without a compiler (deploy.py)."""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..codegen.export_c import ERROR_ARGUMENT, ERROR_MEMORY, OK, exported_c
from ..codegen.names import reserved
from ..dsl.constructs import Function, Image
from ..dsl.serial import to_data
from ..errors import ArgumentError, CompileError
from ..jit.build import compile_flags, unit_flags
from ..version import __version__
from .deploy import MANIFEST, MANIFEST_FORMAT

if TYPE_CHECKING:
    from ..config import Options
    from ..driver.lower import Compiled

log = logging.getLogger("polyimage")

SHARED_SUFFIX = ".dylib" if sys.platform == "darwin" else ".so"
SHARED_FLAGS = ("-dynamiclib",) if sys.platform == "darwin" else ("-shared",)


@dataclass(frozen=True)
class Exported:
    """What export wrote: the folder, the entry name, and the files by role."""

    folder: Path
    name: str
    files: dict  # {"source", "header", "static", "shared", "readme", "manifest"}: Path
    seconds: float

    def describe(self) -> str:
        sizes = ", ".join(f"{p.name} ({p.stat().st_size} B)" for p in self.files.values())
        return f"exported {self.name} to {self.folder} in {self.seconds:.2f} s: {sizes}"


def export_pipeline(
    compiled: Compiled, folder: str | os.PathLike[str], name: str | None = None
) -> Exported:
    """Write the `Compiled` record's C into `folder` as a C library (source, header, static
    and shared library, README, manifest), built by the compiler and flags of its options
    (CC picks another compiler, a cross compiler included). `pipe.export(folder)` is this
    on a Pipeline's record.

    Args:
        compiled: the record of a compile (`lower(...)`, or a Pipeline's `compiled`).
        folder: the folder to write, made if need be.
        name: the entry function's name (default: the pipeline's name).

    Returns:
        An `Exported` record: the folder, the entry's name and the files written.

    Raises:
        ArgumentError: `name` is not a C identifier, or `folder` cannot be written.
        CompileError: the C compiler failed (its log is kept).
    """
    start = time.perf_counter()
    name = check_export(folder, name or compiled.name)
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ArgumentError(f"cannot create the export folder {folder}: {exc.strerror}") from None
    compiler, cflags, _ = compile_flags(compiled.options)
    link = link_flags(cflags)
    parameters = entry_parameters(compiled)
    code = exported_c(
        compiled.stage_graph,
        compiled.cmodule,
        name,
        compiled.request.constraints,
        __version__,
        link,
        compiled.request.estimates,
        parameters,
    )
    files = {
        "source": folder / f"{name}.c",
        "header": folder / f"{name}.h",
        "static": folder / f"lib{name}.a",
        "shared": folder / f"lib{name}{SHARED_SUFFIX}",
        "readme": folder / "README.md",
        "manifest": folder / MANIFEST,
    }
    files["source"].write_text(code.source)
    files["header"].write_text(code.header)
    flags = list(unit_flags(cflags, len(code.source)))
    cc = shlex.split(compiler)
    obj = folder / f"{name}.o"
    log_lines: list = []
    _run(cc + flags + ["-fPIC", "-c", files["source"].name, "-o", obj.name], folder, log_lines)
    _run([archiver(compiler), "rcs", files["static"].name, obj.name], folder, log_lines)
    shared = cc + flags + list(SHARED_FLAGS) + [obj.name, "-o", files["shared"].name, "-lm"]
    _run(shared, folder, log_lines)
    obj.unlink()
    spec = manifest(compiled, name, compiler, flags, files, code.declarations, parameters)
    files["manifest"].write_text(json.dumps(spec, indent=1) + "\n")
    files["readme"].write_text(readme(compiled, name, compiler, flags))
    exported = Exported(folder, name, files, time.perf_counter() - start)
    log.info("%s", exported.describe())
    return exported


def check_export(folder: str | os.PathLike[str], name: str) -> str:
    """`name` if it can name the entry of a library written into `folder` (a C identifier that
    clashes with no C keyword or library name, a folder that exists or can be made), else
    ArgumentError; before anything is compiled."""
    if not isinstance(name, str) or not name.isidentifier() or reserved(name):
        raise ArgumentError(
            f"export name {name!r} must be a C identifier that is no C keyword or library name"
        )
    path = Path(folder).absolute()
    if path.exists() and not path.is_dir():
        raise ArgumentError(f"cannot export into {folder}: it is a file, not a folder")
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK):
        raise ArgumentError(f"cannot export into {folder}: {existing} is not a writable folder")
    return name


def link_flags(cflags: Sequence[str]) -> str:
    """What a program links the library with: the OpenMP runtime where it was built with
    OpenMP (a compiler without it builds serial code), and libm."""
    return "-fopenmp -lm" if "-fopenmp" in cflags else "-lm"


def archiver(compiler: str) -> str:
    """The `ar` beside a cross compiler (`aarch64-linux-gnu-gcc` -> `aarch64-linux-gnu-ar`)
    where there is one, else `ar`."""
    program = Path(shlex.split(compiler)[0]).name
    for tail in ("-gcc", "-clang", "-cc"):
        if program.endswith(tail) and shutil.which(program[: -len(tail)] + "-ar"):
            return program[: -len(tail)] + "-ar"
    return "ar"


def _run(argv: list, folder: Path, log_lines: list) -> None:
    try:
        done = subprocess.run(argv, cwd=folder, capture_output=True, text=True, errors="replace")
    except OSError as exc:
        raise CompileError(f"export: cannot run {argv[0]}: {exc.strerror or exc}") from None
    log_lines.append(f"{shlex.join(argv)}\n{done.stdout}{done.stderr}")
    if done.returncode != 0:
        (folder / "build.log").write_text("\n".join(log_lines))
        raise CompileError(
            f"export: {argv[0]} failed (exit status {done.returncode}); see {folder / 'build.log'}",
            folder / "build.log",
        )


def entry_parameters(compiled: Compiled) -> tuple:
    """The exported entry's Parameters in the order the user declared them, as the pipeline
    compiled in this process has them (a compile record from the cache may be older)."""
    declared = [p.name for p in compiled.request.graph.declared_parameters]
    return tuple(sorted(compiled.stage_graph.parameters, key=lambda p: declared.index(p.name)))


def manifest(
    compiled: Compiled,
    name: str,
    compiler: str,
    flags: list,
    files: dict,
    declarations: str,
    parameters: Sequence,
) -> dict:
    """What `polyimage.load` needs to check and make a call: the parameters (`parameters`),
    inputs and outputs in the entry's order, with their extents and domains, the
    constraints, and the C declarations of the library."""
    graph, cmodule, request = compiled.stage_graph, compiled.cmodule, compiled.request
    by_name = {s.name: s.func for s in graph.stages}
    domains = [_domain(s.func) for s in request.graph.stages]
    return {
        "format": MANIFEST_FORMAT,
        "name": name,
        "polyimage": __version__,
        "compiler": compiler,
        "flags": flags,
        "shared": files["shared"].name,
        "static": files["static"].name,
        "codes": {"ok": OK, "memory": ERROR_MEMORY, "argument": ERROR_ARGUMENT},
        "params": [[p.name, p.typ.name] for p in parameters],
        "inputs": [
            {
                "name": n,
                "type": by_name[n].typ.name,
                "extents": [to_data(x) for x in by_name[n].extents],
            }
            for n in cmodule.inputs
        ],
        "outputs": list(request.graph.outputs),
        "stages": domains,
        "constraints": [to_data(c) for c in request.constraints],
        "cdef": declarations,
    }


def _domain(func: Function) -> dict:
    """A stage of the pipeline as written, as binding a call reads it: name, type, domain (an
    image's is its extents)."""
    if isinstance(func, Image):
        return {
            "image": func.name,
            "type": func.typ.name,
            "extents": [to_data(x) for x in func.extents],
        }
    reductions = zip(
        getattr(func, "reduction_variables", ()), getattr(func, "reduction_intervals", ())
    )
    return {
        "name": func.name,
        "type": func.typ.name,
        "variables": [[v.name, v.typ.name] for v in func.variables],
        "intervals": [[to_data(iv.lb), to_data(iv.ub)] for iv in func.intervals],
        "reductions": [
            [v.name, v.typ.name, to_data(iv.lb), to_data(iv.ub)] for v, iv in reductions
        ],
    }


def _cpu_note(options: Options) -> str:
    if options.march != "native":
        return f"It runs on CPUs that `-march={options.march}` builds for.\n\n"
    return (
        "Built for this machine's CPU (`-march=native`): for other machines export with "
        "`--target avx2` or `--march CPU` (`compile(..., march=...)`).\n\n"
    )


def _float_notes(options: Options) -> str:
    notes = []
    if options.contract:
        notes.append(
            "Built with multiply-add contraction (`-ffp-contract=fast`, `compile(..., "
            "contract=True)`): its results may differ from polyimage's interpreter in the "
            "last bits.\n\n"
        )
    if options.reassociate:
        notes.append(
            "Built with float reassociation (`compile(..., reassociate=True)`): its results "
            "may differ from polyimage's interpreter by rounding.\n\n"
        )
    return "".join(notes)


def readme(compiled: Compiled, name: str, compiler: str, flags: list) -> str:
    """The README of an export: the files, the line that links the library into a program,
    and how to load it back into Python."""
    cc = Path(shlex.split(compiler)[0]).name
    notes = _cpu_note(compiled.options) + _float_notes(compiled.options)
    return f"""# {name}

The pipeline `{name}`, exported by polyimage {__version__} with `{cc}` and
`{" ".join(flags)}`.

- `{name}.h`: the entry `{name}(...)`, its parameters, buffers, extents and return codes.
- `lib{name}.a`, `lib{name}{SHARED_SUFFIX}`: the library, static and shared; `{name}.c`: its source.
- `{MANIFEST}`: what `polyimage.load()` reads to call the shared library from Python.

{notes}Link a program with the static library:

```sh
{cc} -O2 app.c -I. lib{name}.a {link_flags(flags)} -o app
```

Load it back into Python (needs NumPy and cffi; no compiler, no islpy):

```python
import polyimage
pipe = polyimage.load("path/to/this/folder")
```
"""
