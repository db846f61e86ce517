"""The working set's block polish (solvers.algorithms.working_set.polish) on singular
kernels. Moons, standardized, rbf with gamma "scale", C = 1,000: K has numerical rank ~100 out of 1,000,
so the free points' Q_FF is singular; the primal-dual rounds the polish used to run cycled there and
the loop worked on the solver's unpolished points (n = 2,000: 546 steps against 27 for the same data in
other units). Small cases, seconds, no timings."""

from __future__ import annotations

import functools

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as hs
from sklearn.datasets import make_moons
from sklearn.preprocessing import StandardScaler

from formulations.kernels import Kernel, gram
from solvers import api
from solvers.solution import OPTIMAL
from solvers.algorithms import working_set as ws
from solvers.algorithms.working_set import optimality, polish, subproblems

C_LARGE = 1000.0
#: The exactness the issue asks for: the objective within 1e-7 of a tight reference.
OBJECTIVE_RTOL = 1e-7


def _moons(n: int, seed: int, scale: float = 1.0):
    """Moons in `scale` times standardized units, y in {-1, +1}, and K with gamma "scale" (1 / (d var X)):
    K is the same in every unit up to rounding."""
    X, y = make_moons(n, noise=0.25, random_state=seed)
    X = StandardScaler().fit_transform(X) * scale
    return X, np.where(y > 0, 1.0, -1.0), gram(Kernel("rbf", gamma=1.0 / (X.shape[1] * X.var())), X)


def _block_objective(Q, p, x) -> float:
    return float(0.5 * x @ Q @ x + p @ x)


def _kkt_holds(Q, p, y, rhs, C, x, rtol=1e-8) -> bool:
    """The block's KKT conditions, checked apart from the polish: x in [0, C], y'x = rhs, and one balance
    multiplier nu with g_i + nu y_i = 0 on the free points, >= 0 at 0 and <= 0 at C (g = Q x + p),
    to rtol of the gradient's size."""
    g = Q @ x + p
    tol = rtol * (np.abs(Q).max() * C + np.abs(p).max())
    if np.any(x < 0) or np.any(x > C) or abs(y @ x - rhs) > 1e-12 * C * len(x):
        return False
    # y_i = +-1, so each point bounds nu: at 0, nu >= -g_i (y_i = +1) or nu <= g_i (y_i = -1); at C the
    # reverse; a free point fixes nu = -y_i g_i
    at0, atC, free = x == 0, x == C, (x > 0) & (x < C)
    lower = np.concatenate([-g[at0 & (y > 0)], g[atC & (y < 0)], -y[free] * g[free]])
    upper = np.concatenate([g[at0 & (y < 0)], -g[atC & (y > 0)], -y[free] * g[free]])
    return lower.max(initial=-np.inf) <= upper.min(initial=np.inf) + tol


def _tight_block_optimum(Q, p, y, rhs, C) -> float:
    """The block's optimum by Clarabel (cvxpy) at tight tolerances: the independent reference."""
    a = cp.Variable(len(p), bounds=[0.0, C])
    problem = cp.Problem(cp.Minimize(0.5 * cp.quad_form(a, cp.psd_wrap(Q)) + p @ a), [y @ a == rhs])
    # 1e-10: far inside OBJECTIVE_RTOL, and what Clarabel reaches on a singular Q; at 1e-12 it stalled
    # (optimal_inaccurate, 3e-7 off) on seed 7713, size 35, rank 1, C = 10^2.5 (the @example below)
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert problem.status == cp.OPTIMAL
    return float(problem.value)


@settings(max_examples=25, deadline=None)
@given(seed=hs.integers(0, 2**31 - 1), size=hs.integers(4, 40), rank_share=hs.floats(0.05, 1.0),
       log_C=hs.floats(-3.0, 3.0))
