r"""A working set's subproblem: the kernel dual restricted to a block B, the others fixed,

    min  1/2 a' Q_BB a + (g_B - Q_BB alpha_B)' a    s.t.  y_B' a = -y_N' alpha_N,  0 <= a <= C,

solved by one of the project's backends through the solver alone ("direct"), cvxpy or Pyomo (the block's
models: formulations.kernel_dual.build_block_cvxpy, build_block_pyomo), then made exact on its active set
(solvers.algorithms.working_set.polish) and snapped onto the bounds.

Each layer's solver takes the seconds its backend may run (time_limit: what remains of the solve's Deadline;
None: no limit) and hands them to a backend that has a time limit of its own (BackendRecord.time_limit).
"""

from __future__ import annotations

import math
import time

import cvxpy as cp
import numpy as np

from formulations import penalty
from formulations.kernel_dual import build_block_cvxpy, build_block_pyomo, dual_matrix
from solvers.adapters.base import status_warnings
from solvers.adapters.cvxpy_layer import solve_kwargs
from solvers.adapters.pyomo_qp import solve_standard_qp
from solvers.algorithms.direct import standard_qp
from solvers.algorithms.working_set.optimality import SNAP, alpha_scale, balance_classes
from solvers.algorithms.working_set.polish import polish_block
from solvers.backends import get_record
from solvers.deadline import NEVER, Deadline
from solvers.registry import get_backend


def subproblem_direct(Q_BB, p, y_B, rhs, C, backend, options, time_limit=None):
    """The block as a standard-form QP handed to the backend alone: (a or None, seconds)."""
    nb = len(p)
    qp = standard_qp(Q_BB, p, y_B[None, :], [rhs], None, None, np.zeros(nb), penalty.upper_bounds(C, nb), sense=1)
    start = time.perf_counter()
    record = get_record(backend)
    sol = solve_standard_qp(qp, record, record.with_time_limit(options, time_limit))
    return sol.x, time.perf_counter() - start


def subproblem_cvxpy(Q_BB, p, y_B, rhs, C, backend, options, time_limit=None):
    """The block's cvxpy model solved by the backend: (a or None, seconds). It is rebuilt per step
    (formulations.kernel_dual.psd_constant says what compiling it once would cost)."""
    model = build_block_cvxpy(Q_BB, p, y_B, rhs, C)
    a = model.variables["alpha"]
    start = time.perf_counter()
    record = get_record(backend)
    try:  # a block's "Solution may be inaccurate" is not for the user: the loop polishes and checks its point
        with status_warnings(backend):
            model.problem.solve(solver=record.cvxpy_name, **solve_kwargs(record, dense=True, options=options,
                                                                         time_limit=time_limit))
    except cp.error.SolverError:  # as in the cvxpy adapter: a failed solve is no point, not a crash
        return None, time.perf_counter() - start
    return (None if a.value is None else np.asarray(a.value, dtype=float)), time.perf_counter() - start


def subproblem_pyomo(Q_BB, p, y_B, rhs, C, backend, options, time_limit=None):
    """The block's Pyomo model solved by the backend: (a or None, seconds)."""
    m = build_block_pyomo(Q_BB, p, y_B, rhs, C)
    start = time.perf_counter()
    get_backend("pyomo", backend).solve(m, options, time_limit)
    values = np.array([v.value for v in m.alpha.values()], dtype=float)  # index order, no lookup per index
    return (None if np.any(np.isnan(values)) else values), time.perf_counter() - start


#: The subproblem's solver for each layer.
SUBSOLVERS = {"direct": subproblem_direct, "cvxpy": subproblem_cvxpy, "pyomo": subproblem_pyomo}


def solve_block(src, y, alpha, g_B, B, rhs, C, subsolve, backend, options, target=math.inf,
                deadline: Deadline = NEVER, polish_budget: float = math.inf):
    """The kernel dual over alpha_B with the others fixed (module docstring), polished on its active
    set (polish_block), else clipped to [0, C] and snapped onto the bounds the interior-point solvers
    leave a hair inside; (alpha_B or None, seconds, polished or not).

    g_B: the gradient Q alpha - 1 on B; rhs: -y_N' alpha_N, the balance left to B; target: the loop's
    violation tolerance (polish_block). deadline: the subproblem is given the time that remains; None where
    the deadline passed before it or during it (deadline.passed() tells that from a solver's failure).
    polish_budget: the polish's factor work at most (polish_block's budget).
    """
    if deadline.passed():
        return None, 0.0, False
    Q_BB = dual_matrix(src.submatrix(B, B), y[B])
    p = g_B - Q_BB @ alpha[B]
    # Solved in s = a / t in [0, C / t] with the objective divided by t^2 max|Q_BB|, t = alpha_scale
    # (C, or the largest alpha where that is smaller): the solvers' absolute tolerances (~1e-9) would
    # otherwise be large next to alpha at a small C, or where every alpha is far below a large C.
    # With every alpha at 0 there is no size yet: the block's own, |p| / max|Q| (a one-point block's
    # optimum), is within a few orders of alpha's; an s far above 1 is no harm to the solvers, one far below 1 is.
    q_max = max(float(np.abs(Q_BB).max()), np.finfo(float).tiny)
    C_B = penalty.at(C, B)
    t = alpha_scale(alpha, C) if alpha.any() else min(penalty.largest(C_B), float(np.abs(p).max()) / q_max)
    size = t * q_max
    s, elapsed = subsolve(Q_BB * (t / size), p / size, y[B], rhs / t, C_B / t, backend, options,
                          deadline.for_backend())
    # a point a backend left at its time limit is no solution of the subproblem (nor its balance held)
    if s is None or not np.all(np.isfinite(s)) or deadline.passed():
        return None, elapsed, False
    new = np.clip(s * t, 0.0, C_B)
    polished = polish_block(Q_BB, p, y[B], rhs, C_B, new, alpha_size=t, target=target, deadline=deadline,
                            budget=polish_budget)
    if polished is not None:
        new = polished
    # A point left within SNAP * t of 0 or of C goes on the bound: with less room than that a violating
    # pair cannot move (the loop counts it as on the bound), and the same block would come back forever.
    new[new < SNAP * t] = 0.0
    new = np.where(new > C_B * (1 - SNAP), C_B, new)
    if polished is None:  # the clip left y_B'alpha_B off rhs by the solver's tolerance: put back, else the point
        new = balance_classes(new, y[B], rhs)  # handed on is not feasible (a polished one holds it to rounding)
    return new, elapsed, polished is not None
