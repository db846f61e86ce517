r"""Exact two-point steps (SMO) on the maximal violating pair.

When a subproblem moves no point by more than bound_tol * alpha_scale (an interior point stops about
eps / z_i off a bound whose multiplier z_i is small, and the same step repeats), exact steps along
y_i e_i - y_j e_j put such points on their bounds before the next working set.
"""

from __future__ import annotations

import numpy as np

from formulations import penalty
from solvers.algorithms.working_set.optimality import violating_sets
from solvers.deadline import NEVER, Deadline


def smo_steps(src, y, alpha, g, C, eps, tol, max_steps, deadline: Deadline = NEVER):
    """Exact two-point steps (SMO, maximal violating pair) on alpha and g in place; returns their number.

    Along u = y_i e_i - y_j e_j (i the most violating in I_up, j in I_low; y'u = 0) f falls
    at the rate m - M; the step t = (m - M) / (K_ii + K_jj - 2 K_ij) is clipped at the first
    bound, which it then hits exactly, and g += t y * (K_i - K_j). Each step is complete: they stop
    at the deadline between two (the loop allows 10 q of them, two kernel rows each).
    """
    diag = src.diagonal()
    for step in range(max_steps):
        if deadline.passed():
            return step
        up, low, minus_yg = violating_sets(alpha, g, y, C, eps)
        if not up.any() or not low.any():
            return step
        i = np.flatnonzero(up)[np.argmax(minus_yg[up])]
        j = np.flatnonzero(low)[np.argmin(minus_yg[low])]
        gap = minus_yg[i] - minus_yg[j]
        if gap <= tol:
            return step
        K_i, K_j = src.rows([i, j])
        t = gap / max(diag[i] + diag[j] - 2.0 * K_i[j], 1e-12)
        C_i, C_j = penalty.at(C, i), penalty.at(C, j)
        room_i = C_i - alpha[i] if y[i] > 0 else alpha[i]
        room_j = alpha[j] if y[j] > 0 else C_j - alpha[j]
        t = min(t, room_i, room_j)
        if t <= 0:
            return step
        alpha[i] = C_i if t == room_i and y[i] > 0 else (0.0 if t == room_i else alpha[i] + y[i] * t)
        alpha[j] = 0.0 if t == room_j and y[j] > 0 else (C_j if t == room_j else alpha[j] - y[j] * t)
        g += t * y * (K_i - K_j)
    return max_steps
