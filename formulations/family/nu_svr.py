r"""nu-SVR (Scholkopf, Smola, Williamson and Bartlett 2000; the equality form of Chang and Lin 2002, LIBSVM's):
epsilon-SVR whose tube width eps is a variable, priced by C nu.

Primal, l points (x_i, y_i), y_i real, C > 0, 0 < nu <= 1:

    min_{w, b, eps, xi, xi*}  1/2 ||w||^2 + C (nu eps + 1/l sum_i (xi_i + xi*_i))
    s.t.                      y_i - (w'x_i + b) <= eps + xi_i      [upper, multipliers alpha_i]
                              (w'x_i + b) - y_i <= eps + xi*_i     [lower, multipliers alpha*_i]
                              xi_i, xi*_i >= 0

Its dual, beta = alpha - alpha* (stationarity in w: w = sum_i beta_i x_i; in b: sum_i beta_i = 0; in eps:
sum_i (alpha_i + alpha*_i) = C nu):

    max_{alpha, alpha*}  -1/2 sum_i sum_j beta_i beta_j K_ij + sum_i y_i beta_i
    s.t.                 sum_i (alpha_i - alpha*_i) = 0           [balance, multiplier b]
                         sum_i (alpha_i + alpha*_i) = C nu        [total, multiplier eps]
                         0 <= alpha_i, alpha*_i <= C/l

(Scholkopf et al. keep eps >= 0 and sum (alpha + alpha*) <= C nu; for nu <= 1 the optimum has eps >= 0 either
way, and the equality is LIBSVM's.) The nu-property: fraction of points outside the tube <= nu <= fraction of
support vectors.

LIBSVM takes its C as this C/l: scikit-learn's NuSVR(C=c, nu) is this problem with C = c l, and then has these
alpha, b and f (docs/family.md).

Weighted points (omega_i > 0, W = sum_i omega_i; LIBSVM's W_i): the slacks' average becomes their weighted
average, C/W sum_i omega_i (xi_i + xi*_i), and the box 0 <= alpha_i, alpha*_i <= C omega_i / W; the nu-property
bounds the weighted shares. LIBSVM's box is c W_i with sum (a + a*) = c nu W: this problem with C = c W.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo

from formulations.family.common import (BoxQP, Conditions, FamilyData, box_residuals, cvxpy_quadratic,
                                        multipliers_meaning, paired, point_bounds, pyomo_quadratic, recover_multiplier,
                                        sample_weights, squared_norm)
from formulations.family.eps_svr import tube_meaning, tube_primal_point, tube_rows, tube_size
from formulations.family.names import NU_SVR_KERNEL_DUAL, NU_SVR_PRIMAL, PRIMAL
from formulations.model import CvxpyModel, alpha_bounds, pyomo_alpha_bounds, linear_sum, matrix_rows, new_pyomo_model


def build_primal_pyomo(X, y, params) -> pyo.ConcreteModel:
    n, d = X.shape
    C, nu = float(params["C"]), float(params["nu"])
    m = new_pyomo_model(NU_SVR_PRIMAL, n, d)
    m.w = pyo.Var(m.J)
    m.b = pyo.Var()
    m.eps = pyo.Var()
    m.xi = pyo.Var(m.I, domain=pyo.NonNegativeReals)
    m.xi_star = pyo.Var(m.I, domain=pyo.NonNegativeReals)
    head = [*m.w.values(), m.b, m.eps]
    m.upper = matrix_rows(tube_rows(X, 1.0, True), [*head, *m.xi.values()], lower=y)  # f_i + eps + xi_i >= y_i
    m.lower = matrix_rows(tube_rows(X, -1.0, True), [*head, *m.xi_star.values()], lower=-y)
    U = point_bounds(params, n, C)  # each slack's price: C/l, or C omega_i / W
    m.obj = pyo.Objective(expr=0.5 * squared_norm(m.w) + C * nu * m.eps + linear_sum(U, m.xi)
                          + linear_sum(U, m.xi_star), sense=pyo.minimize)
    return m


def build_primal_cvxpy(X, y, params) -> CvxpyModel:
    n, d = X.shape
    C, nu = float(params["C"]), float(params["nu"])
    w, b, eps = cp.Variable(d, name="w"), cp.Variable(name="b"), cp.Variable(name="eps")
    xi, xi_star = cp.Variable(n, name="xi", bounds=[0.0, None]), cp.Variable(n, name="xi_star", bounds=[0.0, None])
    f = X @ w + b
    upper = f + eps + xi >= y  # y_i - f_i <= eps + xi_i
    lower = -f + eps + xi_star >= -y  # f_i - y_i <= eps + xi*_i
    slacks = cp.sum(cp.multiply(point_bounds(params, n, C), xi + xi_star))  # C/l sum, or C/W sum omega_i (...)
    objective = 0.5 * cp.sum_squares(w) + C * nu * eps + slacks
    return CvxpyModel(NU_SVR_PRIMAL, cp.Problem(cp.Minimize(objective), [upper, lower]),
                      {"w": w, "b": b, "eps": eps, "xi": xi, "xi_star": xi_star}, {"upper": upper, "lower": lower})


def build_kernel_dual_pyomo(K, y, params) -> pyo.ConcreteModel:
    n = len(y)
    C, nu = float(params["C"]), float(params["nu"])
    m = new_pyomo_model(NU_SVR_KERNEL_DUAL, n)
    m.alpha = pyo.Var(m.I, bounds=pyomo_alpha_bounds(point_bounds(params, n, C)))
    m.alpha_star = pyo.Var(m.I, bounds=pyomo_alpha_bounds(point_bounds(params, n, C)))
    both = [*m.alpha.values(), *m.alpha_star.values()]
    m.balance = matrix_rows(np.concatenate([np.ones(n), -np.ones(n)])[None, :], both, lower=0.0, upper=0.0)
    m.total = matrix_rows(np.ones((1, 2 * n)), both, lower=C * nu, upper=C * nu)
    m.quad = pyomo_quadratic(paired(K), both)
    m.obj = pyo.Objective(expr=-0.5 * m.quad + linear_sum(y, m.alpha) - linear_sum(y, m.alpha_star),
                          sense=pyo.maximize)
    return m


def build_kernel_dual_cvxpy(K, y, params) -> CvxpyModel:
    n = len(y)
    C, nu = float(params["C"]), float(params["nu"])
    alpha = cp.Variable(n, name="alpha", bounds=alpha_bounds(point_bounds(params, n, C)))
    alpha_star = cp.Variable(n, name="alpha_star", bounds=alpha_bounds(point_bounds(params, n, C)))
    beta = alpha - alpha_star
    balance = cp.sum(beta) == 0
    total = cp.sum(alpha + alpha_star) == C * nu
    objective = -0.5 * cvxpy_quadratic(beta, K) + y @ beta
    return CvxpyModel(NU_SVR_KERNEL_DUAL, cp.Problem(cp.Maximize(objective), [balance, total]),
                      {"alpha": alpha, "alpha_star": alpha_star}, {"balance": balance, "total": total},
                      info={"form": "dense"})


def conditions(values: dict, data: FamilyData, params: dict, kind: str) -> Conditions:
    """The point judged by nu-SVR's optimality conditions (module docstring): b and eps from the primal's
    variables, or from the multipliers that best fit alpha (t = b + eps) and alpha* (t = b - eps)."""
    y, C, nu = data.y, float(params["C"]), float(params["nu"])
    n = len(y)
    U = point_bounds(params, n, C)
    alpha, alpha_star = values["alpha"], values["alpha_star"]
    beta = alpha - alpha_star
    extra, intervals = {}, None
    if kind == PRIMAL:
        w, b, eps = values["w"], values["b"], values["eps"]
        f, ww, bKb, extra["stationarity"] = tube_primal_point(data, w, b, beta)
    else:
        g = data.times(beta)
        ww = bKb = data.quadratic(beta, g)
        up, *up_range = recover_multiplier(y - g, -np.ones(n), alpha, U)  # b + eps
        down, *down_range = recover_multiplier(y - g, np.ones(n), alpha_star, U)  # b - eps
        b, eps = 0.5 * (up + down), 0.5 * (up - down)
        intervals = {"b + eps": up_range, "b - eps": down_range}
        f = g + b
        w = data.weights(beta)
    above, below = f - y + eps, y - f + eps
    xi, xi_star = np.maximum(0.0, -above), np.maximum(0.0, -below)
    slacks = float(np.sum(U * (xi + xi_star)))  # C/l sum (xi_i + xi*_i), or C/W sum omega_i (xi_i + xi*_i)
    primal = 0.5 * ww + C * nu * eps + slacks
    dual = -0.5 * bKb + float(y @ beta)
    size = tube_size(y, f, eps)
    # the objectives' terms, and at least what one point a tube's size outside it would cost (eps_svr's reason)
    scale = max(0.5 * abs(ww) + C * nu * abs(eps) + slacks, 0.5 * abs(bKb) + abs(float(y @ beta)),
                float(np.max(U)) * size)
    UU = np.broadcast_to(U, (n,))
    feasibility, comp = box_residuals(np.concatenate([alpha, alpha_star]), np.concatenate([UU, UU]),
                                      np.concatenate([above, below]), size)
    both = float(alpha.sum() + alpha_star.sum())
    residuals = {"dual feasibility": float(feasibility.max()),
                 "balance": abs(float(beta.sum())) / max(both, np.finfo(float).tiny),
                 "total": abs(both - C * nu) / (C * nu), "complementarity": float(comp.max()), **extra}
    meaning = tube_meaning(y, f, float(eps), alpha, alpha_star, U, sample_weights(params))
    meaning.update(multipliers_meaning({"b + eps": b + eps, "b - eps": b - eps}, intervals))
    if intervals is not None:  # the rectangle of (b + eps, b - eps) projected: b and eps are not independent in it
        (lo_u, hi_u), (lo_d, hi_d) = up_range, down_range
        meaning["b_interval"] = (0.5 * (lo_u + lo_d), 0.5 * (hi_u + hi_d))
        meaning["epsilon_interval"] = (0.5 * (lo_u - hi_d), 0.5 * (hi_u - lo_d))
    meaning["nu_bounds_hold"] = bool(meaning["fraction_outside_tube"] <= nu <= meaning["fraction_sv"])
    return Conditions(primal, dual, scale, residuals, f, beta, b=float(b), w=w, meaning=meaning, size=size)


def box_qp(data: FamilyData, params: dict) -> BoxQP:
    """The dual over (alpha, alpha*) as min 1/2 beta'K beta - y'beta s.t. e'(alpha - alpha*) = 0,
    e'(alpha + alpha*) = C nu, 0 <= alpha, alpha* <= C/l (C omega_i / W)."""
    y, C, nu = data.y, float(params["C"]), float(params["nu"])
    n = len(y)
    y = y - y.mean()  # e'beta = 0 makes y'beta = (y - mean y)'beta: the same optimum, G's terms the tube's size
    A = np.vstack([np.concatenate([np.ones(n), -np.ones(n)]), np.ones(2 * n)])
    U = point_bounds(params, n, C)
    return BoxQP(paired(data.gram()), np.concatenate([-y, y]), A, np.array([0.0, C * nu]),
                 U if np.ndim(U) == 0 else np.concatenate([U, U]))
