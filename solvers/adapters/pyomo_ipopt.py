"""Pyomo + Ipopt through cyipopt: a bridge of the project's own.

Pyomo's Ipopt paths need an `ipopt` executable or PyNumero's compiled ASL
library, neither of which installs here. This bridge reads the Pyomo model as a
sparse QP (solvers.bridge.pyomo_standard_form), hands Ipopt the problem with its exact
derivatives (gradient P x + q, constant Jacobian [A; G], constant Hessian P),
then loads the point back into the Pyomo variables and the multipliers into
`model.dual` in the convention of Pyomo's HiGHS interface.

Ipopt's multipliers satisfy grad f + J' lambda - z_L + z_U = 0 (lambda <= 0 on an
active lower bound g >= cl), so d f*/d (constraint bound) = -lambda.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import scipy.sparse as sp

from solvers.solution import (
    ERROR, INFEASIBLE, ITERATION_LIMIT, OPTIMAL, OPTIMAL_INACCURATE, RawResult, TIME_LIMIT, UNBOUNDED
)
from solvers.adapters.base import RecordAdapter
from solvers.errors import BackendError

if TYPE_CHECKING:  # the bridge imports pyomo.environ (~1.5 s): loaded by `solve`, not by the registry
    from solvers.bridge.pyomo_standard_form import StandardQP

# Ipopt's ApplicationReturnStatus -> the project's; "acceptable level" is not optimal.
IPOPT_STATUS = {
    0: OPTIMAL,  # Solve_Succeeded
    1: OPTIMAL_INACCURATE,  # Solved_To_Acceptable_Level
    2: INFEASIBLE,  # Infeasible_Problem_Detected
    3: ERROR,  # Search_Direction_Becomes_Too_Small
    4: UNBOUNDED,  # Diverging_Iterates
    5: ERROR,  # User_Requested_Stop
    6: OPTIMAL_INACCURATE,  # Feasible_Point_Found
    -1: ITERATION_LIMIT,  # Maximum_Iterations_Exceeded
    -2: ERROR,  # Restoration_Failed
    -3: ERROR,  # Error_In_Step_Computation
    -4: TIME_LIMIT,  # Maximum_CpuTime_Exceeded
    -5: TIME_LIMIT,  # Maximum_WallTime_Exceeded
}


def ipopt_status(info: dict) -> tuple[str, str]:
    """(the project's status, "code: Ipopt's message") from cyipopt's info dict."""
    code = int(info["status"])
    msg = info["status_msg"].decode() if isinstance(info["status_msg"], bytes) else str(info["status_msg"])
    return IPOPT_STATUS.get(code, ERROR), f"{code}: {msg}"


class _QPCallbacks:
    """The callbacks cyipopt asks for, for min 1/2 x'Px + q'x s.t. cl <= J x <= cu."""

    def __init__(self, qp: StandardQP):
        self.P = qp.P.tocsr()
        self.q = qp.q
        self.J = sp.vstack([qp.A, qp.G]).tocoo() if (qp.A.shape[0] + qp.G.shape[0]) else sp.coo_matrix((0, qp.n))
        lower = sp.tril(qp.P, format="coo")
        self.H_rows, self.H_cols, self.H_vals = lower.row, lower.col, lower.data
        self.iterations = 0

    def objective(self, x):
        return 0.5 * x @ (self.P @ x) + self.q @ x

    def gradient(self, x):
        return self.P @ x + self.q

    def constraints(self, x):
        return self.J @ x

    def jacobianstructure(self):
        return self.J.row, self.J.col

    def jacobian(self, x):
        return self.J.data

    def hessianstructure(self):
        return self.H_rows, self.H_cols

    def hessian(self, x, lagrange, obj_factor):
        return obj_factor * self.H_vals  # constraints are linear: no curvature from them

    def intermediate(self, alg_mod, iter_count, *args):
        self.iterations = int(iter_count)
        return True


def solve_qp_with_ipopt(qp: StandardQP, options: dict):
    """Solve a StandardQP with cyipopt, `options` with the time limit in them (BackendRecord.with_time_limit);
    returns (x, lambda_eq, lambda_ineq, info, iterations)."""
    import cyipopt

    callbacks = _QPCallbacks(qp)
    m_eq, m_in = qp.A.shape[0], qp.G.shape[0]
    cl = np.concatenate([qp.b, np.full(m_in, -np.inf)])
    cu = np.concatenate([qp.b, qp.h])
    problem = cyipopt.Problem(n=qp.n, m=m_eq + m_in, problem_obj=callbacks, lb=qp.lb, ub=qp.ub, cl=cl, cu=cu)
    problem.add_option("print_level", 0)
    problem.add_option("sb", "yes")
    # The Hessian and Jacobian are constant: tell Ipopt so it factors once per iteration only.
    problem.add_option("hessian_constant", "yes")
    problem.add_option("jac_c_constant", "yes")
    problem.add_option("jac_d_constant", "yes")
    for key, value in options.items():
        problem.add_option(key, value)
    x0 = np.clip(np.zeros(qp.n), qp.lb, qp.ub)
    x, info = problem.solve(x0)
    lam = np.asarray(info["mult_g"], dtype=float)
    return x, lam[:m_eq], lam[m_eq:], info, callbacks.iterations


@dataclass
class PyomoIpoptBackend(RecordAdapter):
    layer: ClassVar[str] = "pyomo"

    def loads(self) -> tuple[bool, str]:
        try:
            import cyipopt  # noqa: F401  (the bundled Ipopt library loads here)
        except Exception as exc:
            return False, f"cyipopt does not load: {exc}"
        return True, "available"

    def solve(self, model, options: dict, time_limit: float | None = None) -> RawResult:
        from solvers.bridge.pyomo_standard_form import from_pyomo, load_into_pyomo  # deferred on purpose: Pyomo

        qp = from_pyomo(model)
        start = time.perf_counter()
        try:
            x, lam_eq, lam_in, info, iterations = solve_qp_with_ipopt(qp, self.record.with_time_limit(options, time_limit))
        except Exception as exc:
            raise BackendError(f"pyomo/ipopt raised {type(exc).__name__}: {exc}") from exc
        elapsed = time.perf_counter() - start
        status, raw = ipopt_status(info)
        # Ipopt's lambda is already qpsolvers' (y, z): grad f + A'y + G'z + z_box = 0.
        load_into_pyomo(qp, model, x, lam_eq, lam_in)
        return RawResult(
            status=status,
            raw_status=raw,
            objective=qp.objective(x),
            iterations=iterations,
            solve_s=elapsed,
        )
