"""What every formulation returns: the model plus the names the solvers read back.

Pyomo models carry their parts as named components (`w`, `b`, `xi`, `alpha`,
`margin`, `balance`, ...); cvxpy models are wrapped in `CvxpyModel`, whose
`variables` and `constraints` dictionaries use the same names. The solver layer
reads results through these names only, so any formulation that uses them can be
solved by any backend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import pyomo.environ as pyo
from pyomo.core.expr.numeric_expr import LinearExpression

from formulations import penalty
from formulations.data_matrix import signed  # noqa: F401 (re-exported: the formulations build Y X with it)
from formulations.internals import MatrixRows

# Formulation names (defined in formulations.names, which imports nothing heavy), re-exported here.
from formulations.names import DUAL, DUAL_FORMULATIONS, HARD_PRIMAL, KERNEL_DUAL, PRIMAL_FORMULATIONS, SOFT_PRIMAL  # noqa: F401


@dataclass
class CvxpyModel:
    """A cvxpy problem with its named variables and constraints."""

    formulation: str
    problem: object  # cvxpy.Problem
    variables: dict[str, object]
    constraints: dict[str, object]
    info: dict = field(default_factory=dict)


def alpha_bounds(C) -> list:
    """cvxpy bounds 0 <= alpha <= C (no upper bound for C = inf; C_i per sample for an array).

    Bounds rather than constraint rows: the backends that take bounds natively (PIQP,
    ProxQP, HiGHS, ...) then factor a smaller KKT system (docs/benchmarks.md).
    """
    if penalty.per_sample(C):
        return [0.0, np.asarray(C, dtype=float)]
    return [0.0, None if math.isinf(C) else float(C)]


def pyomo_alpha_bounds(C):
    """Pyomo bounds 0 <= alpha_i <= C (None above for C = inf), or a rule giving C_i per sample.

    Plain floats, so the standard-form bridge reads them in one pass (solvers.bridge.pyomo_standard_form).
    """
    if penalty.per_sample(C):
        upper = [float(c) for c in C]
        return lambda model, i: (0.0, upper[i])
    return (0.0, None if math.isinf(C) else float(C))


def linear_sum(coefs, variables):
    """sum_k coefs_k variables_k as one linear expression built from arrays.

    A common coefficient c gives c * (sum of the variables), whose terms are the
    variables themselves: no term object per variable is created. A few distinct
    coefficients (the labels y in {-1, +1}) give one such sum per value, several
    times faster than a term per variable at large n.
    """
    var_list = list(variables.values()) if hasattr(variables, "values") else list(variables)
    coefs = np.broadcast_to(np.asarray(coefs, dtype=float), (len(var_list),))
    values = np.unique(coefs)
    if len(values) > FEW_COEFFICIENTS:
        return LinearExpression(constant=0.0, linear_coefs=coefs.tolist(), linear_vars=var_list)
    parts = []
    for c in values[values != 0.0]:
        total = pyo.quicksum([var_list[k] for k in np.flatnonzero(coefs == c)])
        parts.append(total if c == 1.0 else float(c) * total)
    return pyo.quicksum(parts) if parts else LinearExpression(constant=0.0, linear_coefs=[], linear_vars=[])


FEW_COEFFICIENTS = 4  # up to this many distinct values, linear_sum groups the variables by value


def new_pyomo_model(formulation: str, n: int, d: int | None = None) -> pyo.ConcreteModel:
    """An empty Pyomo model with the sample (and feature) index sets and a dual suffix."""
    model = pyo.ConcreteModel(name=formulation)
    model.formulation = formulation
    model.I = pyo.RangeSet(0, n - 1)
    if d is not None:
        model.J = pyo.RangeSet(0, d - 1)
    # Multipliers arrive here (Pyomo's convention: d objective / d right-hand side).
    model.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    return model


def matrix_rows(M, variables, *, lower=None, upper=None):
    """Rows ``lower <= M @ variables <= upper`` as one matrix-based Pyomo constraint.

    The rows are kept as the CSR arrays of M (Pyomo's `MatrixConstraint`), not
    as one expression object per row: construction is O(nnz) in numpy, and the
    standard-form bridge (solvers.bridge.pyomo_standard_form) reads the arrays back
    without walking expressions. Each row is still a constraint of its own
    (`model.margin[i]`, with its multiplier in `model.dual`), and asking a row
    for its `body` or `expr` builds the ordinary linear expression, so every
    other Pyomo tool (e.g. the HiGHS interface) reads the model unchanged.
    `lower`/`upper`: scalars or length-m arrays; equal bounds make equality rows.
    """
    M = sp.csr_matrix(M, dtype=float)
    M.sum_duplicates()
    M.sort_indices()
    m_rows, n_cols = M.shape
    var_list = list(variables.values()) if hasattr(variables, "values") else list(variables)
    if len(var_list) != n_cols:
        raise ValueError(f"matrix_rows: M has {n_cols} columns but {len(var_list)} variables were given")
    lo = np.broadcast_to(np.asarray(-np.inf if lower is None else lower, dtype=float), (m_rows,))
    hi = np.broadcast_to(np.asarray(np.inf if upper is None else upper, dtype=float), (m_rows,))
    if np.any(np.isnan(lo)) or np.any(np.isnan(hi)) or np.any(lo > hi):
        raise ValueError("matrix_rows: bounds must satisfy lower <= upper and not be NaN")
    ranges = np.empty(2 * m_rows)
    ranges[0::2], ranges[1::2] = lo, hi
    kinds = np.zeros(m_rows, dtype=np.uint8)
    kinds[np.isfinite(lo)] |= MatrixRows.LowerBound
    kinds[np.isfinite(hi)] |= MatrixRows.UpperBound
    kinds[np.isfinite(lo) & (lo == hi)] = MatrixRows.Equality
    return MatrixRows(m_rows, n_cols, M.nnz, M.indptr, M.indices, M.data, ranges, kinds, var_list)


def lifted_rows(y: np.ndarray, F: np.ndarray) -> sp.csr_matrix:
    """The rows v - F'(y * alpha) = 0 as the r x (n + r) matrix [-(Y F)', I_r] over (alpha, v).

    F = L (n x r) gives the factor form's [factor] rows; F = X gives the lifted
    w = X'(y * alpha) of the linear dual.
    """
    return sp.hstack([-sp.csr_matrix(signed(y, F).T), sp.identity(F.shape[1], format="csr")], format="csr")


def linear_rows(M, variables) -> list:
    """Row-wise linear expressions M @ variables, built without a Python loop per term (M dense or
    scipy.sparse: a sparse M's rows are read from its CSR arrays, never densified)."""
    var_list = list(variables.values()) if hasattr(variables, "values") else list(variables)
    if sp.issparse(M):
        M = sp.csr_matrix(M, dtype=float)
        M.sum_duplicates()
        bounds = zip(M.indptr[:-1].tolist(), M.indptr[1:].tolist())
        row_parts = ((M.data[lo:hi], M.indices[lo:hi]) for lo, hi in bounds)
    else:
        dense = np.asarray(M, dtype=float)
        row_parts = ((row[nz], nz) for row in dense for nz in (np.flatnonzero(row),))
    return [LinearExpression(constant=0.0, linear_coefs=coefs.tolist(), linear_vars=[var_list[k] for k in cols])
            for coefs, cols in row_parts]
