"""The family's rows are verified, not trusted: a wrong point claimed optimal is refused, a claim the problem
cannot have is an error, and the verdict is the same in other units and in any order of the points."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from experiments.family_peers import load
from formulations import family
from formulations.family.common import FamilyData, recover_multiplier
from formulations.kernels import Kernel, gram
from solvers.solution import INFEASIBLE, OPTIMAL, RawResult
from solvers.closing import answered
from solvers.family import close, solve

N = 40


def _claimed(values: dict, formulation: str, params: dict, data: FamilyData, status=OPTIMAL, objective=None):
    """A backend's answer with the point `values`, closed as every family row is."""
    member, kind = family.member_of(formulation)
    if objective is None:
        objective = family.module(member).conditions(values, data, params, kind)
        objective = objective.primal_objective if kind == "primal" else objective.dual_objective
    raw = RawResult(status, "claimed", objective=objective)
    sol = answered(raw, formulation=formulation, layer="cvxpy", backend="clarabel", profile="default")
    return close(sol, values, data, params, kind, member, tol=1e-4)


@pytest.fixture(scope="module")
def nu_svc_optimum():
    X, y = load("breast_cancer", N)
    kernel = Kernel("rbf", gamma=0.05)
    sol = solve("nu_svc_kernel_dual", X, y, layer="cvxpy", backend="proxqp", nu=0.4, kernel=kernel, profile="high")
    assert sol.status == "optimal"
    return sol, FamilyData(np.where(y > 0, 1.0, -1.0), None, gram(kernel, X))


def test_the_optimum_closed_again_is_verified(nu_svc_optimum):
    sol, data = nu_svc_optimum
    again = _claimed({"alpha": sol.alpha}, "nu_svc_kernel_dual", {"nu": 0.4}, data)
    assert again.status == "optimal" and again.checks["reference"] == "proved optimum"


@pytest.mark.parametrize("shift", [1e-1, 1e-2])
def test_a_point_moved_along_the_constraints_is_refused(nu_svc_optimum, shift):
    """alpha moved inside the feasible set (sum alpha and sum alpha y unchanged, the box kept): feasible, its
    objective near the optimum's, and still refused because its f is not the optimum's."""
    sol, data = nu_svc_optimum
    alpha = sol.alpha.copy()
    U = 1.0 / len(alpha)
    y = data.y
    free = np.flatnonzero((alpha > 0.05 * U) & (alpha < 0.95 * U))
    same = [i for i in free if y[i] == y[free[0]]]
    assert len(same) >= 2
    step = shift * min(alpha[same[0]], U - alpha[same[0]], alpha[same[1]], U - alpha[same[1]])
    alpha[same[0]] += step
    alpha[same[1]] -= step
    wrong = _claimed({"alpha": alpha}, "nu_svc_kernel_dual", {"nu": 0.4}, data)
    assert wrong.status == "optimal_inaccurate"
    assert "decision value error" in wrong.checks["verdict"]
    assert wrong.checks["objective_error"] < 1e-3  # a near-optimal objective does not make it optimal


def test_an_objective_that_is_not_the_points_is_refused(nu_svc_optimum):
    sol, data = nu_svc_optimum
    wrong = _claimed({"alpha": sol.alpha}, "nu_svc_kernel_dual", {"nu": 0.4}, data, objective=0.9 * sol.objective)
    assert wrong.status == "optimal_inaccurate" and "objective claimed vs recomputed" in wrong.checks["verdict"]


def test_an_infeasible_claim_is_a_backend_failure(nu_svc_optimum):
    _, data = nu_svc_optimum
    sol = _claimed(None, "nu_svc_kernel_dual", {"nu": 0.4}, data, status=INFEASIBLE, objective=math.nan)
    assert sol.status == "error" and "backend failure" in sol.message
    assert sol.w is None and math.isnan(sol.b)


def test_a_primal_without_multipliers_is_not_verified():
    X, y = load("diabetes", N)
    values = {"w": np.zeros(X.shape[1]), "b": float(np.median(y))}
    sol = _claimed(values, "eps_svr_primal", {"C": 1.0, "epsilon": 1.0}, FamilyData(y, X), objective=1.0)
    assert sol.status == "optimal_inaccurate" and "no multipliers" in sol.checks["verdict"]


