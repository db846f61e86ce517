r"""Crammer-Singer multiclass SVM, primal and dual, as LIBLINEAR's `crammer_singer` (Solver_MCSVM_CS) states it.

Classes m = 1..k, one weight vector w_m per class, labels y_i in {1..k}, e_i^m = 0 if y_i = m else 1, and no
bias (LIBLINEAR has none: its -B, scikit-learn's fit_intercept, appends a constant feature to X, so the
bias is regularized like any weight).

Primal:

    min_{w, xi}  1/2 sum_m ||w_m||^2 + C sum_i xi_i
    s.t.         w_{y_i}' x_i - w_m' x_i >= e_i^m - xi_i        i = 1..l, m = 1..k   [margin, multipliers beta_i^m]

(the row m = y_i reads xi_i >= 0), so xi_i = max_m (e_i^m + w_m' x_i) - w_{y_i}' x_i: the largest margin
violation of point i over all classes.

Lagrangian stationarity, with alpha_i^m = C [y_i = m] - beta_i^m (LIBLINEAR's variables):

    w_m = sum_i alpha_i^m x_i,     sum_m beta_i^m = C   <=>   sum_m alpha_i^m = 0     (each point couples its k classes)

Dual (LIBLINEAR minimises the negative of this objective; here it is a maximum, like the project's other duals):

    max_{alpha}  - sum_i sum_m e_i^m alpha_i^m - 1/2 sum_m || sum_i alpha_i^m x_i ||^2
    s.t.         sum_m alpha_i^m = 0                          i = 1..l   [coupling]
                 alpha_i^m <= C^m_{y_i}  (C if m = y_i, else 0)

written with the lifted w_m = sum_i alpha_i^m x_i [lift]: (l + d) k variables and a (l k) x (d k) matrix.
Variables are flat, class-major: w[m d + j] = (w_m)_j, alpha[i k + m] = alpha_i^m; margin row i k + m.
params["intercept"]: "none" (LIBLINEAR's default) or "regularized" (-B: a constant feature, formulations.family
.liblinear); y holds the class codes 0..k-1 (formulations.validation.check_classes).

Optimality conditions (`conditions`), from the point: F_im = w_m'x_i, xi_i = max_m (e_i^m + F_im) - F_{i y_i},

    P = 1/2 sum ||w_m||^2 + C sum xi_i,   D = -sum e_i^m alpha_i^m - 1/2 sum ||sum_i alpha_i^m x_i||^2
    dual feasibility   max(0, alpha_i^m - C [y_i = m]) / C
    coupling           max_i |sum_m alpha_i^m| / C                 (sum_m beta_i^m = C: each point couples its classes)
    stationarity       ||W - alpha'X|| / ||W||
    complementarity    beta_i^m (xi_i - e_i^m - F_im + F_{i y_i}) / C, beta = C [y_i = m] - alpha  (margin units)
    the point          W, F and the objective against the optimum proved from the point's active rows (`optimum`:
                       one linear KKT system per round), else the gap's bound (formulations.family.liblinear)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo
import scipy.linalg
import scipy.sparse as sp

from formulations.family.common import Conditions, FamilyData, stationarity, top
from formulations.family.liblinear import EPS, PROOF_TOL, features, gap_bound, point_errors
from formulations.family.names import CRAMMER_SINGER_LINEAR_DUAL, CRAMMER_SINGER_PRIMAL, PRIMAL
from formulations.model import CvxpyModel, linear_sum, matrix_rows, new_pyomo_model

#: The proof solves a dense system of (active rows + points); beyond this size, the gap's bound.
MAX_ACTIVE_ROWS = 6_000
#: The rows the proof starts from: beta_i^m above this fraction of C (an interior point's inactive rows keep small
#: positive multipliers; the proof's rounds add or drop the rows it got wrong)
START_BETA = 1e-6


def losses(codes: np.ndarray, k: int) -> np.ndarray:
    """e_i^m = 0 if y_i = m else 1, flat (row i k + m)."""
    e = np.ones((len(codes), k))
    e[np.arange(len(codes)), codes] = 0.0
    return e.ravel()


def upper_bounds(codes: np.ndarray, k: int, C: float) -> np.ndarray:
    """C^m_{y_i}: C for m = y_i, 0 for the other classes, flat."""
    upper = np.zeros((len(codes), k))
    upper[np.arange(len(codes)), codes] = float(C)
    return upper.ravel()


def margin_matrix(X, codes: np.ndarray, k: int) -> sp.csr_matrix:
    """The rows (w_{y_i} - w_m)' x_i over the flat w: an (l k) x (k d) matrix, x_i at class y_i's block and -x_i at
    class m's (the two cancel on the row m = y_i, which is left empty)."""
    X = sp.csr_matrix(X, dtype=float)
    n, d = X.shape
    point = np.repeat(np.arange(n), k)  # row r = i k + m belongs to point i and class m
    other = np.tile(np.arange(k), n)
    kept = np.flatnonzero(other != codes[point])
    picked = X[point[kept]]  # x_i for each kept row
    entry_row = np.repeat(np.arange(len(kept)), np.diff(picked.indptr))  # the kept row of each stored entry
    cols = np.concatenate([picked.indices + d * codes[point[kept]][entry_row],
                           picked.indices + d * other[kept][entry_row]])
    rows = np.concatenate([kept[entry_row], kept[entry_row]])
    data = np.concatenate([picked.data, -picked.data])
    return sp.csr_matrix((data, (rows, cols)), shape=(n * k, k * d))


