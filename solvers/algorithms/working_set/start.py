r"""Where the working-set loop may start instead of alpha = 0: a warm start alpha0, or the split start.

Warm start (a C path, experiments.c_path): any feasible alpha0 (0 <= alpha0 <= C, y'alpha0 = 0) may start
the loop; the gradient is then g = Q alpha0 - 1, computed once from the rows of K where alpha0 != 0 (O(n |S|)
instead of g = -1). Along a path C_prev -> C_new, alpha_prev * C_new / C_prev is feasible for C_new (the
bounds and y'alpha = 0 scale with it) and keeps the support vectors and which of them sit at the bound C
(`scaled_warm_start`).

Split start (`split_start`): predicted margins y_i f(x_i) for every point come from the soft primal on
Nystrom features of LANDMARKS random points (`nystrom_margins`: f restricted to the landmarks' span, but
every point's hinge in the objective), minimised smoothed by L-BFGS
(solvers.algorithms.primal_working_set.smoothed_start); the points within band of the margin form one
restricted dual, the others with margin <= 1 start at alpha_i = C (the rest at alpha = 0: a feasible
point), and the loop starts there. Its figures against other starts: docs/benchmarks.md.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from formulations import penalty
from solvers.algorithms.primal_working_set import smoothed_start
from solvers.algorithms.working_set.optimality import as_rows, snap
from solvers.algorithms.working_set.subproblems import solve_block
from solvers.deadline import NEVER, Deadline

#: Largest restricted dual the split start solves (a dense |W| x |W| QP: 2,000 -> 32 MB), and at most one
#: point in SPLIT_BLOCK_SHARE: where the margins are flat (a tiny C) the band holds nearly every point.
MAX_SPLIT_BLOCK = 2000
SPLIT_BLOCK_SHARE = 4
#: The split start's landmarks (nystrom_margins) and the eigenvalues of K_SS it keeps (relative to the largest).
LANDMARKS = 50
NYSTROM_RCOND = 1e-10
#: The split's band reaches this many times further below the margin than above it: confined to the
#: landmarks' span, the Nystrom model underfits, and the optimum's extra free points at a large C lie below
#: its margin.
BAND_BELOW = 2.0


def check_alpha0(alpha0, y: np.ndarray, C, rtol: float = 1e-9) -> np.ndarray:
    """alpha0 as a feasible float array for the kernel dual at C (one number or one C_i per point), or a
    ValueError naming the problem.

    Rounding (from scaling a previous point, say) is allowed up to rtol: a bound is violated by at
    most rtol * C and |y'alpha0| <= rtol * sum alpha0; the point is then clipped to [0, C]
    (the final snap restores y'alpha = 0 exactly on the free points).
    """
    try:
        alpha0 = np.asarray(alpha0, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"alpha0 must be an array of numbers: {exc}") from None
    if alpha0.shape != y.shape:
        raise ValueError(f"alpha0 has shape {alpha0.shape}, but there are {len(y)} points (shape {y.shape})")
    if not np.all(np.isfinite(alpha0)):
        raise ValueError(f"alpha0 has {int(np.sum(~np.isfinite(alpha0)))} non-finite entries (NaN or inf)")
    lo = float(alpha0.min(initial=0.0))
    if lo < -rtol * penalty.largest(C):
        raise ValueError(f"alpha0 is infeasible: min alpha0_i = {lo:.3g} < 0 (need 0 <= alpha0 <= C)")
    over = alpha0 - C * (1 + rtol)
    if over.size and over.max() > 0:
        i = int(np.argmax(over))
        raise ValueError(f"alpha0 is infeasible: alpha0[{i}] = {alpha0[i]:.6g} > C = {penalty.at(C, i):.6g} "
                         "(need 0 <= alpha0 <= C)")
    balance = float(y @ alpha0)
    if abs(balance) > rtol * float(np.abs(alpha0).sum()):
        raise ValueError(f"alpha0 is infeasible: y'alpha0 = {balance:.3g}, not 0 (the balance constraint)")
    return np.clip(alpha0, 0.0, C)


def scaled_warm_start(alpha_prev: np.ndarray, C_prev: float, C_new: float) -> np.ndarray:
    """alpha_prev * C_new / C_prev: feasible for C_new when alpha_prev is feasible for C_prev."""
    if not (C_prev > 0 and C_new > 0 and math.isfinite(C_prev) and math.isfinite(C_new)):
        raise ValueError(f"scaling a warm start needs finite C_prev, C_new > 0 (got {C_prev!r}, {C_new!r})")
    return np.clip(np.asarray(alpha_prev, dtype=float) * (C_new / C_prev), 0.0, C_new)


def split_start(K, y, C, subsolve, backend, options, *, landmarks: int = LANDMARKS, band: float = 0.1,
                seed: int = 0) -> tuple[np.ndarray | None, float, str]:
    """A feasible alpha near the optimum from Nystrom margins (module docstring).

    K: the Gram matrix or a row source (solvers.algorithms.kernel_rows); subsolve: a layer's subproblem
    solver (subproblems.SUBSOLVERS). Returns (alpha or None when the restricted QP fails, time inside the
    subproblem call, a description).
    """
    alpha, sub_s, how, _ = split_point(as_rows(K), y, C, subsolve, backend, options,
                                       landmarks=landmarks, band=band, seed=seed)
    return alpha, sub_s, how


def split_point(src, y, C, subsolve, backend, options, *, landmarks, band, seed=0, deadline: Deadline = NEVER):
    """split_start on a row source, and K (y * alpha) at its point (None with no point): the loop's first
    gradient without another product with K (one costs as many kernel rows as alpha has nonzeros)."""
    margins = nystrom_margins(src, y, C, landmarks, seed)
    return _split_from_margins(src, y, C, margins, band, subsolve, backend, options,
                               f"Nystrom {min(len(y), landmarks)}", deadline)


def _split_from_margins(src, y, C, margins, band, subsolve, backend, options, source, deadline: Deadline = NEVER):
    """The split start's point from predicted margins y_i f(x_i) (`source` names where they came from): the
    points within band of 1 (below it, BAND_BELOW times band; at most MAX_SPLIT_BLOCK and n / SPLIT_BLOCK_SHARE,
    the nearest) form one restricted dual W, the others with margin <= 1 start at C, the rest at 0; (alpha or
    None, seconds, description, K (y * alpha)). Its restricted dual is a block like the loop's (solve_block),
    given the time that remains of `deadline`."""
    n = len(y)
    distance = np.where(margins < 1.0, (1.0 - margins) / BAND_BELOW, margins - 1.0)
    size = min(MAX_SPLIT_BLOCK, n // SPLIT_BLOCK_SHARE, int(np.count_nonzero(distance < band)))
    W = np.sort(np.argsort(distance, kind="stable")[:size])
    in_W = np.zeros(n, dtype=bool)
    in_W[W] = True
    L = np.flatnonzero((margins <= 1.0) & ~in_W)
    rhs = -penalty.weighted_sum(penalty.at(C, L), y[L])  # y_W' a = -y_L' alpha_L with alpha_L = C_L
    yW, C_W = y[W], penalty.at(C, W)
    if W.size < 2 or not (-penalty.weighted_sum(C_W, yW < 0) <= rhs <= penalty.weighted_sum(C_W, yW > 0)):
        return None, 0.0, f"split start: the restricted dual on {W.size} points is infeasible", None
    alpha = np.zeros(n)
    alpha[L] = penalty.at(C, L)
    Ku = src.times(y * alpha)  # from alpha_L = C alone
    a_W, elapsed, _ = solve_block(src, y, alpha, yW * Ku[W] - 1.0, W, rhs, C, subsolve, backend, options,
                                  deadline=deadline)
    if a_W is None:
        why = "stopped at the time limit" if deadline.passed() else "returned no point"
        return None, elapsed, f"split start: the restricted QP {why}", None
    alpha[W] = a_W
    snapped = snap(alpha, y, C, 1e-10)
    Ku = src.times(y * snapped)  # from the last product: W, and the few points the balance repair moved
    return snapped, elapsed, f"split: {source}, |W| {W.size}, |L| {L.size}", Ku


def nystrom_margins(src, y, C, landmarks: int, seed: int = 0) -> np.ndarray:
    """Predicted margins y_i f(x_i) for every point from the soft primal on Nystrom features
    (Williams and Seeger 2001): z(x) = Lambda^-1/2 U' k_S(x) for `landmarks` random points S with
    K_SS = U Lambda U', minimized smoothed (primal_working_set.smoothed_start: Huber's hinge, L-BFGS).

    f is the kernel SVM's with w restricted to the span of the landmarks, but every point's hinge in
    the objective; O(n |S|) kernel values and O(n |S|) a step."""
    n = len(y)
    S = np.sort(np.random.default_rng(seed).choice(n, min(n, landmarks), replace=False))
    K_nS = src.rows(S).T  # K symmetric: the landmarks' rows are the columns
    lam, U = scipy.linalg.eigh(K_nS[S])
    keep = lam > NYSTROM_RCOND * lam[-1]  # K_SS's numerical range (duplicates, a rank-d linear kernel)
    Z = K_nS @ (U[:, keep] / np.sqrt(lam[keep]))
    w, b = smoothed_start(Z, y, C)
    return y * (Z @ w + b)
