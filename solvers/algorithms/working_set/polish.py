r"""A block's exact solution from the active set of the solver's point (the working set's polish).

An interior-point solver stops ~1e-9 off the block's optimum, which is ~C times that in alpha: too far for
the outer loop's violation to fall to its tolerance. As OSQP's polish, points within bound_tol of a bound
are put on it; then a primal active-set method (Nocedal and Wright 2006, 16.5) from that point: proximal
steps on the free points (`_steps_on_set`) until they are stationary or one reaches a bound, which then
joins the bound set; a bound point whose multiplier has the wrong sign is released, the most wrong first.
Every step lowers f, so no active set comes back and the method cannot cycle; the proximal steps move to
a nearby exact optimum, which a singular Q (K of low numerical rank) does not disturb.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from formulations import penalty
from solvers.deadline import NEVER, Deadline

#: The proximal term, relative to max|Q_BB|: each step minimises f(x + d) + delta/2 ||d||^2, so its system
#: Q_FF + delta I has a Cholesky factor even where Q_FF is singular.
POLISH_PROX = 1e-9
#: The tolerance on the multipliers' signs, relative to the gradient's scale (max|Q| alpha's size + max|p|).
#: When the loop gets the same block back, at most a tenth of the loop's own tolerance, unless the
#: gradient's rounding (POLISH_ROUNDING times eps times max_i |Q_i| |x| + |p_i|) is larger: relative alone,
#: data in other units made a block "stationary" that was not; tight on every block, large blocks failed.
POLISH_TOL = 1e-9
POLISH_ROUNDING = 100
#: Most releases of a bound point (and new factors) before the polish gives up.
POLISH_CHANGES = 200
#: Most proximal steps between two points reaching a bound (each a pair of triangular solves).
POLISH_STEPS = 30
#: Most points put on a bound through one factor (a Schur complement of that size) before a new factor.
MAX_FIXED = 100
#: factor_budget's: the polish's factors in all (the sum of |F|^3) within POLISH_FACTORS factors of the whole block,
#: or within POLISH_FREE_WORK where that is more.
POLISH_FACTORS = 2
POLISH_FREE_WORK = 500**3


def factor_budget(size: int) -> float:
    """The factors' work (the sum of |F|^3) past which a polish of a `size`-point block gives up, for a caller whose
    own steps finish the point for less (the compiled SMO's engine): there the solver's point was far from the
    block's active set, one point reaching a bound per step. The loop of blocks has no such steps: its polish is
    unbounded (its blocks would otherwise come back without progress until the loop's stall rule)."""
    return max(POLISH_FACTORS * float(size) ** 3, POLISH_FREE_WORK)


def polish_block(Q, p, y_B, rhs, C, a, bound_tol=1e-7, alpha_size=None, target=math.inf, deadline: Deadline = NEVER,
                 budget: float = math.inf):
    """The subproblem min 1/2 x'Qx + p'x, y_B'x = rhs, 0 <= x <= C solved exactly from the active set of
    the solver's point a (module docstring), or None.

    Points within bound_tol of a bound start on it (near 0: relative to alpha_size, alpha_scale's value,
    default C; near C: relative to C). A release that the next step undoes at once (no descent) is barred
    until f falls again. Kept only when every KKT sign holds, it is in [0, C] and its objective is no worse
    than the solver's (to rounding). C: one number, or the block's C_i.
    target: the outer loop's violation tolerance when the block came back (math.inf: the relative tolerance
    alone); the multipliers' signs are then held to a tenth of it, or to the gradient's rounding (POLISH_TOL).
    deadline: where it passes, the polish gives up (None: the block keeps the solver's point), before a new
    factor or a step; so it does before a factor that takes the factors' work (the sum of |F|^3) past `budget`
    (factor_budget's, where the caller's own steps finish the point for less).
    """
    alpha_size = penalty.largest(C) if alpha_size is None else alpha_size
    x = np.clip(a, 0.0, C)
    x[x <= bound_tol * alpha_size] = 0.0
    x = np.where(x >= C * (1 - bound_tol), C, x)
    free = (x > 0.0) & (x < C)
    q_max = max(float(np.abs(Q).max()), np.finfo(float).tiny)
    tol = polish_tol(Q, p, x, q_max * alpha_size + float(np.abs(p).max()), target)
    balance_tol = 1e-12 * alpha_size * len(a)
    barred = np.zeros(len(a), dtype=bool)
    released = -1
    factored = 0.0
    for _ in range(POLISH_CHANGES):
        factored += float(np.count_nonzero(free)) ** 3
        if factored > budget:
            return None
        g = Q @ x + p  # afresh at each change: the steps' updates of g do not pile up rounding
        outcome, value, moved = _steps_on_set(Q, x, g, free, y_B, rhs, C, POLISH_PROX * q_max, tol, balance_tol,
                                              deadline)
        if moved:
            barred[:] = False
        if outcome == "stuck":
            return None
        if released >= 0 and not free[released] and not moved:
            barred[released] = True  # the steps put it straight back on its bound
        if outcome == "refactor":
            continue
        if value is None and abs(float(y_B @ x) - rhs) > balance_tol:
            return None  # no free point, and the bound ones do not balance
        reduced = g + (_bound_nu(g, x, y_B, C) if value is None else value) * y_B  # >= 0 at 0, <= 0 at C
        wrong = ~free & ~barred & (((x == 0.0) & (reduced < -tol)) | ((x == C) & (reduced > tol)))
        if not wrong.any():
            if barred.any():
                return None  # a wrong sign that no step can mend
            return x if _no_worse(Q, p, x, a) else None
        released = int(np.argmax(np.where(wrong, np.abs(reduced), -np.inf)))
        free[released] = True
    return None


def _no_worse(Q, p, x, a) -> bool:
    """Whether the polished x's objective is no worse than the solver's point a's, to rounding."""
    aQa = float(a @ Q @ a)
    objective, before = 0.5 * x @ Q @ x + p @ x, 0.5 * aQa + p @ a
    scale = 0.5 * abs(aQa) + abs(p) @ a + np.finfo(float).tiny
    return objective <= before + 1e-12 * scale


def polish_tol(Q, p, x, scale, target):
    """How far from 0 the polish takes a multiplier's sign as right and a step as stationary, in the
    gradient's units (POLISH_TOL's comment)."""
    if math.isinf(target):  # a new block: the relative tolerance alone (no |Q| |x| product on every block)
        return POLISH_TOL * scale
    rounding = POLISH_ROUNDING * np.finfo(float).eps * float(np.max(np.abs(Q) @ np.abs(x) + np.abs(p)))
    return min(POLISH_TOL * scale, max(0.1 * target, rounding))


def _steps_on_set(Q, x, g, free, y_B, rhs, C, delta, tol, balance_tol, deadline: Deadline = NEVER):
    """Proximal steps on the free points, the bound ones fixed; x, g = Q x + p and free change in place.

    Each step d minimises 1/2 d'(Q_FF + delta I) d + g_F'd subject to y_F'd = 0 (F the free points),
    plus y_F r / |F| for the balance's residual r = rhs - y_B'x (the solver's, on the first step), and
    is cut at the first bound it meets; that point then stays on its bound (leaves `free`) and the
    steps go on. One factor serves them all (_ProjectedSteps): the points a step puts on a bound are
    constraints d_k = 0 through a small Schur complement, not a new factor. The balance's multiplier
    is nu = -y_F'g_F / |F|, the least-squares one. Returns (outcome, nu, moved): "stationary" when
    |g_F + nu y_F| <= tol to rounding and the balance holds (nu None: no free point left), "refactor"
    after MAX_FIXED points reached a bound, "stuck" when there is no factor, the steps did not settle or the
    deadline passed; moved says whether x changed.
    """
    F = np.flatnonzero(free)
    if F.size == 0:
        return "stationary", None, False
    if deadline.passed():
        return "stuck", None, False
    try:
        steps = _ProjectedSteps(Q[np.ix_(F, F)], y_B[F], delta)
    except np.linalg.LinAlgError:
        return "stuck", None, False
    Q_F = Q[:, F]
    C_F = penalty.upper_bounds(C, len(x))[F]
    moved, last, since_block = False, math.inf, 0
    while since_block < POLISH_STEPS:
        if deadline.passed():
            return "stuck", None, moved
        if len(steps.fixed) >= MAX_FIXED:
            return "refactor", None, moved
        on = free[F]
        if not on.any():
            return "stationary", None, moved
        residual = rhs - float(y_B @ x)
        y_on, g_on = y_B[F[on]], g[F[on]]
        nu = -float(y_on @ g_on) / y_on.size
        now = float(np.abs(g_on + nu * y_on).max())
        # stationary to rounding, not just to tol: the loop's violation falls to 1e-12 only through
        # blocks solved that far
        if abs(residual) <= balance_tol and now <= tol and (now > 0.5 * last or now <= 1e-6 * tol):
            return "stationary", nu, moved
        last, since_block = now, since_block + 1
        # the step depends on g_F only through g_F + nu y_F on the free points (y_F'd = 0, d = 0 on the
        # fixed ones): passed as that, which falls to 0 at the optimum, its solve's rounding falls with it
        d = np.where(on, steps.step(np.where(on, g[F] + nu * y_B[F], 0.0)), 0.0)
        # y_F'd = r exactly: the factor's rounding along the directions it scales by 1 / delta is large
        d[on] += y_on * (residual - float(y_on @ d[on])) / y_on.size
        with np.errstate(divide="ignore", invalid="ignore"):
            room = np.where(~on, np.inf, np.where(d < 0, -x[F] / d, np.where(d > 0, (C_F - x[F]) / d, np.inf)))
        k = int(np.argmin(room))
        t = min(1.0, float(room[k]))
        if t > 0:
            x[F] += t * d
            g += Q_F @ (t * d)
            moved = True
        if room[k] <= 1.0:
            x[F[k]] = 0.0 if d[k] < 0 else C_F[k]
            np.clip(x, 0.0, C, out=x)
            free[F[k]] = False
            steps.fix(k)
            last, since_block = math.inf, 0
    return "stuck", None, moved


class _ProjectedSteps:
    """The polish's steps on a set F through one Cholesky factor, with points of F fixed along the way.

    With P = I - y y' / |F| (y_i = +-1) and H = Q_FF + delta I, M = P H P + h y y' / |F| (h: H's mean
    diagonal) is positive definite, and M d = -P g gives the step with y'd = 0 (y' M = h y'); a Schur
    complement of H for the balance's multiplier would cancel two values of size 1 / delta. A fixed point
    k adds the constraint d_k = 0 with the column M^-1 P e_k: d = -M^-1 P (g + E mu) with E'd = 0.
    """

    def __init__(self, Q_FF, y, delta):
        self.y, self.size = y, y.size
        H = Q_FF + delta * np.eye(y.size)
        H_y = H @ y
        M = H - (np.outer(y, H_y) + np.outer(H_y, y)) / self.size
        M += ((y @ H_y) / self.size + np.trace(H) / self.size) / self.size * np.outer(y, y)
        self.factor = scipy.linalg.cho_factor(M, check_finite=False)
        self.fixed: list[int] = []
        self.columns = np.zeros((y.size, 0))  # M^-1 P e_k for the fixed k

    def _solve(self, v):
        return scipy.linalg.cho_solve(self.factor, v - self.y * (self.y @ v) / self.size, check_finite=False)

    def fix(self, k: int) -> None:
        self.fixed.append(k)
        unit = np.zeros(self.size)
        unit[k] = 1.0
        self.columns = np.column_stack([self.columns, self._solve(unit)])

    def step(self, g_F):
        d = -self._solve(g_F)
        if self.fixed:
            mu = np.linalg.solve(self.columns[self.fixed], -d[self.fixed])
            d += self.columns @ mu
            d[self.fixed] = 0.0
        return d


def _bound_nu(g, x, y_B, C):
    """The balance's multiplier with every point at a bound: the middle of the nu that keep the signs
    (g_i + nu y_i >= 0 at 0, <= 0 at C), which is the one breaking them least when there is none."""
    lower = np.concatenate([-g[(x == 0.0) & (y_B > 0)], g[(x == C) & (y_B < 0)]])
    upper = np.concatenate([g[(x == 0.0) & (y_B < 0)], -g[(x == C) & (y_B > 0)]])
    lo, hi = lower.max(initial=-np.inf), upper.min(initial=np.inf)
    if math.isfinite(lo) and math.isfinite(hi):
        return 0.5 * (lo + hi)
    return lo if math.isfinite(lo) else hi if math.isfinite(hi) else 0.0
