"""Verify, don't trust: duality gap and KKT residuals computed from the returned point.

Notation of the lecture notes: u_i = alpha_i y_i, f(x_i) = sum_j u_j K_ij + b
(K = X X' for the linear SVM), xi_i = max(0, 1 - y_i f(x_i)).

    P(w, b)   = 1/2 ||w||^2 + C sum_i xi_i      (hard margin: 1/2 ||w||^2, xi must be 0)
    D(alpha)  = sum_i alpha_i - 1/2 ||sum_i alpha_i y_i x_i||^2

For any (w, b) and any dual-feasible alpha (0 <= alpha <= C, y'alpha = 0),
D(alpha) <= P* <= P(w, b): the gap P - D bounds how far both are from the optimum.
The KKT conditions (001 Exercises 5.1 and 5.3) in SVM terms:

    stationarity         w = sum_i alpha_i y_i x_i,      sum_i alpha_i y_i = 0
    primal feasibility   y_i f(x_i) >= 1 - xi_i,         xi_i >= 0
    dual feasibility     0 <= alpha_i <= C
    complementarity      alpha_i (1 - xi_i - y_i f(x_i)) = 0,   (C - alpha_i) xi_i = 0

A primal solve whose backend returns no multipliers (cvxpy's Ipopt path) gets
them estimated from the point: a bounded least-squares fit of the stationarity
equations over the points on or inside the margin. The estimate is recorded as
such; it can only make the gap larger, never hide one.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy.optimize import lsq_linear

from formulations.model import HARD_PRIMAL, KERNEL_DUAL, PRIMAL_FORMULATIONS
from formulations.recovery import support_tolerance
from solvers import solution as st


@dataclass
class Checks:
    primal_objective: float = math.nan
    dual_objective: float = math.nan
    duality_gap: float = math.nan
    rel_duality_gap: float = math.nan
    kkt_stationarity: float = math.nan
    kkt_balance: float = math.nan
    kkt_primal_feasibility: float = math.nan
    kkt_dual_feasibility: float = math.nan
    kkt_complementarity: float = math.nan
    n_sv: int = 0
    n_free_sv: int = 0
    n_bound_sv: int = 0
    margin: float = math.nan
    train_accuracy: float = math.nan
    alpha_source: str = ""
    verified: bool = False
    verdict: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def estimate_multipliers(X: np.ndarray, y: np.ndarray, w: np.ndarray, decision: np.ndarray, C: float) -> np.ndarray:
    """alpha for a primal point (w, b) that came without multipliers.

    Points strictly outside the margin get alpha_i = 0, points strictly inside get
    alpha_i = C; those on the margin get the bounded least-squares solution of
    X'(y*alpha) = w, y'alpha = 0.
    """
    n = len(y)
    slack = 1.0 - y * decision
    band = 1e-6 * max(1.0, float(np.abs(decision).max()))
    on = np.abs(slack) <= max(band, 1e-7)
    inside = slack > max(band, 1e-7)
    alpha = np.zeros(n)
    if math.isfinite(C):
        alpha[inside] = C
    if not on.any():
        return alpha
    fixed = X[inside].T @ (y[inside] * alpha[inside]) if inside.any() else np.zeros(X.shape[1])
    M = np.vstack([(X[on] * y[on, None]).T, y[on][None, :]])
    target = np.concatenate([w - fixed, [-float(np.sum(y[inside] * alpha[inside]))]])
    upper = C if math.isfinite(C) else np.inf
    alpha[on] = lsq_linear(M, target, bounds=(0.0, upper)).x
    return alpha


def compute_checks(sol: st.Solution, X, y: np.ndarray, C: float, K: np.ndarray | None = None,
                   tol: float = 1e-4) -> Checks:
    """Recompute objectives, gap and KKT residuals at `sol`'s point; `tol` is the verdict's bar."""
    out = Checks()
    if sol.decision is None:
        out.verdict = "no point returned"
        return out
    hard = sol.formulation == HARD_PRIMAL or math.isinf(C)
    f = sol.decision
    hinge = np.maximum(0.0, 1.0 - y * f)
    xi = np.zeros_like(hinge) if hard else hinge
    alpha = sol.alpha
    out.alpha_source = "solver"
    if alpha is None and sol.formulation in PRIMAL_FORMULATIONS and sol.w is not None:
        alpha = estimate_multipliers(X, y, sol.w, f, C)
        out.alpha_source = "estimated"

    # ||w||^2 and sum_i alpha_i y_i x_i, through K for the kernel dual
    if sol.formulation == KERNEL_DUAL:
        u = y * alpha
        ww = float(u @ K @ u)
        w_from_alpha_sq = ww
        stationarity = 0.0  # w is defined by alpha: nothing to compare
    else:
        ww = float(sol.w @ sol.w)
        w_alpha = X.T @ (y * alpha) if alpha is not None else None
        w_from_alpha_sq = float(w_alpha @ w_alpha) if w_alpha is not None else math.nan
        stationarity = float(np.linalg.norm(sol.w - w_alpha)) if w_alpha is not None else math.nan

    out.primal_objective = 0.5 * ww + (0.0 if hard else C * float(hinge.sum()))
    out.kkt_primal_feasibility = float(hinge.max()) if hard else 0.0
    out.margin = 2.0 / math.sqrt(ww) if ww > 0 else math.inf
    out.train_accuracy = float(np.mean(np.sign(f) == y))
    if alpha is None:
        out.verdict = "no multipliers"
        return out

    out.dual_objective = float(alpha.sum()) - 0.5 * w_from_alpha_sq
    out.duality_gap = out.primal_objective - out.dual_objective
    out.rel_duality_gap = abs(out.duality_gap) / max(1.0, abs(out.primal_objective))
    upper = C if math.isfinite(C) else math.inf
    out.kkt_stationarity = stationarity
    out.kkt_balance = float(abs(y @ alpha))
    out.kkt_dual_feasibility = float(max(0.0, -alpha.min(), (alpha - upper).max()))
    residual = 1.0 - xi - y * f  # <= 0 when feasible, 0 on an active constraint
    comp = np.abs(alpha * residual)
    if not hard:
        comp = np.maximum(comp, np.abs((C - alpha) * xi))
    out.kkt_complementarity = float(comp.max())

    sv_tol = support_tolerance(alpha, C)
    sv = alpha > sv_tol
    at_bound = alpha >= upper - sv_tol
    out.n_sv, out.n_bound_sv = int(sv.sum()), int((sv & at_bound).sum())
    out.n_free_sv = out.n_sv - out.n_bound_sv

    # Residuals scaled to the problem so one tolerance serves every data set and C.
    alpha_scale = max(1.0, float(np.abs(alpha).max()))
    w_scale = max(1.0, math.sqrt(ww))
    scaled = {
        "relative duality gap": out.rel_duality_gap,
        "stationarity": stationarity / w_scale if math.isfinite(stationarity) else 0.0,
        "balance": out.kkt_balance / alpha_scale,
        "primal feasibility": out.kkt_primal_feasibility,
        "dual feasibility": out.kkt_dual_feasibility / alpha_scale,
        "complementarity": out.kkt_complementarity / alpha_scale,
    }
    failed = {name: value for name, value in scaled.items() if not value <= tol}
    out.verified = not failed
    out.verdict = "verified" if not failed else "; ".join(f"{k} {v:.2e} > {tol:.0e}" for k, v in failed.items())
    return out


def verified_status(claimed: str, checks: Checks) -> str:
    """The project's status: `optimal` only when the solver says so AND the checks pass."""
    if claimed in (st.OPTIMAL, st.OPTIMAL_INACCURATE):
        return st.OPTIMAL if checks.verified else st.OPTIMAL_INACCURATE
    return claimed
