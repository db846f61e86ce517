r"""The 1-norm SVM (an LP) and its LP dual.

Replacing 1/2 ||w||^2 of the soft-margin primal (001 problem (8)) by ||w||_1
gives a linear programme whose optimal w tends to be sparse: features that do
not pay for themselves get w_j = 0 exactly (a vertex of the LP).

`l1_primal`

    min_{w, b, xi}  sum_j |w_j| + C sum_i xi_i
    s.t.            y_i (w' x_i + b) >= 1 - xi_i     i = 1..l     [margin, multipliers alpha_i]
                    xi_i >= 0

written as an LP in one of two ways (`abs_form`):

    "bound":  |w_j| <= t_j  as  t_j - w_j >= 0  [abs_pos, multiplier p_j]
                               t_j + w_j >= 0  [abs_neg, multiplier q_j],
              objective sum_j t_j + C sum_i xi_i;
    "split":  w = w+ - w-,  w+, w- >= 0, objective sum_j (w+_j + w-_j) + C sum_i xi_i.

`l1_dual` (derived from the Lagrangian of "bound": stationarity in t gives
p_j + q_j = 1, in w gives p_j - q_j = sum_i alpha_i y_i x_ij, in b gives
sum_i alpha_i y_i = 0 and in xi gives alpha_i <= C)

    max_{alpha}  sum_i alpha_i
    s.t.         | sum_i alpha_i y_i x_ij | <= 1  j = 1..d
                 sum_i alpha_i y_i = 0                         [balance, multiplier b]
                 alpha_i <= C                     i = 1..l     [cap, multiplier xi_i]
                 alpha_i >= 0

with the absolute value written in one of two ways (`corr_form`):

    "lift":  corr_j = sum_i alpha_i y_i x_ij   [lift, multiplier w_j],   -1 <= corr_j <= 1
             (one dense row per feature; the bounds sit on the variable corr);
    "rows":  sum_i alpha_i y_i x_ij <= 1  [corr_upper],  >= -1  [corr_lower]
             (the notes' form: two dense rows per feature).

"lift" is the default: it halves the dense part of the LP, and HiGHS's presolve
does not spend its time detecting the parallel row pairs.

Multipliers in Pyomo's convention (d objective* / d rhs) read back as the other
LP's solution: from l1_primal, alpha_i = dual(margin_i) >= 0 and
p_j - q_j = dual(abs_pos_j) - dual(abs_neg_j) = sum_i alpha_i y_i x_ij;
from l1_dual, w_j = dual(lift_j), or dual(corr_upper_j) + dual(corr_lower_j)
(the first >= 0, the second <= 0, at most one nonzero), b = dual(balance) and
xi_i = dual(cap_i) >= 0. The bound alpha <= C is written as a row (`cap`) rather
than a variable bound so that xi comes back as a multiplier too.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp

from formulations.errors import SVMInputError
from formulations.model import CvxpyModel, linear_rows, linear_sum, new_pyomo_model, signed
from formulations.names import L1_DUAL, L1_PRIMAL  # noqa: F401 (re-exported: this module's LPs)

ABS_FORMS = ("bound", "split")
CORR_FORMS = ("lift", "rows")


def _check_abs_form(abs_form: str) -> str:
    if abs_form not in ABS_FORMS:
        raise SVMInputError(f"abs_form must be one of {ABS_FORMS}, got {abs_form!r}")
    return abs_form


def _check_corr_form(corr_form: str) -> str:
    if corr_form not in CORR_FORMS:
        raise SVMInputError(f"corr_form must be one of {CORR_FORMS}, got {corr_form!r}")
    return corr_form


# ----------------------------------------------------------------- primal


def build_primal_pyomo(X: np.ndarray, y: np.ndarray, C: float, abs_form: str = "bound") -> pyo.ConcreteModel:
    # Rows built with linear_rows (one LinearExpression per row): Pyomo's HiGHS interface reads these
    # faster than formulations.model.matrix_rows, which saves more in the transfer than it costs here.
    n, d = X.shape
    _check_abs_form(abs_form)
    m = new_pyomo_model(L1_PRIMAL, n, d)
    m.C = float(C)
    m.abs_form = abs_form
    m.b = pyo.Var()
    m.xi = pyo.Var(m.I, domain=pyo.NonNegativeReals)
    yX = signed(y, X)
    if abs_form == "bound":
        m.w = pyo.Var(m.J)
        m.t = pyo.Var(m.J, domain=pyo.NonNegativeReals)
        scores = linear_rows(yX, m.w)  # y_i x_i' w
        m.abs_pos = pyo.Constraint(m.J, rule=lambda m, j: m.t[j] - m.w[j] >= 0)
        m.abs_neg = pyo.Constraint(m.J, rule=lambda m, j: m.t[j] + m.w[j] >= 0)
        norm1 = pyo.quicksum(m.t.values())
    else:
        m.w_plus = pyo.Var(m.J, domain=pyo.NonNegativeReals)
        m.w_minus = pyo.Var(m.J, domain=pyo.NonNegativeReals)
        m.w = pyo.Expression(m.J, rule=lambda m, j: m.w_plus[j] - m.w_minus[j])
        scores = linear_rows(sp.hstack([yX, -yX], format="csr") if sp.issparse(yX) else np.hstack([yX, -yX]), [*m.w_plus.values(), *m.w_minus.values()])
        norm1 = pyo.quicksum(m.w_plus.values()) + pyo.quicksum(m.w_minus.values())
    m.margin = pyo.Constraint(m.I, rule=lambda m, i: scores[i] + float(y[i]) * m.b + m.xi[i] >= 1)
    m.obj = pyo.Objective(expr=norm1 + float(C) * pyo.quicksum(m.xi.values()), sense=pyo.minimize)
    return m


def build_primal_cvxpy(X: np.ndarray, y: np.ndarray, C: float, abs_form: str = "bound") -> CvxpyModel:
    n, d = X.shape
    _check_abs_form(abs_form)
    b = cp.Variable(name="b")
    xi = cp.Variable(n, name="xi", nonneg=True)
    kinds = {"margin": ">="}
    if abs_form == "bound":
        w = cp.Variable(d, name="w")
        t = cp.Variable(d, name="t", nonneg=True)
        abs_pos = t - w >= 0
        abs_neg = t + w >= 0
        extra = {"abs_pos": abs_pos, "abs_neg": abs_neg}
        kinds.update(abs_pos=">=", abs_neg=">=")
        variables = {"w": w, "t": t}
        norm1 = cp.sum(t)
    else:
        w_plus = cp.Variable(d, name="w_plus", nonneg=True)
        w_minus = cp.Variable(d, name="w_minus", nonneg=True)
        w = w_plus - w_minus
        extra = {}
        variables = {"w": w, "w_plus": w_plus, "w_minus": w_minus}
        norm1 = cp.sum(w_plus) + cp.sum(w_minus)
    margin = signed(y, X) @ w + y * b + xi >= 1  # y_i (w'x_i + b) + xi_i >= 1
    problem = cp.Problem(cp.Minimize(norm1 + float(C) * cp.sum(xi)), [margin, *extra.values()])
    return CvxpyModel(L1_PRIMAL, problem, {**variables, "b": b, "xi": xi}, {"margin": margin, **extra},
                      info={"sense": "min", "kinds": kinds, "abs_form": abs_form})


# ----------------------------------------------------------------- dual


def build_dual_pyomo(X: np.ndarray, y: np.ndarray, C: float, corr_form: str = "lift") -> pyo.ConcreteModel:
    n, d = X.shape
    _check_corr_form(corr_form)
    m = new_pyomo_model(L1_DUAL, n, d)
    m.C = float(C)
    m.corr_form = corr_form
    m.alpha = pyo.Var(m.I, domain=pyo.NonNegativeReals)
    combos = linear_rows(signed(y, X).T, m.alpha)  # sum_i alpha_i y_i x_ij
    if corr_form == "lift":
        m.corr = pyo.Var(m.J, bounds=(-1.0, 1.0))
        m.lift = pyo.Constraint(m.J, rule=lambda m, j: combos[j] - m.corr[j] == 0)
    else:
        m.corr_upper = pyo.Constraint(m.J, rule=lambda m, j: combos[j] <= 1)
        m.corr_lower = pyo.Constraint(m.J, rule=lambda m, j: combos[j] >= -1)
    m.balance = pyo.Constraint(expr=linear_sum(y, m.alpha) == 0)
    m.cap = pyo.Constraint(m.I, rule=lambda m, i: m.alpha[i] <= float(C))
    m.obj = pyo.Objective(expr=pyo.quicksum(m.alpha.values()), sense=pyo.maximize)
    return m


def build_dual_cvxpy(X: np.ndarray, y: np.ndarray, C: float, corr_form: str = "lift") -> CvxpyModel:
    n, d = X.shape
    _check_corr_form(corr_form)
    alpha = cp.Variable(n, name="alpha", nonneg=True)
    G = signed(y, X).T  # d x l: row j is (y_i x_ij)_i
    variables = {"alpha": alpha}
    if corr_form == "lift":
        corr = cp.Variable(d, name="corr", bounds=[-1.0, 1.0])
        corr_cons = {"lift": G @ alpha - corr == 0}
        kinds = {"lift": "=="}
        variables["corr"] = corr
    else:
        corr_cons = {"corr_upper": G @ alpha <= 1, "corr_lower": G @ alpha >= -1}
        kinds = {"corr_upper": "<=", "corr_lower": ">="}
    balance = y @ alpha == 0
    cap = alpha <= float(C)
    problem = cp.Problem(cp.Maximize(cp.sum(alpha)), [*corr_cons.values(), balance, cap])
    return CvxpyModel(
        L1_DUAL, problem, variables, {**corr_cons, "balance": balance, "cap": cap},
        info={"sense": "max", "kinds": {**kinds, "balance": "==", "cap": "<="}, "corr_form": corr_form},
    )
