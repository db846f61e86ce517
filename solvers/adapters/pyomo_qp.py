"""Pyomo models solved by QP solvers Pyomo has no interface to (Clarabel, OSQP,
SCS, PIQP, ProxQP, DAQP), through the standard-form bridge and qpsolvers.

The model is read as a sparse QP (solvers.bridge.pyomo_standard_form), handed to the
solver through qpsolvers (one calling convention, native options passed
through), and the primal point and the multipliers are loaded back into the
Pyomo model exactly as Pyomo's HiGHS interface loads them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import scipy.sparse

from solvers.solution import ERROR, INFEASIBLE, OPTIMAL, OPTIMAL_INACCURATE, RawResult, UNBOUNDED
from solvers.adapters.base import RecordAdapter, limit_in, status_warnings
from solvers.backends import BackendRecord
from solvers.errors import BackendError

if TYPE_CHECKING:  # the bridge imports pyomo.environ (~1.5 s): loaded by `solve`, not by the registry
    from solvers.bridge.pyomo_standard_form import StandardQP
# Keywords in a solver's own status -> the project's status (first match wins), after its limits (base.limit_in).
RAW_STATUS_KEYWORDS = (
    ("dual_infeas", UNBOUNDED),
    ("dualinfeas", UNBOUNDED),
    ("unbounded", UNBOUNDED),
    ("infeas", INFEASIBLE),
    ("inaccurate", OPTIMAL_INACCURATE),
    ("almost", OPTIMAL_INACCURATE),
    ("solved", OPTIMAL),
    ("optimal", OPTIMAL),
)


def raw_status_of(extras: dict) -> str | None:
    """The solver's own status from qpsolvers' `extras`, where it keeps one."""
    if "status" in extras:
        return str(extras["status"])
    info = extras.get("info")
    if info is not None and hasattr(info, "status"):
        return str(info.status)
    return None


def iterations_of(extras: dict) -> int | None:
    """The iteration count from qpsolvers' `extras`, where the solver reports one."""
    for holder in (extras, extras.get("info")):
        for key in ("iter", "iterations", "num_iter"):
            value = holder.get(key) if isinstance(holder, dict) else getattr(holder, key, None)
            if isinstance(value, (int, np.integer)):
                return int(value)
    return None


def map_raw_status(raw: str | None, found: bool) -> str:
    if raw is None:
        return OPTIMAL if found else ERROR
    if limit := limit_in(raw):
        return limit
    key = raw.lower().replace(" ", "_")
    for keyword, status in RAW_STATUS_KEYWORDS:
        if keyword in key:
            if status == OPTIMAL and not found:
                return ERROR
            return status
    return OPTIMAL if found else ERROR


def qpsolvers_status(sol) -> tuple[str, str]:
    """(the project's status, the solver's own status) of a qpsolvers Solution,
    before its point is looked at (see `point_status`)."""
    raw = raw_status_of(sol.extras)
    return map_raw_status(raw, bool(sol.found)), raw if raw is not None else ("found" if sol.found else "not found")


def has_point(x) -> bool:
    """The solver returned a finite point."""
    return x is not None and bool(np.all(np.isfinite(x)))


def point_status(status: str, point: bool) -> str:
    """An optimum claimed without a finite point is an error."""
    return status if point or status != OPTIMAL else ERROR


def solve_standard_qp(qp: StandardQP, record: BackendRecord, options: dict):
    """Hand a StandardQP to qpsolvers, dense or sparse as the backend's record says; returns
    qpsolvers' Solution."""
    from qpsolvers import Problem

    problem = Problem(
        P=qp.P, q=qp.q,
        G=qp.G if qp.G.shape[0] else None, h=qp.h if qp.G.shape[0] else None,
        A=qp.A if qp.A.shape[0] else None, b=qp.b if qp.A.shape[0] else None,
        lb=qp.lb, ub=qp.ub,
    )
    n = qp.P.shape[0]
    nnz = qp.P.nnz if hasattr(qp.P, "nnz") else np.count_nonzero(qp.P)
    dense_P = n > 0 and nnz > 0.25 * n * n  # e.g. the kernel dual's Y K Y
    # qpsolvers picks the dense or sparse factorisation from the matrix type (the record says why); a
    # sparse-only solver (Clarabel, OSQP) is handed CSC here, not qpsolvers' conversion and its warning
    dense = record.wants_dense(dense_P)
    problem = Problem(*(_in_form(m, dense) for m in
                        (problem.P, problem.q, problem.G, problem.h, problem.A, problem.b, problem.lb, problem.ub)))
    return run_qpsolvers(problem, record, options)


def _in_form(m, dense: bool):
    """A matrix of the problem dense or as CSC; vectors and None as they are."""
    if dense:
        return m.toarray() if hasattr(m, "toarray") else m
    return scipy.sparse.csc_matrix(m) if isinstance(m, np.ndarray) and m.ndim == 2 else m


def solver_message(sol) -> str:
    """What the solver said beside its status: the warnings run_qpsolvers kept for the row."""
    return "; ".join(sol.extras.get("warnings", []))


def run_qpsolvers(problem, record: BackendRecord, options: dict):
    """qpsolvers.solve_problem with `record`'s solver; the warnings that only say how it ended (adapters.base.
    status_warnings) go to sol.extras["warnings"], and so to the row's message."""
    from qpsolvers import solve_problem

    with status_warnings(record.name) as folded:
        sol = solve_problem(problem, solver=record.qpsolvers_name, **options)
    if folded:
        sol.extras["warnings"] = folded
    return sol


@dataclass
class PyomoQPBackend(RecordAdapter):
    """One qpsolvers backend behind the Pyomo standard-form bridge."""

    layer: ClassVar[str] = "pyomo"
    layer_package: ClassVar[str] = "qpsolvers"

    def loads(self) -> tuple[bool, str]:
        import qpsolvers  # deferred on purpose: it imports every solver it finds

        if self.record.qpsolvers_name not in qpsolvers.available_solvers:
            return False, f"qpsolvers cannot load {self.record.qpsolvers_name}"
        return True, "available"

    def solve(self, model, options: dict, time_limit: float | None = None) -> RawResult:
        from solvers.bridge.pyomo_standard_form import from_pyomo, load_into_pyomo  # deferred on purpose: Pyomo

        qp = from_pyomo(model)
        # the solver's own limit; one without it is stopped by the solve server's kill (solvers.isolation)
        options = self.record.with_time_limit(options, time_limit)
        start = time.perf_counter()
        try:
            sol = solve_standard_qp(qp, self.record, options)
        except Exception as exc:
            raise BackendError(f"pyomo/{self.name} raised {type(exc).__name__}: {exc}") from exc
        elapsed = time.perf_counter() - start
        status, raw = qpsolvers_status(sol)
        point = has_point(sol.x)
        if point:
            load_into_pyomo(qp, model, sol.x, sol.y, sol.z)
        return RawResult(
            status=point_status(status, point),
            raw_status=raw,
            objective=qp.objective(sol.x) if point else float("nan"),
            iterations=iterations_of(sol.extras),
            solve_s=elapsed,
            has_duals=point and (sol.y is not None or sol.z is not None),
            message=solver_message(sol),
        )
