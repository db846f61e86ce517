r"""The family's kernel duals by the compiled SMO (solvers.algorithms.smo): LIBSVM's own methods, in the
formulations' scale, each point then judged by the family's closing checks (solvers.family.close) like any
backend's: nothing SMO says is taken on trust.

Each dual is LIBSVM's  min 1/2 a'Qa + p'a,  y'a = balance,  0 <= a_i <= U  with Q_ij = y_i y_j K(x_t(i), x_t(j)):

    member      variables a      signs y    p                    U          kept by every step       method
    one_class   alpha            +1         0                    1/(nu l)   e'alpha = 1              Solver
    eps_svr     alpha, alpha*    +1, -1     eps - y, eps + y     C          e'(alpha - alpha*) = 0   Solver
    nu_svc      alpha            y_i        0                    1/l        y'alpha = 0, e'alpha = nu  Solver_NU
    nu_svr      alpha, alpha*    +1, -1     -y, +y               C/l        both equalities           Solver_NU

The regressions' 2l variables share the l kernel rows through an index (LIBSVM's SVR_Q), and their targets are
centered: e'(alpha - alpha*) = 0 makes y'beta = (y - mean y)'beta, the same optimum, with the gradient's terms on
the tube's scale whatever the targets' offset. The start is LIBSVM's (solve_one_class, solve_nu_svc,
solve_nu_svr: the equalities met from the first coordinates on), alpha = 0 for epsilon-SVR.

The tolerance is relative: SMO stops where the largest violation m - M is RTOL times check_tol of the spread of
-y_i G_i (the decision values' or the tube's scale, as the checks measure), first LOOSE of the spread at the start,
then again from there once the point's own spread is known.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from formulations.family.names import EPS_SVR, NU_SVC, NU_SVR, ONE_CLASS
from solvers.algorithms.smo import RowCache, smo
from solvers.deadline import NEVER, Deadline
from solvers.solution import ITERATION_LIMIT, OPTIMAL, TIME_LIMIT, RawResult

#: The members whose kernel dual the compiled SMO solves.
SMO_MEMBERS = (ONE_CLASS, EPS_SVR, NU_SVC, NU_SVR)
#: SMO's violation relative to the spread of -y G, first at the start, then times check_tol at the point:
#: the checks ask the point's decision values within check_tol of the proved optimum's, SMO's stay within about
#: its violation.
LOOSE = 1e-3
RTOL = 1e-3
#: Where no optimum will be proved (more multipliers than solvers.family proves), the checks bound f's error by
#: sqrt(2 gap), and SMO's gap goes as its violation: it goes on to UNPROVED check_tol^2 of the spread instead,
#: never below ROUNDING (what the gradient's updates keep exact).
UNPROVED = 1e-2
ROUNDING = 1e-12
#: Steps at most (LIBSVM's max(10^7, 100 l)).
MIN_STEPS = 10**7


@dataclass
class Problem:
    """One member's dual in LIBSVM's form (module docstring)."""

    signs: np.ndarray
    p: np.ndarray
    upper: float
    start: np.ndarray
    balance: float
    nu: bool  # Solver_NU's selection (a second equality)
    index: np.ndarray | None  # each variable's point (the regressions), None: the points themselves

    def dual_objective(self, alpha: np.ndarray, G: np.ndarray) -> float:
        """The formulation's dual objective (a maximum) at alpha from SMO's gradient G = Qa + p: -1/2 a'(G + p)
        (the regressions' y'beta is (y - mean y)'beta where e'beta = 0)."""
        return -0.5 * float(alpha @ (G + self.p))


def problem(member: str, y, params: dict, n: int) -> Problem:
    """The dual of `member` on n points (y: labels -1/+1, targets, or None) in LIBSVM's form."""
    if member == ONE_CLASS:
        U = 1.0 / (float(params["nu"]) * n)
        return Problem(np.ones(n), np.zeros(n), U, _filled(np.full(n, U), 1.0), 1.0, False, None)
    if member == NU_SVC:
        y = np.asarray(y, dtype=float)
        nu = float(params["nu"])
        start = np.zeros(n)
        for sign in (1.0, -1.0):  # nu/2 on each class, so that y'alpha = 0 and e'alpha = nu
            mine = np.flatnonzero(y == sign)
            start[mine] = _filled(np.full(mine.size, 1.0 / n), 0.5 * nu)
        return Problem(y.copy(), np.zeros(n), 1.0 / n, start, 0.0, True, None)
    if member not in (EPS_SVR, NU_SVR):
        raise ValueError(f"the compiled SMO solves {list(SMO_MEMBERS)}, not {member!r}")
    centered = np.asarray(y, dtype=float) - float(np.mean(y))
    signs = np.concatenate([np.ones(n), -np.ones(n)])
    index = np.concatenate([np.arange(n), np.arange(n)])
    if member == EPS_SVR:
        eps = float(params["epsilon"])
        return Problem(signs, np.concatenate([eps - centered, eps + centered]), float(params["C"]), np.zeros(2 * n),
                       0.0, False, index)
    C, nu = float(params["C"]), float(params["nu"])
    half = _filled(np.full(n, C / n), 0.5 * C * nu)  # alpha_i = alpha*_i: e'(alpha - alpha*) = 0, sum C nu
    return Problem(signs, np.concatenate([-centered, centered]), C / n, np.concatenate([half, half]), 0.0, True,
                   index)


