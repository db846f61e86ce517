"""Recovering the primal solution (w*, b*, xi*) from a dual solution alpha*.

Notation of the lecture notes (001, 000): labels y_i in {-1, +1}, multipliers
alpha_i (the notes' lambda_i), kernel values K_ij = k(x_i, x_j).

    w* = sum_i alpha_i y_i x_i                              (stationarity in w)
    b* = y_i - sum_j alpha_j y_j K_ij   for 0 < alpha_i < C  (complementarity)
    xi_i* = max(0, 1 - y_i f(x_i)),    f(x) = sum_j alpha_j y_j k(x_j, x) + b*

When no multiplier is free (every alpha_i is 0 or C), b* is not pinned by an
equation; 000 section 4 gives it by an interval of lower and upper bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# The rule that produced b*, recorded in every result table.
B_FREE_SV = "free_sv_mean"
B_INTERVAL = "interval"
B_NONE = "undetermined"


@dataclass(frozen=True)
class BiasEstimate:
    b: float
    rule: str
    n_free: int
    lower: float = -math.inf
    upper: float = math.inf


def support_tolerance(alpha: np.ndarray, C: float) -> float:
    """Threshold below which alpha_i counts as 0 (and C - alpha_i as 0).

    Relative to the scale of alpha so that it works for any C: solvers return
    multipliers accurate to about 1e-8 of their size.
    """
    scale = float(np.max(np.abs(alpha))) if alpha.size else 0.0
    if math.isfinite(C):
        scale = max(scale, C)
    return max(1e-7 * scale, 1e-12)


def free_mask(alpha: np.ndarray, C: float, tol: float | None = None) -> np.ndarray:
    tol = support_tolerance(alpha, C) if tol is None else tol
    upper = C - tol if math.isfinite(C) else math.inf
    return (alpha > tol) & (alpha < upper)


def recover_bias(alpha: np.ndarray, y: np.ndarray, g: np.ndarray, C: float, tol: float | None = None) -> BiasEstimate:
    """b* from alpha*, given g_i = sum_j alpha_j y_j K_ij (the decision value without b).

    Free support vectors (0 < alpha_i < C): b* is the mean of y_i - g_i, weighted by
    min(alpha_i, C - alpha_i) so that multipliers a solver left just off a bound count little.
    None free: the interval rule of 000 section 4. Each point bounds b:
        alpha_i = 0 (y_i f_i >= 1):  y_i b >= 1 - y_i g_i
        alpha_i = C (y_i f_i <= 1):  y_i b <= 1 - y_i g_i
    and b minimises -C b sum_{alpha_i = C} y_i over that interval: the upper bound
    when the sum is positive, the lower bound when negative, the midpoint when
    zero (as LIBSVM does).
    """
    alpha = np.asarray(alpha, dtype=float)
    tol = support_tolerance(alpha, C) if tol is None else tol
    free = free_mask(alpha, C, tol)
    if free.any():
        # Each free point gives b = y_i - g_i. Interior-point solvers return the zeros (and Cs) of
        # alpha only to ~1e-6, so a point barely off a bound gets a weight as small as its distance
        # to the bound: on Exercise-5.5-like kernels a plain mean moved b* by 1e-4 (measured).
        room = np.minimum(alpha[free], C - alpha[free]) if math.isfinite(C) else alpha[free]
        b = float(np.average(y[free] - g[free], weights=room))
        return BiasEstimate(b=b, rule=B_FREE_SV, n_free=int(free.sum()))
    at_upper = alpha >= C - tol if math.isfinite(C) else np.zeros_like(free)
    bound = y - g  # y_i (1 - y_i g_i) = y_i - g_i, the value of b at which point i sits on its margin
    # y_i b >= 1 - y_i g_i  <=>  b >= bound_i when y_i = +1, b <= bound_i when y_i = -1; reversed at C.
    lower_side = ((y > 0) & ~at_upper) | ((y < 0) & at_upper)
    lower = float(bound[lower_side].max()) if lower_side.any() else -math.inf
    upper = float(bound[~lower_side].min()) if (~lower_side).any() else math.inf
    pull = float(np.sum(y[at_upper]))
    if pull > 0 and math.isfinite(upper):
        b = upper
    elif pull < 0 and math.isfinite(lower):
        b = lower
    elif math.isfinite(lower) and math.isfinite(upper):
        b = 0.5 * (lower + upper)
    else:
        finite = [v for v in (lower, upper) if math.isfinite(v)]
        if not finite:
            return BiasEstimate(b=math.nan, rule=B_NONE, n_free=0, lower=lower, upper=upper)
        b = finite[0]
    return BiasEstimate(b=b, rule=B_INTERVAL, n_free=0, lower=lower, upper=upper)


def weights_from_alpha(X: np.ndarray, y: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """w* = sum_i alpha_i y_i x_i = X' (y * alpha)."""
    return X.T @ (y * alpha)


def slacks(y: np.ndarray, decision: np.ndarray) -> np.ndarray:
    """xi_i = max(0, 1 - y_i f(x_i)): the smallest slacks that make (w, b) feasible."""
    return np.maximum(0.0, 1.0 - y * decision)


def primal_objective(X, y, w, b, C) -> float:
    """P(w, b) = 1/2 ||w||^2 + C sum_i max(0, 1 - y_i (w'x_i + b)): the soft primal at its best slacks."""
    return float(0.5 * w @ w + C * slacks(y, X @ w + b).sum())
