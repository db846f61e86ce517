r"""Is the training set linearly separable? Two LPs that answer it (001, after (1)).

A (label +1) and B (label -1) are strictly linearly separable exactly when
conv(A) and conv(B) do not intersect. Two LPs decide it, and exactly one of
them is feasible:

Feasibility LP  `separability`  (find any separating hyperplane)

    min_{w, b}  0
    s.t.        y_i (w' x_i + b) >= 1          i = 1..l        [margin]

Convex-hull LP  `hull_intersection`  (find a point of conv(A) ∩ conv(B))

    min_{lambda, mu}  0
    s.t.   sum_{i in A} lambda_i x_i - sum_{j in B} mu_j x_j = 0     [meet, one row per feature]
           sum_{i in A} lambda_i = 1                                 [sum_lambda]
           sum_{j in B} mu_j     = 1                                 [sum_mu]
           lambda >= 0, mu >= 0

Why exactly one (Farkas' lemma): if lambda, mu solve the hull LP, give the
margin row of x_i the weight u_i = lambda_i (i in A) or mu_i (i in B). Then
sum_i u_i y_i (w' x_i + b) = w'(sum lambda x - sum mu x) + b (sum lambda - sum mu) = 0
for every (w, b), while the weighted right-hand sides sum to sum_i u_i = 2:
no (w, b) meets all margin rows. So a solution of the hull LP is the proof
that the feasibility LP is infeasible, and the point sum lambda_i x_i is
a common point of the two hulls. (Scaling a separating (w, b) so the smallest
|w'x_i + b| is 1 turns strict separation into the feasibility LP's rows.)
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
import pyomo.environ as pyo

from formulations import hard_primal
from formulations.errors import SVMInputError
from formulations.model import CvxpyModel, linear_rows
from formulations.names import HULL_INTERSECTION, SEPARABILITY  # noqa: F401 (re-exported: this module's LPs)


def split_classes(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_A, X_B, rows of A, rows of B): A holds the +1 rows, B the -1 rows."""
    idx_a = np.flatnonzero(y > 0)
    idx_b = np.flatnonzero(y < 0)
    if idx_a.size == 0 or idx_b.size == 0:
        raise SVMInputError("separability needs points of both classes (+1 and -1)")
    return X[idx_a], X[idx_b], idx_a, idx_b


# ----------------------------------------------------------------- feasibility LP


def build_pyomo(X: np.ndarray, y: np.ndarray) -> pyo.ConcreteModel:
    """The feasibility LP: the hard-margin primal's `margin` rows with a zero objective."""
    m = hard_primal.build_pyomo(X, y)
    m.formulation = SEPARABILITY
    m.del_component(m.obj)
    m.obj = pyo.Objective(expr=0.0, sense=pyo.minimize)
    return m


def build_cvxpy(X: np.ndarray, y: np.ndarray) -> CvxpyModel:
    model = hard_primal.build_cvxpy(X, y)
    problem = cp.Problem(cp.Minimize(0), model.problem.constraints)
    return CvxpyModel(SEPARABILITY, problem, model.variables, model.constraints,
                      info={"sense": "min", "kinds": {"margin": ">="}})


# ----------------------------------------------------------------- convex-hull LP


def build_hull_pyomo(X: np.ndarray, y: np.ndarray) -> pyo.ConcreteModel:
    """The convex-hull LP; `lam` is indexed by A's rows (0..|A|-1), `mu` by B's."""
    XA, XB, idx_a, idx_b = split_classes(X, y)
    d = X.shape[1]
    m = pyo.ConcreteModel(name=HULL_INTERSECTION)
    m.formulation = HULL_INTERSECTION
    m.IA = pyo.RangeSet(0, len(idx_a) - 1)
    m.IB = pyo.RangeSet(0, len(idx_b) - 1)
    m.J = pyo.RangeSet(0, d - 1)
    m.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    m.rows_a, m.rows_b = idx_a, idx_b
    m.lam = pyo.Var(m.IA, domain=pyo.NonNegativeReals)
    m.mu = pyo.Var(m.IB, domain=pyo.NonNegativeReals)
    # sum_A lambda_i x_ij - sum_B mu_k x_kj, one row per feature j
    stack = sp.hstack if sp.issparse(X) else np.hstack  # a sparse X's columns as CSR rows (linear_rows reads them)
    gap = linear_rows(stack([XA.T, -XB.T]), [*m.lam.values(), *m.mu.values()])
    m.meet = pyo.Constraint(m.J, rule=lambda m, j: gap[j] == 0)
    m.sum_lambda = pyo.Constraint(expr=pyo.quicksum(m.lam.values()) == 1)
    m.sum_mu = pyo.Constraint(expr=pyo.quicksum(m.mu.values()) == 1)
    m.obj = pyo.Objective(expr=0.0, sense=pyo.minimize)
    return m


def build_hull_cvxpy(X: np.ndarray, y: np.ndarray) -> CvxpyModel:
    XA, XB, idx_a, idx_b = split_classes(X, y)
    lam = cp.Variable(len(idx_a), name="lam", nonneg=True)
    mu = cp.Variable(len(idx_b), name="mu", nonneg=True)
    meet = XA.T @ lam - XB.T @ mu == 0
    sum_lambda = cp.sum(lam) == 1
    sum_mu = cp.sum(mu) == 1
    problem = cp.Problem(cp.Minimize(0), [meet, sum_lambda, sum_mu])
    return CvxpyModel(
        HULL_INTERSECTION, problem, {"lam": lam, "mu": mu},
        {"meet": meet, "sum_lambda": sum_lambda, "sum_mu": sum_mu},
        info={"sense": "min", "kinds": {"meet": "==", "sum_lambda": "==", "sum_mu": "=="},
              "rows_a": idx_a, "rows_b": idx_b},
    )
