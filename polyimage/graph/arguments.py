"""Binding a call's keyword arguments to a pipeline: images, parameters, domain boxes.

Shared by the compiled pipeline and the interpreter, so both accept and reject the same calls.
"""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..algebra.affine import linear_form
from ..algebra.evaluate import Evaluator, evaluate_scalar
from ..config import is_count
from ..dsl import expr as E
from ..dsl.types import ALL_TYPES
from ..errors import ArgumentError, ArgumentTypeError


class CallGraph(Protocol):
    """What binding a call reads of a pipeline: its StageGraph, or a loaded one's (deploy)."""

    @property
    def images(self) -> tuple: ...

    @property
    def parameters(self) -> tuple: ...

    @property
    def stages(self) -> tuple: ...

    @property
    def outputs(self) -> tuple: ...


@dataclass(frozen=True)
class CopiedInput:
    """An input array that was not C-contiguous, copied for the call: its name, shape and
    strides (what `Pipeline.report()` says after such a call)."""

    name: str
    shape: tuple
    strides: tuple

    def describe(self) -> str:
        return (
            f"input {self.name} was not C-contiguous: copied once per call (shape "
            f"{self.shape}, strides {self.strides}); numpy.ascontiguousarray once avoids it"
        )


@dataclass(frozen=True)
class Binding:
    """Checked arguments: parameter values, contiguous input arrays and every stage's box;
    `copied`, the inputs that had to be copied to be contiguous."""

    params: dict
    arrays: dict
    origins: dict
    shapes: dict
    copied: tuple[CopiedInput, ...] = ()

    def describe_params(self, names=None) -> str:
        names = sorted(self.params) if names is None else names
        return ", ".join(f"{n}={self.params[n]}" for n in names)


def bind_arguments(graph: CallGraph, kwargs: dict, constraints=(), memo=None) -> Binding:
    """Check a call's arguments against the pipeline and work out every domain box. With a
    `memo` dict (one per pipeline), calls with the shapes and parameter values of an earlier
    call reuse what was derived from them: only the arrays and the given values are checked."""
    images = {img.name: img for img in graph.images}
    params = {p.name: p for p in graph.parameters}
    if not kwargs.keys() <= images.keys() | params.keys():
        unknown = sorted(set(kwargs) - set(images) - set(params))
        raise ArgumentTypeError(
            f"unknown argument {unknown[0]!r}: the pipeline takes images "
            f"{_names(images)} and parameters {_names(params)}"
        )
    given = {name: _check_image(img, kwargs.get(name)) for name, img in images.items()}
    copied = tuple(
        CopiedInput(name, a.shape, a.strides)
        for name, a in given.items()
        if not a.flags.c_contiguous
    )
    arrays = {name: np.ascontiguousarray(a) for name, a in given.items()}
    values = {name: check_param(p, kwargs[name]) for name, p in params.items() if name in kwargs}
    key = (tuple(a.shape for a in arrays.values()), tuple(values.items()))
    derived = memo.get(key) if memo is not None else None
    if derived is None:
        derived = derive_values(graph, params, arrays, values, constraints)
        if memo is not None:
            if len(memo) >= MEMO_SIZE:
                memo.pop(next(iter(memo)), None)
            memo[key] = derived
    return Binding(derived[0], arrays, derived[1], derived[2], copied)


MEMO_SIZE = 64


def derive_values(graph, params, arrays, values, constraints) -> tuple:
    """(every parameter's value, origins, shapes) from the checked arrays and given values
    (each checked by check_param); the image shapes and constraints checked against them."""
    values = dict(values)
    _infer_params(graph, arrays, values)
    missing = [n for n in params if n not in values]
    if missing:
        raise ArgumentTypeError(
            f"missing parameter {missing[0]} (it cannot be read off the shape of any input image)"
        )
    for img in graph.images:
        _check_shape(img, arrays[img.name], values)
    for cond in constraints:
        if not Evaluator({}, {}, values)(cond, {}, 1).item():
            raise ArgumentError(
                f"parameter values {_describe(cond, values)} violate the constraint {cond}"
            )
    origins, shapes = {}, {}
    for stage in graph.stages:
        origins[stage.name], shapes[stage.name] = _box(stage.func, values)
    return values, origins, shapes


