"""A degenerate optimum is proved, and a point next to it is still refused.

Clustered, unbalanced data with 10% flipped labels, in units 1e3 times larger: the soft-margin optimum at
C = 1 is w* = 0, b* = -1 (the positives' mean lies in the negatives' capped hull), every negative on its
margin, the multipliers far from unique. The solvers' multipliers then miss stationarity, and the margins,
sums of large terms that cancel to 0, carry their rounding: the dual and the soft primal must still be proved
on a right point.
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


# ---------------------------------------------------------------- w* = 0 and every b of [-1, 1] optimal


@pytest.fixture(scope="module")
def twins():
    """Each point twice with opposite labels: w* = 0, f* = b for any b in [-1, 1], every alpha_i = C."""
    X = np.random.default_rng(5).standard_normal((40, 6))
    y = np.where(np.arange(40) % 3 == 0, 1.0, -1.0)
    return np.vstack([X, X]), np.concatenate([y, -y])


@pytest.mark.parametrize("units", [1e-3, 1.0, 1e3])
@pytest.mark.parametrize("formulation,layer,backend", [("soft_primal", "pyomo", "clarabel"),
                                                       ("soft_primal", "cvxpy", "clarabel"),
                                                       ("dual", "cvxpy", "clarabel")])
def test_w_zero_with_b_not_unique_is_proved(twins, units, formulation, layer, backend):
    """max|f*| at the interval's midpoint is 0 here: the errors are measured against the interval's largest |b|
    (checks.b_only_scale), so a right point, |f| at its rounding, is proved."""
    X, y = twins
    sol = solve(formulation, units * X, y, C=C, layer=layer, backend=backend)
    assert sol.status == "optimal", sol.message
    assert sol.objective == pytest.approx(2.0 * C * X.shape[0] / 2, rel=1e-6)  # each pair pays 2
    # the interval of optimal b's is reported
    assert sol.checks["b_lower"] == pytest.approx(-1.0, abs=1e-6)
    assert sol.checks["b_upper"] == pytest.approx(1.0, abs=1e-6)


def test_the_duals_decision_values_are_judged_to_the_rounding_of_their_terms(twins):
    """The dual's f = X X'(y alpha) + b adds terms of size |X| |X|' alpha (~1e12 here) that cancel to
    w* = 0: its difference from the proof's f is judged to their rounding, not to that of |X| |w|, which the
    cancellation makes 0."""
    X, y = twins
    sol = solve("dual", 1e5 * X, y, C=C, layer="cvxpy", backend="clarabel")
    assert sol.checks["reference"] == "proved optimum"
    assert sol.checks["err_decision"] <= 1e-6, sol.checks["verdict"]  # 1e-6 of the optimal f's size, 1


@pytest.mark.parametrize("units", [1e-3, 1e3])
def test_a_point_moved_from_w_zero_is_refused(twins, units):
    """f moved by 1e-3 (of the optimal f's size, 1) through w, or b moved 1e-3 past its interval: refused."""
    X, y = twins
    X = units * X
    sol = solve("soft_primal", X, y, C=C, layer="cvxpy", backend="clarabel")
    direction = np.random.default_rng(1).standard_normal(X.shape[1])
    w = sol.w + 1e-3 * direction / np.max(np.abs(X @ direction))
    for wrong in (replace(sol, w=w, decision=X @ w + sol.b),
                  replace(sol, b=1.001, decision=X @ sol.w + 1.001)):
        checks = compute_checks(wrong, X, y, C, tol=1e-4)
        assert not checks.verified, checks.verdict


def test_the_estimator_keeps_the_verified_w_zero_fit(twins):
    """SVMClassifier (linear: the soft primal through Pyomo and PIQP) on the twins: its pair is verified, so
    no ConvergenceWarning, and the model is f = b, b inside [-1, 1]."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from experiments.estimator import SVMClassifier

    X, y = twins
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = SVMClassifier(C=C, kernel="linear").fit(X, y)
    assert est.solutions_[0].status == "optimal", est.solutions_[0].message
    f = est.decision_function(X)
    assert np.ptp(f) <= 1e-9 and abs(f[0]) <= 1.0  # w = 0 to 1e-9 of the optimal f's size, 1


@pytest.mark.parametrize("factor", [0.99, 0.0])
def test_a_tiny_C_with_balanced_classes_keeps_its_strict_scale(factor):
    """Balanced classes at C = 1e-6: every alpha_i = C, every b of ~[-1, 1] optimal, but w* = C X'y is not 0:
    its errors stay measured against ||w*|| and max|f*|, so w 1% off (or w = 0) is refused, not passed against
    the interval's size."""
    X = np.random.default_rng(2).standard_normal((40, 5)) + 0.5 * np.repeat([[1.0], [-1.0]], 20, axis=0)
    y = np.repeat([1.0, -1.0], 20)
    sol = solve("soft_primal", X, y, C=1e-6, layer="cvxpy", backend="clarabel")
    assert sol.status == "optimal", sol.message
    assert sol.checks["b_upper"] - sol.checks["b_lower"] > 1.0  # b is far from unique
    w = factor * sol.w
    checks = compute_checks(replace(sol, w=w, decision=X @ w + sol.b), X, y, 1e-6, tol=1e-4)
    assert not checks.verified, checks.verdict


def test_stationarity_is_judged_on_the_proofs_interval_of_b_not_the_points_own():
    """w = 0 at a tiny C with balanced classes: its own g is 0, so its own interval of optimal b's is ~[-1, 1],
    but the proved optimum's w* = C X'y is not 0 and its f* (max |f*| ~ 1e-4) is not b alone. The gap
    ||w - X'(y alpha)|| is measured against the w that moves f by max(|f|, |f*|) (the proof's scale), not by
    the point's own interval's largest |b|, 1, which a wrong w chooses."""
    X = np.random.default_rng(2).standard_normal((40, 5)) + 0.5 * np.repeat([[1.0], [-1.0]], 20, axis=0)
    y = np.repeat([1.0, -1.0], 20)
    sol = solve("soft_primal", X, y, C=1e-6, layer="cvxpy", backend="clarabel")
    assert sol.status == "optimal", sol.message
    w = np.zeros_like(sol.w)
    checks = compute_checks(replace(sol, w=w, decision=X @ w + sol.b), X, y, 1e-6, tol=1e-4)
    assert not checks.verified and "stationarity" in checks.verdict
    w_alpha = X.T @ (y * sol.alpha)
    reach = np.sqrt(np.max(np.sum(X * X, axis=1)))
    proved = compute_checks(sol, X, y, 1e-6, tol=1e-4)  # the right point's proof: the optimum it is measured by
    assert proved.verified, proved.verdict
    f_opt = X @ (X.T @ (y * proved.proved_alpha)) + proved.proved_b
    f_scale = max(abs(sol.b), np.max(np.abs(f_opt)))
    assert checks.kkt_stationarity == pytest.approx(np.linalg.norm(w_alpha) * reach / f_scale, rel=1e-6)
