r"""nu-SVC (Scholkopf, Smola, Williamson and Bartlett 2000; the equality form of Chang and Lin 2001, LIBSVM's).

Primal, in the notes' notation with l points (x_i, y_i), y_i in {-1, +1}, and 0 < nu <= 1:

    min_{w, b, rho, xi}  1/2 ||w||^2 - nu rho + 1/l sum_i xi_i
    s.t.                 y_i (w'x_i + b) >= rho - xi_i       [margin, multipliers alpha_i]
                         xi_i >= 0

rho is the margin the data must keep (the C-SVM fixes it at 1 and prices the slacks by C instead). Its dual
(stationarity in w: w = sum_i alpha_i y_i x_i; in b: sum_i alpha_i y_i = 0; in rho: sum_i alpha_i = nu; in xi:
alpha_i <= 1/l):

    max_alpha  -1/2 sum_i sum_j alpha_i alpha_j y_i y_j K_ij
    s.t.       sum_i alpha_i y_i = 0                        [balance, multiplier b]
               sum_i alpha_i = nu                           [total, multiplier -rho]
               0 <= alpha_i <= 1/l

(Scholkopf et al. keep rho >= 0 and sum alpha_i >= nu; Chang and Lin show the equality gives the same solution
wherever the dual is feasible, nu <= 2 min(l_+, l_-)/l.) The linear dual lifts w = X'(y * alpha) as the C-SVM's
`dual` does (no l x l matrix); the kernel dual holds Q = Y K Y.

The nu-property: at the optimum alpha_i = 1/l on every margin error (y_i f_i < rho) and sum alpha_i = nu, so
    fraction of margin errors <= nu <= fraction of support vectors.

Weighted points (weights omega_i > 0, W = sum_i omega_i; LIBSVM's W_i): the slacks' average becomes their
weighted average, 1/W sum_i omega_i xi_i, and the dual's box 0 <= alpha_i <= omega_i / W (unit weights: 1/l).
The nu-property then bounds the weighted shares (sum of omega_i over the margin errors, over the support vectors,
divided by W), and the dual is feasible for nu <= 2 min(W_+, W_-)/W. LIBSVM's box is 0 <= a_i <= W_i with
sum a_i = nu W: these alpha times W.

LIBSVM solves the same dual scaled by l (0 <= alpha_i <= 1, sum alpha_i = nu l) and divides its decision
function by rho: scikit-learn's NuSVC.decision_function is f(x)/rho (docs/family.md).
"""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp

from formulations.family.common import (AT_BOUND, BoxQP, Conditions, FamilyData, box_residuals, cvxpy_quadratic,
                                        fraction, multipliers_meaning, point_bounds, pyomo_quadratic,
                                        recover_multiplier, sample_weights, squared_norm, stationarity, top, zero_level)
from formulations.family.names import NU_SVC_KERNEL_DUAL, NU_SVC_LINEAR_DUAL, NU_SVC_PRIMAL, PRIMAL
from formulations.model import (CvxpyModel, alpha_bounds, lifted_rows, linear_sum, matrix_rows, new_pyomo_model,
                                pyomo_alpha_bounds, signed)
from formulations.kernel_dual import dual_matrix


#: what a proved optimum with w* = 0 means (solvers.family): nothing to measure the residuals against
DEGENERATE = ("degenerate optimum w* = 0, rho* = 0 (the trivial classifier): the classes' reduced convex hulls "
              "(weights at most 1/l, nu/2 per class) meet for this nu, so no margin exists; choose a larger nu or a "
              "kernel that separates the classes")


def _margin_rows(X, y) -> sp.csr_matrix:
    """Rows [y_i x_i', y_i, -1, e_i'] over (w, b, rho, xi): y_i (w'x_i + b) - rho + xi_i >= 0."""
    n = len(y)
    return sp.hstack([sp.csr_matrix(signed(y, X)), sp.csr_matrix(y[:, None]), sp.csr_matrix(-np.ones((n, 1))),
                      sp.identity(n, format="csr")], format="csr")


