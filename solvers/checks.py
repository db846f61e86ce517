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
                   tol: float = 1e-4, *, Ku: np.ndarray | None = None) -> Checks:
    """Recompute objectives, gap and KKT residuals at `sol`'s point; `tol` is the verdict's bar.

    For the kernel dual, `Ku` = K u (u = y * sol.alpha) if the caller has it
    already (solvers.api._recover returns it); otherwise it is computed here.
    """
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
        # ||w||^2 = u'Ku >= 0; rounding makes it negative for huge u (an unbounded dual's ray).
        ww = max(0.0, float(u @ (K @ u if Ku is None else Ku)))
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


# --------------------------------------------------------------------------- claims


def objective_claim_check(sol: st.Solution, checks: Checks, tol: float) -> str:
    """Compare the solver's claimed objective with the one recomputed at its point.

    Every SVM objective is >= 0 at the optimum (the primal is a sum of squares and
    C-weighted slacks; the dual has alpha = 0 feasible, objective 0), so a negative
    claim is impossible. The claim must also match the project's recomputation
    (the primal objective for a primal formulation, the dual one for a dual) to
    `tol`, relative. Returns "" when the claim holds, else the reason.
    """
    claimed = sol.objective
    if claimed is None or not math.isfinite(claimed):
        return f"the solver's objective is {claimed}"
    if claimed < -tol * max(1.0, abs(claimed)):
        return f"impossible objective {claimed:.6g} < 0 claimed by the solver"
    recomputed = checks.primal_objective if sol.formulation in PRIMAL_FORMULATIONS else checks.dual_objective
    if not math.isfinite(recomputed):
        return ""
    if abs(claimed - recomputed) > tol * max(1.0, abs(recomputed)):
        return f"the solver's objective {claimed:.6g} differs from the recomputed {recomputed:.6g}"
    return ""


# --------------------------------------------------------------------------- infeasibility


@dataclass
class Certificate:
    r"""A Farkas certificate that no hyperplane separates the two classes.

    y_i (w' x_i + b) >= 1 (all i) has no solution  <=>  there is lambda with

        lambda >= 0,   X'(lambda * y) = 0,   y'lambda = 0,   sum_i lambda_i > 0

    (Farkas' lemma; the two classes' convex hulls meet at
    sum_{y_i=+1} lambda_i x_i / sum_{y_i=+1} lambda_i, the same point for y_i = -1).
    The same lambda is an unbounded ray of the hard-margin dual: along alpha = t lambda
    its objective grows like t sum lambda_i. Residuals are measured on lambda
    normalised to sum 1, relative to the largest ||x_i||.
    """

    source: str  # "solver" (multipliers or ray the backend returned) or "project" (own LP)
    holds: bool = False
    stationarity: float = math.nan  # ||X'(lambda*y)|| / max_i ||x_i||
    balance: float = math.nan  # |y'lambda|
    negativity: float = math.nan  # max(0, -min lambda) / max lambda
    sign: int = 1  # -1 when the backend's vector had to be negated (its sign convention)
    lam: np.ndarray | None = None
    note: str = ""

    def as_dict(self) -> dict:
        out = asdict(self)
        out["lam"] = None if self.lam is None else np.asarray(self.lam).tolist()
        return out


def farkas_check(X: np.ndarray, y: np.ndarray, lam, tol: float = 1e-6, source: str = "solver") -> Certificate:
    """Check that `lam` (either sign) proves the hard margin infeasible on (X, y)."""
    cert = Certificate(source=source)
    if lam is None:
        cert.note = "no certificate returned"
        return cert
    lam = np.asarray(lam, dtype=float).ravel()
    if lam.shape != y.shape or not np.all(np.isfinite(lam)):
        cert.note = "certificate has the wrong size or non-finite entries"
        return cert
    total = float(lam.sum())
    if total < 0:
        lam, total, cert.sign = -lam, -total, -1
    if not total > 1e-300:
        cert.note = "sum of lambda is not positive"
        return cert
    lam = lam / total
    scale = max(1.0, float(np.sqrt((X * X).sum(axis=1)).max()))
    cert.lam = lam
    cert.stationarity = float(np.linalg.norm(X.T @ (lam * y))) / scale
    cert.balance = float(abs(y @ lam))
    cert.negativity = float(max(0.0, -lam.min()) / max(lam.max(), 1e-300))
    failed = [name for name in ("stationarity", "balance", "negativity") if not getattr(cert, name) <= tol]
    cert.holds = not failed
    cert.note = "holds" if cert.holds else "fails: " + ", ".join(
        f"{name} {getattr(cert, name):.2e} > {tol:.0e}" for name in failed)
    return cert


