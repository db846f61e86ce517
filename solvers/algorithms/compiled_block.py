"""Compiled reads of a block of a symmetric Gram matrix in place (kernel_rows.GramBlock)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _by_columns(K, I, J, out):
    """out[a, b] = K[J_b, I_a]: each column of out read along row J_b of K (K symmetric: K[I_a, J_b])."""
    for b in range(J.shape[0]):
        row = K[J[b]]
        for a in range(I.shape[0]):
            out[a, b] = row[I[a]]


def submatrix_by_columns(K: np.ndarray, I: np.ndarray, J: np.ndarray) -> np.ndarray:
    """K[I][:, J] of a symmetric K, C-ordered, read along the rows of J (the shorter side: the closing's
    K[:, support vectors] are a few rows read in order, not an entry from every row, and no transposed copy).
    I, J: int64 positions in range (the caller's)."""
    out = np.empty((I.size, J.size))
    _by_columns(K, I, J, out)
    return out


def warm() -> None:
    """_by_columns loaded from numba's cache (or compiled), in the types GramBlock calls it with."""
    submatrix_by_columns(np.eye(2), np.array([0, 1]), np.array([1]))
