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
from functools import partial

import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp
from pyomo.common.errors import InvalidConstraintError, InvalidExpressionError
from pyomo.core.base.var import VarData
from pyomo.core.expr import numeric_expr as ne
from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler
from pyomo.repn.standard_repn import generate_standard_repn

from formulations.internals import MatrixRows, plain_bounds
from formulations.quadratic_form import QuadraticForm
from solvers.bridge.pyomo_quadratic import compile_quadratic_forms
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


@dataclass
class _ObjectiveTerms:
    """An objective's terms: constant + sum coef*var + sum coef*var1*var2."""

    constant: float
    linear_vars: list
    linear_coefs: list
    quadratic_vars: list
    quadratic_coefs: list


def _objective_repn(objective) -> _ObjectiveTerms:
    """Read the objective's terms.

    Sums, scalar multiples, negations, linear expressions and squares of single
    variables are split here without a visitor call per term (the long sums
    C sum_i xi_i and sum_i alpha_i are read as arrays); any other sub-expression
    goes through Pyomo's `generate_standard_repn`, and anything that is not
    quadratic is refused.
    """
    out = _ObjectiveTerms(0.0, [], [], [], [])
    stack = [(objective.expr, 1.0)]
    while stack:
        expr, mult = stack.pop()
        cls = type(expr)
        if cls in (int, float) or (not hasattr(expr, "is_expression_type") and np.isscalar(expr)):
            out.constant += mult * float(expr)
        elif isinstance(expr, VarData) and not expr.fixed:
            out.linear_vars.append(expr)
            out.linear_coefs.append(mult)
        elif cls in (ne.LinearExpression, ne.SumExpression):
            args = expr.args
            terms = _plain_terms(args)
            if terms is not None:  # number * variable terms (a working set's p' alpha): read in one pass
                out.linear_vars.extend(terms[0])
                out.linear_coefs.extend(mult * c for c in terms[1])
            else:
                stack.extend((a, mult) for a in args)
        elif cls is ne.NegationExpression:
            stack.append((expr.args[0], -mult))
        elif cls in (ne.ProductExpression, ne.MonomialTermExpression) and not _is_expression(expr.args[0]) \
                and not _is_variable(expr.args[0]):
            stack.append((expr.args[1], mult * float(pyo.value(expr.args[0]))))
        elif cls is ne.PowExpression and isinstance(expr.args[0], VarData) and not expr.args[0].fixed \
                and not _is_expression(expr.args[1]) and float(pyo.value(expr.args[1])) == 2.0:
            out.quadratic_vars.append((expr.args[0], expr.args[0]))
            out.quadratic_coefs.append(mult)
        else:
            repn = generate_standard_repn(expr, quadratic=True, compute_values=True)
            if repn.nonlinear_expr is not None:
                raise UnsupportedModelError(
                    f"objective {objective.name} is not quadratic: only QPs (quadratic objective, linear constraints) are supported"
                )
            out.constant += mult * float(pyo.value(repn.constant))
            out.linear_vars.extend(repn.linear_vars)
            out.linear_coefs.extend(mult * float(c) for c in repn.linear_coefs)
            out.quadratic_vars.extend(repn.quadratic_vars)
            out.quadratic_coefs.extend(mult * float(c) for c in repn.quadratic_coefs)
    return out


def _plain_terms(args) -> tuple[list, list] | None:
    """(variables, coefficients) when every term is a free variable or a plain number times one, else None.

    Such a sum (a working-set block's p' alpha) is read in one pass here, not one stack step per term
    and per factor."""
    variables, coefs = [], []
    for a in args:
        if type(a) is ne.MonomialTermExpression:
            coef, a = a.args
            if type(coef) not in (int, float):
                return None
        else:
            coef = 1.0
        if not isinstance(a, VarData) or a.fixed:
            return None
        variables.append(a)
        coefs.append(float(coef))
    return variables, coefs


def _is_expression(obj) -> bool:
    return hasattr(obj, "is_expression_type") and obj.is_expression_type()


def _is_variable(obj) -> bool:
    return hasattr(obj, "is_potentially_variable") and obj.is_potentially_variable()


_PLAIN_BOUNDS = {type(None), int, float}


