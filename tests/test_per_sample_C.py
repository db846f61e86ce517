"""Per-sample bounds 0 <= alpha_i <= C_i (formulations.penalty) through `solve` and the direct path:
against LIBSVM's weighted C (SVC with sample_weight), a constant vector against the scalar, the
checks' use of C_i, and bad vectors refused at the boundary."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from experiments.datasets import exercise_5_4
from formulations.errors import SVMInputError
from formulations.kernels import Kernel, gram
from solvers.algorithms import direct
from solvers import solution as st
from solvers.api import solve
from solvers.checks import compute_checks

SVC_TOL = 1e-10
GAMMA = 0.05
# LIBSVM keeps its kernel cache in single precision: its decision values are off by up to ~2e-5.
DECISION_RTOL = 1e-4


@pytest.fixture(scope="module")
def weighted():
    """120 standardized breast-cancer samples with sample weights from 0.2 to 3 (C_i = 0.5 w_i)."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)[:120]
    y = y[:120]
    weights = np.random.default_rng(0).uniform(0.2, 3.0, len(y))
    return X, y, np.where(y == 1, 1.0, -1.0), weights


def _svc_decision(X, y, weights, kernel):
    svc = SVC(kernel=kernel, C=0.5, gamma=GAMMA, tol=SVC_TOL).fit(X, y, sample_weight=weights)
    return svc.decision_function(X)


def _assert_close_to(decision, reference):
    scale = float(np.max(np.abs(reference)))
    assert float(np.max(np.abs(decision - reference))) <= DECISION_RTOL * scale


@pytest.mark.parametrize("layer,backend", [("pyomo", "piqp"), ("pyomo", "clarabel"), ("cvxpy", "piqp"),
                                           ("cvxpy", "clarabel")])
@pytest.mark.parametrize("formulation", ["soft_primal", "dual", "kernel_dual"])
def test_per_sample_C_matches_svc_sample_weight(weighted, layer, backend, formulation):
    X, y, signs, weights = weighted
    kernel = "rbf" if formulation == "kernel_dual" else "linear"
    sol = solve(formulation, X, signs, layer=layer, backend=backend, C=0.5 * weights, profile="high",
                kernel=Kernel("rbf", gamma=GAMMA) if kernel == "rbf" else None)
    assert sol.status == st.OPTIMAL, sol.checks["verdict"]
    _assert_close_to(sol.decision, _svc_decision(X, y, weights, kernel))
    alpha = np.asarray(sol.alpha)
    assert np.all(alpha <= 0.5 * weights * (1 + 1e-6))  # each alpha_i under its own C_i
    assert np.any(alpha > 0.5 * weights.min() * 1.01)  # ... and above the smallest: the bounds differ


@pytest.mark.parametrize("formulation,kernel_form", [("soft_primal", "dense"), ("dual", "dense"),
                                                     ("kernel_dual", "dense"), ("kernel_dual", "factor")])
def test_per_sample_C_through_the_solver_alone(weighted, formulation, kernel_form):
    X, y, signs, weights = weighted
    kernel = "rbf" if formulation == "kernel_dual" else "linear"
    K = gram(Kernel("rbf", gamma=GAMMA), X) if kernel == "rbf" else None
    sol = direct.solve(formulation, X, signs, backend="piqp", C=0.5 * weights, K=K, kernel_form=kernel_form,
                       profile="high")
    assert sol.status == st.OPTIMAL, sol.checks["verdict"]
    _assert_close_to(sol.decision, _svc_decision(X, y, weights, kernel))


@pytest.mark.parametrize("layer,backend,formulation", [("pyomo", "piqp", "kernel_dual"), ("cvxpy", "clarabel", "dual"),
                                                       ("pyomo", "highs", "soft_primal")])
def test_constant_vector_C_equals_the_scalar(weighted, layer, backend, formulation):
    X, _, signs, _ = weighted
    kernel = Kernel("rbf", gamma=GAMMA) if formulation == "kernel_dual" else None
    one = solve(formulation, X, signs, layer=layer, backend=backend, C=0.7, kernel=kernel, profile="high")
    each = solve(formulation, X, signs, layer=layer, backend=backend, C=np.full(len(signs), 0.7), kernel=kernel,
                 profile="high")
    assert one.status == each.status
    np.testing.assert_allclose(each.decision, one.decision, rtol=0, atol=1e-9 * np.max(np.abs(one.decision)))
    assert each.b == pytest.approx(one.b, rel=1e-9)
    assert each.checks["primal_objective"] == pytest.approx(one.checks["primal_objective"], rel=1e-12)


