"""The dense Gram matrix and products with its rows, compiled (numba): the rbf's K formed from the points'
differences on one core, and combinations of K's rows read in place. Shared by the compiled SMO, the kernel rows
and the estimator's one Gram matrix per fit."""

from __future__ import annotations

import mmap

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _rbf_exponents(XT, gamma, lo, hi, K):
    """-gamma ||x_i - x_j||^2 into K[i, :i + 1] for the rows lo..hi-1, from the differences (XT: X transposed,
    so that the sums run along contiguous rows of K)."""
    d = XT.shape[0]
    for i in range(lo, hi):
        row = K[i, :i + 1]
        row[:] = 0.0
        for t in range(d):
            x = XT[t, i]
            col = XT[t, :i + 1]
            for j in range(i + 1):
                u = x - col[j]
                row[j] += u * u
        for j in range(i + 1):
            row[j] *= -gamma
        K[i, i + 1:hi] = 0.0  # the block's entries above the diagonal: the mirror's, not garbage to overflow exp


@njit(cache=True, nogil=True)
def _mirror(K):
    """The lower triangle copied onto the upper one, a tile at a time; 1 on the diagonal."""
    n = K.shape[0]
    tile = 64
    for lo in range(0, n, tile):
        for hi in range(lo, n, tile):
            for i in range(lo, min(n, lo + tile)):
                for j in range(max(hi, i + 1), min(n, hi + tile)):
                    K[i, j] = K[j, i]
        for i in range(lo, min(n, lo + tile)):
            K[i, i] = 1.0


#: Rows of the Gram matrix whose exponents are made before one call of numpy's exp (its vectorized loop, several
#: times faster than a scalar exp a value).
GRAM_ROWS = 256


def rbf_gram(gamma: float, X: np.ndarray) -> np.ndarray:
    """The rbf's Gram matrix of dense X, its exponents from the differences (right to rounding at any translation
    of the data), the lower triangle only, then mirrored: exactly symmetric with 1 on the diagonal. On one core
    (formulations.kernels.gram's product spun its threads against the other processes of a shared machine)."""
    X = compiled_array(X)
    n = X.shape[0]
    XT = np.ascontiguousarray(X.T)
    K = _fresh_matrix(n)
    for lo in range(0, n, GRAM_ROWS):
        hi = min(n, lo + GRAM_ROWS)
        _rbf_exponents(XT, float(gamma), lo, hi, K)
        block = K[lo:hi, :hi]  # the rows' lower triangles, and a few entries above it that the mirror overwrites
        np.exp(block, out=block)
    _mirror(K)
    return K


@njit(cache=True, nogil=True)
def _combination(K, I, coef, out):
    """out += sum_k coef_k K[I_k] (K symmetric: rows, read in place)."""
    for k in range(I.shape[0]):
        c = coef[k]
        row = K[I[k]]
        for t in range(out.shape[0]):
            out[t] += c * row[t]


@njit(cache=True, nogil=True)
def _abs_combination(K, I, coef, out):
    """out += sum_k |coef_k| |K[I_k]| (rows, read in place)."""
    for k in range(I.shape[0]):
        c = abs(coef[k])
        row = K[I[k]]
        for t in range(out.shape[0]):
            out[t] += c * abs(row[t])


def abs_combination(K: np.ndarray, I, coef) -> np.ndarray:
    """|coef|' |K[I, :]| for a K in memory, without gathering the rows into a copy."""
    out = np.zeros(K.shape[0])
    _abs_combination(K, np.ascontiguousarray(I, dtype=np.int64), np.ascontiguousarray(coef, dtype=float), out)
    return out


def combination(K: np.ndarray, I, coef) -> np.ndarray:
    """coef' K[I, :] for a symmetric K in memory, without gathering the rows into a copy (a block's rows would be
    copied whole before the product)."""
    out = np.zeros(K.shape[0])
    _combination(K, np.ascontiguousarray(I, dtype=np.int64), np.ascontiguousarray(coef, dtype=float), out)
    return out


def _fresh_matrix(n: int) -> np.ndarray:
    """An n x n float64 array in fresh memory mapped in whole (MAP_POPULATE where the platform has it). numpy asks
    large arrays for transparent huge pages, whose first use in a process waited for the kernel to compact
    memory: the first write of a large matrix then took several times longer (docs/kernel_smo.md)."""
    populate = getattr(mmap, "MAP_POPULATE", 0)
    if n == 0 or not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.empty((n, n))
    buffer = mmap.mmap(-1, 8 * n * n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
    return np.frombuffer(buffer, dtype=np.float64).reshape(n, n)


def compiled_array(A) -> np.ndarray:
    """A as a writable C-ordered float64 array (copied only where it is not): numba compiles its functions once
    per array type, and a read-only array is another type (another compile, seconds)."""
    return np.require(A, dtype=np.float64, requirements=["C", "W"])