def build_primal_pyomo(X, y, params) -> pyo.ConcreteModel:
    n, d = X.shape
    nu = float(params["nu"])
    U = point_bounds(params, n, 1.0)  # each slack's price: 1/l, or omega_i / W
    m = new_pyomo_model(NU_SVC_PRIMAL, n, d)
    m.w = pyo.Var(m.J)
    m.b = pyo.Var()
    m.rho = pyo.Var()
    m.xi = pyo.Var(m.I, domain=pyo.NonNegativeReals)
    m.margin = matrix_rows(_margin_rows(X, y), [*m.w.values(), m.b, m.rho, *m.xi.values()], lower=0.0)
    m.obj = pyo.Objective(expr=0.5 * squared_norm(m.w) - nu * m.rho + linear_sum(U, m.xi), sense=pyo.minimize)
    return m


def build_primal_cvxpy(X, y, params) -> CvxpyModel:
    n, d = X.shape
    nu = float(params["nu"])
    w, b, rho = cp.Variable(d, name="w"), cp.Variable(name="b"), cp.Variable(name="rho")
    xi = cp.Variable(n, name="xi", bounds=[0.0, None])
    margin = signed(y, X) @ w + y * b - rho + xi >= 0  # y_i (w'x_i + b) >= rho - xi_i
    slacks = cp.sum(cp.multiply(point_bounds(params, n, 1.0), xi))  # 1/l sum xi_i, or 1/W sum omega_i xi_i
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) - nu * rho + slacks), [margin])
    return CvxpyModel(NU_SVC_PRIMAL, problem, {"w": w, "b": b, "rho": rho, "xi": xi}, {"margin": margin})


def build_linear_dual_pyomo(X, y, params) -> pyo.ConcreteModel:
    n, d = X.shape
    m = new_pyomo_model(NU_SVC_LINEAR_DUAL, n, d)
    m.alpha = pyo.Var(m.I, bounds=pyomo_alpha_bounds(point_bounds(params, n, 1.0)))
    m.w = pyo.Var(m.J)
    alpha = list(m.alpha.values())
    m.lift = matrix_rows(lifted_rows(y, X), [*alpha, *m.w.values()], lower=0.0, upper=0.0)  # w = X'(y * alpha)
    m.balance = matrix_rows(y[None, :], alpha, lower=0.0, upper=0.0)
    m.total = matrix_rows(np.ones((1, n)), alpha, lower=float(params["nu"]), upper=float(params["nu"]))
    m.obj = pyo.Objective(expr=-0.5 * squared_norm(m.w), sense=pyo.maximize)
    return m


def build_linear_dual_cvxpy(X, y, params) -> CvxpyModel:
    n, d = X.shape
    alpha = cp.Variable(n, name="alpha", bounds=alpha_bounds(point_bounds(params, n, 1.0)))
    w = cp.Variable(d, name="w")
    lift = w == signed(y, X).T @ alpha
    balance = y @ alpha == 0
    total = cp.sum(alpha) == float(params["nu"])
    problem = cp.Problem(cp.Maximize(-0.5 * cp.sum_squares(w)), [lift, balance, total])
    return CvxpyModel(NU_SVC_LINEAR_DUAL, problem, {"alpha": alpha, "w": w},
                      {"lift": lift, "balance": balance, "total": total})


def build_kernel_dual_pyomo(K, y, params) -> pyo.ConcreteModel:
    n = len(y)
    m = new_pyomo_model(NU_SVC_KERNEL_DUAL, n)
    m.alpha = pyo.Var(m.I, bounds=pyomo_alpha_bounds(point_bounds(params, n, 1.0)))
    m.balance = matrix_rows(y[None, :], m.alpha, lower=0.0, upper=0.0)
    m.total = matrix_rows(np.ones((1, n)), m.alpha, lower=float(params["nu"]), upper=float(params["nu"]))
    m.quad = pyomo_quadratic(dual_matrix(K, y), m.alpha)  # alpha' Y K Y alpha
    m.obj = pyo.Objective(expr=-0.5 * m.quad, sense=pyo.maximize)
    return m


def build_kernel_dual_cvxpy(K, y, params) -> CvxpyModel:
    n = len(y)
    alpha = cp.Variable(n, name="alpha", bounds=alpha_bounds(point_bounds(params, n, 1.0)))
    balance = y @ alpha == 0
    total = cp.sum(alpha) == float(params["nu"])
    problem = cp.Problem(cp.Maximize(-0.5 * cvxpy_quadratic(alpha, dual_matrix(K, y))), [balance, total])
    return CvxpyModel(NU_SVC_KERNEL_DUAL, problem, {"alpha": alpha}, {"balance": balance, "total": total},
                      info={"form": "dense"})


