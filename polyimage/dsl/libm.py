"""The C library's double-precision exp, log, sin, cos and pow: the functions generated code
calls (in double, rounded once to float for Float values). The interpreter and constant folding
call the same ones, so compiled and interpreted results agree to the bit."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

import numpy as np

FUNCTIONS = {"exp": 1, "log": 1, "sin": 1, "cos": 1, "pow": 2}


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
    """`name` applied elementwise to arrays (broadcast), in float64, as the C library does."""
    arrays = [np.asarray(a, np.float64) for a in args]
    return np.asarray(_ufunc(name)(*arrays), dtype=np.float64)


def scalar(name: str, *args) -> float:
    """`name` on Python numbers, as the C library computes it (NaN or inf, never an error)."""
    return float(c_function(name)(*(float(a) for a in args)))


def is_libm(name: str) -> bool:
    return name in FUNCTIONS
