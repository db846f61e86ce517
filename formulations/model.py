"""What every formulation returns: the model plus the names the solvers read back.

Pyomo models carry their parts as named components (`w`, `b`, `xi`, `alpha`,
`margin`, `balance`, ...); cvxpy models are wrapped in `CvxpyModel`, whose
`variables` and `constraints` dictionaries use the same names. The solver layer
reads results through these names only, so any formulation that uses them can be
solved by any backend.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyomo.environ as pyo

# Formulation names, used in tables, the CLI and the tests.
HARD_PRIMAL = "hard_primal"
SOFT_PRIMAL = "soft_primal"
DUAL = "dual"
KERNEL_DUAL = "kernel_dual"

PRIMAL_FORMULATIONS = (HARD_PRIMAL, SOFT_PRIMAL)
DUAL_FORMULATIONS = (DUAL, KERNEL_DUAL)


@dataclass
class CvxpyModel:
    """A cvxpy problem with its named variables and constraints."""

    formulation: str
    problem: object  # cvxpy.Problem
    variables: dict[str, object]
    constraints: dict[str, object]
    info: dict = field(default_factory=dict)


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


def linear_rows(M: np.ndarray, variables) -> list:
    """Row-wise linear expressions M @ variables, built without a Python loop per term."""
    from pyomo.core.expr.numeric_expr import LinearExpression

    var_list = list(variables.values()) if hasattr(variables, "values") else list(variables)
    rows = []
    for row in np.asarray(M, dtype=float):
        nz = np.flatnonzero(row)
        rows.append(
            LinearExpression(
                constant=0.0,
                linear_coefs=row[nz].tolist(),
                linear_vars=[var_list[k] for k in nz],
            )
        )
    return rows