def _filled(upper: np.ndarray, total: float) -> np.ndarray:
    """Coordinates filled in order up to their bounds until they sum to `total` (LIBSVM's starts)."""
    out = np.zeros_like(upper)
    left = total
    for i, u in enumerate(upper):
        if left <= 0:
            break
        out[i] = min(u, left)
        left -= out[i]
    return out


def solve_dual(member: str, K: np.ndarray, y, params: dict, check_tol: float,
               deadline: Deadline = NEVER, proved: bool = True,
               max_steps: int | None = None) -> tuple[dict, RawResult]:
    """The member's kernel dual on the Gram matrix K by SMO: (the point as solvers.family.read_model gives it,
    {"alpha": ..., "alpha_star": ...}, and SMO's answer as a RawResult: `optimal` where its violation reached the
    tolerance, else the limit that stopped it). proved: whether the checks will prove the optimum from the point
    (else SMO goes further: UNPROVED). max_steps: SMO's steps at most (default LIBSVM's max(10^7, 100 l))."""
    n = K.shape[0]
    prob = problem(member, y, params, n)
    rows = RowCache.full(K, index=prob.index)
    began = time.perf_counter()
    alpha = prob.start
    G = rows.gradient(prob.signs, alpha, prob.p) if alpha.any() else prob.p.copy()
    steps, res, final = 0, None, False
    budget = max(MIN_STEPS, 100 * len(prob.signs)) if max_steps is None else int(max_steps)
    for phase, tol in enumerate((LOOSE * _spread(prob, alpha, G), None)):
        if tol is None:  # the second run's tolerance from the point reached
            rtol = RTOL * check_tol if proved else max(UNPROVED * check_tol ** 2, ROUNDING)
            tol = rtol * _spread(prob, alpha, G)
        res = smo(rows, prob.signs, prob.upper, alpha, G, tol=max(tol, np.finfo(float).tiny),
                  max_iter=budget - steps, deadline=deadline,
                  p=prob.p, balance=prob.balance, nu=prob.nu)
        alpha, G, steps = res.alpha, res.grad, steps + res.iterations
        final = res.converged and phase == 1
        if not res.converged or steps >= budget:
            break
    status = OPTIMAL if final else TIME_LIMIT if res.timed_out else ITERATION_LIMIT
    values = {"alpha": alpha[:n].copy()}
    if prob.index is not None:
        values["alpha_star"] = alpha[n:].copy()
    raw = RawResult(status, f"smo: m - M = {res.violation:.3g} after {steps} steps",
                    objective=prob.dual_objective(alpha, G), iterations=steps,
                    solve_s=time.perf_counter() - began)
    return values, raw


def _spread(prob: Problem, alpha: np.ndarray, G: np.ndarray) -> float:
    """The spread of -y_i G_i over the variables (what m - M is a part of), or of G's terms where that is 0."""
    h = -prob.signs * G
    spread = float(np.ptp(h)) if h.size else 0.0
    if spread > 0 and math.isfinite(spread):
        return spread
    return float(np.max(np.abs(G))) if G.size else 0.0
