r"""L2-loss (squared hinge) SVM: LIBLINEAR's default loss, primal and dual (notes' notation, 001 (8) with xi_i^2).

Primal (`intercept=True`: a free bias b, as the lecture notes' C-SVM; `intercept=False`: no b, as LIBLINEAR
without -B; LIBLINEAR's regularized bias is the second with a constant feature appended to X):

    min_{w, b, xi}  1/2 ||w||^2 + C sum_i xi_i^2
    s.t.            y_i (w' x_i + b) >= 1 - xi_i            i = 1..l   [margin, multipliers alpha_i]

No xi_i >= 0: at the optimum xi_i = max(0, 1 - y_i f(x_i)) anyway (a negative xi_i only adds xi_i^2), and
without the bound the dual loses its upper bound on alpha. Lagrangian stationarity:

    w = sum_i alpha_i y_i x_i,    sum_i alpha_i y_i = 0 (with b),    2 C xi_i = alpha_i   (the multipliers' meaning)

Dual (LIBLINEAR's "Q + D, D_ii = 1/(2C)": the hinge's box 0 <= alpha <= C becomes alpha >= 0 and the
Hessian gains I/(2C)):

    max_{alpha}  sum_i alpha_i - 1/2 || sum_i alpha_i y_i x_i ||^2 - 1/(4C) sum_i alpha_i^2
    s.t.         sum_i alpha_i y_i = 0                           [balance, multiplier b; only with intercept]
                 alpha_i >= 0

written, like formulations.dual, with the lifted w = sum_i alpha_i y_i x_i [lift]: l + d variables and an
l x d matrix, never the l x l matrix X X'.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp

from formulations.model import CvxpyModel, lifted_rows, linear_sum, matrix_rows, new_pyomo_model, signed

PRIMAL = "squared_hinge_primal"
DUAL = "squared_hinge_dual"


def build_primal_pyomo(X, y: np.ndarray, C: float, intercept: bool = True) -> pyo.ConcreteModel:
    n, d = X.shape
    m = new_pyomo_model(PRIMAL, n, d)
    m.C = float(C)
    m.w = pyo.Var(m.J)
    m.xi = pyo.Var(m.I)  # free: see the module docstring
    columns = [sp.csr_matrix(signed(y, X))]
    variables = list(m.w.values())
    if intercept:
        m.b = pyo.Var()
        columns.append(sp.csr_matrix(y[:, None]))
        variables.append(m.b)
    rows = sp.hstack([*columns, sp.identity(n, format="csr")], format="csr")  # [Y X, y, I] (w, b, xi) >= 1
    m.margin = matrix_rows(rows, [*variables, *m.xi.values()], lower=1.0)
    m.obj = pyo.Objective(expr=0.5 * pyo.quicksum(m.w[j] ** 2 for j in m.J)
                          + float(C) * pyo.quicksum(m.xi[i] ** 2 for i in m.I), sense=pyo.minimize)
    return m


def build_primal_cvxpy(X, y: np.ndarray, C: float, intercept: bool = True) -> CvxpyModel:
    n, d = X.shape
    w = cp.Variable(d, name="w")
    xi = cp.Variable(n, name="xi")
    variables = {"w": w, "xi": xi}
    f_signed = signed(y, X) @ w  # y_i w'x_i
    if intercept:
        b = variables["b"] = cp.Variable(name="b")
        f_signed = f_signed + y * b
    margin = f_signed >= 1 - xi  # y_i (w'x_i + b) >= 1 - xi_i
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + float(C) * cp.sum_squares(xi)), [margin])
    return CvxpyModel(PRIMAL, problem, variables, {"margin": margin}, info={"intercept": intercept})


def build_dual_pyomo(X, y: np.ndarray, C: float, intercept: bool = True) -> pyo.ConcreteModel:
    n, d = X.shape
    m = new_pyomo_model(DUAL, n, d)
    m.C = float(C)
    m.alpha = pyo.Var(m.I, bounds=(0.0, None))  # no upper bound: the squared hinge's dual
    m.w = pyo.Var(m.J)
    alpha = list(m.alpha.values())
    m.lift = matrix_rows(lifted_rows(y, X), [*alpha, *m.w.values()], lower=0.0, upper=0.0)  # w = X'(y alpha)
    if intercept:
        m.balance = matrix_rows(y[None, :], alpha, lower=0.0, upper=0.0)  # sum_i alpha_i y_i = 0: m.balance[0]
    m.obj = pyo.Objective(
        expr=linear_sum(1.0, alpha) - 0.5 * pyo.quicksum(m.w[j] ** 2 for j in m.J)
        - (0.25 / float(C)) * pyo.quicksum(m.alpha[i] ** 2 for i in m.I),
        sense=pyo.maximize,
    )
    return m


def build_dual_cvxpy(X, y: np.ndarray, C: float, intercept: bool = True) -> CvxpyModel:
    n, d = X.shape
    alpha = cp.Variable(n, name="alpha", bounds=[0.0, None])
    w = cp.Variable(d, name="w")
    lift = w == signed(y, X).T @ alpha  # w = sum_i alpha_i y_i x_i
    constraints = {"lift": lift}
    if intercept:
        constraints["balance"] = y @ alpha == 0
    objective = cp.sum(alpha) - 0.5 * cp.sum_squares(w) - (0.25 / float(C)) * cp.sum_squares(alpha)
    problem = cp.Problem(cp.Maximize(objective), list(constraints.values()))
    return CvxpyModel(DUAL, problem, {"alpha": alpha, "w": w}, constraints, info={"intercept": intercept})
