"""The registry, the sign conventions of every backend, and cross-backend agreement."""

from __future__ import annotations

import math

import numpy as np
import pyomo.environ as pyo
import pytest

import formulations
from experiments.datasets import example_5_1, exercise_5_4, overlapping
from solvers import registry
from solvers.api import solve
from solvers.errors import BackendUnavailableError
from solvers.profiles import backend_options
from tests.conftest import TOLERANCES, backend_params

EXPECTED_BACKENDS = {
    ("pyomo", name) for name in ("highs", "ipopt", "clarabel", "osqp", "scs", "piqp", "proxqp", "daqp")
} | {("cvxpy", name) for name in ("highs", "ipopt", "clarabel", "osqp", "scs", "piqp", "proxqp", "daqp")}


def test_every_registered_backend_is_tested():
    """Guard: a backend added to the registry must be added here and to the tolerance table."""
    assert set(registry.BACKENDS) == EXPECTED_BACKENDS
    assert {name for _, name in registry.BACKENDS} == set(TOLERANCES)


def test_missing_backend_error_lists_what_is_available(monkeypatch):
    with pytest.raises(BackendUnavailableError, match="Available here: .*cvxpy/clarabel"):
        registry.get_backend("cvxpy", "gurobi")
    with pytest.raises(BackendUnavailableError, match="unknown layer"):
        registry.get_backend("jump", "highs")


def test_backend_table_reports_reasons():
    rows = registry.backend_table()
    assert len(rows) == len(EXPECTED_BACKENDS)
    assert all(row["reason"] for row in rows)


# A two-point problem with known multipliers: x = 0 (y = -1), x = 2 (y = +1).
# w* = 1, b* = -1, alpha* = (1/2, 1/2), optimum 1/2.
TWO_X = np.array([[0.0], [2.0]])
TWO_Y = np.array([-1.0, 1.0])


@pytest.mark.parametrize("layer,backend", backend_params())
def test_sign_convention(layer, backend):
    """alpha_i = +multiplier of margin_i (>= 0), b = +multiplier of balance, in both layers."""
    primal = solve("hard_primal", TWO_X, TWO_Y, layer=layer, backend=backend, profile="high")
    assert primal.objective == pytest.approx(0.5, rel=1e-6)
    assert primal.w[0] == pytest.approx(1.0, abs=1e-5) and primal.b == pytest.approx(-1.0, abs=1e-5)
    if primal.checks["alpha_source"] == "solver":
        np.testing.assert_allclose(primal.alpha, [0.5, 0.5], atol=1e-5)
    dual = solve("dual", TWO_X, TWO_Y, layer=layer, backend=backend, profile="high")
    assert dual.objective == pytest.approx(0.5, rel=1e-6)
    np.testing.assert_allclose(dual.alpha, [0.5, 0.5], atol=1e-5)
    if not math.isnan(dual.b_multiplier):
        assert dual.b_multiplier == pytest.approx(-1.0, abs=1e-5)
    else:
        assert (layer, backend) == ("cvxpy", "ipopt"), "only cvxpy's Ipopt path may return no multipliers"


@pytest.fixture(scope="module")
def reference_optima():
    """Objectives from Clarabel through cvxpy at high accuracy."""
    out = {}
    for name, ds, C in (("5.4", exercise_5_4(), 10.0), ("overlap", overlapping(60, d=3, seed=3), 1.0)):
        for formulation in ("soft_primal", "dual"):
            sol = solve(formulation, ds.X, ds.y, layer="cvxpy", backend="clarabel", C=C, profile="high")
            out[(name, formulation)] = sol.objective
    return out


@pytest.mark.parametrize("layer,backend", backend_params())
def test_same_objective_from_every_backend(layer, backend, reference_optima):
    rel = TOLERANCES[backend]["objective"]
    for name, ds, C in (("5.4", exercise_5_4(), 10.0), ("overlap", overlapping(60, d=3, seed=3), 1.0)):
        for formulation in ("soft_primal", "dual"):
            sol = solve(formulation, ds.X, ds.y, layer=layer, backend=backend, C=C, profile="high")
            assert sol.status == "optimal", (name, formulation, sol.raw_status, sol.checks.get("verdict"))
            assert sol.objective == pytest.approx(reference_optima[(name, formulation)], rel=rel)
            # strong duality at the returned point, recomputed by the project
            assert sol.checks["rel_duality_gap"] < 1e-6


def test_profiles_translate_into_native_option_names():
    assert backend_options("osqp", "high")["eps_abs"] == 1e-9
    assert backend_options("scs", "high")["max_iters"] == 200_000
    assert backend_options("highs", "high")["primal_feasibility_tolerance"] == 1e-9
    assert backend_options("clarabel", "default") == {}
    with pytest.raises(ValueError, match="unknown profile"):
        backend_options("osqp", "extreme")


def test_dual_formulation_has_no_n_by_n_matrix():
    """The linear dual is lifted: its constraint matrix is (d + 1) x (n + d), never n x n."""
    from solvers.bridge.pyomo_standard_form import from_pyomo

    ds = overlapping(400, d=3, seed=0)
    model = formulations.build("dual", "pyomo", X=ds.X, y=ds.y, C=1.0)
    qp = from_pyomo(model)
    assert qp.P.nnz == 3  # 1/2 ||w||^2 only
    assert qp.A.shape == (4, 403)
    cvx = formulations.build("dual", "cvxpy", X=ds.X, y=ds.y, C=1.0)
    assert max(max(v.shape, default=1) for v in cvx.variables.values()) == 400


def test_models_name_the_constraints_whose_multipliers_are_read():
    ds = example_5_1()
    for formulation, names in (("hard_primal", {"margin"}), ("soft_primal", {"margin"}), ("dual", {"balance", "lift"})):
        C = None if formulation == "hard_primal" else 1.0
        model = formulations.build(formulation, "pyomo", X=ds.X, y=ds.y, C=C)
        assert all(isinstance(getattr(model, n), pyo.Constraint) for n in names)
        cvx = formulations.build(formulation, "cvxpy", X=ds.X, y=ds.y, C=C)
        assert names <= set(cvx.constraints)


@pytest.mark.parametrize("layer,backend", backend_params())
def test_zero_bias_is_reported_as_zero(layer, backend):
    """x = -1 (y = -1), x = +1 (y = +1): w* = 1 and b* = 0, which must not read as missing."""
    sol = solve("hard_primal", np.array([[-1.0], [1.0]]), TWO_Y, layer=layer, backend=backend, profile="high")
    assert sol.status == "optimal"
    assert sol.w[0] == pytest.approx(1.0, abs=1e-5) and sol.b == pytest.approx(0.0, abs=1e-5)