def _names(d) -> str:
    return ", ".join(sorted(d)) or "(none)"


def _describe(e: E.Expr, values: dict) -> str:
    used = sorted({p.name for p in E.free_symbols(e, E.Parameter)})
    return ", ".join(f"{n}={values[n]}" for n in used)


# DLPack's device type of main memory (kDLCPU)
DLPACK_CPU = 1


def as_cpu_array(value, what: str):
    """`value` as a NumPy array sharing its memory: a NumPy array as it is; anything with
    DLPack (a PyTorch CPU tensor), `__array_interface__` or the buffer protocol (memoryview,
    array.array) without a copy; an array in another device's memory (CuPy, a CUDA tensor)
    refused, naming `what`. Anything else comes back as it is, for the caller's checks."""
    if value is None or isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__cuda_array_interface__"):
        raise ArgumentTypeError(_other_device(what, "CUDA"))
    device = getattr(value, "__dlpack_device__", None)
    if device is not None:
        kind = int(device()[0])
        if kind != DLPACK_CPU:
            raise ArgumentTypeError(_other_device(what, f"DLPack device type {kind}"))
        try:
            return np.from_dlpack(value)
        except (BufferError, RuntimeError, TypeError, ValueError) as exc:
            raise ArgumentTypeError(f"{what} could not be read through DLPack: {exc}") from None
    if hasattr(value, "__array_interface__") or _has_buffer(value):
        return np.asarray(value)
    return value


def _other_device(what: str, device: str) -> str:
    return (
        f"{what} is in another device's memory ({device}): polyimage runs on the CPU; copy it "
        f"there first (CuPy: .get(), PyTorch: .cpu())"
    )


def _has_buffer(value) -> bool:
    if isinstance(value, (str, numbers.Number)):
        return False
    try:
        memoryview(value)
    except TypeError:
        return False
    return True


def _check_image(img, value) -> np.ndarray:
    """`value` as the NumPy array of image `img` (not necessarily contiguous), checked."""
    value = as_cpu_array(value, f"image {img.name}")
    if (
        isinstance(value, np.ndarray)
        and value.dtype == img.typ.dtype
        and value.ndim == len(img.extents)
    ):
        return value
    extents = "[" + ", ".join(map(str, img.extents)) + "]"
    if value is None:
        raise ArgumentTypeError(f"missing input image {img.name} ({img.typ}, extents {extents})")
    if not isinstance(value, np.ndarray):
        raise ArgumentTypeError(
            f"image {img.name} must be an array (NumPy, or any CPU array with DLPack, "
            f"__array_interface__ or the buffer protocol), got {type(value).__name__}"
        )
    if value.dtype != img.typ.dtype:
        raise ArgumentTypeError(
            f"image {img.name} must have dtype {img.typ.dtype} ({img.typ}), got "
            f"{value.dtype}" + _dtype_hint(img.typ.dtype, value.dtype)
        )
    if value.ndim != len(img.extents):
        raise ArgumentError(
            f"image {img.name} must have {len(img.extents)} dimension(s) "
            f"{extents}, got shape {value.shape}" + _channels_hint(len(img.extents), value.shape)
        )
    return value


def _dtype_hint(expected, given) -> str:
    """A hint for a photo loaded as integers where a float image is expected, and for a float
    array of the other width (NumPy computes in float64 by default)."""
    if expected.kind == "f" and given in (np.uint8, np.uint16):
        return f"; load_image(path, dtype=np.{expected}) reads a photo as {expected} in [0, 1]"
    if expected.kind == "f" and np.dtype(given).kind == "f":
        named = next((t for t in ALL_TYPES if t.dtype == np.dtype(given)), None)
        declared = f" (or declare the image {named})" if named is not None else ""
        return f"; convert it with .astype(np.{expected}){declared}"
    return ""