def test_recovered_multiplier_is_the_middle_of_its_interval_without_free_points():
    h = np.array([0.0, 1.0, 2.0, 3.0])
    t, lo, hi = recover_multiplier(h, np.ones(4), np.array([1.0, 1.0, 0.0, 0.0]), 1.0)  # t in [1, 2]
    assert (t, lo, hi) == (1.5, 1.0, 2.0)
    t, _, _ = recover_multiplier(h, np.ones(4), np.array([1.0, 0.5, 0.0, 0.0]), 1.0)  # a free one pins t
    assert t == 1.0


@pytest.mark.parametrize("scale", [1e-6, 1e-3, 1e3, 1e6])
def test_other_units_give_the_same_verdict(scale):
    """The optimum in other units closed again: X times s (nu-SVC's primal: the same alpha, w times s, b and rho
    times s^2: the dual's objective scales by s^2 on the same constraints) and
    targets times s (eps-SVR: y, eps, C and alpha, alpha* times s) are verified, with the same residuals."""
    X, y = load("breast_cancer", N)
    base = solve("nu_svc_primal", X, y, layer="cvxpy", backend="proxqp", nu=0.4, profile="high")
    assert base.status == "optimal", base.checks["verdict"]
    labels = np.where(y > 0, 1.0, -1.0)
    values = {"w": base.w * scale, "b": base.b * scale**2, "rho": base.extras["rho"] * scale**2, "alpha": base.alpha}
    moved = _claimed(values, "nu_svc_primal", {"nu": 0.4}, FamilyData(labels, X * scale))
    assert moved.status == "optimal", moved.checks["verdict"]
    for key in ("rel_duality_gap", "kkt_complementarity", "kkt_stationarity", "decision_value_error"):
        assert moved.checks[key] == pytest.approx(base.checks[key], rel=1e-3, abs=1e-12)
    Xd, yd = load("diabetes", N)
    params = {"C": 10.0, "epsilon": 20.0}
    base = solve("eps_svr_kernel_dual", Xd, yd, layer="cvxpy", backend="proxqp", kernel="linear", profile="high",
                 **params)
    assert base.status == "optimal", base.checks["verdict"]
    values = {"alpha": scale * base.alpha, "alpha_star": scale * base.extras["alpha_star"]}
    moved = _claimed(values, "eps_svr_kernel_dual", {"C": 10.0 * scale, "epsilon": 20.0 * scale},
                     FamilyData(yd * scale, Xd, Xd @ Xd.T))
    assert moved.status == "optimal", moved.checks["verdict"]
    assert np.allclose(moved.decision, scale * base.decision, rtol=1e-9)
    for key in ("rel_duality_gap", "kkt_complementarity", "decision_value_error"):
        assert moved.checks[key] == pytest.approx(base.checks[key], rel=1e-3, abs=1e-12)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=hs.integers(0, 2**16), log_scale=hs.floats(-3, 3))
def test_one_class_is_invariant_to_order_and_to_units_with_gamma_rescaled(seed, log_scale):
    """The one-class SVM on the points in any order, in units s times larger with gamma / s^2: the same alpha
    (reordered), rho and objective; both rows verified."""
    X, _ = load("wine", 30)
    s = 10.0 ** log_scale
    order = np.random.default_rng(seed).permutation(len(X))
    kw = dict(layer="cvxpy", backend="proxqp", nu=0.3, profile="high")
    base = solve("one_class_kernel_dual", X, None, kernel=Kernel("rbf", gamma=0.1), **kw)
    moved = solve("one_class_kernel_dual", s * X[order], None, kernel=Kernel("rbf", gamma=0.1 / s**2), **kw)
    assert base.status == moved.status == "optimal", moved.checks.get("verdict")
    U = 1.0 / (0.3 * len(X))
    assert np.max(np.abs(moved.proved_alpha - base.proved_alpha[order])) <= 1e-7 * U
    assert moved.extras["proved"]["rho"] == pytest.approx(base.extras["proved"]["rho"], rel=1e-7)
    assert moved.objective == pytest.approx(base.objective, rel=1e-6)


def test_past_the_proofs_size_the_gap_bound_judges(monkeypatch):
    """Where the proof is not attempted (more multipliers than PROOF_MAX_SIZE), the gap's bound on the decision
    values stands in: finite, and small for a tight point."""
    from solvers import family as solvers_family

    monkeypatch.setattr(solvers_family, "PROOF_MAX_SIZE", 10)
    X, y = load("breast_cancer", N)
    sol = solve("nu_svc_primal", X, y, layer="cvxpy", backend="proxqp", nu=0.4, profile="high")
    assert sol.checks["reference"].startswith("gap bound (more than 10 multipliers")
    assert 0 <= sol.checks["decision_values_(bound)"] < 1e-3


