"""LAPACK's Cholesky factorization and solve on the leading block of a larger array, in place: scipy's
documented Cython LAPACK (scipy.linalg.cython_lapack: dpotrf, dpotrs, with a leading dimension) called through
ctypes; a large block factored by panels on our own threads (blocked_cholesky), each BLAS call on one thread.
scipy.linalg.lapack's wrappers take a whole contiguous array, so the kernel block of the proof's free-point
system (solvers.reference) would be copied first: at thousands of unknowns that copy is a third array of the
system's size in memory, and its first touch of fresh pages costs as much time as the factorization.

The array is C-ordered and symmetric; LAPACK reads it column-major, so its lower triangle is the array's upper one.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np
from scipy.linalg import cython_blas, cython_lapack

from solvers import blas
from solvers.algorithms.compiled_gram import in_threads

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
_CHAR, _P = ctypes.c_char_p, ctypes.c_void_p  # BLAS's matrices passed as addresses inside A
_trsm = ctypes.CFUNCTYPE(None, _CHAR, _CHAR, _CHAR, _CHAR, _INT, _INT, _DOUBLE, _P, _INT, _P, _INT)(
    _capsule_pointer(cython_blas.__pyx_capi__["dtrsm"]))
_syrk = ctypes.CFUNCTYPE(None, _CHAR, _CHAR, _INT, _INT, _DOUBLE, _P, _INT, _DOUBLE, _P, _INT)(
    _capsule_pointer(cython_blas.__pyx_capi__["dsyrk"]))
_gemm = ctypes.CFUNCTYPE(None, _CHAR, _CHAR, _INT, _INT, _INT, _DOUBLE, _P, _INT, _P, _INT, _DOUBLE, _P, _INT)(
    _capsule_pointer(cython_blas.__pyx_capi__["dgemm"]))
_gemv = ctypes.CFUNCTYPE(None, _CHAR, _INT, _INT, _DOUBLE, _P, _INT, _P, _INT, _DOUBLE, _P, _INT)(
    _capsule_pointer(cython_blas.__pyx_capi__["dgemv"]))
_trsv = ctypes.CFUNCTYPE(None, _CHAR, _CHAR, _CHAR, _INT, _P, _INT, _P, _INT)(
    _capsule_pointer(cython_blas.__pyx_capi__["dtrsv"]))


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
    x = np.array(b, dtype=np.float64, order="C")
    if x.shape != (m,):
        raise ValueError(f"{m} values are needed, not {x.shape}")
    return _potrs_rows(A, m, x[None, :])[0]


def cholesky_solve_many(A: np.ndarray, m: int, B: np.ndarray) -> np.ndarray:
    """Q^-1 b for each row b of B (k x m) through the factor `cholesky` left in A's leading block, in one dpotrs call
    (the factor read once for all k; a new k x m array)."""
    X = np.array(B, dtype=np.float64, order="C")
    if X.ndim != 2 or X.shape[1] != m or X.shape[0] < 1:
        raise ValueError(f"rows of {m} values are needed, not {X.shape}")
    return _potrs_rows(A, m, X)


#: Right-hand sides up to which a solve takes them one at a time, by panels (_solve_one): LAPACK's dpotrs, by dtrsm
#: and dgemm on a few columns, read a 2,873-square factor at a third of dgemv's pace (7 ms against 2.3 ms for one;
#: 8.4 against 5.0 ms for two, 8.2 against 9.9 ms for four).
ONE_AT_A_TIME_UP_TO = 3


def _potrs_rows(A: np.ndarray, m: int, X: np.ndarray) -> np.ndarray:
    """X's rows overwritten by Q^-1 of them (LAPACK's B is column-major m x k: X's rows are its columns)."""
    _checked(A, m)
    if X.shape[0] <= ONE_AT_A_TIME_UP_TO:
        for row in X:
            _solve_one(A, m, row)
        return X
    info = ctypes.c_int(0)
    _potrs(b"L", ctypes.byref(ctypes.c_int(m)), ctypes.byref(ctypes.c_int(X.shape[0])), A.ctypes.data_as(_DOUBLE),
           ctypes.byref(ctypes.c_int(A.shape[1])), X.ctypes.data_as(_DOUBLE), ctypes.byref(ctypes.c_int(m)),
           ctypes.byref(info))
    if info.value != 0:
        raise ValueError(f"dpotrs: argument {-info.value} was refused")
    return X


#: Columns of a panel of blocked_cholesky (and rows of its row blocks): large enough for BLAS's kernels to run near
#: their peak, small enough that a 4,000-square factor has a dozen panels to share between threads.
PANEL = 256


def _int(v: int):
    return ctypes.byref(ctypes.c_int(v))


_ONE, _MINUS_ONE = ctypes.c_double(1.0), ctypes.c_double(-1.0)