def _channels_hint(rank, shape) -> str:
    """A hint for a grey photo where a colour one is expected, or the reverse."""
    if rank == 2 and len(shape) == 3 and (shape[-1] in (3, 4) or shape[0] in (3, 4)):
        return "; it looks like a colour image: load_image(path, mode='L') reads it as grey (H, W)"
    if rank == 3 and len(shape) == 2:
        return "; it looks like a grey image: load_image(path, mode='RGB') reads it with 3 channels"
    return ""


def _constant_extent(extent):
    """The value of an extent that uses no Parameter, else None."""
    if E.free_symbols(extent, E.Parameter):
        return None
    return evaluate_scalar(extent, {})


def _layout_hint(img, shape) -> str:
    """A hint when a 3-D array holds its channels at the other end than `img` expects:
    HWC given where CHW is declared (a constant first extent), or the reverse."""
    if len(img.extents) != 3 or len(shape) != 3:
        return ""
    first, last = _constant_extent(img.extents[0]), _constant_extent(img.extents[2])
    if first is not None and last is None and shape[0] != first and shape[2] == first:
        return (
            "; it looks like HWC (channels last): load it with load_image(path, "
            "layout='CHW') or pass array.transpose(2, 0, 1)"
        )
    if last is not None and first is None and shape[2] != last and shape[0] == last:
        return (
            "; it looks like CHW (channels first): load it with load_image(path, "
            "layout='HWC') (the default) or pass array.transpose(1, 2, 0)"
        )
    return ""


def check_param(p: E.Parameter, value):
    """`value` as parameter `p` takes it (an int or float of its type), or a clear error."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"parameter {p.name} must be a number, got {value!r}")
    if p.typ.is_int:
        if not isinstance(value, numbers.Integral):
            raise ArgumentTypeError(f"parameter {p.name} is an integer ({p.typ}), got {value!r}")
        value = int(value)
        if not p.typ.min_value() <= value <= p.typ.max_value():
            raise ArgumentError(f"parameter {p.name}={value} does not fit its type {p.typ}")
        return value
    return float(p.typ.dtype.type(value))


def _infer_params(graph, arrays, values):
    """Solve extents of the form c*P + k for P; an extent no integer P gives is an error."""
    for img in graph.images:
        for dim, (extent, size) in enumerate(zip(img.extents, arrays[img.name].shape)):
            form = linear_form(extent)
            if form is None or not isinstance(form[0], E.Parameter) or form[0].name in values:
                continue
            param, coeff, const = form
            if (size - const) % coeff != 0:
                raise ArgumentError(
                    f"image {img.name}: dimension {dim} must have extent {extent}, "
                    f"which no integer {param.name} makes {size} (shape "
                    f"{arrays[img.name].shape})" + _layout_hint(img, arrays[img.name].shape)
                )
            values[param.name] = check_param(param, (size - const) // coeff)


def _check_shape(img, array, values):
    for dim, (extent, size) in enumerate(zip(img.extents, array.shape)):
        expected = evaluate_scalar(extent, values)
        if expected != size:
            given = _describe(extent, values)
            raise ArgumentError(
                f"image {img.name}: dimension {dim} must have extent {extent} = "
                f"{expected}"
                + (f" ({given})" if given else "")
                + f", got shape {array.shape}"
                + _layout_hint(img, array.shape)
            )


def _box(func, values):
    origin, shape = [], []
    for var, iv in zip(func.variables, func.intervals):
        lb, ub = evaluate_scalar(iv.lb, values), evaluate_scalar(iv.ub, values)
        if ub < lb:
            used = ", ".join(
                sorted(set(filter(None, [_describe(iv.lb, values), _describe(iv.ub, values)])))
            )
            raise ArgumentError(
                f"parameter values {used} make the domain of {func.name} "
                f"empty: {var.name} in [{iv.lb}, {iv.ub}] = [{lb}, {ub}]"
            )
        _check_fits(func, var, lb, ub, values)
        origin.append(lb)
        shape.append(ub - lb + 1)
    for var, iv in zip(
        getattr(func, "reduction_variables", ()), getattr(func, "reduction_intervals", ())
    ):
        lb, ub = evaluate_scalar(iv.lb, values), evaluate_scalar(iv.ub, values)
        if lb <= ub:
            _check_fits(func, var, lb, ub, values)
    return tuple(origin), tuple(shape)


def _check_fits(func, var, lb, ub, values):
    """Loops run over the variable's own type; its whole range must fit (with one to spare)."""
    if lb < var.typ.min_value() or ub >= var.typ.max_value():
        raise ArgumentError(
            f"parameter values {', '.join(f'{k}={v}' for k, v in values.items())}"
            f" give {func.name} the range [{lb}, {ub}] for {var.name}, which does "
            f"not fit its type {var.typ}"
        )


