"""cvxpy as a layer: one adapter serves every solver cvxpy can call.

The model is solved in place (its variables and constraint duals are filled by
cvxpy); the adapter maps cvxpy's status through a table with a safe default and
keeps the solver's own code for the record.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from solvers.solution import (
    ERROR, INFEASIBLE, ITERATION_LIMIT, OPTIMAL, OPTIMAL_INACCURATE, RawResult, TIME_LIMIT, UNBOUNDED
)
from solvers.adapters.base import RecordAdapter, limit_in, status_warnings
from solvers.errors import BackendError

if TYPE_CHECKING:  # annotations only: the registry (and --list) must not import Pyomo through it
    from formulations.model import CvxpyModel

# cvxpy's statuses -> the project's. Anything not listed becomes an error.
STATUS_MAP = {
    "optimal": OPTIMAL,
    "optimal_inaccurate": OPTIMAL_INACCURATE,
    "infeasible": INFEASIBLE,
    "infeasible_inaccurate": INFEASIBLE,
    "unbounded": UNBOUNDED,
    "unbounded_inaccurate": UNBOUNDED,
    "infeasible_or_unbounded": INFEASIBLE,
    "user_limit": ITERATION_LIMIT,
    "solver_error": ERROR,
}

def project_status(cvxpy_status: str, time_limit: float | None, elapsed: float, raw: str = "") -> str:
    """The project's status for cvxpy's: the limit the solver's own status `raw` names, where it names one (cvxpy
    called SCS stopped at its time limit optimal_inaccurate); "user_limit" is cvxpy's word for an iteration limit
    and for a time limit alike, so it is a time limit where one was set and the solve ran to it (cvxpy/HiGHS on
    breast cancer x 1e3 at C = 1e-5 with time_limit = 10 said iteration_limit)."""
    status = limit_in(raw) or STATUS_MAP.get(cvxpy_status, ERROR)
    if status == ITERATION_LIMIT and time_limit is not None and elapsed >= time_limit:
        return TIME_LIMIT
    return status


# cvxpy's SciPy canonicalisation backend compiles the large models faster than its default (C++).
CANON_BACKEND = "SCIPY"


def _raw_status(problem) -> str:
    """The solver's own status string, where cvxpy keeps it."""
    stats = problem.solver_stats
    extra = getattr(stats, "extra_stats", None) if stats is not None else None
    for path in (("status",), ("info", "status"), ("status_val",)):
        obj = extra
        try:
            for key in path:
                obj = obj[key] if isinstance(obj, dict) else getattr(obj, key)
        except (KeyError, AttributeError, TypeError):
            continue
        if obj is not None:
            return str(obj)
    return str(problem.status)


def solve_kwargs(record, *, dense: bool, options: dict, time_limit: float | None = None) -> dict:
    """The keyword arguments of `Problem.solve` for a backend's record: its matrix form, its options,
    its time-limit option, and Ipopt through cvxpy's NLP path (`record.cvxpy_options`: nlp=True, the
    only way cvxpy reaches it, which takes no canon_backend). The adapter and the working set's
    subproblems both solve with these."""
    kwargs = {**record.cvxpy_matrix_backend(dense_form=dense), **record.with_time_limit(options, time_limit),
              **record.cvxpy_options}
    if not record.cvxpy_options.get("nlp"):
        kwargs.setdefault("canon_backend", CANON_BACKEND)
    return kwargs


@dataclass
class CvxpyBackend(RecordAdapter):
    """Solve a `CvxpyModel` with one of cvxpy's solvers."""

    layer: ClassVar[str] = "cvxpy"
    layer_package: ClassVar[str] = "cvxpy"

    @property
    def cvxpy_name(self) -> str:
        return self.record.cvxpy_name

    def loads(self) -> tuple[bool, str]:
        import cvxpy as cp  # deferred on purpose: the registry (and --list) must not import cvxpy

        if self.cvxpy_name not in cp.installed_solvers():
            return False, f"cvxpy does not list {self.cvxpy_name} among its installed solvers"
        return True, "available"

    def solve(self, model: CvxpyModel, options: dict, time_limit: float | None = None) -> RawResult:
        import cvxpy as cp

        kwargs = solve_kwargs(self.record, dense=model.info.get("form") == "dense", options=options,
                              time_limit=time_limit)
        start = time.perf_counter()
        try:
            with status_warnings(self.name) as folded:
                model.problem.solve(solver=self.cvxpy_name, **kwargs)
        except cp.error.SolverError as exc:
            return RawResult(status=ERROR, raw_status="solver_error", message=str(exc),
                                solve_s=time.perf_counter() - start)
        except Exception as exc:  # a solver's own exception: re-raise as the project's
            raise BackendError(f"cvxpy/{self.name} raised {type(exc).__name__}: {exc}") from exc
        elapsed = time.perf_counter() - start
        stats = model.problem.solver_stats
        raw = _raw_status(model.problem)
        status = project_status(model.problem.status, time_limit, elapsed, raw)
        iters = getattr(stats, "num_iters", None)
        return RawResult(
            status=status,
            raw_status=raw,
            objective=float(model.problem.value) if model.problem.value is not None else float("nan"),
            iterations=iters if isinstance(iters, int) else None,
            solve_s=elapsed,
            has_duals=self.record.cvxpy_duals,  # cvxpy's IPOPT path (nlp=True) returns none
            message="; ".join(([f"stopped at the time limit ({time_limit:g} s)"] if status == TIME_LIMIT else [])
                              + folded),
        )
