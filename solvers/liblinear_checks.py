r"""Verify, don't trust, for the LIBLINEAR members: the squared-hinge SVM and the Crammer-Singer multiclass SVM.

The formulations and their notation are in formulations/family/squared_hinge.py and crammer_singer.py. Everything is
recomputed from the point the backend returned (w, b, or alpha, and the multipliers), each residual on its own
scale, never relative to max(1, .), so that X in other units, a tiny C or a huge n cannot make a wrong point pass:

  squared hinge                       f_i = w'x_i + b,  xi_i = max(0, 1 - y_i f_i)
    P = 1/2 ||w||^2 + C sum xi_i^2,   D = sum alpha_i - 1/2 ||X'(y alpha)||^2 - 1/(4C) sum alpha_i^2
    dual feasibility   max(0, -alpha_i) / max alpha
    balance            |y'alpha| / sum alpha                       (with a free b only)
    stationarity       ||w - X'(y alpha)|| / w_scale               (solvers.checks.w_scale)
    multipliers        max |alpha_i - 2 C xi_i| / max alpha        (the multipliers' meaning; it holds complementarity)
    bias               |b_multiplier - b| / max |f|                 (where the backend returned the balance's multiplier)
    the gap            |P - D| / P
    the point          w, b, f and the objective against the optimum proved by the finite Newton method
                       (squared_hinge_optimum): its active set A = {y_i f_i < 1} gives one linear system, and the
                       optimum is proved when the solution's own active set is A again

  Crammer-Singer                      F_im = w_m'x_i,  xi_i = max_m (e_i^m + F_im) - F_{i y_i}
    P = 1/2 sum ||w_m||^2 + C sum xi_i,   D = -sum e_i^m alpha_i^m - 1/2 sum ||sum_i alpha_i^m x_i||^2
    dual feasibility   max(0, alpha_i^m - C [y_i = m]) / C
    coupling           max_i |sum_m alpha_i^m| / C                 (sum_m beta_i^m = C: each point couples its classes)
    stationarity       ||W - alpha'X|| / w_scale
    complementarity    beta_i^m (xi_i - e_i^m - F_im + F_{i y_i}) / C, beta = C [y_i = m] - alpha  (margin units)
    the gap            |P - D| / P
    the point          W, F and the objective against the optimum proved from the point's active rows
                       (crammer_singer_optimum: one linear KKT system per round, primal-dual active-set rounds)

Where no optimum is proved (too many active rows, or rounds that do not settle), both members fall back to the
gap's rigorous bound ||W - W*|| <= sqrt(2 (P - D)): P is 1-strongly convex in W and D <= P* at the solver's alpha
made dual feasible (feasible_alpha_*), so the bound holds whatever the solver's rounding.

A row is `optimal` only when the solver claimed an optimum and every value above is <= the profile's tolerance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from formulations.data_matrix import absolute
from formulations.family import crammer_singer
from solvers.checks import decision_scale, w_scale

_TINY = np.finfo(float).tiny
_EPS = np.finfo(float).eps
#: The squared hinge's proof solves a (d + 1) x (d + 1) system; beyond this d it falls back to the gap's bound.
PROOF_MAX_D = 5_000
#: Crammer-Singer's proof solves a dense system of (active rows + points); beyond this size, the gap's bound.
MAX_ACTIVE_ROWS = 6_000
#: The proofs' KKT conditions hold to this, in margin units and relative to C (solvers.reference.POLISH_TOL's)
PROOF_TOL = 1e-8
#: The rows the proof of Crammer-Singer starts from: beta_i^m above this fraction of C (an interior point's
#: inactive rows keep small positive multipliers; the proof's rounds add or drop the rows it got wrong)
START_BETA = 1e-6


@dataclass
class MemberChecks:
    """What the checks recomputed at a point of a LIBLINEAR member, and their verdict."""

    primal_objective: float = math.nan
    dual_objective: float = math.nan
    duality_gap: float = math.nan
    rel_duality_gap: float = math.nan
    residuals: dict = field(default_factory=dict)  # name -> value on its own scale (module doc)
    errors: dict = field(default_factory=dict)  # the point against the proved optimum, or the gap's bound
    reference: str = ""
    alpha_source: str = "solver"
    verified: bool = False
    verdict: str = ""
    optimum: dict = field(default_factory=dict, repr=False)  # the proved optimum's w, b (not a table column)

    def judge(self, tol: float) -> None:
        """verified and verdict from every residual and error against `tol`."""
        values = {**self.residuals, **self.errors}
        failed = {name: value for name, value in values.items() if not value <= tol}
        self.verified = bool(values) and not failed
        self.verdict = "verified" if self.verified else "; ".join(f"{k} {v:.2e} > {tol:.0e}" for k, v in failed.items())

    def as_dict(self) -> dict:
        """The table's columns: objectives, gap, each residual and error by name, the verdict."""
        out = {"primal_objective": self.primal_objective, "dual_objective": self.dual_objective,
               "duality_gap": self.duality_gap, "rel_duality_gap": self.rel_duality_gap,
               "reference": self.reference, "alpha_source": self.alpha_source,
               "verified": self.verified, "verdict": self.verdict}
        out.update({f"kkt {name}": value for name, value in self.residuals.items()})
        out.update({f"err {name}": value for name, value in self.errors.items()})
        return out