def _column_bounds(columns) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of each column (fixed variables: lb = ub = value); refuses non-continuous ones.

    A domain's bounds and continuity are looked up once per domain object, not once per
    variable (an indexed variable's members share theirs). Plain-number bounds
    (pyo.Var(..., bounds=(0.0, C))) are read from the variables' slots in one pass and
    combined with the domain's as var.lb/var.ub would, several times faster than the properties
    (the one private read, formulations.internals.plain_bounds). Other bounds (Params, expressions)
    go through the properties. Domains and `fixed` are read through the public properties: the
    private fields would save only a few percent of the whole read-back.
    """
    n = len(columns)
    domain_info: dict = {}
    domains = [v.domain for v in columns]  # read once: the public property (~30 ns each)
    for var in {id(d): v for d, v in zip(domains, columns)}.values():  # one variable per domain
        if not var.is_continuous():  # every domain of the QP is checked
            raise UnsupportedModelError(f"variable {var.name} is not continuous; only continuous QPs are supported")
        dlo, dhi = var.domain.bounds()
        domain_info[id(var.domain)] = (-np.inf if dlo is None else float(dlo), np.inf if dhi is None else float(dhi))
    dom = np.array([domain_info[id(d)] for d in domains], dtype=float).reshape(n, 2)
    raw_lo, raw_hi = plain_bounds(columns)
    if {type(b) for b in raw_lo} | {type(b) for b in raw_hi} <= _PLAIN_BOUNDS:
        # None -> nan; fmax/fmin ignore the nan, so a missing bound leaves the domain's.
        lb = np.fmax(dom[:, 0], np.array(raw_lo, dtype=float))
        ub = np.fmin(dom[:, 1], np.array(raw_hi, dtype=float))
    else:
        lb = np.array([-np.inf if v.lb is None else float(v.lb) for v in columns], dtype=float)
        ub = np.array([np.inf if v.ub is None else float(v.ub) for v in columns], dtype=float)
    for k in np.flatnonzero([v.fixed for v in columns]):
        lb[k] = ub[k] = float(columns[k].value)
    return lb, ub


def _compile_other_rows(model, objective, blocks):
    """Pyomo's LinearStandardFormCompiler on the constraints that are not matrix blocks."""
    objective.deactivate()  # the compiler accepts linear objectives only; ours is read apart
    for block in blocks:
        block.deactivate()  # read from its arrays (deactivating costs O(rows): only done here)
    try:
        return LinearStandardFormCompiler().write(model, mixed_form=True)
    except (InvalidConstraintError, InvalidExpressionError) as exc:
        raise UnsupportedModelError(f"only linear constraints are supported: {exc}") from None
    finally:
        objective.activate()
        for block in blocks:
            block.activate()


class _Columns:
    """The QP's columns: one Pyomo variable each, numbered in the order they are first met."""

    def __init__(self, first=()):
        self.variables = list(first)
        self.index = {id(v): k for k, v in enumerate(self.variables)}

    def of(self, var) -> int:
        k = self.index.get(id(var))
        if k is None:  # a variable first met in a matrix block or in the objective
            k = self.index[id(var)] = len(self.variables)
            self.variables.append(var)
        return k

    def map_block(self, varmap) -> np.ndarray:
        """The column of each of a matrix block's variables."""
        if not self.index:  # the usual case: the first block's variables are the first columns
            self.index.update((id(v), k) for k, v in enumerate(varmap))
            self.variables.extend(varmap)
            return np.arange(len(varmap))
        return np.fromiter((self.of(v) for v in varmap), dtype=np.int64, count=len(varmap))


def _objective_matrices(repn: _ObjectiveTerms, columns: _Columns, sense: int) -> tuple[sp.csc_matrix, np.ndarray]:
    """(P, q) of the minimisation form: the objective's terms in the columns' numbering."""
    n = len(columns.variables)
    q = np.zeros(n)
    if repn.linear_vars:
        lin_idx = np.fromiter((columns.index[id(v)] for v in repn.linear_vars), dtype=np.int64,
                              count=len(repn.linear_vars))
        np.add.at(q, lin_idx, np.asarray(repn.linear_coefs, dtype=float))
    rows, cols, vals = [], [], []
    for (v1, v2), coef in zip(repn.quadratic_vars, repn.quadratic_coefs):
        i, j = columns.index[id(v1)], columns.index[id(v2)]
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
    return P, q * sense


class _Rows:
    """Equality rows A x = b and inequality rows G x <= h, with the constraint behind each row."""

    def __init__(self):
        self.eq_parts, self.g_parts, self.b_parts, self.h_parts = [], [], [], []
        self.eq_rows: list = []
        self.ineq_rows: list = []

    def add_compiled(self, info, n: int) -> None:
        """Rows from Pyomo's compiler: kind 0 is =, +1 is <=, -1 is >=."""
        A_all = sp.csr_matrix(info.A, shape=(info.A.shape[0], n))
        rhs = np.asarray(info.rhs, dtype=float)
        kinds = np.array([row.bound_type for row in info.rows], dtype=int)
        eq = np.flatnonzero(kinds == 0)
        ineq = np.flatnonzero(kinds != 0)
        signs = kinds[ineq].astype(float)  # +1: body <= rhs, -1: body >= rhs
        self.eq_parts.append(A_all[eq])
        self.b_parts.append(rhs[eq])
        self.g_parts.append(sp.diags(signs) @ A_all[ineq])
        self.h_parts.append(signs * rhs[ineq])
        self.eq_rows += [info.rows[k].constraint for k in eq]
        self.ineq_rows += [(info.rows[k].constraint, int(kinds[k])) for k in ineq]

    def add_block(self, block: MatrixRows, M: sp.csr_matrix, lower: np.ndarray, upper: np.ndarray) -> None:
        """A matrix block's rows: lower = upper is =, a finite lower is >=, a finite upper is <=."""
        datas = block.rows()
        has_lo, has_hi = np.isfinite(lower), np.isfinite(upper)
        eq = np.flatnonzero(has_lo & has_hi & (lower == upper))
        ge = np.flatnonzero(has_lo & ~(has_hi & (lower == upper)))
        le = np.flatnonzero(has_hi & ~(has_lo & (lower == upper)))
        self.eq_parts.append(M[eq])
        self.b_parts.append(upper[eq])
        self.g_parts += [-M[ge], M[le]]
        self.h_parts += [-lower[ge], upper[le]]
        self.eq_rows += [datas[k] for k in eq]
        self.ineq_rows += [(datas[k], -1) for k in ge] + [(datas[k], 1) for k in le]

    @staticmethod
    def _stack(parts, vec_parts, n):
        if not parts:
            return sp.csc_matrix((0, n)), np.zeros(0)
        return sp.csc_matrix(sp.vstack(parts, format="csr")), np.concatenate(vec_parts)

    def equalities(self, n: int):
        return self._stack(self.eq_parts, self.b_parts, n)

    def inequalities(self, n: int):
        return self._stack(self.g_parts, self.h_parts, n)


def from_pyomo(model, *, read_forms: bool = True) -> StandardQP:
    """Compile `model` (one quadratic objective, linear constraints, continuous variables).

    Matrix-based constraints (formulations.model.MatrixRows) are read from their
    CSR arrays directly; every other constraint goes through Pyomo's
    LinearStandardFormCompiler.
    """
    # Only a model holding a QuadraticForm can take that path; looking costs one pass over components.
    if read_forms and any(isinstance(c, QuadraticForm)
                          for c in model.component_objects(pyo.Expression, descend_into=True)):
        # x'Qx kept as a matrix (formulations.quadratic_form); the rest of the model, with the forms read
        # as 0, by the ordinary path below (not looking for forms again)
        fast = compile_quadratic_forms(model, partial(from_pyomo, read_forms=False))
        if fast is not None:
            return fast
    objective = _single_objective(model)
    blocks = [c for c in model.component_objects(pyo.Constraint, active=True) if isinstance(c, MatrixRows)]
    has_other = any(
        not isinstance(c, MatrixRows) and any(True for _ in c.values() if _.active)
        for c in model.component_objects(pyo.Constraint, active=True)
    )
    info = _compile_other_rows(model, objective, blocks) if has_other else None
    repn = _objective_repn(objective)

    columns = _Columns(info.columns if info is not None else ())
    block_parts = []  # each block: its CSR rows in the columns' numbering, and its bounds
    for block in blocks:
        indptr, indices, data, lower, upper, varmap = block.csr()
        colmap = columns.map_block(varmap)
        block_parts.append((block, np.asarray(indptr), colmap[np.asarray(indices)], np.asarray(data, dtype=float),
                            np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)))
    for var in repn.linear_vars:
        columns.of(var)
    for pair in repn.quadratic_vars:
        for var in pair:
            columns.of(var)
    n = len(columns.variables)
    sense = 1 if objective.sense == pyo.minimize else -1
    P, q = _objective_matrices(repn, columns, sense)

    rows = _Rows()
    if info is not None and info.A.shape[0]:
        rows.add_compiled(info, n)
    for block, indptr, cols, data, lower, upper in block_parts:
        rows.add_block(block, sp.csr_matrix((data, cols, indptr), shape=(len(indptr) - 1, n)), lower, upper)
    A, b = rows.equalities(n)
    G, h = rows.inequalities(n)
    lb, ub = _column_bounds(columns.variables)
    return StandardQP(P=P, q=q, c0=float(repn.constant) * sense, A=A, b=b, G=G, h=h, lb=lb, ub=ub,
                      columns=columns.variables, sense=sense, eq_rows=rows.eq_rows, ineq_rows=rows.ineq_rows)


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