@example(seed=7713, size=35, rank_share=0.0546875, log_C=2.5)
def test_polish_reaches_the_exact_optimum_of_a_singular_block_from_any_feasible_point(seed, size, rank_share,
                                                                                     log_C):
    """From any feasible point (here a random one, far from the optimum) of a block whose Q has low rank,
    the polish ends at a point that satisfies every KKT condition, lowers the objective, and equals a
    tight solver's optimum: a method that cycled or stalled would return None."""
    rng = np.random.default_rng(seed)
    C = 10.0 ** log_C
    G = rng.standard_normal((size, max(1, int(rank_share * size))))
    y = rng.choice([-1.0, 1.0], size)
    Q = (G @ G.T) * np.outer(y, y)
    p = rng.standard_normal(size) / C - 1.0  # -1 as the kernel dual's, plus a part in C's units
    start = rng.uniform(0.0, C, size)
    rhs = float(y @ start)
    polished = polish.polish_block(Q, p, y, rhs, C, start)
    assert polished is not None
    assert _kkt_holds(Q, p, y, rhs, C, polished)
    assert _block_objective(Q, p, polished) <= _block_objective(Q, p, start)
    reference = _tight_block_optimum(Q, p, y, rhs, C)
    size_of_f = abs(reference) + 0.5 * polished @ Q @ polished + np.abs(p) @ polished
    assert abs(_block_objective(Q, p, polished) - reference) <= OBJECTIVE_RTOL * size_of_f


def test_polish_solves_the_moons_block_the_old_rounds_gave_up_on():
    """The whole moons problem (n = 800, seed 2, C = 1,000) as one block from the subproblem solver's
    point (PIQP's defaults): the primal-dual rounds the polish used to run gave up on it (measured side by
    side), and the point solve_block returns then was the solver's, clipped."""
    _, y, K = _moons(800, seed=2)
    B = np.arange(len(y))
    new, _, polished = subproblems.solve_block(optimality.as_rows(K), y, np.zeros(len(y)), -np.ones(len(y)), B, 0.0,
                                               C_LARGE, subproblems.SUBSOLVERS["direct"], "piqp", {})
    assert polished
    Q = K * np.outer(y, y)
    assert _kkt_holds(Q, -np.ones(len(y)), y, 0.0, C_LARGE, new)


@pytest.fixture(scope="module")
def moons_reference():
    """The moons problem (n = 1,000, seed 0) at C = 1,000 as one QP through cvxpy/Clarabel, proved."""
    _, y, K = _moons(1000, seed=0)
    sol = api.solve("kernel_dual", None, y, K=K, layer="cvxpy", backend="clarabel", C=C_LARGE, profile="high",
                    method="full")
    assert sol.status == OPTIMAL and sol.checks["reference"] == "proved optimum"
    return sol.checks["dual_objective"]


def test_working_set_steps_do_not_depend_on_the_data_units(moons_reference):
    """Moons (n = 1,000, q = 500, C = 1,000) in standardized units and in 1e-3 of them (the same K up to
    rounding): both reach the proved optimum within 1e-7 of the tight reference, in step counts within a
    factor 2 of each other, with most blocks polished (before: 23 and 21 steps, 3 polished blocks)."""
    runs = {}
    for scale in (1.0, 1e-3):
        _, y, K = _moons(1000, seed=0, scale=scale)
        sol = ws.solve(K, y, C_LARGE, backend="piqp", q=500, validate=False)
        assert sol.status == OPTIMAL, sol.checks.get("verdict")
        assert sol.checks["reference"] == "proved optimum"
        assert abs(sol.checks["dual_objective"] - moons_reference) <= OBJECTIVE_RTOL * abs(moons_reference)
        runs[scale] = sol
    steps = [sol.iterations for sol in runs.values()]
    assert max(steps) <= 2 * min(steps)
    for sol in runs.values():
        assert sol.extras["polished_blocks"] >= 0.5 * sol.iterations


@settings(max_examples=6, deadline=None)
@given(log_scale=hs.floats(-4.0, 4.0))
def test_working_set_is_invariant_under_rescaling_the_data(log_scale):
    """Any unit of X (1e-4 to 1e4 times standardized): the same optimum to 1e-7 and steps within a factor 2
    of the standardized data's (moons, n = 400, q = 200, C = 1,000)."""
    base = _rescaled_run(0.0)
    run = _rescaled_run(log_scale)
    assert run.converged and base.converged
    assert abs(run.objective - base.objective) <= OBJECTIVE_RTOL * abs(base.objective)
    assert run.outer_iterations <= 2 * base.outer_iterations and base.outer_iterations <= 2 * run.outer_iterations


@functools.cache
def _rescaled_run(log_scale: float) -> ws.WorkingSetResult:
    _, y, K = _moons(400, seed=1, scale=10.0 ** log_scale)
    return ws.decompose(K, y, C_LARGE, backend="piqp", q=200)