def _gap(out: MemberChecks, P: float, D: float) -> None:
    out.primal_objective, out.dual_objective, out.duality_gap = P, D, P - D
    out.rel_duality_gap = abs(P - D) / max(P, abs(D), _TINY)
    out.residuals["relative duality gap"] = out.rel_duality_gap


# --------------------------------------------------------------------------- squared hinge


def best_bias(g: np.ndarray, y: np.ndarray) -> float:
    """The b that minimises sum_i max(0, 1 - y_i (g_i + b))^2 for fixed g = X w: where the points inside the
    margin, A, balance, b = mean_A (y_i - g_i) (sum_i alpha_i y_i = 0 with alpha_i = 2C xi_i). Its derivative
    2 sum_A (b - c_i), c_i = y_i - g_i, increases with b: bisection finds the piece, then the mean is exact."""
    c = y - g

    def slope(b: float) -> float:
        inside = (y > 0) & (b < c) | (y < 0) & (b > c)
        return float(np.sum(b - c[inside]))

    lo, hi = float(c.min()) - 1.0, float(c.max()) + 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if slope(mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 4 * _EPS * max(abs(lo), abs(hi)):
            break
    mid = 0.5 * (lo + hi)
    inside = (y > 0) & (mid < c) | (y < 0) & (mid > c)
    return float(c[inside].mean()) if inside.any() else mid


@dataclass
class SquaredHingeOptimum:
    ok: bool
    w: np.ndarray | None = None
    b: float = 0.0
    objective: float = math.nan
    rounds: int = 0
    reason: str = ""


def squared_hinge_optimum(X, y: np.ndarray, C: float, intercept: bool, inside: np.ndarray,
                          max_rounds: int = 50) -> SquaredHingeOptimum:
    """The optimum proved from an active set (the finite Newton method of Mangasarian and Keerthi-DeCoste).

    For A = `inside` the objective is 1/2 ||w||^2 + C sum_A (y_i - x_i'w - b)^2, minimised by one linear system
    (R/(2C) + Z'Z) theta = Z'y_A, Z = [X_A, 1], R = diag(1, .., 1, 0). The solution is the optimum when its own
    active set is A again (points within their f's rounding of the margin count either way: their terms and
    gradients are 0 to that rounding); else A moves to it and the system is solved again."""
    n, d = X.shape
    if d > PROOF_MAX_D:
        return SquaredHingeOptimum(False, reason=f"d = {d:,} > {PROOF_MAX_D:,}: no (d + 1) x (d + 1) system")
    ridge = np.full(d + intercept, 0.5 / C)
    if intercept:
        ridge[-1] = 0.0
    for rounds in range(1, max_rounds + 1):
        if not inside.any():
            return SquaredHingeOptimum(False, rounds=rounds, reason="no point inside the margin")
        Z = X[inside]
        Z = sp.hstack([Z, np.ones((Z.shape[0], 1))], format="csr") if (intercept and sp.issparse(Z)) else (
            np.hstack([Z, np.ones((Z.shape[0], 1))]) if intercept else Z)
        gram = Z.T @ Z
        gram = gram.toarray() if sp.issparse(gram) else np.asarray(gram)
        rhs = np.asarray(Z.T @ y[inside], dtype=float).ravel()
        try:
            theta = np.linalg.solve(gram + np.diag(ridge), rhs)
        except np.linalg.LinAlgError:
            return SquaredHingeOptimum(False, rounds=rounds, reason="singular system (one class inside the margin)")
        w, b = theta[:d], (float(theta[d]) if intercept else 0.0)
        f = np.asarray(X @ w, dtype=float).ravel() + b
        rounding = 64 * _EPS * (np.asarray(absolute(X) @ np.abs(w), dtype=float).ravel() + abs(b) + 1.0)
        slack = 1.0 - y * f
        now = slack > 0
        if np.all(now == inside | (np.abs(slack) <= rounding)):
            xi = np.maximum(0.0, slack)
            return SquaredHingeOptimum(True, w, b, 0.5 * float(w @ w) + C * float(xi @ xi), rounds)
        inside = now
    return SquaredHingeOptimum(False, rounds=max_rounds, reason=f"active set not settled in {max_rounds} rounds")


def check_squared_hinge(X, y: np.ndarray, C: float, *, w: np.ndarray, b: float, alpha: np.ndarray | None,
                        intercept: bool, primal: bool, tol: float, b_multiplier: float = math.nan) -> MemberChecks:
    """The squared hinge's residuals, gap and distance to the proved optimum at (w, b, alpha) (module doc).
    alpha None (a backend without multipliers): alpha = 2C xi, the multipliers' meaning, recorded as estimated."""
    out = MemberChecks()
    f = np.asarray(X @ w, dtype=float).ravel() + b
    xi = np.maximum(0.0, 1.0 - y * f)
    if alpha is None:
        alpha, out.alpha_source = 2.0 * C * xi, "estimated: alpha = 2C xi"
    w_alpha = np.asarray(X.T @ (y * alpha), dtype=float).ravel()
    P = 0.5 * float(w @ w) + C * float(xi @ xi)
    D = squared_hinge_dual(X, y, C, alpha)
    _gap(out, P, D)
    top = max(float(np.max(np.abs(alpha))), _TINY)
    f_scale = decision_scale(f)
    out.residuals.update({
        "dual feasibility": max(0.0, -float(alpha.min())) / top,
        "stationarity": float(np.linalg.norm(w - w_alpha)) / w_scale(w, X, f_scale),
        "multipliers (alpha = 2C xi)": float(np.max(np.abs(alpha - 2.0 * C * xi))) / top,
    })
    if intercept:
        out.residuals["balance"] = abs(float(y @ alpha)) / max(float(np.abs(alpha).sum()), _TINY)
        if math.isfinite(b_multiplier):
            out.residuals["bias (multiplier)"] = abs(b_multiplier - b) / f_scale
    if all(v <= tol for v in out.residuals.values()):
        _squared_hinge_errors(out, X, y, C, w, b, f, alpha, intercept, primal)
    out.judge(tol)
    return out


def _squared_hinge_errors(out: MemberChecks, X, y, C, w, b, f, alpha, intercept: bool, primal: bool) -> None:
    ref = squared_hinge_optimum(X, y, C, intercept, inside=(1.0 - y * f) > 0)
    if not ref.ok:
        out.reference = f"gap bound (no proved optimum: {ref.reason})"
        D = squared_hinge_dual(X, y, C, feasible_alpha_squared_hinge(alpha, y, intercept))
        out.errors["w error (bound from the gap)"] = _gap_bound(out.primal_objective, D, w, X, f)
        return
    out.reference = f"proved optimum ({ref.rounds} round{'s' if ref.rounds > 1 else ''})"
    out.optimum = {"w": ref.w, "b": ref.b, "objective": ref.objective}
    f_ref = np.asarray(X @ ref.w, dtype=float).ravel() + ref.b
    f_scale = decision_scale(f_ref)
    own = out.primal_objective if primal else out.dual_objective
    out.errors.update({
        "objective error": abs(own - ref.objective) / max(ref.objective, _TINY),
        "w error": float(np.linalg.norm(w - ref.w)) / w_scale(ref.w, X, f_scale),
        "b error": abs(b - ref.b) / f_scale,
        "decision value error": float(np.max(np.abs(f - f_ref))) / f_scale,
    })


def _gap_bound(P: float, D_feasible: float, W: np.ndarray, X, F: np.ndarray) -> float:
    """||W - W*|| / w_scale bounded by the gap: P is 1-strongly convex in W and D(alpha) <= P* for a dual feasible
    alpha (the solver's alpha made feasible first: feasible_alpha_*), so 1/2 ||W - W*||^2 <= P(W) - P* <= P - D."""
    return math.sqrt(2.0 * max(P - D_feasible, 0.0)) / w_scale(np.ravel(W), X, decision_scale(F))


def squared_hinge_dual(X, y: np.ndarray, C: float, alpha: np.ndarray) -> float:
    """D(alpha) = sum alpha - 1/2 ||X'(y alpha)||^2 - 1/(4C) ||alpha||^2."""
    w = np.asarray(X.T @ (y * alpha), dtype=float).ravel()
    return float(alpha.sum()) - 0.5 * float(w @ w) - 0.25 / C * float(alpha @ alpha)


def feasible_alpha_squared_hinge(alpha: np.ndarray, y: np.ndarray, intercept: bool) -> np.ndarray:
    """alpha >= 0, and with a free b the class with the larger sum scaled down until sum alpha_i y_i = 0."""
    alpha = np.maximum(alpha, 0.0)
    if intercept:
        plus, minus = float(alpha[y > 0].sum()), float(alpha[y < 0].sum())
        if plus > minus:
            alpha = np.where(y > 0, alpha * (minus / plus), alpha)
        elif minus > plus:
            alpha = np.where(y < 0, alpha * (plus / minus), alpha)
    return alpha


def feasible_alpha_crammer_singer(alpha: np.ndarray, codes: np.ndarray, C: float) -> np.ndarray:
    """alpha_i^m <= 0 off the own class, alpha_i^{y_i} = -sum of the others (the coupling), scaled down where that
    exceeds C."""
    n = len(codes)
    own = np.zeros_like(alpha, dtype=bool)
    own[np.arange(n), codes] = True
    others = np.where(own, 0.0, np.minimum(alpha, 0.0))
    total = -others.sum(axis=1)
    shrink = np.where(total > C, C / np.maximum(total, _TINY), 1.0)
    others = others * shrink[:, None]
    return others + own * (-others.sum(axis=1))[:, None]


# --------------------------------------------------------------------------- Crammer-Singer


def crammer_singer_values(X, codes: np.ndarray, W: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(F, violation, xi): F_im = w_m'x_i, violation_im = e_i^m + F_im - F_{i y_i}, xi_i = max_m violation_im."""
    n = len(codes)
    F = np.asarray(X @ W.T, dtype=float)
    e = np.ones_like(F)
    e[np.arange(n), codes] = 0.0
    violation = e + F - F[np.arange(n), codes][:, None]
    return F, violation, violation.max(axis=1)


@dataclass
class CrammerSingerOptimum:
    ok: bool
    W: np.ndarray | None = None
    objective: float = math.nan
    rounds: int = 0
    reason: str = ""


def crammer_singer_optimum(X, codes: np.ndarray, k: int, C: float, rows: np.ndarray, max_rounds: int = 12,
                           max_rows: int = MAX_ACTIVE_ROWS) -> CrammerSingerOptimum:
    """The optimum proved from an active set of margin rows (flat i k + m), by primal-dual active-set rounds.

    With the rows S active as equalities, the KKT conditions are linear: W = A_S' beta_S (A the margin rows over the
    flat W), A_S W + xi_{i(r)} = e_r on S, and sum_{m in S_i} beta_i^m = C for every point, i.e.

        [A_S A_S'   R ] [beta_S]   [e_S]
        [R'         0 ] [xi    ] = [C 1],     R_ri = 1 where row r belongs to point i.

    The solution is the optimum when beta_S >= 0 and no row outside S is violated (both to PROOF_TOL, in units of C
    and of the margin); else rows with beta < 0 leave S, violated rows enter, and the system is solved again."""
    n = len(codes)
    A = crammer_singer.margin_matrix(X, codes, k)
    e = crammer_singer.losses(codes, k)
    point = np.repeat(np.arange(n), k)
    active = np.zeros(n * k, dtype=bool)
    active[rows] = True
    active[np.arange(n) * k + codes] |= ~np.bincount(point[rows], minlength=n).astype(bool)  # every point has a row
    for rounds in range(1, max_rounds + 1):
        S = np.flatnonzero(active)
        if len(S) + n > max_rows:
            return CrammerSingerOptimum(False, rounds=rounds, reason=f"{len(S):,} active rows > {max_rows:,}")
        A_S = A[S]
        R = sp.csr_matrix((np.ones(len(S)), (np.arange(len(S)), point[S])), shape=(len(S), n))
        G = np.asarray((A_S @ A_S.T).toarray())
        system = np.block([[G, R.toarray()], [R.T.toarray(), np.zeros((n, n))]])
        rhs = np.concatenate([e[S], np.full(n, float(C))])
        solution = _solve_kkt(system, rhs)
        beta, xi = solution[: len(S)], solution[len(S):]
        W = np.asarray(A_S.T @ beta, dtype=float).reshape(k, -1)
        F, violation, xi_W = crammer_singer_values(X, codes, W)
        # margin units, but relative to |F| where F is small: at C = 1e-4 on X x 1e-3 every xi_i is about 1 and the
        # classes differ by 1e-10 in F, which a bar of 1e-8 in margin units let a wrong active set pass
        size = float(np.max(np.abs(F)))
        bar = PROOF_TOL * min(1.0, size) + 64 * _EPS * (1.0 + size)
        residual = max(float(np.max(np.abs(G @ beta + R @ xi - e[S]))) / bar,
                       float(np.max(np.abs(R.T @ beta - C))) / (PROOF_TOL * C))
        over = violation.ravel() - xi[point]  # > 0: a row violated at (W, xi)
        negative = beta < -PROOF_TOL * C
        violated = over > bar
        if residual <= 1.0 and not negative.any() and not violated.any():
            return CrammerSingerOptimum(True, W, 0.5 * float(np.sum(W * W)) + C * float(xi_W.sum()), rounds)
        if not negative.any() and not violated.any():
            return CrammerSingerOptimum(False, rounds=rounds, reason=f"inconsistent system (residual {residual:.1e})")
        # the next rows: those that attain xi_i at this W (its own active set), less those whose beta came out < 0
        active = violation.ravel() >= xi_W[point] - bar
        active[S[negative]] = False
        active[np.arange(n) * k + codes] |= ~np.bincount(point[active], minlength=n).astype(bool)
    return CrammerSingerOptimum(False, rounds=max_rounds, reason=f"active set not settled in {max_rounds} rounds")


def check_crammer_singer(X, codes: np.ndarray, C: float, *, W: np.ndarray, alpha: np.ndarray | None, primal: bool,
                         tol: float) -> MemberChecks:
    """Crammer-Singer's residuals, gap and the gap's bound on ||W - W*|| at (W, alpha) (module doc). W is k x d,
    alpha l x k (LIBLINEAR's alpha_i^m). Without multipliers nothing can be proved: not verified."""
    out = MemberChecks()
    n, k = len(codes), W.shape[0]
    F, violation, xi = crammer_singer_values(X, codes, W)
    P = 0.5 * float(np.sum(W * W)) + C * float(xi.sum())
    if alpha is None:
        out.primal_objective, out.alpha_source, out.verdict = P, "none", "no multipliers"
        return out
    own = np.zeros((n, k))
    own[np.arange(n), codes] = 1.0
    W_alpha = np.asarray(alpha.T @ X, dtype=float)
    D = -float(np.sum((1.0 - own) * alpha)) - 0.5 * float(np.sum(W_alpha * W_alpha))
    _gap(out, P, D)
    beta = C * own - alpha
    out.residuals.update({
        "dual feasibility": max(0.0, float(np.max(alpha - C * own))) / C,
        "coupling": float(np.max(np.abs(alpha.sum(axis=1)))) / C,
        "stationarity": float(np.linalg.norm(W - W_alpha)) / w_scale(W.ravel(), X, decision_scale(F)),
        "complementarity": float(np.max(np.maximum(beta, 0.0) * (xi[:, None] - violation))) / C,
    })
    if all(v <= tol for v in out.residuals.values()):
        _crammer_singer_errors(out, X, codes, C, W, F, alpha, primal)
    out.judge(tol)
    return out


def _solve_kkt(system: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """A solution of the proof's KKT system. The active rows are often dependent (A's rows are invariant to one shift
    of every w_m, and ties add rows): beta is then not unique, and any solution of the consistent system proves W*,
    which is; LU first, least squares (QR with pivoting) where LU fails or leaves a residual."""
    try:
        solution = np.linalg.solve(system, rhs)
        if np.all(np.isfinite(solution)) and np.max(np.abs(system @ solution - rhs)) <= PROOF_TOL * np.max(np.abs(rhs)):
            return solution
    except np.linalg.LinAlgError:
        pass
    return scipy.linalg.lstsq(system, rhs, lapack_driver="gelsy")[0]


def _crammer_singer_errors(out: MemberChecks, X, codes, C, W, F, alpha, primal: bool) -> None:
    k = W.shape[0]
    own = np.zeros_like(alpha)
    own[np.arange(len(codes)), codes] = 1.0
    ref = crammer_singer_optimum(X, codes, k, C, np.flatnonzero((C * own - alpha).ravel() > START_BETA * C))
    if not ref.ok:
        out.reference = f"gap bound (no proved optimum: {ref.reason})"
        feasible = feasible_alpha_crammer_singer(alpha, codes, C)
        W_f = np.asarray(feasible.T @ X, dtype=float)
        D = -float(np.sum((1.0 - own) * feasible)) - 0.5 * float(np.sum(W_f * W_f))
        out.errors["w error (bound from the gap)"] = _gap_bound(out.primal_objective, D, W, X, F)
        return
    out.reference = f"proved optimum ({ref.rounds} round{'s' if ref.rounds > 1 else ''})"
    out.optimum = {"W": ref.W, "objective": ref.objective}
    F_ref = np.asarray(X @ ref.W.T, dtype=float)
    f_scale = decision_scale(F_ref)
    own = out.primal_objective if primal else out.dual_objective
    out.errors.update({
        "objective error": abs(own - ref.objective) / max(ref.objective, _TINY),
        "w error": float(np.linalg.norm(W - ref.W)) / w_scale(ref.W.ravel(), X, f_scale),
        "decision value error": float(np.max(np.abs(F - F_ref))) / f_scale,
    })
