"""What a solve returns: one `Solution` record, whatever the layer and the backend.

Why the solver stopped (its status, normalised, with the raw code kept) is kept
apart from what the project concludes about the point (`status`, which the
checks in solvers.checks may downgrade after recomputing residuals and gaps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# Normalised statuses (names used in tables, the CLI and the tests).
OPTIMAL = "optimal"
OPTIMAL_INACCURATE = "optimal_inaccurate"
INFEASIBLE = "infeasible"
UNBOUNDED = "unbounded"
ITERATION_LIMIT = "iteration_limit"
TIME_LIMIT = "time_limit"
ERROR = "error"
STATUSES = (OPTIMAL, OPTIMAL_INACCURATE, INFEASIBLE, UNBOUNDED, ITERATION_LIMIT, TIME_LIMIT, ERROR)


@dataclass
class RawResult:
    """What an adapter reports after loading the solver's point into the model."""

    status: str
    raw_status: str
    objective: float = math.nan
    iterations: int | None = None
    solve_s: float = math.nan
    message: str = ""
    has_duals: bool = True


@dataclass
class Solution:
    """One solve of one formulation by one (layer, backend).

    `objective` is the optimum in the formulation's own sense (the dual's is a
    maximum). `alpha` comes from the dual variables of a dual formulation, or
    from the multipliers of the primal's margin constraints; `b_multiplier` is
    the multiplier of the dual's equality constraint sum alpha_i y_i = 0.
    """

    formulation: str
    layer: str
    backend: str
    status: str
    solver_status: str
    raw_status: str
    objective: float = math.nan
    w: np.ndarray | None = None
    b: float = math.nan
    b_rule: str = ""
    b_multiplier: float = math.nan
    xi: np.ndarray | None = None
    alpha: np.ndarray | None = None
    decision: np.ndarray | None = None  # f(x_i) on the training points
    iterations: int | None = None
    build_s: float = math.nan
    solve_s: float = math.nan
    backend_version: str = ""
    profile: str = "default"
    message: str = ""
    checks: dict = field(default_factory=dict)  # solvers.checks.Checks, recomputed by the project
    # alpha at the optimum the checks proved from this point's active set (solvers.reference): exact zeros off
    # the support, where the solver's alpha has an interior point's small values; None without a proof
    proved_alpha: np.ndarray | None = None
    # b of that optimum (the midpoint of the optimal b's where no alpha is free), on the data as solved
    # (standardized ones under standardize=True, like proved_alpha; w and b are mapped back, these are not)
    proved_b: float = math.nan
    extras: dict = field(default_factory=dict)

    @property
    def is_optimal(self) -> bool:
        return self.status == OPTIMAL
