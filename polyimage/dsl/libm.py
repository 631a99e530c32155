"""The math functions computed in double (rounded once to float for Float values): log, sin,
cos and pow are the C library's, which generated code calls and the interpreter and constant
folding call too; exp is our own (dsl.exp_poly), branch-free C that vectorizes. Either way
compiled and interpreted results agree to the bit."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

import numpy as np

from . import exp_poly

FUNCTIONS = {"exp": 1, "log": 1, "sin": 1, "cos": 1, "pow": 2}
OWN = {"exp": exp_poly}  # computed by our code, in C and in NumPy alike


@functools.lru_cache(maxsize=None)
def _library():
    for name in ("libm.so.6", ctypes.util.find_library("m")):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return ctypes.CDLL(None)


@functools.lru_cache(maxsize=None)
def c_function(name: str):
    """The C function `name` (double -> double, or (double, double) -> double for pow)."""
    fn = getattr(_library(), name)
    fn.argtypes = [ctypes.c_double] * FUNCTIONS[name]
    fn.restype = ctypes.c_double
    return fn


@functools.lru_cache(maxsize=None)
def _ufunc(name: str):
    return np.frompyfunc(c_function(name), FUNCTIONS[name], 1)


def apply(name: str, *args) -> np.ndarray:
    """`name` applied elementwise to arrays (broadcast), in float64, as generated code
    computes it."""
    if name in OWN:
        return OWN[name].apply(*args, np.float64)
    return library(name, *args)


def library(name: str, *args) -> np.ndarray:
    """The C library's `name` applied elementwise to arrays (broadcast), in float64 (for
    OWN functions too: the reference their accuracy is measured against)."""
    arrays = [np.asarray(a, np.float64) for a in args]
    return np.asarray(_ufunc(name)(*arrays), dtype=np.float64)


def scalar(name: str, *args) -> float:
    """`name` on Python numbers, as generated code computes it (NaN or inf, never an error)."""
    if name in OWN:
        return OWN[name].scalar(*args)
    return float(c_function(name)(*(float(a) for a in args)))


def own(name: str, typ_dtype, *args) -> np.ndarray:
    """Our `name` (one of OWN) on arrays, in float for a float32 result, else in double."""
    precision = np.float32 if np.dtype(typ_dtype) == np.float32 else np.float64
    return OWN[name].apply(*args, precision)


def is_libm(name: str) -> bool:
    """Whether `name` is one of the math functions computed in double."""
    return name in FUNCTIONS


def is_library_call(name: str) -> bool:
    """Whether generated code calls the C library for `name` (a scalar call in the loop)."""
    return name in FUNCTIONS and name not in OWN