def lift_matrix(X, k: int) -> sp.csr_matrix:
    """The rows w_m - sum_i alpha_i^m x_i = 0 over (alpha, w): [-(X' kron I_k) permuted to class-major, I_{kd}]."""
    X = sp.csr_matrix(X, dtype=float)
    d = X.shape[1]
    # (X' kron I_k)[(j, m), (i, m)] = x_ij; rows reordered from feature-major (j k + m) to class-major (m d + j)
    stacked = sp.kron(X.T, sp.identity(k), format="csr")
    order = (np.arange(d)[None, :] * k + np.arange(k)[:, None]).ravel()
    return sp.hstack([-stacked[order], sp.identity(k * d, format="csr")], format="csr")


def coupling_matrix(n: int, k: int) -> sp.csr_matrix:
    """The rows sum_m alpha_i^m (one per point): I_l kron 1_k'."""
    return sp.kron(sp.identity(n), np.ones((1, k)), format="csr")


def n_classes(codes: np.ndarray) -> int:
    return int(codes.max()) + 1


def build_primal_pyomo(X, codes: np.ndarray, params: dict) -> pyo.ConcreteModel:
    X, k = features(X, params), n_classes(codes)
    n, d = X.shape
    m = new_pyomo_model(CRAMMER_SINGER_PRIMAL, n, d)
    m.K = pyo.RangeSet(0, k * d - 1)
    m.w = pyo.Var(m.K)  # flat, class-major (module docstring)
    m.xi = pyo.Var(m.I)  # xi_i >= 0 is the row m = y_i
    rows = sp.hstack([margin_matrix(X, codes, k), sp.kron(sp.identity(n), np.ones((k, 1)))], format="csr")
    m.margin = matrix_rows(rows, [*m.w.values(), *m.xi.values()], lower=losses(codes, k))
    m.obj = pyo.Objective(expr=0.5 * pyo.quicksum(m.w[j] ** 2 for j in m.K) + linear_sum(float(params["C"]), m.xi),
                          sense=pyo.minimize)
    return m


