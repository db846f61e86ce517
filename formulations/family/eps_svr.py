r"""epsilon-SVR (Vapnik 1995; Smola and Scholkopf 2004): a function within eps of every target, flat, with the
points outside the tube priced by C.

Primal, l points (x_i, y_i), y_i real, C > 0, eps >= 0:

    min_{w, b, xi, xi*}  1/2 ||w||^2 + C sum_i (xi_i + xi*_i)
    s.t.                 y_i - (w'x_i + b) <= eps + xi_i      [upper, multipliers alpha_i]
                         (w'x_i + b) - y_i <= eps + xi*_i     [lower, multipliers alpha*_i]
                         xi_i, xi*_i >= 0

Its dual, with beta = alpha - alpha* (stationarity in w: w = sum_i beta_i x_i; in b: sum_i beta_i = 0):

    max_{alpha, alpha*}  -1/2 sum_i sum_j beta_i beta_j K_ij - eps sum_i (alpha_i + alpha*_i) + sum_i y_i beta_i
    s.t.                 sum_i (alpha_i - alpha*_i) = 0         [balance, multiplier b]
                         0 <= alpha_i, alpha*_i <= C

f(x) = sum_i beta_i k(x_i, x) + b. At the optimum alpha_i alpha*_i = 0 (a point cannot be above and below the
tube at once when eps > 0); points strictly inside the tube have beta_i = 0, those outside it |beta_i| = C.
LIBSVM solves this same problem: scikit-learn's SVR(C, epsilon) has these alpha, b and f.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp

from formulations.family.common import (AT_BOUND, Conditions, FamilyData, box_residuals, cvxpy_quadratic,
                                        BoxQP, fraction, paired, pyomo_quadratic, recover_multiplier,
                                        squared_norm, stationarity, top)
from formulations.family.names import EPS_SVR_KERNEL_DUAL, EPS_SVR_PRIMAL, PRIMAL
from formulations.model import CvxpyModel, alpha_bounds, pyomo_alpha_bounds, linear_sum, matrix_rows, new_pyomo_model


def tube_rows(X, sign: float, eps_column: bool) -> sp.csr_matrix:
    """Rows [sign x_i', sign, (1 for eps,) e_i'] over (w, b, (eps,) slack): one side of the tube."""
    n = X.shape[0]
    parts = [sign * sp.csr_matrix(X), sp.csr_matrix(np.full((n, 1), sign))]
    if eps_column:
        parts.append(sp.csr_matrix(np.ones((n, 1))))
    return sp.hstack([*parts, sp.identity(n, format="csr")], format="csr")


def build_primal_pyomo(X, y, params) -> pyo.ConcreteModel:
    n, d = X.shape
    C, eps = float(params["C"]), float(params["epsilon"])
    m = new_pyomo_model(EPS_SVR_PRIMAL, n, d)
    m.w = pyo.Var(m.J)
    m.b = pyo.Var()
    m.xi = pyo.Var(m.I, domain=pyo.NonNegativeReals)
    m.xi_star = pyo.Var(m.I, domain=pyo.NonNegativeReals)
    w = [*m.w.values(), m.b]
    m.upper = matrix_rows(tube_rows(X, 1.0, False), [*w, *m.xi.values()], lower=y - eps)  # f_i + xi_i >= y_i - eps
    m.lower = matrix_rows(tube_rows(X, -1.0, False), [*w, *m.xi_star.values()], lower=-y - eps)
    m.obj = pyo.Objective(expr=0.5 * squared_norm(m.w) + linear_sum(C, m.xi) + linear_sum(C, m.xi_star),
                          sense=pyo.minimize)
    return m


def build_primal_cvxpy(X, y, params) -> CvxpyModel:
    n, d = X.shape
    C, eps = float(params["C"]), float(params["epsilon"])
    w, b = cp.Variable(d, name="w"), cp.Variable(name="b")
    xi, xi_star = cp.Variable(n, name="xi", bounds=[0.0, None]), cp.Variable(n, name="xi_star", bounds=[0.0, None])
    f = X @ w + b
    upper = f + xi >= y - eps  # y_i - f_i <= eps + xi_i
    lower = -f + xi_star >= -y - eps  # f_i - y_i <= eps + xi*_i
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * cp.sum(xi + xi_star)), [upper, lower])
    return CvxpyModel(EPS_SVR_PRIMAL, problem, {"w": w, "b": b, "xi": xi, "xi_star": xi_star},
                      {"upper": upper, "lower": lower})


def build_kernel_dual_pyomo(K, y, params) -> pyo.ConcreteModel:
    n = len(y)
    C, eps = float(params["C"]), float(params["epsilon"])
    m = new_pyomo_model(EPS_SVR_KERNEL_DUAL, n)
    m.alpha = pyo.Var(m.I, bounds=pyomo_alpha_bounds(C))
    m.alpha_star = pyo.Var(m.I, bounds=pyomo_alpha_bounds(C))
    both = [*m.alpha.values(), *m.alpha_star.values()]
    m.balance = matrix_rows(np.concatenate([np.ones(n), -np.ones(n)])[None, :], both, lower=0.0, upper=0.0)
    m.quad = pyomo_quadratic(paired(K), both)  # beta' K beta
    m.obj = pyo.Objective(expr=-0.5 * m.quad + linear_sum(y - eps, m.alpha) + linear_sum(-y - eps, m.alpha_star),
                          sense=pyo.maximize)
    return m


def build_kernel_dual_cvxpy(K, y, params) -> CvxpyModel:
    n = len(y)
    C, eps = float(params["C"]), float(params["epsilon"])
    alpha = cp.Variable(n, name="alpha", bounds=alpha_bounds(C))
    alpha_star = cp.Variable(n, name="alpha_star", bounds=alpha_bounds(C))
    beta = alpha - alpha_star
    balance = cp.sum(beta) == 0
    objective = -0.5 * cvxpy_quadratic(beta, K) - eps * cp.sum(alpha + alpha_star) + y @ beta
    return CvxpyModel(EPS_SVR_KERNEL_DUAL, cp.Problem(cp.Maximize(objective), [balance]),
                      {"alpha": alpha, "alpha_star": alpha_star}, {"balance": balance}, info={"form": "dense"})


def conditions(values: dict, data: FamilyData, params: dict, kind: str) -> Conditions:
    """The point judged by epsilon-SVR's optimality conditions (module docstring): b from the primal's variable,
    or the multiplier that best fits alpha and alpha* (a free alpha_i has f_i = y_i - eps, a free alpha*_i
    f_i = y_i + eps)."""
    y, C, eps = data.y, float(params["C"]), float(params["epsilon"])
    n = len(y)
    alpha, alpha_star = values["alpha"], values["alpha_star"]
    beta = alpha - alpha_star
    extra = {}
    if kind == PRIMAL:
        w, b = values["w"], values["b"]
        f, ww, bKb, extra["stationarity"] = tube_primal_point(data, w, b, beta)
    else:
        g = data.times(beta)
        ww = bKb = max(0.0, float(beta @ g))
        h = np.concatenate([y - eps - g, y + eps - g])
        s = np.concatenate([-np.ones(n), np.ones(n)])
        b = recover_multiplier(h, s, np.concatenate([alpha, alpha_star]), C)[0]
        f = g + b
        w = data.weights(beta)
    above, below = f - y + eps, y - f + eps  # G of alpha_i (>= 0 unless y_i is above the tube), of alpha*_i
    xi, xi_star = np.maximum(0.0, -above), np.maximum(0.0, -below)
    primal = 0.5 * ww + C * float(xi.sum() + xi_star.sum())
    linear = -eps * float(alpha.sum() + alpha_star.sum()) + float(y @ beta)
    dual = -0.5 * bKb + linear
    size = tube_size(y, f, eps)
    # the objectives' terms, and at least one point's worth of the tube priced by C (every point inside the tube
    # makes P = D = 0: the gap is then measured against what one point outside it would cost)
    scale = max(abs(primal), 0.5 * bKb + abs(linear), C * size)
    feasibility, comp = box_residuals(np.concatenate([alpha, alpha_star]), C, np.concatenate([above, below]), size)
    residuals = {"dual feasibility": float(feasibility.max()),
                 # against the multipliers' sum, or the bound C where they are all near 0 (every point in the tube)
                 "balance": abs(float(beta.sum())) / max(float(alpha.sum() + alpha_star.sum()), C),
                 "complementarity": float(comp.max()), **extra}
    meaning = tube_meaning(y, f, eps, alpha, alpha_star, C)
    return Conditions(primal, dual, scale, residuals, f, beta, b=float(b), w=w, meaning=meaning, size=size)


def box_qp(data: FamilyData, params: dict) -> BoxQP:
    """The dual over (alpha, alpha*) as min 1/2 beta'K beta + eps e'(alpha + alpha*) - y'beta s.t.
    e'(alpha - alpha*) = 0, 0 <= alpha, alpha* <= C."""
    y, eps = data.y, float(params["epsilon"])
    n = len(y)
    y = y - y.mean()  # e'beta = 0 makes y'beta = (y - mean y)'beta: the same optimum, G's terms the tube's size
    return BoxQP(paired(data.gram()), np.concatenate([eps - y, eps + y]),
                 np.concatenate([np.ones(n), -np.ones(n)])[None, :], np.array([0.0]), float(params["C"]))


