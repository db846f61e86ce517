r"""The one-class SVM (Scholkopf, Platt, Shawe-Taylor, Smola and Williamson 2001): a region holding most of the
data, with no labels.

Primal for the linear kernel, l points x_i and 0 < nu <= 1:

    min_{w, rho, xi}  1/2 ||w||^2 + 1/(nu l) sum_i xi_i - rho
    s.t.              w'x_i >= rho - xi_i                    [margin, multipliers alpha_i]
                      xi_i >= 0

Its dual (stationarity in w: w = sum_i alpha_i x_i; in rho: sum_i alpha_i = 1; in xi: alpha_i <= 1/(nu l)):

    max_alpha  -1/2 sum_i sum_j alpha_i alpha_j K_ij
    s.t.       sum_i alpha_i = 1                            [total, multiplier -rho]
               0 <= alpha_i <= 1/(nu l)

a QP over a simplex cut by the box, feasible exactly for nu <= 1. rho, the primal's offset, is the multiplier
of the dual's one equality: f(x) = sum_i alpha_i k(x_i, x) - rho, and f(x_i) < 0 marks an outlier.

The nu-property: fraction of outliers <= nu <= fraction of support vectors.

Weighted points (omega_i > 0, W = sum_i omega_i; LIBSVM's W_i): the slacks are priced 1/(nu W) omega_i each and
the box is 0 <= alpha_i <= omega_i / (nu W) (unit weights: 1/(nu l)); the nu-property bounds the weighted shares.
LIBSVM's box is 0 <= a_i <= W_i with sum a_i = nu W: these alpha times nu W.

LIBSVM solves the dual scaled by nu l (0 <= alpha_i <= 1, sum alpha_i = nu l), so its alpha, rho and decision
values are nu l times these: scikit-learn's OneClassSVM.decision_function is nu l f(x) (docs/family.md).
"""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp

from formulations.family.common import (AT_BOUND, BoxQP, Conditions, FamilyData, box_residuals, cvxpy_quadratic,
                                        fraction, multipliers_meaning, point_bounds, pyomo_quadratic,
                                        recover_multiplier, sample_weights, squared_norm, stationarity, zero_level)
from formulations.family.names import ONE_CLASS_KERNEL_DUAL, ONE_CLASS_PRIMAL, PRIMAL
from formulations.model import CvxpyModel, alpha_bounds, pyomo_alpha_bounds, linear_sum, matrix_rows, new_pyomo_model

_TINY = np.finfo(float).tiny


#: what a proved optimum with w* = 0 means (solvers.family): nothing to measure the residuals against
DEGENERATE = ("degenerate optimum w* = 0, rho* = 0: the origin lies in the data's reduced convex hull (weights at "
              "most 1/(nu l)), so no region is separated from it; move the data away from the origin (the linear "
              "one-class SVM separates them from it) or use a kernel whose Gram matrix is positive definite (rbf)")


def build_primal_pyomo(X, y, params) -> pyo.ConcreteModel:
    n, d = X.shape
    weight = point_bounds(params, n, 1.0 / float(params["nu"]))  # each slack's price: 1/(nu l), omega_i/(nu W)
    m = new_pyomo_model(ONE_CLASS_PRIMAL, n, d)
    m.w = pyo.Var(m.J)
    m.rho = pyo.Var()
    m.xi = pyo.Var(m.I, domain=pyo.NonNegativeReals)
    rows = sp.hstack([sp.csr_matrix(X), sp.csr_matrix(-np.ones((n, 1))), sp.identity(n, format="csr")], format="csr")
    m.margin = matrix_rows(rows, [*m.w.values(), m.rho, *m.xi.values()], lower=0.0)  # w'x_i - rho + xi_i >= 0
    m.obj = pyo.Objective(expr=0.5 * squared_norm(m.w) + linear_sum(weight, m.xi) - m.rho, sense=pyo.minimize)
    return m


def build_primal_cvxpy(X, y, params) -> CvxpyModel:
    n, d = X.shape
    weight = point_bounds(params, n, 1.0 / float(params["nu"]))
    w, rho = cp.Variable(d, name="w"), cp.Variable(name="rho")
    xi = cp.Variable(n, name="xi", bounds=[0.0, None])
    margin = X @ w - rho + xi >= 0
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + cp.sum(cp.multiply(weight, xi)) - rho), [margin])
    return CvxpyModel(ONE_CLASS_PRIMAL, problem, {"w": w, "rho": rho, "xi": xi}, {"margin": margin})


