r"""Soft-margin primal (001 problem (8); Exercise 5.4).

    min_{w, b, xi}  1/2 ||w||^2 + C sum_i xi_i
    s.t.            y_i (w' x_i + b) >= 1 - xi_i     i = 1..l   [margin, multipliers alpha_i]
                    xi_i >= 0                        i = 1..l   [bounds, multipliers mu_i]

C may be one bound per sample (formulations.penalty): the weighted hinge sum_i C_i xi_i,
whose dual has 0 <= alpha_i <= C_i. Always feasible for C > 0. At the optimum 0 <= alpha_i <= C, mu_i = C - alpha_i,
and xi_i > 0 only where alpha_i = C (001 Remark after (12)).

Restricted to a working set (``inside=(X_L, y_L)``, solvers.algorithms.primal_working_set): the rows
above are written for the working set W only, and the points L held inside the margin
(alpha_i = C, xi_i = 1 - y_i (w' x_i + b) > 0) enter the objective as one linear term,

    + C sum_{i in L} (1 - y_i (w' x_i + b))  =  C |L| - C s' w - C t b,
      s = sum_{i in L} y_i x_i,  t = sum_{i in L} y_i,

(with per-sample C, ``inside=(X_L, y_L, C_L)``: sum_L C_i - (sum_L C_i y_i x_i)' w - (sum_L C_i y_i) b,
`held_terms`), while the points outside it (alpha_i = 0) are left out. With the right split this
problem has the full problem's optimum (w, b).
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo

import scipy.sparse as sp

from formulations import penalty
from formulations.model import SOFT_PRIMAL, CvxpyModel, linear_sum, matrix_rows, new_pyomo_model, signed


def inside_sums(inside, d: int) -> tuple[np.ndarray, float, int]:
    """(s, t, |L|) of the points held inside the margin (module docstring)."""
    if inside is None:
        return np.zeros(d), 0.0, 0
    X_L, y_L = inside[:2]
    return np.asarray(y_L @ X_L, dtype=float).reshape(d), float(np.sum(y_L)), len(y_L)


def held_terms(inside, d: int, C) -> tuple[np.ndarray, float, float]:
    """(s_C, t_C, c_0) of the held points' linear term c_0 - s_C'w - t_C b (module docstring): their bounds are
    inside's third entry C_L (one number or one per held point), else the problem's one C."""
    if inside is None:
        return np.zeros(d), 0.0, 0.0
    X_L, y_L, *bounds = inside
    if not bounds and penalty.per_sample(C):
        raise ValueError("the held points (inside=(X_L, y_L, C_L)) need their own bounds C_L with per-sample C")
    C_L = bounds[0] if bounds else C
    if penalty.per_sample(C_L):
        weighted = C_L * y_L
        return np.asarray(weighted @ X_L, dtype=float).reshape(d), float(weighted.sum()), float(C_L.sum())
    s, t, count = inside_sums(inside, d)
    return float(C_L) * s, float(C_L) * t, float(C_L) * count


def build_pyomo(X: np.ndarray, y: np.ndarray, C: float, inside=None) -> pyo.ConcreteModel:
    n, d = X.shape
    m = new_pyomo_model(SOFT_PRIMAL, n, d)
    m.C = penalty.as_float(C)
    m.w = pyo.Var(m.J)
    m.b = pyo.Var()
    m.xi = pyo.Var(m.I, domain=pyo.NonNegativeReals)
    # Rows [y_i x_i', y_i, e_i'] (w, b, xi) >= 1 as one sparse matrix (no expression per term).
    rows = sp.hstack(
        [sp.csr_matrix(signed(y, X)), sp.csr_matrix(y[:, None]), sp.identity(n, format="csr")], format="csr"
    )
    m.margin = matrix_rows(rows, [*m.w.values(), m.b, *m.xi.values()], lower=1.0)
    hinge = linear_sum(penalty.as_float(C), m.xi)  # sum_i C_i xi_i
    if inside is not None:
        s, t, constant = held_terms(inside, d, C)
        hinge += constant - linear_sum(s, m.w) - t * m.b
    m.obj = pyo.Objective(expr=0.5 * pyo.quicksum(m.w[j] ** 2 for j in m.J) + hinge, sense=pyo.minimize)
    return m


def build_cvxpy(X: np.ndarray, y: np.ndarray, C: float | cp.Parameter, inside=None) -> CvxpyModel:
    n, d = X.shape
    w = cp.Variable(d, name="w")
    b = cp.Variable(name="b")
    # A bound, not a row: see formulations.model.alpha_bounds.
    xi = cp.Variable(n, name="xi", bounds=[0.0, None])
    margin = signed(y, X) @ w + y * b >= 1 - xi  # y_i (w'x_i + b) >= 1 - xi_i
    # C may be a cp.Parameter (a C path re-solves one compiled problem: experiments.c_path).
    if penalty.per_sample(C):
        penalized = C @ xi  # the weighted hinge sum_i C_i xi_i
        if inside is not None:
            s, t, constant = held_terms(inside, d, C)
            penalized = penalized + constant - s @ w - t * b
    else:
        weight = C if isinstance(C, cp.Parameter) else float(C)
        hinge = cp.sum(xi)
        if inside is not None:
            s, t, count = inside_sums(inside, d)
            hinge = hinge + count - s @ w - t * b
        penalized = weight * hinge
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + penalized), [margin])
    return CvxpyModel(SOFT_PRIMAL, problem, {"w": w, "b": b, "xi": xi}, {"margin": margin})
