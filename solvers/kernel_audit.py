"""The closing checks' own kernel values: entries of the K a solve used, recomputed by another formula.

The checks measure a kernel dual's point against the optimum of the K they are given, so a wrong K (digits
lost to cancellation far from the origin, a faulty row source) would be checked against itself and pass.
Here the entries that matter most are computed again, independently of formulations.kernels.gram:

    rbf            exp(-gamma ||x - z||^2) from the differences x - z (a compiled loop: no expansion)
    linear, poly,  x'z summed by numpy's einsum (its own loops, not BLAS; extended precision was far slower
    sigmoid        for the same entries, einsum ...)

and each is compared with the entry used, less what rounding allows (`exact_values`: the kernels' own bound,
formulations.kernels.EXACT_SLACK, and the recomputation's). The excess counts by what it moves the decision
values f(x_i) = sum_j u_j K_ij + b: max_i sum_j excess_ij |u_j| / max_i |f(x_i)|, held to the profile's
tolerance like every other check (solvers.checks).

Which entries: the columns of the support vectors (u_j != 0: no other column enters f), largest |u_j| first;
the rows of the free support vectors (they pin b), then those at a bound, then the other points nearest their
margins, within AUDIT_COST (entries x (features + ENTRY_COST)); every such entry for small problems. A
precomputed K has no formula to recompute: it is the user's, and not audited.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy.sparse import issparse

from formulations.kernels import EXACT_SLACK, Kernel
from formulations.recovery import AT_BOUND, FREE

#: Entries x (features + ENTRY_COST) recomputed at most (n = 5,000, d = 10, 2,400 support vectors: 170 rows): a
#: fraction of a second, where five times more took seconds for poly in extended precision.
AUDIT_COST = 1.8e7
#: An entry's own cost (its exp, its test) in features' differences: at d = 2 the features are not what costs.
ENTRY_COST = 35

_EPS = np.finfo(float).eps


def kernel_error(kernel: Kernel, X: np.ndarray, gram, u: np.ndarray, margins: np.ndarray,
                 codes: np.ndarray, f_scale: float) -> tuple[float, int]:
    """(max_i sum_j excess_ij |u_j| / f_scale, the number of entries recomputed) for the K behind `gram`
    (a solvers.reference.Gram: its submatrix) at u = y * alpha. margins: y_i f(x_i) - 1; codes: the points'
    classes (formulations.recovery.classify)."""
    sv = np.flatnonzero(u)
    if sv.size == 0:
        return 0.0, 0
    per_row = max(1, int(AUDIT_COST // (X.shape[1] + ENTRY_COST)))
    cols = sv[np.argsort(-np.abs(u[sv]), kind="stable")][:per_row]
    take = max(1, per_row // cols.size)
    if take >= u.size:  # every point's row: which come first does not matter
        rows, A = np.arange(u.size), X
    else:
        rank = np.where(codes == FREE, 0, np.where(codes == AT_BOUND, 1, 2))
        rows = np.lexsort((np.abs(margins), -np.abs(u), rank))[:take]
        A = X[rows]
    B = X[cols]
    if issparse(X):  # the few sampled rows dense: the other formula needs their differences
        A, B = A.toarray(), B.toarray()
    used, weights = gram.submatrix(rows, cols), np.abs(u[cols])
    if kernel.name == "rbf":
        worst = rbf_excess(kernel.resolved_gamma(A.shape[1]), A, B, used, weights)
    else:
        exact, allowed = exact_values(kernel, A, B)
        worst = float(np.max(np.maximum(np.abs(used - exact) - allowed, 0.0) @ weights))
    return worst / f_scale, rows.size * cols.size


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """||a_i - b_j||^2 from the differences, for dense A and B. Summed in whatever order the compiler vectorises:
    the rounding bound of a sum of d nonnegative terms, (d - 1) eps times the sum, holds for every order (and
    a fused multiply-add only rounds less). Several times faster than scipy's cdist on a pair's block."""
    out = np.empty((A.shape[0], B.shape[0]))
    for i in range(A.shape[0]):
        for j in range(B.shape[0]):
            total = 0.0
            for k in range(A.shape[1]):
                t = A[i, k] - B[j, k]
                total += t * t
            out[i, j] = total
    return out


#: The rbf's allowance per unit of eps (1 + (d + 2) t) exp(-t), t = gamma ||x - z||^2: twice the Gram matrix's
#: bound (formulations.kernels.rbf_values) and the recomputation's together.
RBF_ALLOWANCE = 2 * (EXACT_SLACK + 2)


def exact_values(kernel: Kernel, A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """k(a, b) for the rows of A against B by the other formula (module doc), and how far a right value may be
    from it: twice the two computations' rounding bounds together, plus the smallest normal number (subnormal
    values near exp's underflow). The rbf's: from the differences, within RBF_ALLOWANCE (rbf_excess's test)."""
    d = A.shape[1]
    gamma = kernel.resolved_gamma(d)
    if kernel.name == "rbf":
        t, values = rbf_values(gamma, A, B)
        allowed = RBF_ALLOWANCE * _EPS * (1.0 + (d + 2) * t) * values
    else:
        inner = np.einsum("ik,jk->ij", A, B)  # optimize=False: numpy's loops, another summation than BLAS
        reach = np.linalg.norm(A, axis=1)[:, None] * np.linalg.norm(B, axis=1)[None, :]  # |x'z| <= ||x|| ||z||
        if kernel.name == "linear":
            values, allowed = inner, 2 * (d + 2) * _EPS * reach
        elif kernel.name == "poly":
            # libm's pow (float_power: numpy's power is several times slower), not gram's repeated products
            values = np.float_power(kernel.coef0 + gamma * inner, kernel.degree)
            allowed = 2 * (d + 2) * kernel.degree * _EPS * (kernel.coef0 + gamma * reach) ** kernel.degree
        else:  # sigmoid: tanh' <= 1
            values = np.tanh(gamma * inner + kernel.coef0)
            allowed = 2 * (d + 2) * _EPS * (gamma * reach + abs(kernel.coef0) + 1.0)
    return values, allowed + np.finfo(float).tiny


def rbf_values(gamma: float, A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(t, exp(-t)), t = gamma ||a_i - b_j||^2 from the differences (squared_distances): the rbf's other formula."""
    t = squared_distances(np.ascontiguousarray(A, dtype=float), np.ascontiguousarray(B, dtype=float))
    t *= gamma
    return t, np.exp(-t)


def rbf_excess(gamma: float, A: np.ndarray, B: np.ndarray, used: np.ndarray, weights: np.ndarray) -> float:
    """max_i sum_j max(|used_ij - k(a_i, b_j)| - allowed_ij, 0) weights_j for the rbf: exact_values' values (numpy's
    vectorized exp) and allowance, then the excess in one compiled pass (no temporaries of the block's size for
    the allowance and the excess: half the time). nan where an entry used is nan."""
    t, values = rbf_values(gamma, A, B)
    return float(_rbf_excess(np.ascontiguousarray(used, dtype=float), values, t,
                             np.ascontiguousarray(weights, dtype=float), RBF_ALLOWANCE * _EPS, A.shape[1]))


@njit(cache=True, nogil=True)
def _rbf_excess(used, values, t, weights, slack, d):
    """rbf_excess's pass; slack: RBF_ALLOWANCE eps, d: the features."""
    tiny = np.finfo(np.float64).tiny
    worst = 0.0
    for i in range(used.shape[0]):
        total = 0.0
        for j in range(used.shape[1]):
            excess = abs(used[i, j] - values[i, j]) - (slack * (1.0 + (d + 2) * t[i, j]) * values[i, j] + tiny)
            if not excess <= 0.0:  # a nan entry counts (as nan), never as right
                total += excess * weights[j]
        if math.isnan(total):
            return total
        worst = max(worst, total)
    return worst


def warm() -> None:
    """The compiled functions loaded from numba's cache (or compiled), so that the checks do not wait for them."""
    point = np.zeros((1, 1))
    rbf_excess(1.0, point, point, np.ones((1, 1)), np.ones(1))
