"""LAPACK's Cholesky factorization and solve on the leading block of a larger array, in place: scipy's
documented Cython LAPACK (scipy.linalg.cython_lapack: dpotrf, dpotrs, with a leading dimension) called through
ctypes. scipy.linalg.lapack's wrappers take a whole contiguous array, so the kernel block of the proof's free-point
system (solvers.reference) would be copied first: at thousands of unknowns that copy is a third array of the
system's size in memory, and its first touch of fresh pages costs as much time as the factorization.

The array is C-ordered and symmetric; LAPACK reads it column-major, so its lower triangle is the array's upper one.
"""

from __future__ import annotations

import ctypes

import numpy as np
from scipy.linalg import cython_lapack

_INT = ctypes.POINTER(ctypes.c_int)
_DOUBLE = ctypes.POINTER(ctypes.c_double)


def _capsule_pointer(capsule) -> int:
    """The C function's address in one of cython_lapack's capsules (its name is the function's C signature)."""
    get_name, get_pointer = ctypes.pythonapi.PyCapsule_GetName, ctypes.pythonapi.PyCapsule_GetPointer
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(capsule, get_name(capsule))


_potrf = ctypes.CFUNCTYPE(None, ctypes.c_char_p, _INT, _DOUBLE, _INT, _INT)(
    _capsule_pointer(cython_lapack.__pyx_capi__["dpotrf"]))
_potrs = ctypes.CFUNCTYPE(None, ctypes.c_char_p, _INT, _INT, _DOUBLE, _INT, _DOUBLE, _INT, _INT)(
    _capsule_pointer(cython_lapack.__pyx_capi__["dpotrs"]))


def _checked(A: np.ndarray, m: int) -> None:
    if not (A.dtype == np.float64 and A.ndim == 2 and A.flags.c_contiguous and A.flags.writeable
            and 0 < m <= min(A.shape)):
        raise ValueError(f"a writeable C-ordered float64 array with a leading {m} x {m} block is needed, "
                         f"not {A.dtype} {A.shape}")


def cholesky(A: np.ndarray, m: int) -> int:
    """Factor A's leading m x m block Q = L L' in place: L' is left in the block's upper triangle and diagonal, the
    rest of A untouched. LAPACK's info: 0, or k > 0 where the leading k x k minor is not positive definite."""
    _checked(A, m)
    info = ctypes.c_int(0)
    _potrf(b"L", ctypes.byref(ctypes.c_int(m)), A.ctypes.data_as(_DOUBLE), ctypes.byref(ctypes.c_int(A.shape[1])),
           ctypes.byref(info))
    return info.value


def cholesky_solve(A: np.ndarray, m: int, b: np.ndarray) -> np.ndarray:
    """Q^-1 b through the factor `cholesky` left in A's leading block (b: m values; a new array)."""
    _checked(A, m)
    x = np.array(b, dtype=np.float64, order="C")
    if x.shape != (m,):
        raise ValueError(f"{m} values are needed, not {x.shape}")
    info = ctypes.c_int(0)
    _potrs(b"L", ctypes.byref(ctypes.c_int(m)), ctypes.byref(ctypes.c_int(1)), A.ctypes.data_as(_DOUBLE),
           ctypes.byref(ctypes.c_int(A.shape[1])), x.ctypes.data_as(_DOUBLE), ctypes.byref(ctypes.c_int(m)),
           ctypes.byref(info))
    if info.value != 0:
        raise ValueError(f"dpotrs: argument {-info.value} was refused")
    return x
