"""The lecture notes' published numbers, reproduced by every backend of both layers.

001_e078ff43bd63a81d.txt: Example 5.1 (hard-margin primal: w = (-0.9229, 0.7627),
b = 1.1976), Example 5.2 (the same from the dual), Exercise 5.4 (soft margin,
C = 10, slacks), Exercise 5.5 (Gaussian kernel, gamma = 1, C = 1).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.svm import SVC

from experiments.datasets import example_5_1, exercise_5_4, exercise_5_5
from formulations.kernels import Kernel
from solvers.api import solve
from tests.conftest import TOLERANCES, backend_params

W_5_1 = np.array([-0.9229, 0.7627])
B_5_1 = 1.1976


@pytest.mark.parametrize("layer,backend", backend_params())
def test_example_5_1_hard_primal(layer, backend):
    ds = example_5_1()
    sol = solve("hard_primal", ds.X, ds.y, layer=layer, backend=backend, profile="high")
    assert sol.status == "optimal", sol.message or sol.checks.get("verdict")
    np.testing.assert_allclose(sol.w, W_5_1, atol=5e-5)
    assert sol.b == pytest.approx(B_5_1, abs=5e-5)
    # Three support vectors on the margin, as the notes' plot shows.
    assert sol.checks["n_sv"] == 3


@pytest.mark.parametrize("layer,backend", backend_params())
def test_example_5_2_dual_gives_the_same_hyperplane(layer, backend):
    ds = example_5_1()
    sol = solve("dual", ds.X, ds.y, layer=layer, backend=backend, C=math.inf, profile="high")
    assert sol.status == "optimal", sol.message or sol.checks.get("verdict")
    np.testing.assert_allclose(sol.w, W_5_1, atol=5e-5)
    assert sol.b == pytest.approx(B_5_1, abs=5e-5)
    assert sol.b_rule == "free_sv_mean"
    if not math.isnan(sol.b_multiplier):  # cvxpy's Ipopt path returns no multipliers
        assert sol.b_multiplier == pytest.approx(B_5_1, abs=5e-5)


@pytest.fixture(scope="module")
def svc_5_4():
    ds = exercise_5_4()
    svc = SVC(kernel="linear", C=10, tol=1e-12).fit(ds.X, ds.y)
    return ds, svc


@pytest.mark.parametrize("layer,backend", backend_params())
def test_exercise_5_4_primal_dual_and_libsvm_agree(layer, backend, svc_5_4):
    ds, svc = svc_5_4
    primal = solve("soft_primal", ds.X, ds.y, layer=layer, backend=backend, C=10, profile="high")
    dual = solve("dual", ds.X, ds.y, layer=layer, backend=backend, C=10, profile="high")
    assert primal.status == dual.status == "optimal"
    tol = TOLERANCES[backend]["wb"]
    for sol in (primal, dual):
        np.testing.assert_allclose(sol.w, svc.coef_.ravel(), atol=1e-4)
        assert sol.b == pytest.approx(svc.intercept_[0], abs=1e-4)
    np.testing.assert_allclose(primal.w, dual.w, atol=tol)
    assert primal.b == pytest.approx(dual.b, abs=tol)
    np.testing.assert_allclose(primal.xi, dual.xi, atol=1e-4)
    assert primal.objective == pytest.approx(dual.objective, rel=TOLERANCES[backend]["objective"])
    # Nonzero slacks are exactly the points on the wrong side of their margin.
    margins = ds.y * primal.decision
    np.testing.assert_array_equal(primal.xi > 1e-6, margins < 1 - 1e-6)
    # (6, 8), the point the notes added to B, is misclassified: its slack exceeds 1.
    added = int(np.flatnonzero((ds.X == [6.0, 8.0]).all(axis=1))[0])
    assert primal.xi[added] > 1


def test_exercise_5_4_slack_vector_values(svc_5_4):
    """The slack vector itself, from the primal, against LIBSVM's decision values."""
    ds, svc = svc_5_4
    sol = solve("soft_primal", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=10, profile="high")
    expected = np.maximum(0.0, 1.0 - ds.y * svc.decision_function(ds.X))
    np.testing.assert_allclose(sol.xi, expected, atol=1e-4)
    # margin support vectors sit at xi ~ 0 in both, up to LIBSVM's accuracy
    assert int((sol.xi > 1e-3).sum()) == int((expected > 1e-3).sum()) >= 1


@pytest.fixture(scope="module")
def svc_5_5():
    ds = exercise_5_5()
    svc = SVC(kernel="rbf", gamma=1.0, C=1.0, tol=1e-12).fit(ds.X, ds.y)
    alpha = np.zeros(ds.n)
    alpha[svc.support_] = np.abs(svc.dual_coef_.ravel())
    grid = np.stack(np.meshgrid(np.linspace(-2, 2, 21), np.linspace(-2, 2, 21)), axis=-1).reshape(-1, 2)
    return ds, svc, alpha, grid


@pytest.mark.parametrize("layer,backend", backend_params())
def test_exercise_5_5_gaussian_kernel_matches_libsvm(layer, backend, svc_5_5):
    from formulations.kernels import decision_function

    ds, svc, alpha_ref, grid = svc_5_5
    kernel = Kernel("rbf", gamma=1.0)
    sol = solve("kernel_dual", ds.X, ds.y, layer=layer, backend=backend, C=1.0, kernel=kernel, profile="high")
    assert sol.status == "optimal", sol.checks.get("verdict")
    np.testing.assert_allclose(sol.alpha, alpha_ref, atol=1e-4)
    assert sol.b == pytest.approx(svc.intercept_[0], abs=1e-4)
    values = decision_function(kernel, ds.X, sol.alpha * ds.y, sol.b, grid)
    np.testing.assert_allclose(values, svc.decision_function(grid), atol=1e-4)
