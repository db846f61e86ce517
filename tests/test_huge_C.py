"""C far above every alpha: the soft margin is the hard margin, and every check keeps its scale.

Breast cancer (rbf, standardized) has max alpha* = 94.47 at every C above it, so the optimum at
C = 1e6, 1e9, 1e12 is the one at C = 1e3. Before: at C = 1e6 the kernel working set ran 231 s into
its iteration limit (tolerances relative to C, where alpha is 1e-4 of C), and every verified point
was refused at the `high` profile by a duality gap that is C times the rounding of f.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from formulations.kernels import Kernel, gram
from solvers.solution import OPTIMAL
from solvers.api import solve
from solvers.checks import compute_checks, gap_rounding


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    y = np.where(y == 1, 1.0, -1.0)
    kernel = Kernel("rbf", gamma=1.0 / X.shape[1])

    @functools.cache  # each (layer, C) solved once for the module's tests
    def solved(layer, C):
        return solve("kernel_dual", X, y, layer=layer, backend="piqp", C=C, kernel=kernel, profile="high",
                     method="working_set")

    base = solved("direct", 1e3)
    assert base.status == OPTIMAL and base.alpha.max() < 100.0  # C = 1e3 does not bind: the hard margin
    return X, y, kernel, base, solved


@pytest.mark.parametrize("C", [1e6, 1e9, 1e12])
@pytest.mark.parametrize("layer", ["direct", "pyomo", "cvxpy"])
def test_working_set_at_huge_C_is_verified_and_is_the_hard_margin_optimum(cancer, layer, C):
    X, y, kernel, base, solved = cancer
    sol = solved(layer, C)
    assert sol.status == OPTIMAL, sol.checks["verdict"]
    assert sol.objective == pytest.approx(base.objective, rel=1e-9)
    scale = np.abs(base.decision).max()
    np.testing.assert_allclose(sol.decision, base.decision, rtol=0, atol=1e-7 * scale)


@pytest.mark.parametrize("C", [1e9, 1e12])
@pytest.mark.parametrize("change", ["alpha", "b"])
def test_a_wrong_point_at_huge_C_is_refused(cancer, C, change):
    """The gap's rounding at C = 1e12 is 1e-3 of P: the other checks must still see a point 1e-4 off."""
    X, y, kernel, _, solved = cancer
    sol = solved("direct", C)
    assert sol.status == OPTIMAL
    K = gram(kernel, X)
    wrong = dataclasses.replace(sol)
    if change == "alpha":  # the free points of one class moved by 1e-4, the other class rebalanced
        a = sol.alpha.copy()
        free = (a > 0) & (a < C)
        a[free & (y > 0)] *= 1 + 1e-4
        a[y < 0] *= a[y > 0].sum() / a[y < 0].sum()
        wrong.alpha = a
        wrong.decision = K @ (y * a) + sol.b
    else:
        wrong.b = sol.b + 1e-4 * np.abs(sol.decision).max()
        wrong.decision = sol.decision - sol.b + wrong.b
    checks = compute_checks(wrong, X, y, C, K=K, tol=1e-6)
    assert not checks.verified, checks.verdict
    right = compute_checks(sol, X, y, C, K=K, tol=1e-6)
    assert right.verified, right.verdict


def test_gap_rounding_is_negligible_at_an_ordinary_C(cancer):
    """The rounding allowance must not be a loophole where the gap can be measured: at C = 1 it is
    below 1e-12 of P, far under any profile's tolerance."""
    X, y, kernel, _, _ = cancer
    sol = solve("kernel_dual", X, y, layer="direct", backend="piqp", C=1.0, kernel=kernel, method="working_set")
    assert sol.status == OPTIMAL
    assert 0 < sol.checks["gap_rounding"] < 1e-12
    assert gap_rounding(1.0, sol.alpha, y, sol.decision, 0.0) == 0.0  # no size, no rounding


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(log_C=hst.floats(4.0, 12.0), log_scale=hst.floats(-3.0, 3.0), seed=hst.integers(0, 2**16))
def test_separable_blobs_at_any_huge_C_and_any_units(log_C, log_scale, seed):
    """Two separable blobs in any units (X * s, gamma / s^2: the same K): at any C far above alpha*
    the working set's point is verified and is the same optimum as at C = 1e3."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(-2.0, 1.0, (60, 3)), rng.normal(2.0, 1.0, (60, 3))])
    y = np.repeat([-1.0, 1.0], 60)
    s = 10.0 ** log_scale
    kernel = Kernel("rbf", gamma=0.2 / s**2)
    base = solve("kernel_dual", X * s, y, layer="direct", backend="piqp", C=1e3, kernel=kernel, profile="high",
                 method="working_set")
    assert base.status == OPTIMAL
    if base.alpha.max() > 1e2:  # C = 1e3 binds (not separable enough): another test's territory
        return
    sol = solve("kernel_dual", X * s, y, layer="direct", backend="piqp", C=10.0**log_C, kernel=kernel,
                profile="high", method="working_set")
    assert sol.status == OPTIMAL, sol.checks["verdict"]
    assert sol.objective == pytest.approx(base.objective, rel=1e-8)
    np.testing.assert_allclose(sol.decision, base.decision, rtol=0, atol=1e-6 * np.abs(base.decision).max())


def test_at_huge_C_the_dual_verifies_and_the_primal_objective_cannot():
    """d >> n (40 x 2,000, separable, alpha* < 1): at C = 1e9 the primal objective P(w, b) is C times
    each margin's rounding away from P* (5e-3 of it here), so a primal row is refused and says why; the
    dual's D(alpha) is computed to rounding, and its row is verified and equal to the one at C = 1."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2000))
    y = np.where(rng.normal(size=40) > 0, 1.0, -1.0)
    at_one = solve("dual", X, y, layer="pyomo", backend="piqp", C=1.0, profile="high", method="working_set")
    assert at_one.status == OPTIMAL and at_one.alpha.max() < 1.0
    dual = solve("dual", X, y, layer="pyomo", backend="piqp", C=1e9, profile="high", method="working_set")
    assert dual.status == OPTIMAL, dual.checks["verdict"]
    assert dual.objective == pytest.approx(at_one.objective, rel=1e-9)
    primal = solve("soft_primal", X, y, layer="pyomo", backend="piqp", C=1e9, profile="high", method="working_set")
    assert primal.status != OPTIMAL
    assert "rounding of the primal objective" in primal.checks["verdict"]
    assert primal.checks["gap_rounding"] > 1e-4