class _Blocks:
    """blocked_cholesky's BLAS calls on the blocks of A's leading m x m block (LAPACK's (i, j), column-major: A's
    row j, column i), after panel k..k+kb has been factored."""

    def __init__(self, A: np.ndarray, m: int):
        self.m, self.lda, self.base = m, A.shape[1], A.ctypes.data

    def at(self, i: int, j: int) -> int:
        return self.base + 8 * (i + j * self.lda)

    def factor(self, k: int, kb: int) -> int:
        """dpotrf of the diagonal block k..k+kb; its info."""
        info = ctypes.c_int(0)
        _potrf(b"L", _int(kb), ctypes.cast(self.at(k, k), _DOUBLE), _int(self.lda), ctypes.byref(info))
        return info.value

    def below(self, k: int, kb: int, i: int) -> None:
        """Rows i..i+PANEL of the panel times the diagonal block's L^-T (dtrsm)."""
        _trsm(b"R", b"L", b"T", b"N", _int(min(PANEL, self.m - i)), _int(kb), ctypes.byref(_ONE), self.at(k, k),
              _int(self.lda), self.at(i, k), _int(self.lda))

    def update(self, k: int, kb: int, j: int) -> None:
        """Columns j..j+PANEL of the trailing block less the panel's rows times their transpose (dsyrk on the
        diagonal, dgemm below it)."""
        jb, ld, one, minus = min(PANEL, self.m - j), _int(self.lda), ctypes.byref(_ONE), ctypes.byref(_MINUS_ONE)
        _syrk(b"L", b"N", _int(jb), _int(kb), minus, self.at(j, k), ld, one, self.at(j, j), ld)
        if self.m - j - jb > 0:
            _gemm(b"N", b"T", _int(self.m - j - jb), _int(jb), _int(kb), minus, self.at(j + jb, k), ld,
                  self.at(j, k), ld, one, self.at(j + jb, j), ld)


def _solve_one(A: np.ndarray, m: int, x: np.ndarray) -> None:
    """x (m contiguous values) overwritten by Q^-1 x: L z = x, then L' x = z, each by panels of PANEL unknowns, the
    panel's own triangle by dtrsv and the rest of the factor's columns by dgemv, which streams them."""
    blocks, at = _Blocks(A, m), x.ctypes.data
    ld, one, minus, step = _int(blocks.lda), ctypes.byref(_ONE), ctypes.byref(_MINUS_ONE), _int(1)
    starts = range(0, m, PANEL)
    for j in starts:  # z_J = L_JJ^-1 x_J, then the rows below less L[below, J] z_J
        jb, below = min(PANEL, m - j), max(0, m - j - PANEL)
        _trsv(b"L", b"N", b"N", _int(jb), blocks.at(j, j), ld, at + 8 * j, step)
        if below:
            _gemv(b"N", _int(below), _int(jb), minus, blocks.at(j + jb, j), ld, at + 8 * j, step, one,
                  at + 8 * (j + jb), step)
    for j in reversed(starts):  # x_J = L_JJ'^-1 (z_J - L[below, J]' x_below)
        jb, below = min(PANEL, m - j), max(0, m - j - PANEL)
        if below:
            _gemv(b"T", _int(below), _int(jb), minus, blocks.at(j + jb, j), ld, at + 8 * (j + jb), step, one,
                  at + 8 * j, step)
        _trsv(b"L", b"T", b"N", _int(jb), blocks.at(j, j), ld, at + 8 * j, step)


def blocked_cholesky(A: np.ndarray, m: int, threads: int) -> int:
    """cholesky's factor (and its info) by right-looking panels of PANEL columns: the panel's diagonal block by
    dpotrf, the rows below it by dtrsm and the trailing block's update by dsyrk/dgemm, each in blocks of PANEL rows
    or columns that `threads` of our threads take as they finish one (ctypes releases the interpreter's lock). One
    step ahead: while the other threads update the trailing columns with panel k, the first updates panel k + 1's
    own columns, factors them and solves the rows below (_next_panel), so no thread waits on the panel's serial
    steps. BLAS runs on one thread: its own threads spin while waiting, which on a machine busy with another process
    made a factorization many times slower; ours only wait. The blocks and each one's operations, in their order
    on each block, do not depend on `threads`: the same bits on any thread count (not dpotrf's own, which blocks
    differently)."""
    _checked(A, m)
    blocks = _Blocks(A, m)
    with blas.one_thread():
        kb = min(PANEL, m)
        info = blocks.factor(0, kb)
        if info != 0:
            return info
        in_threads(functools.partial(blocks.below, 0, kb), range(kb, m, PANEL), threads)
        for k in range(0, m - kb, PANEL):
            kb, failed = min(PANEL, m - k), []
            rest = [None, *range(k + 2 * PANEL, m, PANEL)]  # None: the next panel's chain, started first
            in_threads(lambda j: _next_panel(blocks, k, kb, failed) if j is None else blocks.update(k, kb, j), rest,
                       threads)
            if failed:
                return failed[0]
    return 0


def _next_panel(blocks: _Blocks, k: int, kb: int, failed: list) -> None:
    """Panel k + PANEL made ready: its columns updated with panel k, its diagonal block factored (a failure's info
    into `failed`), the rows below it solved."""
    j = k + kb
    blocks.update(k, kb, j)
    jb = min(PANEL, blocks.m - j)
    info = blocks.factor(j, jb)
    if info != 0:
        failed.append(j + info)
        return
    for i in range(j + jb, blocks.m, PANEL):
        blocks.below(j, jb, i)
