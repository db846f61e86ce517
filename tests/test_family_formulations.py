"""The LIBSVM members of the family (nu-SVC, one-class SVM, epsilon-SVR, nu-SVR): every primal and dual in both
layers verified, primal and dual agreeing (P* = D*, the same f), and the multipliers meaning what the theory says."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.family_peers import load
from formulations import family
from formulations.family.names import LIBSVM_FORMULATIONS, LIBSVM_MEMBERS
from formulations.kernels import Kernel
from solvers.family import solve
from tests.conftest import backend_params

N = 40
LINEAR = Kernel("linear")


def _data(member: str):
    """Small standardized sets: breast cancer for the classifiers, its points shifted away from the origin for the
    one-class SVM (a linear one-class SVM separates the data from the origin), diabetes for the regressions."""
    if member == "nu_svc":
        return load("breast_cancer", N)
    if member == "one_class":
        X, _ = load("breast_cancer", N)
        return X[:, :5] + 3.0, None
    X, y = load("diabetes", N)
    return X, y


PARAMS = {"nu_svc": {"nu": 0.4}, "one_class": {"nu": 0.3}, "eps_svr": {"C": 10.0, "epsilon": 20.0},
          "nu_svr": {"C": 10.0 * N, "nu": 0.5}}


def _solve(formulation: str, layer: str = "cvxpy", backend: str = "clarabel", **kw):
    member, kind = family.member_of(formulation)
    X, y = _data(member.name)
    kernel = LINEAR if kind == "kernel_dual" else None
    return solve(formulation, X, y, layer=layer, backend=backend, kernel=kernel, **PARAMS[member.name], **kw)


def test_registry_names_every_formulation_once():
    forms = family.formulations()
    assert set(LIBSVM_FORMULATIONS) <= set(forms)
    for name in LIBSVM_MEMBERS:
        member = family.MEMBERS[name]
        assert member.primal in forms and all(d in forms for d in member.duals)
        assert set(member.parameters) <= {"C", "nu", "epsilon"}
        for formulation in member.formulations:
            for layer in ("pyomo", "cvxpy"):
                assert callable(family.builder(formulation, layer))


@pytest.mark.parametrize("layer", ["cvxpy", "pyomo"])
@pytest.mark.parametrize("formulation", LIBSVM_FORMULATIONS)
def test_every_formulation_is_verified_in_both_layers(formulation, layer):
    sol = _solve(formulation, layer)
    assert sol.status == "optimal", sol.checks.get("verdict") or sol.message
    assert sol.checks["rel_duality_gap"] <= 1e-4
    assert sol.checks["reference"] == "proved optimum"
    assert sol.checks["decision_value_error"] <= 1e-4


@pytest.mark.parametrize("member", LIBSVM_MEMBERS)
def test_primal_and_dual_agree(member):
    """P* of the primal row equals D* of the dual row (strong duality) to 1e-6 of |P*|, and the two rows' decision
    values agree to 1e-5 of the margin's or tube's size."""
    m = family.MEMBERS[member]
    rows = [_solve(name, profile="high", backend="proxqp") for name in m.formulations]
    assert all(r.status == "optimal" for r in rows), [r.checks.get("verdict") for r in rows]
    primal, duals = rows[0], rows[1:]
    for dual in duals:
        assert abs(primal.objective - dual.objective) <= 1e-6 * abs(primal.objective)
        size = np.max(np.abs(dual.extras["proved"]["decision"] - (0 if member == "nu_svc" or member == "one_class"
                                                                   else dual.extras["proved"]["b"])))
        assert np.max(np.abs((primal.decision - primal.b) - (dual.decision - dual.b))) <= 1e-5 * size


def test_nu_svc_nu_bounds_the_fractions_and_rho_is_a_multiplier():
    for nu in (0.2, 0.5, 0.7):
        sol = solve("nu_svc_kernel_dual", *load("breast_cancer", N), layer="cvxpy", backend="proxqp", nu=nu,
                    kernel=Kernel("rbf", gamma=0.05), profile="high")
        assert sol.status == "optimal", sol.checks["verdict"]
        e = sol.extras
        assert e["fraction_margin_errors"] <= nu <= e["fraction_sv"]
        assert e["nu_bounds_hold"] and e["rho"] > 0
        # the solver's multiplier of sum alpha_i = nu is -rho (d max / d nu), of sum alpha_i y_i = 0 is b
        assert e["solver_total_multiplier"] == pytest.approx(-e["rho"], rel=1e-5)
        assert e["solver_balance_multiplier"] == pytest.approx(sol.b, abs=1e-5 * e["rho"])


def test_one_class_rho_is_the_multiplier_of_the_simplex_row():
    X, _ = _data("one_class")
    for nu in (0.1, 0.5):
        sol = solve("one_class_kernel_dual", X, None, layer="cvxpy", backend="proxqp", nu=nu,
                    kernel=Kernel("rbf", gamma=0.2), profile="high")
        assert sol.status == "optimal", sol.checks["verdict"]
        e = sol.extras
        assert e["solver_total_multiplier"] == pytest.approx(-e["rho"], rel=1e-5)
        assert e["fraction_outliers"] <= nu <= e["fraction_sv"]
        assert np.isclose(sol.alpha.sum(), 1.0, rtol=1e-8) and sol.alpha.max() <= 1 / (nu * len(X)) * (1 + 1e-8)
        assert np.all(sol.decision[sol.alpha < 1e-8 / len(X)] >= -1e-6 * e["rho"])  # alpha_i = 0: f_i >= 0


def test_eps_svr_pairs_its_multipliers_and_the_tube_holds_its_points():
    sol = _solve("eps_svr_kernel_dual", profile="high", backend="proxqp")
    assert sol.status == "optimal", sol.checks["verdict"]
    alpha, alpha_star, eps = sol.alpha, sol.extras["alpha_star"], PARAMS["eps_svr"]["epsilon"]
    C = PARAMS["eps_svr"]["C"]
    assert np.max(alpha * alpha_star) <= 1e-8 * C ** 2  # alpha_i alpha*_i = 0
    _, y = _data("eps_svr")
    residual = y - sol.decision
    inside = np.abs(residual) < eps * (1 - 1e-6)
    outside = np.abs(residual) > eps * (1 + 1e-6)
    assert inside.any() and outside.any()
    assert np.all(np.abs(alpha - alpha_star)[inside] <= 1e-7 * C)  # strictly inside the tube: no multiplier
    assert np.allclose(np.abs(alpha - alpha_star)[outside], C, rtol=1e-7)  # outside it: at the bound C


def test_nu_svr_finds_its_tube_width_as_the_primal_does():
    rows = {kind: _solve(f"nu_svr_{kind}", profile="high", backend="proxqp") for kind in ("primal", "kernel_dual")}
    assert all(r.status == "optimal" for r in rows.values())
    eps_primal, eps_dual = rows["primal"].extras["epsilon"], rows["kernel_dual"].extras["epsilon"]
    assert eps_dual > 0 and eps_primal == pytest.approx(eps_dual, rel=1e-5)
    assert rows["kernel_dual"].extras["solver_total_multiplier"] == pytest.approx(eps_dual, rel=1e-5)
    e = rows["kernel_dual"].extras
    assert e["fraction_outside_tube"] <= PARAMS["nu_svr"]["nu"] <= e["fraction_sv"]


def test_a_time_limit_runs_the_solve_in_the_solve_server_and_is_verified():
    """With a time limit the solve runs in a process of the solve server (killed past the limit), and its row is
    closed by the same checks."""
    sol = _solve("nu_svr_kernel_dual", time_limit=60.0)
    assert sol.status == "optimal", sol.checks.get("verdict") or sol.message
    assert "isolation" not in sol.extras  # it ran in the server, not in this process


@pytest.mark.slow
@pytest.mark.parametrize("layer,backend", backend_params())
@pytest.mark.parametrize("formulation", ["nu_svc_primal", "nu_svc_kernel_dual", "one_class_kernel_dual",
                                         "eps_svr_primal", "nu_svr_kernel_dual"])
def test_every_backend_is_optimal_only_where_it_is_right(formulation, layer, backend):
    """Every registered backend: a row called optimal has the reference's decision values (ProxQP at the high
    profile, itself verified) to 1e-4 of the margin's or tube's size, up to b (b, rho are an interval where no
    multiplier is free: nu l / 2 and nu l integers here, and complementarity holds them inside it); any other row
    reports no point."""
    reference = _solve(formulation, backend="proxqp", profile="high")
    assert reference.status == "optimal"
    sol = _solve(formulation, layer, backend, time_limit=120.0)
    proved = reference.extras["proved"]
    if sol.status == "optimal":
        kernel_part = proved["decision"] - proved["b"]
        size = max(abs(proved.get("rho", 0.0)), abs(proved.get("epsilon", 0.0)), float(np.max(np.abs(kernel_part))))
        assert np.max(np.abs((sol.decision - sol.b) - kernel_part)) <= 1e-4 * size
        assert sol.checks["kkt_complementarity"] <= 1e-4
    elif sol.status != "optimal_inaccurate":
        assert sol.w is None and np.isnan(sol.objective)


@pytest.mark.parametrize("formulation", ["nu_svc_primal", "one_class_kernel_dual", "eps_svr_kernel_dual"])
def test_sparse_X_gives_the_dense_rows_point(formulation):
    """X as a scipy.sparse matrix (kept CSR through the checks, the models and the Gram matrix): the same verified
    point as the dense X."""
    import scipy.sparse as sp

    member, _ = family.member_of(formulation)
    X, y = _data(member.name)
    kernel = LINEAR if formulation.endswith("kernel_dual") else None
    rows = [solve(formulation, data, y, layer="cvxpy", backend="proxqp", kernel=kernel, profile="high",
                  **PARAMS[member.name]) for data in (X, sp.csr_matrix(X))]
    assert [r.status for r in rows] == ["optimal", "optimal"]
    assert np.allclose(rows[0].extras["proved"]["decision"], rows[1].extras["proved"]["decision"], rtol=1e-9,
                       atol=1e-9 * np.max(np.abs(rows[0].decision)))
