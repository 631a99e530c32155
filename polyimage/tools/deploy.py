"""`polyimage.load(DIR)`: a pipeline exported by `pipe.export(DIR)` called from Python through
cffi's ABI mode, on a machine with NumPy and cffi and neither a C compiler nor islpy. Calls
take the arguments, and make the checks with the messages, of a compiled pipeline
(polyimage.graph.arguments); the library's own checks stand behind them."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ..calls import CALLS, open_library
from ..dsl import expr as E
from ..dsl.constructs import Image
from ..dsl.serial import from_data, type_named
from ..dsl.types import C_ARRAYS
from ..errors import ArgumentError, PolyimageError
from ..graph.arguments import bind_arguments, bind_positional, check_threads, output_arrays

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1


class LoadError(PolyimageError, OSError):
    """An export folder that cannot be loaded: missing, incomplete, or of another format."""


@dataclass(frozen=True)
class _Stage:
    name: str
    func: object


@dataclass(frozen=True)
class _Domain:
    """A stage's name, type and domain: what a call needs to check it (and size an output)."""

    name: str
    typ: object
    variables: tuple
    intervals: tuple
    reduction_variables: tuple
    reduction_intervals: tuple


@dataclass(frozen=True)
class _Interval:
    lb: E.Expr
    ub: E.Expr


@dataclass(frozen=True)
class CallGraph:
    """The part of a stage graph that binding a call reads: images, parameters, outputs."""

    images: tuple
    parameters: tuple
    stages: tuple
    outputs: tuple


def load(folder: str | os.PathLike[str]) -> LoadedPipeline:
    """The pipeline exported into `folder`, ready to call like the compiled one, with
    neither a C compiler nor islpy.

    Args:
        folder: a folder that `pipe.export` or `polyimage export` wrote.

    Returns:
        A `LoadedPipeline`, called as the compiled pipeline is.

    Raises:
        LoadError: the folder holds no export, or one this polyimage cannot read.
    """
    return LoadedPipeline(folder)


class LoadedPipeline:
    """An exported pipeline's shared library, called on NumPy arrays: `pipe(img=array, ...)`
    with the arguments, `out=` and `threads=` of a compiled Pipeline. `load(folder)` makes
    one.

    Args:
        folder: a folder that `pipe.export` or `polyimage export` wrote.
    """

    def __init__(self, folder: str | os.PathLike[str]):
        self.folder = Path(folder)
        spec = _read_manifest(self.folder)
        self.name = spec["name"]
        self.manifest = spec
        params = {n: E.Parameter(type_named(t), n) for n, t in spec["params"]}
        stages = tuple(_stage(d, params) for d in spec["stages"])
        self.graph = CallGraph(
            images=tuple(f for f in stages if isinstance(f, Image)),
            parameters=tuple(params[n] for n in sorted(params)),  # by name, as a StageGraph
            stages=tuple(_Stage(f.name, f) for f in stages),
            outputs=tuple(spec["outputs"]),
        )
        self.constraints = tuple(from_data(c, params) for c in spec["constraints"])
        # the entry's order: as declared, or by name in exports made before it was declared
        self._param_order = [n for n, _ in spec["params"]]
        self._input_order = [i["name"] for i in spec["inputs"]]
        self.ffi, self.lib = _open(self.folder, spec)
        self._entry = getattr(self.lib, self.name)
        self._bindings: dict = {}
        self._workspaces: list = []
        self._lock = threading.Lock()

    def __call__(
        self,
        *images: ArrayLike,
        out: ArrayLike | Sequence[ArrayLike] | None = None,
        threads: int | None = None,
        **arguments: ArrayLike,
    ) -> Any:
        """Run on the given images and parameters, as a compiled pipeline's call does, with
        the same checks and messages.

        Args:
            *images: the input image, by position, for a pipeline with one input.
            out: preallocated output arrays, written in place.
            threads: the threads of this call, as in a compiled pipeline's call.
            **arguments: each input image and Parameter by name.

        Returns:
            The output array, or a tuple of them for several outputs.

        Raises:
            ArgumentError: a missing or unknown argument, or a shape or value the pipeline
                refuses.
        """
        if images:
            arguments = bind_positional(self.graph, images, arguments)
        binding = bind_arguments(self.graph, arguments, self.constraints, self._bindings)
        outputs = output_arrays(self.graph, out, binding)
        nthreads = check_threads(threads)
        ffi = self.ffi
        args = [binding.params[n] for n in self._param_order]
        arrays = [binding.arrays[n] for n in self._input_order]
        for array in arrays:
            args += [ffi.from_buffer(C_ARRAYS[array.dtype], array), _extents(ffi, array)]
        for array in outputs:
            buffer = ffi.from_buffer(C_ARRAYS[array.dtype], array, require_writable=True)
            args += [buffer, _extents(ffi, array)]
        workspace = self._workspace()
        try:
            with CALLS.share(nthreads) as share:
                status = self._entry(workspace, share, *args)
        finally:
            with self._lock:
                self._workspaces.append(workspace)
        codes = self.manifest["codes"]
        if status == codes["argument"]:
            message = ffi.string(getattr(self.lib, f"{self.name}_error")()).decode()
            raise ArgumentError(f"{self.name}: {message}")
        if status == codes["memory"]:
            raise MemoryError(f"{self.name}: could not allocate its buffers")
        if status != codes["ok"]:
            raise RuntimeError(f"{self.name} returned status {status}")
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _workspace(self) -> Any:
        with self._lock:
            if self._workspaces:
                return self._workspaces.pop()
        new = getattr(self.lib, f"{self.name}_workspace_new")()
        if new == self.ffi.NULL:
            raise MemoryError(f"{self.name}: could not allocate a workspace")
        return self.ffi.gc(new, getattr(self.lib, f"{self.name}_workspace_free"))

    def __repr__(self) -> str:
        return f"<LoadedPipeline {self.name} from {self.folder}>"