def build_primal_cvxpy(X, codes: np.ndarray, params: dict) -> CvxpyModel:
    X, k = features(X, params), n_classes(codes)
    n, d = X.shape
    w = cp.Variable(k * d, name="w")
    xi = cp.Variable(n, name="xi")
    spread = sp.kron(sp.identity(n), np.ones((k, 1)), format="csr")  # xi_i on each of point i's k rows
    margin = margin_matrix(X, codes, k) @ w + spread @ xi >= losses(codes, k)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + float(params["C"]) * cp.sum(xi)), [margin])
    return CvxpyModel(CRAMMER_SINGER_PRIMAL, problem, {"w": w, "xi": xi}, {"margin": margin})


def build_linear_dual_pyomo(X, codes: np.ndarray, params: dict) -> pyo.ConcreteModel:
    X, k = features(X, params), n_classes(codes)
    n, d = X.shape
    m = new_pyomo_model(CRAMMER_SINGER_LINEAR_DUAL, n, d)
    upper = upper_bounds(codes, k, float(params["C"]))
    m.A = pyo.RangeSet(0, n * k - 1)
    m.alpha = pyo.Var(m.A, bounds=lambda model, r: (None, float(upper[r])))
    m.K = pyo.RangeSet(0, k * d - 1)
    m.w = pyo.Var(m.K)
    alpha = list(m.alpha.values())
    m.lift = matrix_rows(lift_matrix(X, k), [*alpha, *m.w.values()], lower=0.0, upper=0.0)
    m.coupling = matrix_rows(coupling_matrix(n, k), alpha, lower=0.0, upper=0.0)
    m.obj = pyo.Objective(expr=-linear_sum(losses(codes, k), alpha) - 0.5 * pyo.quicksum(m.w[j] ** 2 for j in m.K),
                          sense=pyo.maximize)
    return m


def build_linear_dual_cvxpy(X, codes: np.ndarray, params: dict) -> CvxpyModel:
    X, k = features(X, params), n_classes(codes)
    n, d = X.shape
    alpha = cp.Variable(n * k, name="alpha", bounds=[np.full(n * k, -np.inf), upper_bounds(codes, k, params["C"])])
    w = cp.Variable(k * d, name="w")
    lift = lift_matrix(X, k)[:, : n * k] @ alpha + w == 0  # w_m = sum_i alpha_i^m x_i
    coupling = coupling_matrix(n, k) @ alpha == 0
    problem = cp.Problem(cp.Maximize(-losses(codes, k) @ alpha - 0.5 * cp.sum_squares(w)), [lift, coupling])
    return CvxpyModel(CRAMMER_SINGER_LINEAR_DUAL, problem, {"alpha": alpha, "w": w},
                      {"lift": lift, "coupling": coupling})


# --------------------------------------------------------------------------- optimality conditions


