r"""Working-set decomposition of the kernel dual (SVMlight's scheme around a general QP solver).

In minimisation form, with Q = Y K Y and the gradient g = Q alpha - 1,

    min  f(alpha) = 1/2 alpha' Q alpha - 1' alpha    s.t.  y' alpha = 0,  0 <= alpha_i <= C.

alpha is optimal exactly when no pair of indices gives a feasible descent
direction (the KKT conditions of 001 Exercise 5.3 written with the bias as the
multiplier of y'alpha = 0):

    m(alpha) = max_{i in I_up} -y_i g_i  <=  M(alpha) = min_{i in I_low} -y_i g_i,
    I_up  = {i : y_i = +1, alpha_i < C} u {i : y_i = -1, alpha_i > 0},
    I_low = {i : y_i = +1, alpha_i > 0} u {i : y_i = -1, alpha_i < C}.

Each outer step picks a working set B of at most q indices, the q/2 most
violating from each side (SVMlight's steepest feasible direction), and solves
the kernel dual restricted to B with the others fixed,

    min  1/2 a' Q_BB a + (g_B - Q_BB alpha_B)' a    s.t.  y_B' a = -y_N' alpha_N,  0 <= a <= C,

with one of the project's backends, through the solver alone ("direct"), cvxpy
or Pyomo. The gradient is updated with the q columns of Q that changed
(O(n q)), so no n x n system is ever solved; the loop stops when
m - M <= tol (the maximal KKT violation), which is the optimum to the
tolerance's order, then the point is recovered and checked like any other.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from formulations.model import KERNEL_DUAL
from solvers import solution as st

LAYERS = ("direct", "cvxpy", "pyomo")


@dataclass
class WorkingSetResult:
    alpha: np.ndarray
    objective: float  # D(alpha) = 1' alpha - 1/2 alpha' Q alpha (the dual's own sense)
    violation: float  # m - M at the end
    outer_iterations: int
    subproblem_s: float  # time inside the subproblem solver calls
    converged: bool
    stalled: bool = False  # stopped at the subproblem solver's precision (violation < 1e-3, not falling)


def _violation(alpha, g, y, C, eps=0.0):
    minus_yg = -y * g
    up = ((y > 0) & (alpha < C - eps)) | ((y < 0) & (alpha > eps))
    low = ((y > 0) & (alpha > eps)) | ((y < 0) & (alpha < C - eps))
    return up, low, minus_yg


def _subproblem_direct(Q_BB, p, y_B, rhs, C, backend, options):
    from qpsolvers import Problem, solve_problem

    nb = len(p)
    problem = Problem(P=Q_BB, q=p, A=y_B[None, :], b=np.array([rhs]), lb=np.zeros(nb), ub=np.full(nb, C))
    start = time.perf_counter()
    sol = solve_problem(problem, solver=backend, **options)
    return sol.x, time.perf_counter() - start


def _subproblem_cvxpy(Q_BB, p, y_B, rhs, C, backend, options):
    # Rebuilt per step: a parametrized (DPP) version with Q_BB = G'G as a parameter was measured
    # 15x slower here (cvxpy's parameter tensor for a 200 x 200 matrix dominates).
    import cvxpy as cp

    from solvers.cvxpy_layer import CVXPY_SOLVERS

    a = cp.Variable(len(p))
    problem = cp.Problem(cp.Minimize(0.5 * cp.quad_form(a, cp.psd_wrap(Q_BB)) + p @ a),
                         [y_B @ a == rhs, a >= 0, a <= C])
    start = time.perf_counter()
    problem.solve(solver=CVXPY_SOLVERS[backend][0], **options)
    return (None if a.value is None else np.asarray(a.value, dtype=float)), time.perf_counter() - start


def _subproblem_pyomo(Q_BB, p, y_B, rhs, C, backend, options):
    import pyomo.environ as pyo

    from formulations.model import linear_sum
    from formulations.quadratic_form import QuadraticForm
    from solvers.registry import get_backend

    nb = len(p)
    m = pyo.ConcreteModel()
    m.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    m.I = pyo.RangeSet(0, nb - 1)
    m.alpha = pyo.Var(m.I, bounds=(0.0, C))
    m.balance = pyo.Constraint(expr=linear_sum(y_B, m.alpha) == rhs)
    # a' Q_BB a kept as the matrix (formulations.quadratic_form): the bridge reads it as an array.
    m.quad = QuadraticForm(Q_BB, m.alpha)
    m.obj = pyo.Objective(expr=linear_sum(p, m.alpha) + 0.5 * m.quad)
    start = time.perf_counter()
    get_backend("pyomo", backend).solve(m, options, None)
    values = np.array([m.alpha[i].value for i in m.I], dtype=float)
    return (None if np.any(np.isnan(values)) else values), time.perf_counter() - start


def _snap(alpha, y, C, bound_tol):
    """Put the points within bound_tol * C of a bound on it, and restore y'alpha = 0 on the free ones."""
    alpha = alpha.copy()
    alpha[alpha < bound_tol * C] = 0.0
    alpha[alpha > C * (1 - bound_tol)] = C
    free = np.flatnonzero((alpha > 0) & (alpha < C))
    if free.size:
        residual = float(y @ alpha)
        alpha[free] = np.clip(alpha[free] - y[free] * residual / free.size, 0.0, C)
    return alpha


