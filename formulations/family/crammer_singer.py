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
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp

from formulations.model import CvxpyModel, linear_sum, matrix_rows, new_pyomo_model

PRIMAL = "crammer_singer_primal"
DUAL = "crammer_singer_dual"


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


def build_primal_pyomo(X, codes: np.ndarray, k: int, C: float) -> pyo.ConcreteModel:
    n, d = X.shape
    m = new_pyomo_model(PRIMAL, n, d)
    m.C = float(C)
    m.K = pyo.RangeSet(0, k * d - 1)
    m.w = pyo.Var(m.K)  # flat, class-major (module docstring)
    m.xi = pyo.Var(m.I)  # xi_i >= 0 is the row m = y_i
    rows = sp.hstack([margin_matrix(X, codes, k), sp.kron(sp.identity(n), np.ones((k, 1)))], format="csr")
    m.margin = matrix_rows(rows, [*m.w.values(), *m.xi.values()], lower=losses(codes, k))
    m.obj = pyo.Objective(expr=0.5 * pyo.quicksum(m.w[j] ** 2 for j in m.K) + linear_sum(float(C), m.xi),
                          sense=pyo.minimize)
    return m


def build_primal_cvxpy(X, codes: np.ndarray, k: int, C: float) -> CvxpyModel:
    n, d = X.shape
    w = cp.Variable(k * d, name="w")
    xi = cp.Variable(n, name="xi")
    spread = sp.kron(sp.identity(n), np.ones((k, 1)), format="csr")  # xi_i on each of point i's k rows
    margin = margin_matrix(X, codes, k) @ w + spread @ xi >= losses(codes, k)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + float(C) * cp.sum(xi)), [margin])
    return CvxpyModel(PRIMAL, problem, {"w": w, "xi": xi}, {"margin": margin}, info={"classes": k})


def build_dual_pyomo(X, codes: np.ndarray, k: int, C: float) -> pyo.ConcreteModel:
    n, d = X.shape
    m = new_pyomo_model(DUAL, n, d)
    m.C = float(C)
    upper = upper_bounds(codes, k, C)
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


def build_dual_cvxpy(X, codes: np.ndarray, k: int, C: float) -> CvxpyModel:
    n, d = X.shape
    alpha = cp.Variable(n * k, name="alpha", bounds=[np.full(n * k, -np.inf), upper_bounds(codes, k, C)])
    w = cp.Variable(k * d, name="w")
    lifted = lift_matrix(X, k)
    lift = lifted[:, : n * k] @ alpha + w == 0  # w_m = sum_i alpha_i^m x_i
    coupling = coupling_matrix(n, k) @ alpha == 0
    problem = cp.Problem(cp.Maximize(-losses(codes, k) @ alpha - 0.5 * cp.sum_squares(w)), [lift, coupling])
    return CvxpyModel(DUAL, problem, {"alpha": alpha, "w": w}, {"lift": lift, "coupling": coupling},
                      info={"classes": k})