def tube_primal_point(data: FamilyData, w: np.ndarray, b: float, beta: np.ndarray) -> tuple:
    """f, ||w||^2, beta'K beta (as ||X'beta||^2) and the stationarity residual of w = X'beta, at a tube primal's
    (w, b) with beta = alpha - alpha*: epsilon-SVR's and nu-SVR's primal points are judged alike."""
    f = np.asarray(data.X @ w, dtype=float).ravel() + b
    w_beta = data.weights(beta)
    return f, float(w @ w), float(w_beta @ w_beta), stationarity(w, w_beta, data.X, f - b)


def tube_size(y: np.ndarray, f: np.ndarray, eps: float) -> float:
    """What the tube's conditions and errors in f are measured against: the tube's width, the largest residual
    y - f, or the spread of f itself (a fit through every point leaves both others near 0)."""
    return max(abs(eps), top(y - f), top(f - f.mean()))


def tube_meaning(y, f, eps, alpha, alpha_star, U) -> dict:
    """Where the points sit against the tube, and alpha_i alpha*_i = 0 (max min(alpha_i, alpha*_i) / U), U the
    multipliers' bound (epsilon-SVR's C, nu-SVR's C/l)."""
    size = tube_size(y, f, eps)
    distance = np.abs(y - f) - eps
    support = np.maximum(alpha, alpha_star) > AT_BOUND * U
    return {"epsilon": eps, "fraction_outside_tube": fraction(distance > AT_BOUND * size),
            "fraction_inside_tube": fraction(distance < -AT_BOUND * size), "fraction_sv": fraction(support),
            "n_sv": int(support.sum()), "alpha_alpha_star": float(np.max(np.minimum(alpha, alpha_star))) / U}
