"""The data matrix X as every layer takes it: a dense float64 array, or a scipy.sparse CSR matrix kept sparse.

A sparse X (text features: d = 50,000 columns, 0.1% of them nonzero) would not fit in memory as a dense
array, so nothing between the input's check (formulations.validation.check_X) and the answer densifies it:
products (X w, X' u, X[rows]) are scipy's, and the few numpy calls that would make a dense copy (row norms,
|X|, feature spreads, Y X) go through the functions here, which take either kind.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

issparse = sp.issparse


def as_data(X):
    """X as a float64 array, or a sparse X as a float64 CSR matrix (no dense copy)."""
    if sp.issparse(X):
        return X if isinstance(X, sp.csr_matrix) and X.dtype == np.float64 else sp.csr_matrix(X, dtype=np.float64)
    return np.asarray(X, dtype=float)


def signed(y: np.ndarray, F):
    """Y F: row i of F times y_i, so that y_i (x_i'w) = (Y X w)_i and X'(y * alpha) = (Y X)' alpha.

    cvxpy compiles a constant matrix times a variable faster than multiply(y, X @ w). A sparse F
    gives a CSR matrix with F's nonzeros (a dense y[:, None] * F would be F's dense copy).
    """
    if sp.issparse(F):
        return sp.csr_matrix(sp.diags(np.asarray(y, dtype=float)) @ F)
    return y[:, None] * F


def squared_row_norms(X) -> np.ndarray:
    """||x_i||^2 for every row (a sparse X's through its nonzeros)."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=float).ravel()
    return np.einsum("ij,ij->i", X, X)


def absolute(X):
    """|X| entry by entry, sparse where X is."""
    return abs(X) if sp.issparse(X) else np.abs(X)


def column_moments(X) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) of every column; a sparse X's through its nonzeros (scikit-learn's mean_variance_axis)."""
    if sp.issparse(X):
        # deferred: scikit-learn loads only where sparse data come (formulations import fast without it)
        from sklearn.utils.sparsefuncs import mean_variance_axis  # its variance avoids E[x^2] - E[x]^2's cancellation

        return mean_variance_axis(sp.csr_matrix(X, dtype=np.float64), axis=0)
    return X.mean(axis=0), X.var(axis=0)


def column_max_abs(X) -> np.ndarray:
    """max_i |x_ij| for every column j (zeros where X has no rows)."""
    if X.shape[0] == 0:
        return np.zeros(X.shape[1])
    if sp.issparse(X):
        return np.asarray(abs(X).max(axis=0).todense(), dtype=float).ravel()
    return np.abs(X).max(axis=0)


def column_bounds(X) -> tuple[np.ndarray, np.ndarray]:
    """(min_i x_ij, max_i x_ij) for every column j, a sparse X's implicit zeros included (zeros where X has no
    rows)."""
    if X.shape[0] == 0:
        return np.zeros(X.shape[1]), np.zeros(X.shape[1])
    if sp.issparse(X):
        return (np.asarray(X.min(axis=0).todense(), dtype=float).ravel(),
                np.asarray(X.max(axis=0).todense(), dtype=float).ravel())
    return X.min(axis=0), X.max(axis=0)


def dense(X) -> np.ndarray:
    """A small block of X (a few rows) as a dense array, for the dense linear algebra that needs one."""
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)


def one_type(a, dtype=float) -> np.ndarray:
    """a as a writable C-ordered array: numba compiles a function once per array type (a read-only or strided
    view is another type), and the solve server loads only the types solvers.isolation.warm_compiled uses.
    An array that is one already is returned as it is without np.require (its flag handling costs more than
    a closing's small arrays' arithmetic)."""
    if type(a) is np.ndarray and a.dtype == dtype:
        flags = a.flags
        if flags.c_contiguous and flags.writeable:
            return a
    return np.require(a, dtype=dtype, requirements=["C", "W"])