def build_kernel_dual_pyomo(K, y, params) -> pyo.ConcreteModel:
    n = K.shape[0]
    m = new_pyomo_model(ONE_CLASS_KERNEL_DUAL, n)
    m.alpha = pyo.Var(m.I, bounds=pyomo_alpha_bounds(point_bounds(params, n, 1.0 / float(params["nu"]))))
    m.total = matrix_rows(np.ones((1, n)), m.alpha, lower=1.0, upper=1.0)
    m.quad = pyomo_quadratic(K, m.alpha)
    m.obj = pyo.Objective(expr=-0.5 * m.quad, sense=pyo.maximize)
    return m


def build_kernel_dual_cvxpy(K, y, params) -> CvxpyModel:
    n = K.shape[0]
    alpha = cp.Variable(n, name="alpha", bounds=alpha_bounds(point_bounds(params, n, 1.0 / float(params["nu"]))))
    total = cp.sum(alpha) == 1.0
    problem = cp.Problem(cp.Maximize(-0.5 * cvxpy_quadratic(alpha, K)), [total])
    return CvxpyModel(ONE_CLASS_KERNEL_DUAL, problem, {"alpha": alpha}, {"total": total}, info={"form": "dense"})


def conditions(values: dict, data: FamilyData, params: dict, kind: str) -> Conditions:
    """The point judged by the one-class SVM's optimality conditions (module docstring): rho from the primal's
    variable, or the multiplier that best fits alpha (every alpha_i in (0, U) has sum_j alpha_j K_ij = rho)."""
    nu, n = float(params["nu"]), data.n
    U = point_bounds(params, n, 1.0 / nu)
    weights = sample_weights(params)
    alpha = values["alpha"]
    extra, intervals = {}, None
    if kind == PRIMAL:
        w, rho = values["w"], values["rho"]
        g = np.asarray(data.X @ w, dtype=float).ravel()
        ww = float(w @ w)
        w_alpha = data.weights(alpha)
        dual = -0.5 * float(w_alpha @ w_alpha)
        extra["stationarity"] = stationarity(w, w_alpha, data.X, g - rho, data.floor)
    else:
        g = data.times(alpha)
        ww = data.quadratic(alpha, g)
        rho, *rho_range = recover_multiplier(g, np.ones(n), alpha, U)
        intervals = {"rho": rho_range}
        w = data.weights(alpha)
        dual = -0.5 * ww
    f = g - rho
    xi = np.maximum(0.0, -f)
    slacks = float(np.sum(U * xi))  # 1/(nu l) sum xi_i, or 1/(nu W) sum omega_i xi_i
    primal = 0.5 * ww + slacks - rho
    scale = max(0.5 * abs(ww) + slacks + abs(rho), data.floor)  # rho's size where rho ~ f
    # f's own spread, not rho's size: rho is an offset, and where K is nearly constant (x 1e-3 data, K_ij ~ 1) the
    # whole decision function lives in a spread far below rho; errors of f and of sum alpha = 1 are measured on it
    size = max(float(np.ptp(g)) if g.size else 0.0, data.floor)
    feasibility, comp = box_residuals(alpha, U, f, size)
    total = abs(float(alpha.sum()) - 1.0) * data.max_diagonal() / max(size, _TINY)  # how far it moves f
    residuals = {"dual feasibility": float(feasibility.max()), "total": total,
                 "complementarity": float(comp.max()), **extra}
    outliers = f < -AT_BOUND * size
    support = alpha > zero_level(alpha, U)
    shares = fraction(outliers, weights), fraction(support, weights)
    meaning = {"rho": float(rho), "fraction_outliers": shares[0], "fraction_sv": shares[1],
               "n_sv": int(support.sum()), "n_outliers": int(outliers.sum()),
               "nu_bounds_hold": bool(shares[0] <= nu <= shares[1]),
               "distance_from_origin": rho / math.sqrt(ww) if ww > 0 else math.inf,
               **multipliers_meaning({"rho": rho}, intervals)}
    if intervals is not None:
        meaning["rho_interval"] = tuple(intervals["rho"])
    return Conditions(primal, dual, scale, residuals, f, alpha.copy(), b=-float(rho), w=w, meaning=meaning,
                      size=size)


def box_qp(data: FamilyData, params: dict) -> BoxQP:
    """The dual as min 1/2 alpha'K alpha s.t. e'alpha = 1, 0 <= alpha <= 1/(nu l) (omega_i / (nu W))."""
    n = data.n
    return BoxQP(data.gram(), np.zeros(n), np.ones((1, n)), np.array([1.0]),
                 point_bounds(params, n, 1.0 / float(params["nu"])))