def conditions(values: dict, data: FamilyData, params: dict, kind: str) -> Conditions:
    """The point judged by nu-SVC's optimality conditions (module docstring): alpha from the dual's variables or
    the primal's margin multipliers; w, b, rho from the primal's variables, or from alpha (w = X'(y alpha), b and
    rho from the two classes' multipliers t_+ = rho - b, t_- = rho + b)."""
    y, nu = data.y, float(params["nu"])
    n = len(y)
    U = point_bounds(params, n, 1.0)
    weights = sample_weights(params)
    alpha = values["alpha"]
    u = y * alpha
    extra, intervals = {}, None
    if kind == PRIMAL:
        w, b, rho = values["w"], values["b"], values["rho"]
        f = np.asarray(data.X @ w, dtype=float).ravel() + b
        ww = float(w @ w)
        w_alpha = data.weights(u)
        dual = -0.5 * float(w_alpha @ w_alpha)
        extra["stationarity"] = stationarity(w, w_alpha, data.X, f, data.floor)
    else:
        g = data.times(u)
        ww = data.quadratic(u, g)
        pos, neg = y > 0, y < 0
        t_pos, lo_pos, hi_pos = recover_multiplier(g[pos], np.ones(pos.sum()), alpha[pos], _part(U, pos))
        t_neg, lo_neg, hi_neg = recover_multiplier(-g[neg], np.ones(neg.sum()), alpha[neg], _part(U, neg))
        rho, b = 0.5 * (t_pos + t_neg), 0.5 * (t_neg - t_pos)
        intervals = {"rho - b": (lo_pos, hi_pos), "rho + b": (lo_neg, hi_neg)}
        f = g + b
        w = data.weights(u)
        dual = -0.5 * ww
    margin = y * f - rho  # G_i: y_i f_i - rho, in the margin's units
    xi = np.maximum(0.0, -margin)
    slacks = float(np.sum(U * xi))  # 1/l sum xi_i, or 1/W sum omega_i xi_i
    primal = 0.5 * ww - nu * rho + slacks
    size = max(abs(rho), top(f), data.floor)
    scale = max(0.5 * abs(ww) + nu * abs(rho) + slacks, nu * data.floor)  # nu rho's size where rho ~ f
    feasibility, comp = box_residuals(alpha, U, margin, size)
    residuals = {
        "dual feasibility": float(feasibility.max()),
        "balance": abs(float(y @ alpha)) / max(float(np.abs(alpha).sum()), np.finfo(float).tiny),
        "total": abs(float(alpha.sum()) - nu) / nu,
        "complementarity": float(comp.max()),
        **extra,
    }
    errors = margin < -AT_BOUND * size
    support = alpha > zero_level(alpha, U)
    shares = fraction(errors, weights), fraction(support, weights)
    meaning = {"rho": float(rho), "fraction_margin_errors": shares[0], "fraction_sv": shares[1],
               "n_sv": int(support.sum()), "n_margin_errors": int(errors.sum()),
               "nu_bounds_hold": bool(shares[0] <= nu <= shares[1]),
               "margin": 2.0 * rho / math.sqrt(ww) if ww > 0 else math.inf,
               **multipliers_meaning({"rho - b": rho - b, "rho + b": rho + b}, intervals)}
    if intervals is not None:  # the rectangle of (rho - b, rho + b) projected
        meaning["rho_interval"] = (0.5 * (lo_pos + lo_neg), 0.5 * (hi_pos + hi_neg))
        meaning["b_interval"] = (0.5 * (lo_neg - hi_pos), 0.5 * (hi_neg - lo_pos))
    return Conditions(primal, dual, scale, residuals, f, u, b=float(b), w=w, meaning=meaning,
                      size=size)


def box_qp(data: FamilyData, params: dict) -> BoxQP:
    """The dual as min 1/2 alpha' Y K Y alpha s.t. y'alpha = 0, e'alpha = nu, 0 <= alpha <= 1/l (omega_i / W)."""
    y = data.y
    n = len(y)
    return BoxQP(dual_matrix(data.gram(), y), np.zeros(n), np.vstack([y, np.ones(n)]),
                 np.array([0.0, float(params["nu"])]), point_bounds(params, n, 1.0))


def _part(U, mask: np.ndarray):
    """The bounds of the points in `mask`: U itself where it is one number."""
    return U[mask] if np.ndim(U) else U
