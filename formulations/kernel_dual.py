r"""Kernel dual (001 "Nonlinear SVM"; 000 `svm(K, y, C)`; Exercise 5.5).

    max_{alpha}  sum_i alpha_i - 1/2 sum_i sum_j y_i y_j K_ij alpha_i alpha_j
    s.t.         sum_i alpha_i y_i = 0                       [balance, multiplier b]
                 0 <= alpha_i <= C

with the Gram matrix K_ij = k(x_i, x_j) given precomputed (Mercer's condition,
K positive semidefinite, is checked by the caller: formulations.kernels).

Two ways to hand the quadratic form to a solver:

- ``form="dense"``: the matrix Q = Y K Y itself (cvxpy `quad_form`, its PSD probe
  replaced by the project's own Mercer check; Pyomo: one linear expression per row);
- ``form="factor"``: K = L L' (L is l x r), a lifted variable v = L' (y * alpha)
  [factor] and the objective sum alpha - 1/2 ||v||^2, which pays when r << l.
"""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo

from formulations.model import KERNEL_DUAL, CvxpyModel, linear_rows, new_pyomo_model

FORMS = ("dense", "factor")


def _factor(K: np.ndarray, L: np.ndarray | None) -> np.ndarray:
    if L is not None:
        return np.asarray(L, dtype=float)
    from formulations.kernels import factorize

    return factorize(K).L


def build_pyomo(
    K: np.ndarray, y: np.ndarray, C: float, form: str = "dense", L: np.ndarray | None = None
) -> pyo.ConcreteModel:
    if form not in FORMS:
        raise ValueError(f"unknown kernel-dual form {form!r}; choose one of {FORMS}")
    n = len(y)
    m = new_pyomo_model(KERNEL_DUAL, n)
    m.C = float(C)
    m.form = form
    upper = None if math.isinf(C) else float(C)
    m.alpha = pyo.Var(m.I, bounds=(0.0, upper))
    m.balance = pyo.Constraint(expr=linear_rows(y[None, :], m.alpha)[0] == 0)
    if form == "dense":
        Q = (y[:, None] * K) * y[None, :]
        rows = linear_rows(Q, m.alpha)  # (Q alpha)_i
        quad = pyo.quicksum(m.alpha[i] * rows[i] for i in m.I)
    else:
        F = _factor(K, L)
        m.R = pyo.RangeSet(0, F.shape[1] - 1)
        m.v = pyo.Var(m.R)
        combos = linear_rows((y[:, None] * F).T, m.alpha)  # (L' (y * alpha))_k
        m.factor = pyo.Constraint(m.R, rule=lambda m, k: m.v[k] - combos[k] == 0)
        quad = pyo.quicksum(m.v[k] ** 2 for k in m.R)
    m.obj = pyo.Objective(expr=pyo.quicksum(m.alpha.values()) - 0.5 * quad, sense=pyo.maximize)
    return m


def build_cvxpy(
    K: np.ndarray, y: np.ndarray, C: float, form: str = "dense", L: np.ndarray | None = None
) -> CvxpyModel:
    if form not in FORMS:
        raise ValueError(f"unknown kernel-dual form {form!r}; choose one of {FORMS}")
    n = len(y)
    alpha = cp.Variable(n, name="alpha", nonneg=True)
    balance = y @ alpha == 0
    constraints = [balance]
    if not math.isinf(C):
        constraints.append(alpha <= float(C))
    variables = {"alpha": alpha}
    named = {"balance": balance}
    if form == "dense":
        Q = (y[:, None] * K) * y[None, :]
        quad = cp.quad_form(alpha, cp.psd_wrap(Q))
    else:
        F = _factor(K, L)
        v = cp.Variable(F.shape[1], name="v")
        factor = v == F.T @ cp.multiply(y, alpha)
        constraints.append(factor)
        variables["v"] = v
        named["factor"] = factor
        quad = cp.sum_squares(v)
    problem = cp.Problem(cp.Maximize(cp.sum(alpha) - 0.5 * quad), constraints)
    return CvxpyModel(KERNEL_DUAL, problem, variables, named, info={"form": form})
