r"""Hard-margin primal (001 problem (4); Example 5.1).

    min_{w, b}   1/2 ||w||^2
    s.t.         y_i (w' x_i + b) >= 1          i = 1..l      [margin, multipliers alpha_i]

Feasible exactly when the two classes are strictly linearly separable
(conv(A) and conv(B) disjoint). The multipliers alpha_i of the `margin`
constraints solve the hard-margin dual (001 problem (6)).
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo

import scipy.sparse as sp

from formulations.model import HARD_PRIMAL, CvxpyModel, matrix_rows, new_pyomo_model, signed


def build_pyomo(X: np.ndarray, y: np.ndarray) -> pyo.ConcreteModel:
    n, d = X.shape
    m = new_pyomo_model(HARD_PRIMAL, n, d)
    m.w = pyo.Var(m.J)
    m.b = pyo.Var()
    # Rows [y_i x_i', y_i] (w, b) >= 1, kept as one sparse matrix (no expression per term).
    rows = sp.hstack([sp.csr_matrix(signed(y, X)), sp.csr_matrix(y[:, None])], format="csr")
    m.margin = matrix_rows(rows, [*m.w.values(), m.b], lower=1.0)
    m.obj = pyo.Objective(expr=0.5 * pyo.quicksum(m.w[j] ** 2 for j in m.J), sense=pyo.minimize)
    return m


def build_cvxpy(X: np.ndarray, y: np.ndarray) -> CvxpyModel:
    n, d = X.shape
    w = cp.Variable(d, name="w")
    b = cp.Variable(name="b")
    margin = signed(y, X) @ w + y * b >= 1  # y_i (w'x_i + b) >= 1
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w)), [margin])
    return CvxpyModel(HARD_PRIMAL, problem, {"w": w, "b": b}, {"margin": margin})
