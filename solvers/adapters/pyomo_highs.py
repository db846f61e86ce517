"""Pyomo + HiGHS through Pyomo's own interface (`pyomo.contrib.solver`, the one
behind `SolverFactory('highs')`), which passes the Hessian and returns duals.

Multipliers are loaded into the model's `dual` Suffix in Pyomo's convention
(d objective / d right-hand side, in the objective's own sense); every other
Pyomo backend of this project loads them the same way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

from solvers.solution import (
    ERROR, INFEASIBLE, ITERATION_LIMIT, OPTIMAL, OPTIMAL_INACCURATE, RawResult, TIME_LIMIT, UNBOUNDED
)
from solvers.adapters.base import RecordAdapter
from solvers.errors import BackendError

# pyomo.contrib.solver TerminationCondition names -> the project's statuses.
TERMINATION_MAP = {
    "convergenceCriteriaSatisfied": OPTIMAL,
    "maxTimeLimit": TIME_LIMIT,
    "iterationLimit": ITERATION_LIMIT,
    "unbounded": UNBOUNDED,
    "provenInfeasible": INFEASIBLE,
    "locallyInfeasible": INFEASIBLE,
    "infeasibleOrUnbounded": INFEASIBLE,
}


@dataclass
class PyomoHighsBackend(RecordAdapter):
    layer: ClassVar[str] = "pyomo"

    def loads(self) -> tuple[bool, str]:
        # deferred on purpose: Pyomo takes ~1.5 s; pyomo.environ registers its solver plugins (without
        # it the factory knows no HiGHS, and a fresh process listed pyomo/highs as unavailable)
        import pyomo.environ  # noqa: F401
        from pyomo.contrib.solver.common.factory import SolverFactory

        available = SolverFactory(self.record.name).available()  # Pyomo registers it under the same name
        return (bool(available), "available" if available else f"Pyomo reports {self.record.title} as {available}")

    def solve(self, model, options: dict, time_limit: float | None = None) -> RawResult:
        from pyomo.contrib.solver.common.factory import SolverFactory

        solver = SolverFactory(self.record.name)  # Pyomo registers it under the same name
        options = self.record.with_time_limit(options, time_limit)
        time_limit = options.pop(self.record.time_limit_option, None)  # Pyomo's own keyword for it
        start = time.perf_counter()
        try:
            results = solver.solve(
                model,
                load_solutions=False,
                raise_exception_on_nonoptimal_result=False,
                time_limit=time_limit,
                solver_options=dict(options),
            )
        except Exception as exc:
            raise BackendError(f"pyomo/highs raised {type(exc).__name__}: {exc}") from exc
        elapsed = time.perf_counter() - start
        raw = results.termination_condition.name
        status = TERMINATION_MAP.get(raw, ERROR)
        if status == OPTIMAL and results.solution_status.name != "optimal":
            status = OPTIMAL_INACCURATE
        objective = results.incumbent_objective
        has_point = results.solution_status.name in ("optimal", "feasible")
        if has_point:
            results.solution_loader.load_vars()
            try:
                duals = results.solution_loader.get_duals()
            except Exception:  # no duals for this point (e.g. a time-limit stop)
                duals = {}
            model.dual.clear()
            model.dual.update(duals)
        return RawResult(
            status=status,
            raw_status=f"{raw}/{results.solution_status.name}",
            objective=float(objective) if objective is not None else float("nan"),
            iterations=_iterations(results.extra_info),
            solve_s=elapsed,
            has_duals=has_point,
        )


def _iterations(info) -> int | None:
    """HiGHS's iterations of the method it ran (its QP solver's, simplex's, IPX's or PDLP's: the others are 0)."""
    keys = ("qp_iteration_count", "simplex_iteration_count", "ipm_iteration_count", "pdlp_iteration_count")
    counts = [info[key] for key in keys if key in info]  # a ConfigDict: get() returns its declaration, not the value
    counts = [int(c) for c in counts if isinstance(c, int) and c >= 0]
    return max(counts) if counts else None