def separability_certificate(X: np.ndarray, y: np.ndarray, tol: float = 1e-7) -> Certificate:
    """The project's own answer: a Farkas certificate from an LP, or `holds=False` if none exists.

    Solves the feasibility LP  lambda >= 0, X'(lambda*y) = 0, y'lambda = 0, sum lambda = 1
    with HiGHS (scipy.optimize.linprog) and checks the returned lambda with
    `farkas_check`; the LP being infeasible means the data are strictly linearly
    separable (the hard-margin primal is feasible).
    """
    from scipy.optimize import linprog

    n = len(y)
    A_eq = np.vstack([(X * y[:, None]).T, y[None, :], np.ones((1, n))])
    b_eq = np.concatenate([np.zeros(X.shape[1] + 1), [1.0]])
    res = linprog(np.zeros(n), A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status == 2:  # infeasible: no certificate exists, the classes are separable
        cert = Certificate(source="project", note="linearly separable (the Farkas LP is infeasible)")
        return cert
    if res.status != 0 or res.x is None:
        return Certificate(source="project", note=f"the Farkas LP did not finish: {res.message}")
    cert = farkas_check(X, y, res.x, tol=max(tol, 1e-9), source="project")
    if cert.holds:
        cert.note = "not linearly separable (Farkas certificate found by the project's LP, checked)"
    return cert


# --------------------------------------------------------------------------- review


def _features(X: np.ndarray | None, K: np.ndarray | None) -> np.ndarray:
    """Rows phi(x_i) with phi(x_i)'phi(x_j) = K_ij: X itself, or a factor L of K = L L'."""
    if K is None:
        return X
    from formulations.kernels import factorize

    return factorize(K, rtol=1e-12).L


def review(sol: st.Solution, checks: Checks, X: np.ndarray | None, y: np.ndarray, C: float,
           K: np.ndarray | None = None, tol: float = 1e-4, candidate=None) -> None:
    """Refute false solver claims in place; the project's status is set from evidence only.

    Facts about every SVM formulation used here (C > 0):
      - the primal objective is >= 0, so a primal is never unbounded;
      - alpha = 0 is dual feasible, so a dual is never infeasible;
      - the soft margin (C finite) is always feasible (xi large) and bounded (0 <= alpha <= C);
      - the hard margin is feasible exactly when the data are strictly linearly separable,
        and then its dual is bounded; otherwise the primal is infeasible and the dual unbounded.
    A claim that contradicts these is a backend failure (`error`). For the hard margin
    without a verified optimum the project decides separability with its own LP
    (`separability_certificate`) and checks `candidate` (the backend's multipliers of
    the margin rows, or its alpha for the dual) as a Farkas certificate / unbounded ray.
    """
    hard = sol.formulation == HARD_PRIMAL or math.isinf(C)
    primal = sol.formulation in PRIMAL_FORMULATIONS
    claimed = sol.solver_status
    notes, false_claims = [], []

    # 1. a claimed optimum must state the objective of the point it returned
    if sol.status == st.OPTIMAL:
        reason = objective_claim_check(sol, checks, tol)
        sol.checks["objective_claim"] = reason or "consistent"
        if reason:
            sol.status = st.OPTIMAL_INACCURATE
            sol.checks["verified"] = False
            sol.checks["verdict"] = f"{sol.checks.get('verdict', '')}; {reason}".lstrip("; ")
            false_claims.append(reason)
    elif claimed == st.OPTIMAL and sol.decision is not None:
        false_claims.append(f"claimed {claimed}, but verification failed: {sol.checks.get('verdict', '')}")
    if claimed in (st.OPTIMAL_INACCURATE, st.ITERATION_LIMIT, st.TIME_LIMIT) and math.isfinite(sol.objective) \
            and sol.objective < -tol * max(1.0, abs(sol.objective)):
        # every SVM optimum is >= 0: a negative value returned as a result (e.g. at an iteration limit)
        # is not an estimate of anything
        false_claims.append(f"the backend returned an impossible objective {sol.objective:.6g} < 0 ({claimed})")

    # 2. statuses that cannot be true for this formulation
    impossible = ""
    if claimed == st.UNBOUNDED and primal:
        impossible = "a primal SVM objective is >= 0, so it cannot be unbounded"
    elif claimed == st.INFEASIBLE and not primal:
        impossible = "alpha = 0 is feasible for the dual, so it cannot be infeasible"
    elif claimed in (st.INFEASIBLE, st.UNBOUNDED) and not hard:
        impossible = f"the soft-margin problem (C = {C:g} > 0 finite) is always feasible and bounded"
    if impossible:
        sol.status = st.ERROR
        false_claims.append(f"backend failure: it reported {claimed}, but {impossible}")

    # 3. the hard margin without a verified optimum: is the data set separable at all?
    if hard and sol.status != st.OPTIMAL and not impossible:
        features = _features(X, K)
        project = separability_certificate(features, y)
        sol.extras["separability"] = _brief(project)
        expected = st.INFEASIBLE if primal else st.UNBOUNDED
        if project.holds:
            notes.append(f"not linearly separable{' in feature space' if K is not None else ''}: "
                         f"the hard-margin {'primal is infeasible' if primal else 'dual is unbounded'}")
            cert = farkas_check(features, y, candidate, tol=tol, source="solver")
            sol.extras["certificate"] = _brief(cert)
            if candidate is not None:
                notes.append(f"backend's {'Farkas certificate' if primal else 'unbounded ray'} {cert.note}")
            if claimed in (st.OPTIMAL, st.OPTIMAL_INACCURATE):
                sol.status = expected if cert.holds and not primal else st.ERROR
                false_claims.append(f"claimed {claimed} on a problem with no optimum ({expected})")
        elif project.note.startswith("linearly separable") and claimed == expected:
            sol.status = st.ERROR
            false_claims.append(f"backend failure: it reported {claimed}, but the data are linearly separable "
                                "(the project's Farkas LP is infeasible)")

    if false_claims:
        sol.extras["false_status"] = "; ".join(false_claims)
        notes = false_claims + notes
    if notes:
        sol.message = "; ".join([m for m in [sol.message] if m] + notes)


def _brief(cert: Certificate) -> dict:
    """A certificate for a table row: residuals and support, not the whole vector."""
    out = cert.as_dict()
    lam = out.pop("lam")
    out["support"] = None if lam is None else [int(i) for i in np.flatnonzero(np.asarray(lam) > 1e-9)][:20]
    return out


def withhold_unverified(sol: st.Solution) -> None:
    """No w*, b* or objective as a result when the solve ended without an optimum.

    Infeasible, unbounded, error, iteration- and time-limit stops have their
    point moved to extras["unverified"] (for diagnosis only). `optimal_inaccurate`
    (the solver claimed an optimum the project could not verify) keeps its point:
    the status says it is unverified, the results table leaves it blank and the
    estimator accepts it only with a ConvergenceWarning.
    """
    if sol.status in (st.OPTIMAL, st.OPTIMAL_INACCURATE):
        return
    if sol.w is not None or math.isfinite(sol.b) or math.isfinite(sol.objective):
        sol.extras["unverified"] = {
            "objective": sol.objective,
            "w": None if sol.w is None else np.asarray(sol.w).tolist(),
            "b": sol.b,
        }
    sol.objective, sol.w, sol.b = math.nan, None, math.nan
