"""Read a Pyomo model as a sparse standard-form QP, and load a solution back.

    min  1/2 x' P x + q' x + c0
    s.t. A x  = b            (equality rows)
         G x <= h            (inequality rows; a >= row enters as -row <= -rhs)
         lb <= x <= ub

Pyomo's own tools do the reading: `LinearStandardFormCompiler` (mixed form) turns
the linear constraints into a sparse matrix, `generate_standard_repn` the
objective into its quadratic and linear parts. Anything outside this class
(nonlinear constraints, a non-quadratic objective, integer variables, several
objectives) is refused with `UnsupportedModelError`, never approximated.

Multipliers come back in Pyomo's convention, the one Pyomo's HiGHS interface
uses: `model.dual[c]` = d objective* / d rhs(c), in the objective's own sense.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp
from pyomo.common.errors import InvalidConstraintError, InvalidExpressionError
from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler
from pyomo.repn.standard_repn import generate_standard_repn

from solvers.errors import UnsupportedModelError


@dataclass
class StandardQP:
    P: sp.csc_matrix
    q: np.ndarray
    c0: float
    A: sp.csc_matrix
    b: np.ndarray
    G: sp.csc_matrix
    h: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    columns: list  # Pyomo VarData per column
    sense: int  # +1: the model minimises; -1: it maximises (P, q, c0 are then negated)
    eq_rows: list  # ConstraintData per row of A
    ineq_rows: list  # (ConstraintData, +1 for a <= row, -1 for a >= row) per row of G

    @property
    def n(self) -> int:
        return len(self.columns)

    def objective(self, x: np.ndarray) -> float:
        """The objective at x in the model's own sense."""
        return self.sense * float(0.5 * x @ (self.P @ x) + self.q @ x + self.c0)


def _single_objective(model):
    objectives = list(model.component_data_objects(pyo.Objective, active=True))
    if len(objectives) != 1:
        raise UnsupportedModelError(f"the model has {len(objectives)} active objectives; exactly one is needed")
    return objectives[0]


def from_pyomo(model) -> StandardQP:
    """Compile `model` (one quadratic objective, linear constraints, continuous variables)."""
    objective = _single_objective(model)
    for var in model.component_data_objects(pyo.Var, active=True):
        if not var.is_continuous():
            raise UnsupportedModelError(f"variable {var.name} is not continuous; only continuous QPs are supported")

    objective.deactivate()  # the compiler accepts linear objectives only; ours is read below
    try:
        info = LinearStandardFormCompiler().write(model, mixed_form=True)
    except (InvalidConstraintError, InvalidExpressionError) as exc:
        raise UnsupportedModelError(f"only linear constraints are supported: {exc}") from None
    finally:
        objective.activate()

    repn = generate_standard_repn(objective.expr, quadratic=True, compute_values=True)
    if repn.nonlinear_expr is not None:
        raise UnsupportedModelError(
            f"objective {objective.name} is not quadratic: only QPs (quadratic objective, linear constraints) are supported"
        )

    columns = list(info.columns)
    index = {id(v): k for k, v in enumerate(columns)}
    for var in list(repn.linear_vars) + [v for pair in repn.quadratic_vars for v in pair]:
        if id(var) not in index:  # a variable that appears in the objective only
            index[id(var)] = len(columns)
            columns.append(var)
    n = len(columns)
    sense = 1 if objective.sense == pyo.minimize else -1

    q = np.zeros(n)
    for var, coef in zip(repn.linear_vars, repn.linear_coefs):
        q[index[id(var)]] += coef
    rows, cols, vals = [], [], []
    for (v1, v2), coef in zip(repn.quadratic_vars, repn.quadratic_coefs):
        i, j = index[id(v1)], index[id(v2)]
        # coef * x_i * x_j is 1/2 x'Px with P_ii = 2 coef, or P_ij = P_ji = coef.
        if i == j:
            rows.append(i)
            cols.append(i)
            vals.append(2.0 * coef)
        else:
            rows += [i, j]
            cols += [j, i]
            vals += [coef, coef]
    P = sp.csc_matrix((np.asarray(vals, dtype=float) * sense, (rows, cols)), shape=(n, n))

    A_all = sp.csr_matrix(info.A, shape=(info.A.shape[0], n)) if info.A.shape[0] else sp.csr_matrix((0, n))
    rhs = np.asarray(info.rhs, dtype=float)
    kinds = np.array([row.bound_type for row in info.rows], dtype=int)
    eq = np.flatnonzero(kinds == 0)
    ineq = np.flatnonzero(kinds != 0)
    signs = kinds[ineq].astype(float)  # +1: body <= rhs, -1: body >= rhs
    G = sp.diags(signs) @ A_all[ineq] if ineq.size else sp.csr_matrix((0, n))

    lb = np.array([-np.inf if v.lb is None else float(v.lb) for v in columns])
    ub = np.array([np.inf if v.ub is None else float(v.ub) for v in columns])
    for k, var in enumerate(columns):
        if var.fixed:
            lb[k] = ub[k] = float(var.value)
    return StandardQP(
        P=P,
        q=q * sense,
        c0=float(repn.constant) * sense,
        A=sp.csc_matrix(A_all[eq]),
        b=rhs[eq],
        G=sp.csc_matrix(G),
        h=signs * rhs[ineq],
        lb=lb,
        ub=ub,
        columns=columns,
        sense=sense,
        eq_rows=[info.rows[k].constraint for k in eq],
        ineq_rows=[(info.rows[k].constraint, int(kinds[k])) for k in ineq],
    )


def load_into_pyomo(qp: StandardQP, model, x: np.ndarray, y: np.ndarray | None, z: np.ndarray | None) -> None:
    """Set the variables to x and `model.dual` from multipliers of the minimisation form.

    y, z follow the Lagrangian f + y'(A x - b) + z'(G x - h), z >= 0 (qpsolvers'
    convention), so d f*/d b = -y and d f*/d h = -z; a >= row's h is -rhs.
    """
    for var, value in zip(qp.columns, x):
        if not var.fixed:
            var.set_value(float(value), skip_validation=True)
    if not hasattr(model, "dual"):
        return
    model.dual.clear()
    if y is None and z is None:
        return
    duals: dict = {}
    for con, value in zip(qp.eq_rows, np.zeros(len(qp.eq_rows)) if y is None else y):
        duals[con] = duals.get(con, 0.0) - qp.sense * float(value)
    for (con, kind), value in zip(qp.ineq_rows, np.zeros(len(qp.ineq_rows)) if z is None else z):
        duals[con] = duals.get(con, 0.0) - qp.sense * kind * float(value)
    model.dual.update(duals)
