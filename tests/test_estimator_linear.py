"""The estimator's linear kernel with its defaults: each pair solved as SVC solves it (the dual by SMO on the fit's
Gram matrix) within a budget of steps, then by the soft primal's working set, every pair verified; sparse X solved
as dense where its copy is no larger than a Gram matrix the memory budget allows; and smo_gram's budget, whose
stop claims an optimum only within the profile's tolerance."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy import sparse
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import experiments.estimator as estimator_module
from experiments.estimator import SVMClassifier
from formulations.kernels import Kernel, gram
from solvers.algorithms import smo_gram
from solvers.algorithms.kernel_rows import FullGram
from solvers.algorithms.smo import smo
from solvers.algorithms.working_set.optimality import max_violation
from solvers.api import solve
from solvers.profiles import get_profile
from solvers.solution import ITERATION_LIMIT, OPTIMAL


def _digits(classes: int = 5):
    X, y = load_digits(return_X_y=True)
    keep = y < classes
    return StandardScaler().fit_transform(X[keep]), y[keep]


def test_linear_pairs_are_svcs_problem_by_smo_and_match_svc():
    """Every pair by SMO and `optimal`; SVC's (tol 1e-8) support vectors, predictions, and coef_ within 2e-5 of
    its largest (LIBSVM's single-precision kernel cache)."""
    X, y = _digits()
    est = SVMClassifier(kernel="linear").fit(X, y)
    peer = SVC(kernel="linear", tol=1e-8).fit(X, y)
    assert [(s.backend, s.status) for s in est.solutions_] == [("smo", OPTIMAL)] * 10
    np.testing.assert_array_equal(est.support_, peer.support_)
    np.testing.assert_array_equal(est.predict(X), peer.predict(X))
    np.testing.assert_allclose(est.coef_, peer.coef_, rtol=0, atol=2e-5 * np.abs(peer.coef_).max())


def test_a_pair_past_its_budget_is_solved_by_the_soft_primal(monkeypatch):
    """Raw breast cancer (features up to 4e3) at C = 1: SMO needs millions of steps (SVC's LIBSVM 3.4 million);
    past the budget the pair goes to the primal's working set, `optimal`, the same model as SMO run to the end
    (decision values within the checks' 1e-4 of their size)."""
    X, y = load_breast_cancer(return_X_y=True)
    est = SVMClassifier(kernel="linear").fit(X, y)
    (sol,) = est.solutions_
    assert (sol.formulation, sol.backend, sol.extras.get("method"), sol.status) == (
        "soft_primal", "piqp", "working_set", OPTIMAL)
    monkeypatch.setattr(estimator_module, "KERNEL_SMO_STEPS_PER_POINT", 10**9)  # the kernel dual's SMO to its end
    to_the_end = SVMClassifier(kernel="linear", formulation="kernel_dual").fit(X, y)
    assert to_the_end.solutions_[0].backend == "smo" and to_the_end.solutions_[0].iterations > 100 * len(y)
    f, g = est.decision_function(X), to_the_end.decision_function(X)
    np.testing.assert_allclose(f, g, rtol=0, atol=1e-4 * np.abs(g).max())


def test_the_budget_grows_with_the_work_it_allows(monkeypatch):
    """A budget of LINEAR_SMO_WORK point-steps, at least LINEAR_SMO_STEPS_PER_POINT a point; KERNEL_SMO_STEPS_PER_POINT
    a point for a kernel dual, and the user's max_iter as SVC's."""
    est = SVMClassifier(kernel="linear")
    assert est._smo_steps("soft_primal", 100) == {"budget": estimator_module.LINEAR_SMO_WORK // 100}
    big = 10**5
    assert est._smo_steps("soft_primal", big) == {"budget": estimator_module.LINEAR_SMO_STEPS_PER_POINT * big}
    assert est._smo_steps("kernel_dual", 100) == {"budget": estimator_module.KERNEL_SMO_STEPS_PER_POINT * 100}
    assert SVMClassifier(kernel="linear", max_iter=7)._smo_steps("soft_primal", 100) == {"max_iter": 7}
    monkeypatch.setattr(estimator_module, "LINEAR_SMO_WORK", 10**12)  # SMO then finishes the raw set itself
    X, y = load_breast_cancer(return_X_y=True)
    (sol,) = SVMClassifier(kernel="linear").fit(X[:200], y[:200]).solutions_
    assert (sol.backend, sol.status) == ("smo", OPTIMAL)


def _small_dual():
    X, y = make_classification(n_samples=120, n_features=6, flip_y=0.1, random_state=3)
    X = StandardScaler().fit_transform(X)
    kernel = Kernel("rbf", gamma=0.2)
    return FullGram(gram(kernel, X), kernel, X), np.where(y == 1, 1.0, -1.0)


def test_a_budget_stop_claims_the_optimum_only_within_the_profiles_tolerance():
    """Stopped at its budget, SMO claims the optimum where its violation over every point is within the profile's
    tolerance (then verified: `optimal`); stopped at max_iter, the same point stays `iteration_limit` (SVC's
    max_iter); a budget of 1 step hands back an `iteration_limit` row without a point, not closed."""
    source, y = _small_dual()
    tol = get_profile("default").check_tol
    full = smo(source.K, y, 1.0, tol=tol / smo_gram.TIGHTEN)
    steps = full.iterations - 1
    near = smo(source.K, y, 1.0, tol=tol / smo_gram.TIGHTEN, max_iter=steps)
    assert not near.converged and max_violation(near.alpha, near.grad, y, 1.0, 0.0) <= tol  # the case this tests
    assert smo_gram.solve(source, y, 1.0, budget=steps).status == OPTIMAL
    assert smo_gram.solve(source, y, 1.0, max_iter=steps).status == ITERATION_LIMIT
    one = smo_gram.solve(source, y, 1.0, budget=1)
    assert one.status == ITERATION_LIMIT and one.iterations == 1 and one.decision is None and not one.checks


def test_sparse_and_dense_x_give_one_model():
    """A degenerate optimum (many all-zero rows, from scikit-learn's sparse suite, with other labels): the sparse fit
    is the dense fit's solve, the same model to the bit (SVC's hold this too; the model layer's solve of the CSR
    data had chosen other support vectors), and its support vectors stay sparse."""
    data = np.array([0.03771744, 0.1003567, 0.01174647, 0.027069])
    indices = np.array([6, 5, 35, 31], dtype=np.int32)
    indptr = np.array([0] * 8 + [1] * 32 + [2] * 38 + [4] * 3, dtype=np.int32)
    X = sparse.csr_matrix((data, indices, indptr))
    y = np.random.default_rng(5).integers(0, 4, X.shape[0]).astype(float)
    dense = SVMClassifier(kernel="linear").fit(X.toarray(), y)
    thin = SVMClassifier(kernel="linear").fit(X, y)
    np.testing.assert_array_equal(thin.support_, dense.support_)
    np.testing.assert_array_equal(thin.dual_coef_.toarray(), dense.dual_coef_)
    np.testing.assert_array_equal(thin.intercept_, dense.intercept_)
    assert sparse.issparse(thin.support_vectors_)
    np.testing.assert_array_equal(thin.predict(X), SVC(kernel="linear").fit(X, y).predict(X))


def test_a_wide_or_large_sparse_x_is_not_copied_dense(monkeypatch):
    """d > n: the dense copy would be larger than the Gram matrix; d <= n beyond the memory budget's Gram matrix:
    the pairs go through solvers.api.solve on the CSR data (no SMO on a dense copy)."""
    X = sparse.random(40, 500, density=0.05, format="csr", random_state=1)
    y = np.repeat([0, 1], 20)
    est = SVMClassifier(kernel="linear").fit(X, y)
    assert est._smo is False and est.solutions_[0].status == OPTIMAL
    monkeypatch.setattr(estimator_module, "memory_budget", lambda: 1_000.0)  # bytes: no Gram matrix of 40 points
    est = SVMClassifier(kernel="linear").fit(X[:, :30], y)
    assert est._smo is False and est.solutions_[0].status == OPTIMAL


@settings(max_examples=8, deadline=None)
@given(scale=hs.sampled_from([1e-3, 1.0, 1e3]), shift=hs.sampled_from([0.0, -1e4, 1e4, 1e6]), seed=hs.integers(0, 50))
def test_the_linear_svm_is_invariant_to_shifting_and_rescaling_the_data(scale, shift, seed):
    """w'x + b moves with the data: X -> s X + c at C / s^2 is the same SVM (w -> w / s, b -> b - w'c / s), so the
    decision values on the moved test points are the same, within the checks' 1e-4 of their size; every pair
    verified. At s = 1e-3, c = 1e4 x'z's terms are 1e14 times the decision values: solved and predicted from
    X itself, the fit was `optimal` and 0.44 of max|f| off (SVC's single-precision cache: 3.9e4 times)."""
    X, y = make_classification(n_samples=150, n_features=5, n_informative=3, flip_y=0.1, class_sep=0.8,
                               random_state=seed)
    base = SVMClassifier(kernel="linear", C=1.0).fit(X, y)
    moved = SVMClassifier(kernel="linear", C=1.0 / scale**2).fit(scale * X + shift, y)
    assert all(s.status == OPTIMAL for s in moved.solutions_)
    f, g = base.decision_function(X), moved.decision_function(scale * X + shift)
    np.testing.assert_allclose(g, f, rtol=0, atol=1e-4 * np.abs(f).max())


def test_the_proved_b_moves_with_the_proved_w_when_solved_centered():
    """solve() centers data far from the origin and maps b back; the proved optimum's b moves by its own w's
    -w'mean, not the solver's point's (their w differ by rounding, times a mean of 1e4: 0.04 of max|f|): the proved
    model's decision values are the uncentered problem's within 1e-6 of their size."""
    X, y = make_classification(n_samples=150, n_features=5, n_informative=3, flip_y=0.1, class_sep=0.8,
                               random_state=0)
    y = np.where(y == 1, 1.0, -1.0)
    base = solve("soft_primal", X, y, C=1.0, layer="cvxpy", backend="clarabel", profile="high")
    Z = 1e-3 * X + 1e4
    sol = solve("soft_primal", Z, y, C=1e6, layer="pyomo", backend="piqp")
    assert sol.extras.get("centered") and sol.proved_alpha is not None
    w = (Z - Z.mean(axis=0)).T @ (y * sol.proved_alpha)  # about the mean: the plain sum's rounding is w's size
    f, g = X @ base.w + base.b, Z @ w + sol.proved_b
    np.testing.assert_allclose(g, f, rtol=0, atol=1e-6 * np.abs(f).max())