def _extents(ffi: Any, array: Any) -> Any:
    return ffi.new("int64_t[]", list(array.shape) or [1])


def _stage(spec: dict, params: dict) -> Image | _Domain:
    """An Image, or a stage's name, type and domain, from the manifest."""
    if "image" in spec:
        extents = [from_data(x, params) for x in spec["extents"]]
        return Image(type_named(spec["type"]), spec["image"], extents)

    def variables(pairs: list) -> tuple:
        return tuple(E.Variable(type_named(t), n) for n, t, *_ in pairs)

    def intervals(pairs: list) -> tuple:
        return tuple(_Interval(from_data(lb, params), from_data(ub, params)) for lb, ub in pairs)

    return _Domain(
        name=spec["name"],
        typ=type_named(spec["type"]),
        variables=variables(spec["variables"]),
        intervals=intervals(spec["intervals"]),
        reduction_variables=variables(spec["reductions"]),
        reduction_intervals=intervals([r[2:] for r in spec["reductions"]]),
    )


def _read_manifest(folder: Path) -> dict:
    path = folder / MANIFEST
    try:
        spec = json.loads(path.read_text())
    except OSError as exc:
        raise LoadError(f"cannot load {folder}: {exc.strerror} ({path.name})") from None
    except ValueError as exc:
        raise LoadError(f"cannot load {folder}: {path.name} is not JSON ({exc})") from None
    if not isinstance(spec, dict) or spec.get("format") != MANIFEST_FORMAT:
        raise LoadError(
            f"cannot load {folder}: {path.name} is not an export of this polyimage "
            f"(format {spec.get('format') if isinstance(spec, dict) else None!r}, "
            f"expected {MANIFEST_FORMAT}); export it again"
        )
    return spec


def _open(folder: Path, spec: dict) -> tuple[Any, Any]:
    """(ffi, library) of the export's shared library, opened through cffi's ABI mode."""
    path = folder / spec["shared"]
    try:
        return open_library(path.resolve(), spec["cdef"])
    except OSError as exc:
        raise LoadError(f"cannot load {path}: {exc}") from None