def test_a_degenerate_optimum_says_what_it_is():
    """Overlapping classes with the linear kernel and a small nu (their reduced convex hulls meet), and the linear
    one-class SVM on centered data (the origin inside their hull): the optimum is w* = 0, rho* = 0. The row is
    verified against the size of the terms f is made of (tests/test_family_degenerate.py) and says what its
    optimum means; away from the origin the one-class SVM is not degenerate."""
    from experiments.datasets import overlapping

    ds = overlapping(60, 2, 0)
    for formulation in ("nu_svc_primal", "nu_svc_kernel_dual"):
        sol = solve(formulation, ds.X, ds.y, layer="cvxpy", backend="proxqp", nu=0.1, profile="high",
                    kernel="linear" if formulation.endswith("kernel_dual") else None)
        assert sol.status == "optimal" and sol.checks["degenerate"]
        assert "reduced convex hulls" in sol.extras["degenerate"] and "choose a larger nu" in sol.extras["degenerate"]
    X, _ = load("wine", N)
    centered = solve("one_class_primal", X, None, layer="cvxpy", backend="proxqp", nu=0.2, profile="high")
    assert centered.status == "optimal" and "the origin lies in the data's" in centered.extras["degenerate"]
    moved = solve("one_class_primal", X + 3.0, None, layer="cvxpy", backend="proxqp", nu=0.2, profile="high")
    assert moved.status == "optimal" and not moved.checks["degenerate"]


def test_the_proof_takes_a_dual_without_equalities_or_upper_bounds():
    """The shared proof (solvers.family_proof.prove) on LIBLINEAR's squared-hinge dual without a bias,
    min 1/2 a'(YKY + I/(2C))a - e'a s.t. a >= 0 (no equality row, U = inf), from an interior point's alpha: the
    exact optimum, its reduced gradient >= 0, zero where a > 0."""
    import cvxpy as cp

    from formulations.family.common import BoxQP, box_residuals
    from solvers.family_proof import prove

    X, y = load("breast_cancer", N)
    labels = np.where(y > 0, 1.0, -1.0)
    C = 0.5
    Q = (labels[:, None] * (X @ X.T)) * labels[None, :] + np.eye(N) / (2 * C)
    a = cp.Variable(N, nonneg=True)
    cp.Problem(cp.Minimize(0.5 * cp.quad_form(a, cp.psd_wrap(Q)) - cp.sum(a))).solve(solver="CLARABEL")
    qp = BoxQP(Q, -np.ones(N), np.zeros((0, N)), np.zeros(0), math.inf)
    x = prove(qp, a.value)
    assert x is not None
    G = Q @ x - 1.0
    assert np.all(x >= 0) and np.all(G >= -1e-12) and np.max(np.abs(G[x > 0])) <= 1e-12
    feasibility, comp = box_residuals(x, math.inf, G, 1.0)
    assert feasibility.max() == 0 and comp.max() <= 1e-12


def test_every_point_inside_the_tube_is_verified():
    """epsilon wider than the targets' spread: the optimum is alpha = alpha* = 0, w = 0, P* = D* = 0, and b anywhere
    in [max y - eps, min y + eps]. Nothing of the objective is left to measure the gap against, so it is measured
    against what one point outside the tube would cost (C times the tube's size)."""
    X, y = load("diabetes", N)
    for backend in ("clarabel", "proxqp"):
        sol = solve("eps_svr_kernel_dual", X, y, layer="cvxpy", backend=backend, C=10.0, epsilon=1e4,
                    kernel=Kernel("rbf", gamma=0.1), profile="high")
        assert sol.status == "optimal", sol.checks["verdict"]
        assert sol.extras["fraction_inside_tube"] == 1.0 and np.max(sol.extras["proved"]["coef"]) == 0.0
        assert y.max() - 1e4 <= sol.b <= y.min() + 1e4


def test_a_fit_through_every_point_is_measured_against_the_spread_of_f():
    """nu-SVR at C = 1e7, nu = 0.01 (rbf): the tube shrinks to eps* ~ 1e-11 and f passes through the points, so
    eps and y - f are both near 0; errors in f are measured against f's own spread."""
    X, y = load("diabetes", 60)
    sol = solve("nu_svr_kernel_dual", X, y, layer="cvxpy", backend="proxqp", C=1e7, nu=0.01,
                kernel=Kernel("rbf", gamma=0.1), profile="high")
    assert sol.status == "optimal", sol.checks["verdict"]
    assert abs(sol.extras["proved"]["epsilon"]) <= 1e-6 * np.ptp(y)