SUBSOLVERS = {"direct": _subproblem_direct, "cvxpy": _subproblem_cvxpy, "pyomo": _subproblem_pyomo}


def decompose(K: np.ndarray, y: np.ndarray, C: float, *, backend: str = "clarabel", layer: str = "direct",
              q: int = 200, tol: float = 1e-6, max_outer: int = 10_000, max_stall: int = 5, bound_tol: float = 1e-6, options: dict | None = None,
              time_limit: float | None = None) -> WorkingSetResult:
    """Solve the kernel dual by working sets of at most q points (K: the n x n Gram matrix)."""
    if layer not in LAYERS:
        raise ValueError(f"unknown working-set layer {layer!r}; choose one of {LAYERS}")
    if not (math.isfinite(C) and C > 0):
        raise ValueError(f"the working-set method needs a finite C > 0 (got {C!r})")
    if q < 2:
        raise ValueError(f"the working set needs q >= 2 points (got {q})")
    from solvers.profiles import backend_options

    K = np.asarray(K, dtype=float)
    y = np.asarray(y, dtype=float)
    n = len(y)
    opts = {**backend_options(backend, "high"), **(options or {})}
    subsolve = SUBSOLVERS[layer]
    alpha = np.zeros(n)
    g = -np.ones(n)  # Q alpha - 1 at alpha = 0
    sub_s = 0.0
    start = time.perf_counter()
    violation = math.inf
    converged = False
    it = 0
    previous: np.ndarray | None = None
    best, stalled, stall_stop = math.inf, 0, False
    for it in range(1, max_outer + 1):
        # A point within bound_tol * C of a bound counts as at the bound: the interior-point
        # subproblem solvers leave such points a hair inside, and SMO-exact bounds are not needed
        # for the optimum (its objective changes by at most bound_tol * C * |g_i| per point).
        up, low, minus_yg = _violation(alpha, g, y, C, eps=bound_tol * C)
        if not up.any() or not low.any():
            violation, converged = 0.0, True
            break
        violation = float(minus_yg[up].max() - minus_yg[low].min())
        if violation <= tol:
            converged = True
            break
        # The subproblems are solved to about 1e-9: below that the violation stops falling.
        if violation < best * 0.99 or violation > 1e-3:
            best, stalled = min(best, violation), 0
        else:
            stalled += 1
            if stalled >= max_stall:
                stall_stop = True
                break
        if time_limit is not None and time.perf_counter() - start > time_limit:
            break
        half = max(1, q // 2)
        up_idx = np.flatnonzero(up)
        low_idx = np.flatnonzero(low)
        top_up = up_idx[np.argsort(-minus_yg[up_idx], kind="stable")[:half]]
        top_low = low_idx[np.argsort(minus_yg[low_idx], kind="stable")[:half]]
        B = np.union1d(top_up, top_low)
        if previous is not None and len(B) < q:  # fill with free points of the last set: fewer zig-zags
            free = previous[(alpha[previous] > bound_tol * C) & (alpha[previous] < C * (1 - bound_tol))]
            B = np.union1d(B, free[: q - len(B)])
        yB = y[B]
        Q_BB = (yB[:, None] * K[np.ix_(B, B)]) * yB[None, :]
        p = g[B] - Q_BB @ alpha[B]
        rhs = float(yB @ alpha[B])  # = -y_N' alpha_N: the balance with the others fixed
        new, elapsed = subsolve(Q_BB, p, yB, rhs, C, backend, opts)
        sub_s += elapsed
        if new is None or not np.all(np.isfinite(new)):
            break
        new = np.clip(new, 0.0, C)
        # Snap to the bounds what the interior-point solvers leave a hair inside them.
        new[new < 1e-10 * C] = 0.0
        new[new > C * (1 - 1e-10)] = C
        delta = new - alpha[B]
        changed = np.flatnonzero(np.abs(delta) > 0)
        if changed.size == 0:
            break
        Bc = B[changed]
        # K is symmetric: gather the changed rows (contiguous in memory), not columns.
        g += y * ((y[Bc] * delta[changed]) @ K[Bc])
        alpha[Bc] = new[changed]
        previous = B
    alpha = _snap(alpha, y, C, bound_tol)
    objective = float(alpha.sum() - 0.5 * (alpha @ (y * (K @ (y * alpha)))))
    return WorkingSetResult(alpha, objective, violation, it, sub_s, converged, stall_stop)


def solve(K, y, C: float, *, backend: str = "clarabel", layer: str = "direct", q: int = 200, tol: float = 1e-6,
          profile: str = "high", options: dict | None = None, time_limit: float | None = None,
          validate: bool = True) -> st.Solution:
    """The kernel dual by working sets, recovered and checked like solvers.api.solve's result."""
    from formulations import validation
    from solvers.api import _recover
    from solvers.checks import compute_checks, verified_status
    from solvers.profiles import get_profile

    y, labels = validation.check_labels(y)
    # validate=False: K comes from formulations.kernels already (the O(n^2) checks cost seconds at n = 5,000).
    K = validation.check_gram(K, len(y)) if validate else np.asarray(K, dtype=float)
    C = validation.check_C(C)
    prof = get_profile(profile)
    start = time.perf_counter()
    res = decompose(K, y, C, backend=backend, layer=layer, q=q, tol=tol, options=options, time_limit=time_limit)
    total = time.perf_counter() - start
    # A stop at the subproblem solver's precision is a claim the project's checks then verify.
    status = st.OPTIMAL if res.converged else (st.OPTIMAL_INACCURATE if res.stalled else st.ITERATION_LIMIT)
    sol = st.Solution(
        formulation=KERNEL_DUAL, layer=layer, backend=backend, status=status, solver_status=status,
        raw_status=f"working_set: violation {res.violation:.2e} after {res.outer_iterations} steps",
        objective=res.objective, build_s=total - res.subproblem_s, solve_s=res.subproblem_s,
        iterations=res.outer_iterations, profile=prof.name,
        extras={"labels": labels.as_dict(), "kernel_form": "working_set", "q": q, "kkt_violation": res.violation},
    )
    X = np.zeros((len(y), 0))
    values = {"alpha": res.alpha}
    _recover(sol, values, KERNEL_DUAL, X, y, K, C)
    checks = compute_checks(sol, X, y, C, K, tol=prof.check_tol)
    sol.checks = checks.as_dict()
    sol.status = verified_status(status, checks)
    return sol
