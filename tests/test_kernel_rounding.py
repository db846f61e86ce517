"""Kernel values far from the origin and in large units: the solutions they give, and the checks that catch a wrong K.

The rbf's Gram matrix once expanded ||x - z||^2 into ||x||^2 + ||z||^2 - 2 x'z: on moons with 8 points copied and
given the other label, x 1e4 (or shifted by 1e4), gamma = 1e3, C = 1000, a copy's kernel value was 0.99994 and every
layer returned `optimal` 3.7e-3 off in the objective (decision values 6% off), checked against the same K.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist
from sklearn.datasets import make_moons

from formulations import kernels
from formulations.kernels import Kernel
from solvers.algorithms.working_set import solve as working_set_solve
from solvers.algorithms.kernel_rows import FullGram, KernelRows
from solvers.api import solve

GAMMA, C = 1e3, 1000.0


def moons_with_flipped_copies(seed: int, scale: float, shift: float):
    X, y = make_moons(80, noise=0.1, random_state=seed)
    y = 2.0 * y - 1.0
    return np.vstack([X, X[:8]]) * scale + shift, np.concatenate([y, -y[:8]])


def exact_gram(X, gamma):
    """The reference: exp(-gamma ||x - z||^2) from the differences (scipy's cdist), on centered data."""
    Xc = X - X.mean(axis=0)
    return np.exp(-gamma * cdist(Xc, Xc, "sqeuclidean"))


def expanded_gram(kernel, X, Z=None):
    """The wrong K: ||x||^2 + ||z||^2 - 2 x'z as the Gram matrix once computed it, without centering or exact
    differences (the cancellation the checks must catch)."""
    Z = X if Z is None else Z
    gamma = kernel.resolved_gamma(X.shape[1])
    d2 = np.einsum("ij,ij->i", X, X)[:, None] + np.einsum("ij,ij->i", Z, Z)[None, :] - 2.0 * X @ Z.T
    return np.exp(-gamma * np.maximum(d2, 0.0))


def reference_decision(X, y):
    ref = solve("kernel_dual", None, y, layer="cvxpy", backend="clarabel", C=C, K=exact_gram(X, GAMMA), profile="high")
    assert ref.status == "optimal"
    return ref


@pytest.mark.parametrize("layer", ["cvxpy", "pyomo"])
@pytest.mark.parametrize("seed, scale, shift", [(3, 1.0, 1e4), (1, 1e4, 0.0), (4, 1.0, 1e5)])
def test_optimal_far_from_the_origin_is_the_optimum(layer, seed, scale, shift):
    """Each `optimal` is within the profile's tolerance of the optimum of the exact K (before: 3.7e-3 off in the
    objective, 6% in the decision values at +1e4; 12% and 110% at +1e5)."""
    X, y = moons_with_flipped_copies(seed, scale, shift)
    ref = reference_decision(X, y)
    sol = solve("kernel_dual", X, y, layer=layer, backend="clarabel", C=C, kernel=Kernel("rbf", gamma=GAMMA))
    assert sol.status == "optimal"
    assert abs(sol.objective - ref.objective) <= 1e-4 * ref.objective
    assert np.max(np.abs(sol.decision - ref.decision)) <= 1e-4 * np.max(np.abs(ref.decision))


def test_a_wrong_K_is_not_optimal(monkeypatch):
    """The closing checks recompute K's entries by another formula: the expanded K (a copy's value 0.99994) makes
    the point not `optimal`, through the whole QP and the working set's rows alike."""
    X, y = moons_with_flipped_copies(3, 1.0, 1e4)
    monkeypatch.setattr(kernels, "gram", expanded_gram)
    sol = solve("kernel_dual", X, y, layer="cvxpy", backend="clarabel", C=C, kernel=Kernel("rbf", gamma=GAMMA))
    assert sol.status != "optimal" and "kernel values" in sol.checks["verdict"]
    assert sol.checks["err_kernel"] > 1e-3
    wrong = FullGram(expanded_gram(Kernel("rbf", gamma=GAMMA), X), Kernel("rbf", gamma=GAMMA), X)
    sol = working_set_solve(wrong, y, C, backend="piqp", layer="direct", q=20)
    assert sol.status != "optimal" and sol.checks["err_kernel"] > 1e-3


@pytest.mark.parametrize("kernel", [Kernel("rbf", gamma=GAMMA), Kernel("poly", degree=2, gamma=1e-8, coef0=1.0),
                                    Kernel("linear")])
def test_a_right_K_passes_the_recomputation(kernel):
    """The recomputation's allowance holds for right values: err_kernel is 0 for the Gram matrix and for the rows."""
    X, y = moons_with_flipped_copies(3, 1.0, 1e4)
    for source in (FullGram(kernels.gram(kernel, X), kernel, X), KernelRows(kernel, X)):
        sol = working_set_solve(source, y, C, backend="piqp", layer="direct", q=20)
        assert sol.checks["err_kernel"] == 0.0 and sol.checks["kernel_entries_checked"] > 0


@st.composite
def placement(draw):
    """A shift of 1e3..1e6 along a random direction and a scale of 1e-4..1e4."""
    shift = 10.0 ** draw(st.integers(3, 6))
    angle = draw(st.floats(0.0, 2 * np.pi))
    scale = 10.0 ** draw(st.integers(-4, 4))
    return shift * np.array([np.cos(angle), np.sin(angle)]), scale


@settings(max_examples=12, deadline=None)
@given(placement(), st.integers(0, 20))
def test_decision_values_do_not_depend_on_translation_and_scale(place, seed):
    """Moons with flipped copies, translated and rescaled with gamma / scale^2 (the same kernel): the decision
    values of the solution equal the untouched data's to the solver's tolerance (profile high: 1e-6)."""
    shift, scale = place
    X, y = moons_with_flipped_copies(seed, 1.0, 0.0)
    base = solve("kernel_dual", X, y, layer="direct", backend="piqp", C=C, kernel=Kernel("rbf", gamma=GAMMA),
                 profile="high", method="working_set")
    moved = solve("kernel_dual", (X + shift) * scale, y, layer="direct", backend="piqp", C=C,
                  kernel=Kernel("rbf", gamma=GAMMA / scale**2), profile="high", method="working_set")
    assert base.status == "optimal" and moved.status == "optimal"
    assert np.max(np.abs(moved.decision - base.decision)) <= 4e-6 * np.max(np.abs(base.decision))


def test_the_estimators_decision_function_far_from_the_origin():
    """The estimator's fit (solve) and its predict path (the kernel rows of new points against the support
    vectors) give the exact K's decision values, here for the training points themselves."""
    from experiments.estimator import SVMClassifier

    X, y = moons_with_flipped_copies(4, 1.0, 1e5)  # before: 5.6% off
    ref = reference_decision(X, y)
    est = SVMClassifier(kernel="rbf", gamma=GAMMA, C=C, formulation="kernel_dual", layer="cvxpy", backend="clarabel")
    f = est.fit(X, y).decision_function(X)
    assert np.max(np.abs(f - ref.decision)) <= 1e-4 * np.max(np.abs(ref.decision))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(-6, 6), st.integers(0, 8), st.integers(1, 70))
def test_the_audits_distances_are_right_to_their_bound(seed, log_scale, log_shift, d):
    """The audit's ||x - z||^2 (a compiled loop over the differences, summed in any order) is within (d + 1) eps of
    the exact value (the differences summed in extended precision), far from the origin and in any unit."""
    from solvers.kernel_audit import squared_distances

    rng = np.random.default_rng(seed)
    A = rng.normal(size=(7, d)) * 10.0 ** log_scale + 10.0 ** log_shift
    B = np.vstack([A[:2], rng.normal(size=(5, d)) * 10.0 ** log_scale + 10.0 ** log_shift])
    diff = A.astype(np.longdouble)[:, None, :] - B.astype(np.longdouble)[None, :, :]
    exact = (diff * diff).sum(axis=2)
    got = squared_distances(A, B)
    bound = (d + 1) * np.finfo(float).eps * exact + np.finfo(float).tiny
    assert np.all(np.abs(got - exact) <= bound)
    assert np.all(got[[0, 1], [0, 1]] == 0.0)  # a point against itself: exactly 0
