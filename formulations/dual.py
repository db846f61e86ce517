r"""Linear dual (001 problems (6) and (11); Examples 5.2, Exercise 5.4).

    max_{alpha}  sum_i alpha_i - 1/2 || sum_i alpha_i y_i x_i ||^2
    s.t.         sum_i alpha_i y_i = 0                       [balance, multiplier b]
                 0 <= alpha_i <= C                           (C = inf: hard-margin dual;
                                                             C_i per sample: formulations.penalty)

Written with the lifted variable w = sum_i alpha_i y_i x_i   [lift]
so that the model holds l + d variables and an l x d matrix, never the l x l
matrix X X' of the notes' quadprog code; it scales like the primal. The
multiplier of `balance` is the bias b* of the primal.
"""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo


from formulations import penalty
from formulations.model import (DUAL, CvxpyModel, alpha_bounds, lifted_rows, linear_sum, matrix_rows, new_pyomo_model,
                                pyomo_alpha_bounds, signed)


def build_pyomo(X: np.ndarray, y: np.ndarray, C: float = math.inf) -> pyo.ConcreteModel:
    n, d = X.shape
    m = new_pyomo_model(DUAL, n, d)
    m.C = penalty.as_float(C)
    m.alpha = pyo.Var(m.I, bounds=pyomo_alpha_bounds(C))
    m.w = pyo.Var(m.J)
    alpha = list(m.alpha.values())
    # Rows w_j - sum_i alpha_i y_i x_ij = 0 as one sparse d x (n + d) matrix.
    m.lift = matrix_rows(lifted_rows(y, X), [*alpha, *m.w.values()], lower=0.0, upper=0.0)
    m.balance = matrix_rows(y[None, :], alpha, lower=0.0, upper=0.0)  # one row: m.balance[0]
    m.obj = pyo.Objective(
        expr=linear_sum(1.0, alpha) - 0.5 * pyo.quicksum(m.w[j] ** 2 for j in m.J),
        sense=pyo.maximize,
    )
    return m


def build_cvxpy(X: np.ndarray, y: np.ndarray, C: float | cp.Parameter = math.inf) -> CvxpyModel:
    n, d = X.shape
    # C may be a cp.Parameter (a C path re-solves one compiled problem: experiments.c_path).
    bounds = [0.0, C] if isinstance(C, cp.Parameter) else alpha_bounds(C)
    alpha = cp.Variable(n, name="alpha", bounds=bounds)
    w = cp.Variable(d, name="w")
    lift = w == signed(y, X).T @ alpha  # w = X'(y * alpha) = sum_i alpha_i y_i x_i
    balance = y @ alpha == 0
    constraints = [lift, balance]
    problem = cp.Problem(cp.Maximize(cp.sum(alpha) - 0.5 * cp.sum_squares(w)), constraints)
    return CvxpyModel(DUAL, problem, {"alpha": alpha, "w": w}, {"lift": lift, "balance": balance})