def bind_positional(graph, images: tuple, arguments: dict) -> dict:
    """The one input image given by position, as if by name; anything else is refused with the
    call written by name."""
    names = [img.name for img in graph.images]
    if len(names) == 1 and len(images) == 1 and names[0] not in arguments:
        return {names[0]: images[0], **arguments}
    by_name = ", ".join(f"{n}=..." for n in names + [p.name for p in graph.parameters])
    raise ArgumentTypeError(
        f"pass images and parameters by name: pipe({by_name}) (got {len(images)} "
        f"positional argument(s))"
    )


# far beyond any core count, short of what makes the OpenMP runtime fail to start threads
MAX_THREADS = max(256, 8 * (os.cpu_count() or 1))


def check_threads(threads) -> int:
    """`threads` as an int (0 for None: OMP_NUM_THREADS), or ArgumentError naming it."""
    if threads is None:
        return 0
    if not (is_count(threads) and threads <= MAX_THREADS):
        raise ArgumentError(f"threads must be an integer from 1 to {MAX_THREADS}, got {threads!r}")
    return int(threads)


def output_arrays(graph, out, binding) -> list:
    """The output arrays of a call: new ones, or those given as `out=`, checked (shape,
    dtype, contiguous, writeable, overlapping no other argument)."""
    names = graph.outputs
    stages = {s.name: s.func for s in graph.stages}
    if out is None:
        return [np.empty(binding.shapes[n], stages[n].typ.dtype) for n in names]
    single = as_cpu_array(out, f"out for {names[0]}")
    given = [single] if isinstance(single, np.ndarray) else list(out)
    if len(given) != len(names):
        raise ArgumentError(
            f"out= must hold {len(names)} array(s) ({', '.join(names)}), got {len(given)}"
        )
    given = [as_cpu_array(array, f"out for {name}") for name, array in zip(names, given)]
    for name, array in zip(names, given):
        shape, dtype = binding.shapes[name], stages[name].typ.dtype
        if not isinstance(array, np.ndarray) or array.dtype != dtype or array.shape != shape:
            got = (
                f"{array.dtype} {array.shape}"
                if isinstance(array, np.ndarray)
                else type(array).__name__
            )
            raise ArgumentError(
                f"out for {name} must be a {dtype} array of shape {shape}, got {got}"
            )
        if not (array.flags.c_contiguous and array.flags.writeable):
            raise ArgumentError(f"out for {name} must be C-contiguous and writeable")
    others = list(binding.arrays.items()) + list(zip(names, given))
    for i, (name, array) in enumerate(zip(names, given)):
        for j, (other_name, other) in enumerate(others):
            if j != len(binding.arrays) + i and np.shares_memory(array, other):
                raise ArgumentError(f"out for {name} overlaps {other_name}")
    return given
