"""The rbf's exponents -gamma ||x - z||^2 finished from the expansion in one compiled pass (numba), and a Gram
matrix's lower triangle mirrored. formulations.kernels states the rounding rule; this module applies it entry by
entry, without the block-sized temporaries and index lists of numpy's passes. Loaded only where an rbf value is
made (importing numba costs a fraction of a second)."""

from __future__ import annotations

import numpy as np

from formulations.numba_cache import njit  # numba's, its cache locked against processes filling it at once

_EPS = float(np.finfo(float).eps)


@njit(cache=True, nogil=True)
def exponents(E, lo, X, x_sq, Z, z_sq, gamma, slack, underflow, from_inner, lower):
    """E[r, c] (point lo + r of X against point c of Z) made -gamma ||x - z||^2, in place.

    from_inner: E holds the centered points' inner products, and the exponent is 2 gamma E - gamma (sq_x + sq_z);
    else E holds the exponent already. Clipped at 0, then recomputed from the differences of the points as given
    (X, Z) where the expansion's rounding, 2 (d + 4) gamma eps S (S = sq_x + sq_z), exceeds `slack` times the
    differences' own, eps (1 + (d + 2) t), unless exp underflows there anyway (t >= `underflow`).
    lower: E holds rows of a symmetric matrix (Z is X): only the entries c < lo + r are made, and the block's
    entries from the diagonal on are set to 0 (the diagonal's exponent; the mirror's, not values for exp to
    overflow on)."""
    d = X.shape[1]
    expansion = 2.0 * (d + 4) * gamma
    two_gamma = 2.0 * gamma
    for r in range(E.shape[0]):
        i = lo + r
        row = E[r]
        last = min(i, E.shape[1]) if lower else E.shape[1]
        x = x_sq[i]
        # the clip first, in a loop the compiler vectorizes; the test below is the same, weakened by t >= 0
        widest = 0.0
        if from_inner:
            for c in range(last):
                row[c] = min(two_gamma * row[c] - gamma * (x + z_sq[c]), 0.0)
                widest = max(widest, z_sq[c])
        else:
            for c in range(last):
                row[c] = min(row[c], 0.0)
                widest = max(widest, z_sq[c])
        if expansion * (x + widest) > slack:
            _from_differences(row, i, last, X, x_sq, Z, z_sq, gamma, slack, underflow)
        for c in range(last, E.shape[1] if lower else last):
            row[c] = 0.0


@njit(cache=True, nogil=True)
def _from_differences(row, i, last, X, x_sq, Z, z_sq, gamma, slack, underflow):
    """exponents' recomputation of row[c] = -gamma ||x_i - z_c||^2 for c < last where the expansion cannot vouch."""
    d = X.shape[1]
    expansion = 2.0 * (d + 4) * gamma
    for c in range(last):
        S = x_sq[i] + z_sq[c]
        t = -row[c]
        if expansion * S > slack * (1.0 + (d + 2) * t) and t - expansion * _EPS * S < underflow:
            total = 0.0
            for k in range(d):
                u = X[i, k] - Z[c, k]
                total += u * u
            row[c] = -gamma * total


#: Rows and columns of the mirror's tiles (two 64 x 64 tiles of doubles stay in the first-level cache).
MIRROR_TILE = 64


@njit(cache=True, nogil=True)
def mirror(K, lo, hi):
    """The lower triangle copied onto the upper one in the rows lo..hi-1, a tile at a time; 1 on the diagonal."""
    n = K.shape[0]
    tile = MIRROR_TILE
    for top in range(lo, hi, tile):
        end = min(hi, top + tile)
        for left in range(top, n, tile):
            for i in range(top, end):
                for j in range(max(left, i + 1), min(n, left + tile)):
                    K[i, j] = K[j, i]
        for i in range(top, end):
            K[i, i] = 1.0


def warm() -> None:
    """The compiled functions loaded in every array type the Gram matrices and kernel rows pass: a block of a
    larger matrix (numba's layout "A") and whole rows (layout "C"), rows of a Gram matrix and of other points."""
    X = np.zeros((2, 1))
    sq = np.zeros(2)
    E = np.zeros((2, 3))
    for block in (E, E[:, :2]):
        for symmetric in (False, True):
            exponents(block, 0, X, sq, X, sq, 1.0, 1.0, 1.0, symmetric, symmetric)
    mirror(np.zeros((2, 2)), 0, 2)