def test_all_infinite_C_is_the_hard_margin():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 3.0], [4.0, 3.0]])
    y = np.array([-1.0, -1.0, 1.0, 1.0])
    hard = solve("dual", X, y, layer="cvxpy", backend="clarabel", C=math.inf, profile="high")
    each = solve("dual", X, y, layer="cvxpy", backend="clarabel", C=np.full(4, math.inf), profile="high")
    assert hard.status == each.status == st.OPTIMAL
    np.testing.assert_allclose(each.w, hard.w, rtol=1e-9)


def test_checks_measure_each_alpha_against_its_own_C(weighted):
    """A verified point is refused once one bound C_i is lowered below its alpha_i (scalar C could not tell)."""
    X, _, signs, weights = weighted
    C = 0.5 * weights
    sol = solve("dual", X, signs, layer="pyomo", backend="piqp", C=C, profile="high")
    assert sol.status == st.OPTIMAL
    at_bound = int(np.argmax(np.asarray(sol.alpha) / C))  # an alpha_i at its own bound C_i
    assert sol.alpha[at_bound] == pytest.approx(C[at_bound], rel=1e-6)
    lowered = C.copy()
    lowered[at_bound] *= 0.5  # alpha_i is now twice its bound: dual feasibility 1.0 (relative to C_i)
    checks = compute_checks(sol, X, signs, lowered, tol=1e-6)
    assert checks.kkt_dual_feasibility == pytest.approx(1.0, rel=1e-4)
    assert not checks.verified
    assert compute_checks(sol, X, signs, C, tol=1e-6).verified


@pytest.mark.parametrize(
    "C,match",
    [
        (np.ones(5), "C has 5 values but there are 120 samples"),
        (np.ones((120, 1)), r"one value per sample \(shape \(120,\)\)"),
        (np.r_[np.ones(119), 0.0], r"C must be > 0 for every sample; C\[119\] = 0 "),
        (np.r_[-1.0, np.ones(119)], r"C\[0\] = -1 "),
        (np.r_[np.ones(60), np.nan, np.ones(59)], r"C\[60\] = nan"),
        (np.r_[np.ones(119), np.inf], r"C\[119\] is infinite but other C_i are finite"),
        (["a"] * 120, "C must be numeric"),
    ],
)
def test_bad_per_sample_C_is_refused_by_name(weighted, monkeypatch, C, match):
    X, _, signs, _ = weighted
    import solvers.api as api

    def no_build(*args, **kwargs):  # the error must come before any model is built
        raise AssertionError("a model was built")

    monkeypatch.setattr(api.formulations, "build", no_build)
    with pytest.raises(SVMInputError, match=match):
        solve("dual", X, signs, layer="cvxpy", backend="clarabel", C=C)


def test_infinite_per_sample_C_refused_by_the_soft_primal(weighted):
    X, _, signs, _ = weighted
    with pytest.raises(SVMInputError, match="C must be finite"):
        solve("soft_primal", X, signs, layer="cvxpy", backend="clarabel", C=np.full(len(signs), np.inf))


def test_per_sample_C_takes_the_whole_qp_and_an_explicit_working_set_is_refused():
    """The working sets take one C: under "auto" a vector C goes to the whole QP (and is exact);
    an explicit method="working_set" is refused, naming the per-sample bounds."""
    ds = exercise_5_4()
    C = np.full(len(ds.y), 10.0)
    auto = solve("dual", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=C, method="auto", profile="high")
    scalar = solve("dual", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=10.0, method="full", profile="high")
    assert auto.status == st.OPTIMAL and auto.extras["method"] == "full"
    assert auto.objective == pytest.approx(scalar.objective, rel=1e-7)
    with pytest.raises(SVMInputError, match="per-sample bounds"):
        solve("dual", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=C, method="working_set")
