"""A degenerate optimum is proved, and a point next to it is still refused.

Clustered, unbalanced data with 10% flipped labels, in units 1e3 times larger: the soft-margin optimum at
C = 1 is w* = 0, b* = -1 (the positives' mean lies in the negatives' capped hull), every negative on its
margin, the multipliers far from unique. The solvers' multipliers then miss stationarity by 7e-4 of w's
scale, and the margins, sums of terms of size ~4e9 that cancel to 0, carry rounding of ~1e-7: before, the
dual and the soft primal were refused on a right point.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from sklearn.datasets import make_classification

from solvers.api import solve
from solvers.checks import compute_checks

C = 1.0


@pytest.fixture(scope="module")
def degenerate():
    X, y = make_classification(300, 8, n_informative=5, n_clusters_per_class=3, flip_y=0.1,
                               weights=[0.85, 0.15], random_state=4)
    return 1e3 * X, np.where(y == 1, 1.0, -1.0)


@pytest.mark.parametrize("formulation", ["soft_primal", "dual"])
@pytest.mark.parametrize("layer", ["pyomo", "cvxpy"])
def test_the_degenerate_optimum_is_proved(degenerate, formulation, layer):
    X, y = degenerate
    sol = solve(formulation, X, y, C=C, layer=layer, backend="clarabel")
    assert sol.status == "optimal", sol.message
    # P* = C sum_i xi_i at w = 0, b = -1: each positive pays 2
    expected = 2.0 * C * np.count_nonzero(y > 0)
    assert sol.objective == pytest.approx(expected, rel=1e-6)
    assert sol.b == pytest.approx(-1.0, rel=1e-6)
    assert np.max(np.abs(sol.w)) * np.max(np.abs(X)) <= 1e-6  # w* = 0: f moves by at most 1e-6


@pytest.mark.parametrize("shift", [1e-4, 1e-3])
def test_a_point_next_to_the_degenerate_optimum_is_refused(degenerate, shift):
    """w moved so that f moves by `shift` of the margin: not the optimum, whatever multipliers are tried."""
    X, y = degenerate
    sol = solve("soft_primal", X, y, C=C, layer="cvxpy", backend="clarabel")
    direction = np.random.default_rng(0).standard_normal(X.shape[1])
    w = sol.w + shift * 10 * direction / np.max(np.abs(X @ direction))
    wrong = replace(sol, w=w, decision=X @ w + sol.b)
    checks = compute_checks(wrong, X, y, C, tol=1e-4)
    assert not checks.verified, checks.verdict
