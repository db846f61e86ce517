r"""The kernel dual's optimality at a point: its gradient, the violating pairs, the duality gap, and the
snap of a point onto its bounds.

In minimisation form, with Q = Y K Y and the gradient g = Q alpha - 1, alpha is optimal exactly when no
pair of indices gives a feasible descent direction (the KKT conditions of 001 Exercise 5.3 written with
the bias as the multiplier of y'alpha = 0):

    m(alpha) = max_{i in I_up} -y_i g_i  <=  M(alpha) = min_{i in I_low} -y_i g_i,
    I_up  = {i : y_i = +1, alpha_i < C} u {i : y_i = -1, alpha_i > 0},
    I_low = {i : y_i = +1, alpha_i > 0} u {i : y_i = -1, alpha_i < C}.

C is one number or one C_i per point (formulations.penalty); "alpha_i < C" then reads C_i.
"""

from __future__ import annotations

import math

import numpy as np

from formulations import penalty
from formulations.recovery import recover_bias
from solvers.algorithms.kernel_rows import FullGram, KernelRows
from solvers.checks import decision_size, gap_rounding
from solvers.reference import Gram

#: Relative distance to a bound under which alpha_i is put on it (the loop's default bound_tol).
SNAP = 1e-10


def as_rows(K) -> Gram:
    """K as a row source (solvers.algorithms.kernel_rows): a FullGram around an array, or the source itself."""
    return K if isinstance(K, (FullGram, KernelRows)) else FullGram(K)


def gradient(K, y: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """g = Q alpha - 1 with Q = Y K Y, from the rows of K where alpha != 0 (K symmetric)."""
    return y * as_rows(K).times(y * alpha) - 1.0


def kkt_violation(K, y: np.ndarray, alpha: np.ndarray, C, bound_tol: float = 1e-6) -> float:
    """m(alpha) - M(alpha) (module docstring) at a point, with its own gradient (O(n |S|))."""
    y = np.asarray(y, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    return max_violation(alpha, gradient(K, y, alpha), y, C, bound_tol * alpha_scale(alpha, C))


def violating_sets(alpha, g, y, C, eps=0.0):
    """(I_up, I_low, -y g) (module docstring), a point within eps of a bound counting as on it."""
    minus_yg = -y * g
    up = ((y > 0) & (alpha < C - eps)) | ((y < 0) & (alpha > eps))
    low = ((y > 0) & (alpha > eps)) | ((y < 0) & (alpha < C - eps))
    return up, low, minus_yg


def extremes(alpha, g, y, C, eps, active=None):
    """(m, M, -y g): m and M (module docstring) over the active points (None: every point), both 0 where one
    side has none."""
    up, low, minus_yg = violating_sets(alpha, g, y, C, eps=eps)
    if active is not None:
        up, low = up & active, low & active
    if not up.any() or not low.any():
        return 0.0, 0.0, minus_yg
    return float(minus_yg[up].max()), float(minus_yg[low].min()), minus_yg


def max_violation(alpha, g, y, C, eps) -> float:
    """m - M (module docstring) over every point, 0 where one side is empty."""
    m, M, _ = extremes(alpha, g, y, C, eps)
    return m - M


def alpha_scale(alpha: np.ndarray, C) -> float:
    """What "near 0" in alpha is relative to: min(C, max_i alpha_i), or C where every alpha is 0 (per-sample
    C: its largest C_i).

    Not C alone: where no alpha reaches C (separable data at a large C) the alphas are far below it, and
    tolerances relative to C polished no block (docs/benchmarks.md, "Working-set design figures"). C is
    still the upper bound's scale (a point at C is at C)."""
    top, C_top = (float(alpha.max()) if alpha.size else 0.0), penalty.largest(C)
    return min(C_top, top) if top > 0 else C_top


def snap(alpha, y, C, bound_tol):
    """Put the points within bound_tol of a bound on it (relative to alpha_scale at 0, to C at C), and
    restore y'alpha = 0 on the free ones."""
    near_zero = alpha < bound_tol * alpha_scale(alpha, C)
    alpha = np.where(alpha > C * (1 - bound_tol), C, alpha)
    alpha[near_zero] = 0.0
    free = np.flatnonzero((alpha > 0) & (alpha < C))
    if free.size:
        residual = float(y @ alpha)
        alpha[free] = np.clip(alpha[free] - y[free] * residual / free.size, 0.0, penalty.at(C, free))
    return balance_classes(alpha, y)


def balance_classes(alpha: np.ndarray, y: np.ndarray, target: float = 0.0) -> np.ndarray:
    """y'alpha = target (0 for the whole dual, a block's share of it for a block) exactly, to rounding, by lowering
    the heavier class's largest alphas: stays in [0, C].

    A subproblem solver leaves the balance off by its absolute tolerance (~1e-9), which is large next to
    sum alpha at a small C. The residual is taken from as few points as possible: scaling the whole class
    would move many points a hair off C, each then a violating pair with no room to move.
    """
    residual = float(y @ alpha) - target
    if residual == 0.0:
        return alpha
    heavy = np.flatnonzero(y > 0 if residual > 0 else y < 0)
    heavy = heavy[np.argsort(-alpha[heavy], kind="stable")]
    taken = np.minimum(alpha[heavy], np.maximum(abs(residual) - (np.cumsum(alpha[heavy]) - alpha[heavy]), 0.0))
    alpha[heavy] -= taken
    return alpha


def relative_gap(alpha: np.ndarray, g: np.ndarray, y: np.ndarray, C, max_diagonal: float = 0.0) -> float:
    """(P - D) / P at alpha from its gradient g = Q alpha - 1, in O(n) without K, less the gap's own
    rounding (solvers.checks.gap_rounding; max_diagonal: K's, 0 for none), as the checks measure it.

    With y_i (K u)_i = g_i + 1 (u = y alpha): u'Ku = alpha'(g + 1), the decision values without b
    are y (g + 1), b is the closing step's (formulations.recovery.recover_bias), and
    P - D = alpha'g + sum_i C_i max(0, -g_i - y_i b).
    """
    return gap_and_decision(alpha, y * (g + 1.0), y, C, max_diagonal)[0]


def gap_and_decision(alpha, Ku, y, C, max_diagonal):
    """relative_gap from K u (u = y alpha), and the decision values f = K u + b it was measured at
    (None where no b is recovered)."""
    b = recover_bias(alpha, y, Ku, C).b
    if not math.isfinite(b):
        return math.inf, None
    f = Ku + b
    hinge = penalty.weighted_sum(C, np.maximum(0.0, 1.0 - y * f))  # sum_i C_i xi_i
    yKu = y * Ku  # g + 1
    primal = 0.5 * float(alpha @ yKu) + hinge
    if not primal > 0:
        return math.inf, f
    rounding = gap_rounding(C, alpha, y, f, decision_size(max_diagonal, alpha, b))
    return max(0.0, abs(float(alpha @ yKu) - float(alpha.sum()) + hinge) - rounding) / primal, f
