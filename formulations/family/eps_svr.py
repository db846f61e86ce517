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

Weighted points (omega_i > 0, LIBSVM's W_i): each point's slacks are priced C omega_i, and its multipliers'
box is 0 <= alpha_i, alpha*_i <= C omega_i (LIBSVM's C_i = C W_i, not normalised: SVR's C is per point).

C = inf, the hard tube (scikit-learn's SVR(C=inf)): no slacks, every target within eps of f,

    min_{w, b}  1/2 ||w||^2   s.t.  |y_i - (w'x_i + b)| <= eps,

and the dual above without the upper bounds. It has a point only where some f of the kernel's space passes
within eps of every target (always for a strictly positive definite K, such as the rbf's on distinct points);
elsewhere the primal is infeasible and the dual unbounded.
"""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp

from formulations.family.common import (AT_BOUND, BoxQP, Conditions, FamilyData, box_residuals, cvxpy_quadratic,
                                        fraction, multipliers_meaning, paired, pyomo_quadratic, recover_multiplier,
                                        sample_weights, squared_norm, stationarity, top, zero_level)
from formulations.family.names import EPS_SVR_KERNEL_DUAL, EPS_SVR_PRIMAL, PRIMAL
from formulations.model import CvxpyModel, alpha_bounds, pyomo_alpha_bounds, linear_sum, matrix_rows, new_pyomo_model


def tube_rows(X, sign: float, eps_column: bool, slack: bool = True) -> sp.csr_matrix:
    """Rows [sign x_i', sign, (1 for eps,) (e_i')] over (w, b, (eps,) (slack)): one side of the tube (the hard
    tube's without the slack)."""
    n = X.shape[0]
    parts = [sign * sp.csr_matrix(X), sp.csr_matrix(np.full((n, 1), sign))]
    if eps_column:
        parts.append(sp.csr_matrix(np.ones((n, 1))))
    if slack:
        parts.append(sp.identity(n, format="csr"))
    return sp.hstack(parts, format="csr")


def bounds(params: dict):
    """The multipliers' bound C, C omega_i for weighted points (LIBSVM's C_i = C W_i), inf for the hard tube."""
    C, weights = float(params["C"]), sample_weights(params)
    return C if weights is None or math.isinf(C) else C * weights


def build_primal_pyomo(X, y, params) -> pyo.ConcreteModel:
    n, d = X.shape
    U, eps = bounds(params), float(params["epsilon"])
    soft = bool(np.all(np.isfinite(U)))  # C = inf: the hard tube has no slacks
    m = new_pyomo_model(EPS_SVR_PRIMAL, n, d)
    m.w = pyo.Var(m.J)
    m.b = pyo.Var()
    w = [*m.w.values(), m.b]
    if soft:
        m.xi = pyo.Var(m.I, domain=pyo.NonNegativeReals)
        m.xi_star = pyo.Var(m.I, domain=pyo.NonNegativeReals)
    up, down = ([*w, *m.xi.values()], [*w, *m.xi_star.values()]) if soft else (w, w)
    m.upper = matrix_rows(tube_rows(X, 1.0, False, soft), up, lower=y - eps)  # f_i + xi_i >= y_i - eps
    m.lower = matrix_rows(tube_rows(X, -1.0, False, soft), down, lower=-y - eps)
    slacks = linear_sum(U, m.xi) + linear_sum(U, m.xi_star) if soft else 0.0
    m.obj = pyo.Objective(expr=0.5 * squared_norm(m.w) + slacks, sense=pyo.minimize)
    return m


def build_primal_cvxpy(X, y, params) -> CvxpyModel:
    n, d = X.shape
    U, eps = bounds(params), float(params["epsilon"])
    w, b = cp.Variable(d, name="w"), cp.Variable(name="b")
    f = X @ w + b
    if not np.all(np.isfinite(U)):  # the hard tube: y_i - eps <= f_i <= y_i + eps
        upper, lower = f >= y - eps, -f >= -y - eps
        problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w)), [upper, lower])
        return CvxpyModel(EPS_SVR_PRIMAL, problem, {"w": w, "b": b}, {"upper": upper, "lower": lower})
    xi, xi_star = cp.Variable(n, name="xi", bounds=[0.0, None]), cp.Variable(n, name="xi_star", bounds=[0.0, None])
    upper = f + xi >= y - eps  # y_i - f_i <= eps + xi_i
    lower = -f + xi_star >= -y - eps  # f_i - y_i <= eps + xi*_i
    slacks = cp.sum(cp.multiply(U, xi + xi_star))  # C sum (xi_i + xi*_i), or sum C omega_i (xi_i + xi*_i)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + slacks), [upper, lower])
    return CvxpyModel(EPS_SVR_PRIMAL, problem, {"w": w, "b": b, "xi": xi, "xi_star": xi_star},
                      {"upper": upper, "lower": lower})


def build_kernel_dual_pyomo(K, y, params) -> pyo.ConcreteModel:
    n = len(y)
    U, eps = bounds(params), float(params["epsilon"])
    m = new_pyomo_model(EPS_SVR_KERNEL_DUAL, n)
    m.alpha = pyo.Var(m.I, bounds=pyomo_alpha_bounds(U))
    m.alpha_star = pyo.Var(m.I, bounds=pyomo_alpha_bounds(U))
    both = [*m.alpha.values(), *m.alpha_star.values()]
    m.balance = matrix_rows(np.concatenate([np.ones(n), -np.ones(n)])[None, :], both, lower=0.0, upper=0.0)
    m.quad = pyomo_quadratic(paired(K), both)  # beta' K beta
    m.obj = pyo.Objective(expr=-0.5 * m.quad + linear_sum(y - eps, m.alpha) + linear_sum(-y - eps, m.alpha_star),
                          sense=pyo.maximize)
    return m


def build_kernel_dual_cvxpy(K, y, params) -> CvxpyModel:
    n = len(y)
    U, eps = bounds(params), float(params["epsilon"])
    alpha = cp.Variable(n, name="alpha", bounds=alpha_bounds(U))
    alpha_star = cp.Variable(n, name="alpha_star", bounds=alpha_bounds(U))
    beta = alpha - alpha_star
    balance = cp.sum(beta) == 0
    objective = -0.5 * cvxpy_quadratic(beta, K) - eps * cp.sum(alpha + alpha_star) + y @ beta
    return CvxpyModel(EPS_SVR_KERNEL_DUAL, cp.Problem(cp.Maximize(objective), [balance]),
                      {"alpha": alpha, "alpha_star": alpha_star}, {"balance": balance}, info={"form": "dense"})


def conditions(values: dict, data: FamilyData, params: dict, kind: str) -> Conditions:
    """The point judged by epsilon-SVR's optimality conditions (module docstring): b from the primal's variable,
    or the multiplier that best fits alpha and alpha* (a free alpha_i has f_i = y_i - eps, a free alpha*_i
    f_i = y_i + eps). The hard tube (C = inf) asks every point inside the tube instead of pricing the rest."""
    y, eps = data.y, float(params["epsilon"])
    n = len(y)
    U = bounds(params)
    hard = not np.all(np.isfinite(U))
    UU = np.broadcast_to(U, (n,))
    alpha, alpha_star = values["alpha"], values["alpha_star"]
    beta = alpha - alpha_star
    extra, intervals = {}, None
    if kind == PRIMAL:
        w, b = values["w"], values["b"]
        f, ww, bKb, extra["stationarity"] = tube_primal_point(data, w, b, beta)
    else:
        g = data.times(beta)
        ww = bKb = data.quadratic(beta, g)
        h = np.concatenate([y - eps - g, y + eps - g])
        s = np.concatenate([-np.ones(n), np.ones(n)])
        b, *b_range = recover_multiplier(h, s, np.concatenate([alpha, alpha_star]), np.concatenate([UU, UU]))
        intervals = {"b": b_range}
        f = g + b
        w = data.weights(beta)
    above, below = f - y + eps, y - f + eps  # G of alpha_i (>= 0 unless y_i is above the tube), of alpha*_i
    xi, xi_star = np.maximum(0.0, -above), np.maximum(0.0, -below)
    size = tube_size(y, f, eps)
    if hard:  # no slack to price: a point outside the tube is the primal's infeasibility
        primal, reach = 0.5 * ww, 0.0
        extra["tube (hard)"] = top(np.concatenate([xi, xi_star])) / max(size, np.finfo(float).tiny)
    else:
        primal, reach = 0.5 * ww + float(np.sum(UU * (xi + xi_star))), float(np.max(UU))
    linear = -eps * float(alpha.sum() + alpha_star.sum()) + float(y @ beta)
    dual = -0.5 * bKb + linear
    # the objectives' terms, and at least one point's worth of the tube priced by its bound (every point inside
    # the tube makes P = D = 0: the gap is then measured against what one point outside it would cost)
    scale = max(abs(primal), 0.5 * abs(bKb) + abs(linear), reach * size)
    feasibility, comp = box_residuals(np.concatenate([alpha, alpha_star]), np.concatenate([UU, UU]),
                                      np.concatenate([above, below]), size)
    residuals = {"dual feasibility": float(feasibility.max()),
                 # against the multipliers' sum, or the bound where they are all near 0 (every point in the tube)
                 "balance": abs(float(beta.sum())) / max(float(alpha.sum() + alpha_star.sum()), reach,
                                                        np.finfo(float).tiny),
                 "complementarity": float(comp.max()), **extra}
    meaning = tube_meaning(y, f, eps, alpha, alpha_star, UU, sample_weights(params))
    meaning.update(multipliers_meaning({"b": b}, intervals))
    if intervals is not None:
        meaning["b_interval"] = tuple(intervals["b"])
    return Conditions(primal, dual, scale, residuals, f, beta, b=float(b), w=w, meaning=meaning, size=size)


def box_qp(data: FamilyData, params: dict) -> BoxQP:
    """The dual over (alpha, alpha*) as min 1/2 beta'K beta + eps e'(alpha + alpha*) - y'beta s.t.
    e'(alpha - alpha*) = 0, 0 <= alpha, alpha* <= C (C omega_i; no upper bound for the hard tube)."""
    y, eps = data.y, float(params["epsilon"])
    n = len(y)
    y = y - y.mean()  # e'beta = 0 makes y'beta = (y - mean y)'beta: the same optimum, G's terms the tube's size
    U = bounds(params)
    return BoxQP(paired(data.gram()), np.concatenate([eps - y, eps + y]),
                 np.concatenate([np.ones(n), -np.ones(n)])[None, :], np.array([0.0]),
                 U if np.ndim(U) == 0 else np.concatenate([U, U]))


def proof_start(values: dict) -> np.ndarray:
    """The point the proof starts from: (alpha, alpha*) replaced by the positive and negative parts of beta. It
    keeps beta (so f and the balance) and lowers the objective by 2 eps min(alpha_i, alpha*_i); at the optimum
    one of the two is 0, and an interior point's pair, both far from 0 (both near C/2 at a large C), would
    otherwise suggest both at a bound."""
    beta = values["alpha"] - values["alpha_star"]
    return np.concatenate([np.maximum(beta, 0.0), np.maximum(-beta, 0.0)])


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


def tube_meaning(y, f, eps, alpha, alpha_star, U, weights=None) -> dict:
    """Where the points sit against the tube, and alpha_i alpha*_i = 0 (max min(alpha_i, alpha*_i) / U_i, or
    / max(alpha, alpha*) without an upper bound), U the multipliers' bound per point (epsilon-SVR's C, nu-SVR's
    C/l; times omega_i for weighted points); the shares weighted where the points are."""
    size = tube_size(y, f, eps)
    distance = np.abs(y - f) - eps
    U = np.broadcast_to(np.asarray(U, dtype=float), np.shape(alpha))
    if not np.all(np.isfinite(U)):  # the hard tube: measured against the largest multiplier
        U = np.full(np.shape(alpha), max(top(alpha), top(alpha_star), np.finfo(float).tiny))
    support = np.maximum(alpha, alpha_star) > zero_level(np.concatenate([alpha, alpha_star]), U)
    return {"epsilon": eps, "fraction_outside_tube": fraction(distance > AT_BOUND * size, weights),
            "fraction_inside_tube": fraction(distance < -AT_BOUND * size, weights),
            "fraction_sv": fraction(support, weights), "n_sv": int(support.sum()),
            "alpha_alpha_star": float(np.max(np.minimum(alpha, alpha_star) / U))}