def values_at(X, codes: np.ndarray, W: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(F, violation, xi): F_im = w_m'x_i, violation_im = e_i^m + F_im - F_{i y_i}, xi_i = max_m violation_im."""
    n = len(codes)
    F = np.asarray(X @ W.T, dtype=float)
    violation = losses(codes, W.shape[0]).reshape(n, -1) + F - F[np.arange(n), codes][:, None]
    return F, violation, violation.max(axis=1)


def dual_objective(X, codes: np.ndarray, alpha: np.ndarray) -> float:
    """D(alpha) = -sum e_i^m alpha_i^m - 1/2 sum_m ||sum_i alpha_i^m x_i||^2 (alpha l x k)."""
    W = np.asarray(alpha.T @ X, dtype=float)
    return -float(losses(codes, alpha.shape[1]) @ alpha.ravel()) - 0.5 * float(np.sum(W * W))


def feasible_alpha(alpha: np.ndarray, codes: np.ndarray, C: float) -> np.ndarray:
    """A dual feasible alpha near the solver's: alpha_i^m <= 0 off the own class, alpha_i^{y_i} = -sum of the others
    (the coupling), scaled down where that exceeds C."""
    own = np.zeros_like(alpha, dtype=bool)
    own[np.arange(len(codes)), codes] = True
    others = np.where(own, 0.0, np.minimum(alpha, 0.0))
    total = -others.sum(axis=1)
    others = others * np.where(total > C, C / np.maximum(total, np.finfo(float).tiny), 1.0)[:, None]
    return others + own * (-others.sum(axis=1))[:, None]


@dataclass
class Optimum:
    ok: bool
    W: np.ndarray | None = None
    objective: float = math.nan
    rounds: int = 0
    reason: str = ""


def optimum(X, codes: np.ndarray, k: int, C: float, rows: np.ndarray, max_rounds: int = 12,
            max_rows: int = MAX_ACTIVE_ROWS) -> Optimum:
    """The optimum proved from an active set of margin rows (flat i k + m), by active-set rounds.

    With the rows S active as equalities, the KKT conditions are linear: W = A_S' beta_S (A the margin rows over the
    flat W), A_S W + xi_{i(r)} = e_r on S, and sum_{m in S_i} beta_i^m = C for every point, i.e.

        [A_S A_S'   R ] [beta_S]   [e_S]
        [R'         0 ] [xi    ] = [C 1],     R_ri = 1 where row r belongs to point i.

    The solution is the optimum when beta_S >= 0 and no row outside S is violated (to PROOF_TOL of C, and of the
    margin or of |F| where F is smaller); else S becomes the rows that attain xi_i at the solution's W, less those
    whose beta was < 0, and the system is solved again."""
    n = len(codes)
    A, e = margin_matrix(X, codes, k), losses(codes, k)
    point = np.repeat(np.arange(n), k)
    own_rows = np.arange(n) * k + codes
    active = np.zeros(n * k, dtype=bool)
    active[rows] = True
    for rounds in range(1, max_rounds + 1):
        active[own_rows] |= ~np.bincount(point[active], minlength=n).astype(bool)  # each point keeps a row
        S = np.flatnonzero(active)
        if len(S) + n > max_rows:
            return Optimum(False, rounds=rounds, reason=f"{len(S):,} active rows > {max_rows - n:,}")
        A_S = A[S]
        R = sp.csr_matrix((np.ones(len(S)), (np.arange(len(S)), point[S])), shape=(len(S), n))
        G = np.asarray((A_S @ A_S.T).toarray())
        system = np.block([[G, R.toarray()], [R.T.toarray(), np.zeros((n, n))]])
        rhs = np.concatenate([e[S], np.full(n, float(C))])
        solution = _solve_kkt(system, rhs)
        beta, xi = solution[: len(S)], solution[len(S):]
        W = np.asarray(A_S.T @ beta, dtype=float).reshape(k, -1)
        F, violation, xi_W = values_at(X, codes, W)
        # margin units, but relative to |F| where F is small: at a tiny effective C every xi_i is near 1 and the
        # classes differ by far less than the margin's 1e-8 in F, which would let a wrong active set pass
        size = float(np.max(np.abs(F)))
        bar = PROOF_TOL * min(1.0, size) + 64 * EPS * (1.0 + size)
        residual = max(float(np.max(np.abs(G @ beta + R @ xi - e[S]))) / bar,
                       float(np.max(np.abs(R.T @ beta - C))) / (PROOF_TOL * C))
        negative = beta < -PROOF_TOL * C
        violated = violation.ravel() - xi[point] > bar
        if not negative.any() and not violated.any():
            if residual <= 1.0:
                return Optimum(True, W, 0.5 * float(np.sum(W * W)) + C * float(xi_W.sum()), rounds)
            return Optimum(False, rounds=rounds, reason=f"inconsistent system ({residual:.1e} x its bar)")
        active = violation.ravel() >= xi_W[point] - bar  # the rows that attain xi_i at this W
        active[S[negative]] = False
    return Optimum(False, rounds=max_rounds, reason=f"active set not settled in {max_rounds} rounds")


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


def conditions(values: dict, data: FamilyData, params: dict, kind: str) -> Conditions:
    """The point judged by Crammer-Singer's optimality conditions (module docstring): W from the primal's w and
    alpha = C [y_i = m] - beta from its margin rows' multipliers; from the dual, alpha and W = alpha'X."""
    C, codes = float(params["C"]), data.y
    X, n, k = features(data.X, params), len(codes), n_classes(codes)
    own = np.eye(k)[codes]
    if kind == PRIMAL:
        W = np.asarray(values["w"], dtype=float).reshape(k, -1)
        alpha = C * own - np.asarray(values["alpha"], dtype=float).reshape(n, k)
    else:
        alpha = np.asarray(values["alpha"], dtype=float).reshape(n, k)
        W = np.asarray(alpha.T @ X, dtype=float)
    F, violation, xi = values_at(X, codes, W)
    W_alpha = np.asarray(alpha.T @ X, dtype=float)
    primal = 0.5 * float(np.sum(W * W)) + C * float(xi.sum())
    dual = dual_objective(X, codes, alpha)
    beta = C * own - alpha
    residuals = {"dual feasibility": max(0.0, float(np.max(alpha - C * own))) / C,
                 "coupling": float(np.max(np.abs(alpha.sum(axis=1)))) / C,
                 "stationarity": stationarity(W.ravel(), W_alpha.ravel(), X, F),
                 "complementarity": float(np.max(np.maximum(beta, 0.0) * (xi[:, None] - violation))) / C}
    meaning = {"n_classes": k, "intercept": params["intercept"], "n_margin_errors": int(np.sum(xi > 0)),
               "rows_active": int(np.sum(beta > START_BETA * C))}
    if params["intercept"] == "regularized":  # each class's bias: its constant feature's weight times the scaling
        meaning["intercepts"] = (float(params["intercept_scaling"]) * W[:, -1]).tolist()
        W = W[:, :-1]
    return Conditions(primal, dual, max(primal, abs(dual)), residuals, F, alpha, b=math.nan, w=W, meaning=meaning,
                      size=max(top(F), np.finfo(float).tiny), alpha=alpha)


def reference(cond: Conditions, data: FamilyData, params: dict, kind: str) -> dict:
    """The point against the optimum proved from its active rows (`optimum`), or the gap's bound where none is
    proved (formulations.family.liblinear), in solvers.family's terms: "reference", the errors, the proved alpha."""
    C, codes = float(params["C"]), data.y
    X, k = features(data.X, params), n_classes(codes)
    W, F, alpha = cond.w, cond.decision, cond.alpha
    if params["intercept"] == "regularized":  # W as solved: with the constant feature's weights
        W = np.hstack([W, np.asarray(cond.meaning["intercepts"])[:, None] / float(params["intercept_scaling"])])
    beta = C * np.eye(k)[codes] - alpha
    proof = optimum(X, codes, k, C, np.flatnonzero(beta.ravel() > START_BETA * C))
    if not proof.ok:
        bound = gap_bound(cond.primal_objective, dual_objective(X, codes, feasible_alpha(alpha, codes, C)), W, X, F)
        return {"reference": f"gap bound (no proved optimum: {proof.reason})", "w error (bound from the gap)": bound}
    own = cond.primal_objective if kind == PRIMAL else cond.dual_objective
    F_opt = np.asarray(X @ proof.W.T, dtype=float)
    errors = point_errors(own, proof.objective, W, proof.W, X, F, F_opt)
    d = data.X.shape[1]
    proved = {"alpha": None, "b": math.nan, "w": proof.W[:, :d], "decision": F_opt,
              "primal_objective": proof.objective, "rounds": proof.rounds}
    if params["intercept"] == "regularized":
        proved["intercepts"] = float(params["intercept_scaling"]) * proof.W[:, d]
    return {"reference": f"proved optimum ({proof.rounds} round{'s' * (proof.rounds > 1)})", **errors,
            "proved": proved}
