"""Sparse X (scipy.sparse CSR, CSC, sparse arrays) through solve(), solve_lp() and the estimator.

A sparse X is the same data as its dense copy, so every path must give the dense solve's answer: w, b and the
objective to 1e-8 relative (the linear formulations compute on the very same numbers, so they agree to
rounding). And the linear formulations must never make the dense copy: a text-like X (d = 100,000 columns)
would not fit in memory as one.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse._base as sparse_base
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from experiments.estimator import SVMClassifier
from formulations.errors import SVMInputError
from formulations.validation import check_X
from solvers.api import solve
from solvers.lp import solve_lp

RTOL = 1e-8


def sparse_problem(n=80, d=20, density=0.2, seed=0, fmt="csr"):
    """A sparse X (few nonzeros per row) and labels from a planted w, with 10% of them flipped."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format=fmt, random_state=seed, data_rvs=rng.standard_normal)
    w = rng.standard_normal(d)
    score = X @ w
    y = np.where(score > np.median(score), 1.0, -1.0)
    flip = rng.random(n) < 0.1
    y[flip] = -y[flip]
    return X, y


def rel(a, b) -> float:
    """max |a - b| relative to max |b|."""
    a, b = np.atleast_1d(np.asarray(a, dtype=float)), np.atleast_1d(np.asarray(b, dtype=float))
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-300))


def assert_same_solution(sparse_sol, dense_sol, rtol=RTOL, w=True, status="optimal"):
    assert sparse_sol.status == dense_sol.status == status, (sparse_sol.message, dense_sol.message)
    if w:
        assert rel(sparse_sol.w, dense_sol.w) <= rtol
    assert rel(sparse_sol.b, dense_sol.b) <= rtol
    assert rel(sparse_sol.objective, dense_sol.objective) <= rtol
    assert rel(sparse_sol.decision, dense_sol.decision) <= rtol


QP_CASES = [
    (formulation, layer, method)
    for formulation in ("soft_primal", "dual", "kernel_dual")
    for layer in ("cvxpy", "pyomo", "direct")
    for method in ("full", "working_set")
    if not (layer == "direct" and method == "full")
] + [("hard_primal", "cvxpy", "full"), ("hard_primal", "pyomo", "full")]


@pytest.mark.parametrize("formulation, layer, method", QP_CASES, ids=["-".join(c) for c in QP_CASES])
def test_solve_sparse_equals_dense(formulation, layer, method):
    X, y = sparse_problem(n=80, d=20)
    if formulation == "hard_primal":  # separable labels: the planted w's signs, unflipped
        X, y = sparse_problem(n=40, d=60, density=0.3)
        y = np.where(X @ np.linalg.lstsq(X.toarray(), y, rcond=None)[0] > 0, 1.0, -1.0)
    kw = dict(layer=layer, backend="piqp", method=method, C=math.inf if formulation == "hard_primal" else 1.0)
    sparse_sol = solve(formulation, X, y, **kw)
    dense_sol = solve(formulation, X.toarray(), y, **kw)
    assert sparse_sol.extras["method"] == method
    assert_same_solution(sparse_sol, dense_sol, w=formulation != "kernel_dual")


@pytest.mark.parametrize("kernel", ["rbf", "poly", "sigmoid"])
@pytest.mark.parametrize("method", ["full", "working_set"])
def test_kernel_dual_of_sparse_X(kernel, method):
    """Kernels of a sparse X through scikit-learn's pairwise_kernels: the same Gram matrix to rounding. The whole
    QP's solver then stops at a point that moves with that rounding (b 5e-9 apart at the default profile); the
    `high` profile's tighter stop brings both to the proved optimum."""
    X, y = sparse_problem(n=60, d=15, density=0.3, seed=1)
    kw = dict(layer="cvxpy", backend="piqp", method=method, C=1.0, kernel=kernel, allow_indefinite=True,
              profile="high")
    # the sigmoid's K is indefinite here: its checked KKT point is never `optimal` (solvers.closing.mark_indefinite)
    assert_same_solution(solve("kernel_dual", X, y, **kw), solve("kernel_dual", X.toarray(), y, **kw),
                         rtol=RTOL, w=False, status="optimal_inaccurate" if kernel == "sigmoid" else "optimal")


def test_kernel_rows_on_demand_of_sparse_X():
    """Past the memory budget the kernel working set computes its rows from the sparse rows (KernelRows)."""
    X, y = sparse_problem(n=60, d=15, density=0.3, seed=11)
    kw = dict(layer="direct", backend="piqp", method="working_set", C=1.0, kernel="rbf", profile="high")
    sparse_sol = solve("kernel_dual", X, y, memory_budget=5e4, **kw)  # 3 n^2 doubles = 86 kB: no Gram matrix
    assert_same_solution(sparse_sol, solve("kernel_dual", X.toarray(), y, **kw), w=False)


@pytest.mark.parametrize("formulation", ["l1_primal", "l1_dual"])
@pytest.mark.parametrize("layer", ["cvxpy", "pyomo"])
def test_solve_lp_sparse_equals_dense(formulation, layer):
    X, y = sparse_problem(n=80, d=20, seed=2)
    sparse_sol = solve_lp(formulation, X, y, layer=layer, backend="highs", C=1.0)
    dense_sol = solve_lp(formulation, X.toarray(), y, layer=layer, backend="highs", C=1.0)
    assert_same_solution(sparse_sol, dense_sol)


@pytest.mark.parametrize("kind", [sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array])
def test_every_sparse_kind_is_taken(kind):
    """The old refusal ("X must be numeric: entry () is <Compressed Sparse Row ...>") is gone for every kind."""
    X, y = sparse_problem(n=50, d=10, seed=3)
    sol = solve("soft_primal", kind(X), y, layer="cvxpy", backend="piqp", C=1.0)
    ref = solve("soft_primal", X.toarray(), y, layer="cvxpy", backend="piqp", C=1.0)
    assert_same_solution(sol, ref)


def test_standardize_scales_sparse_X_without_centring():
    """Centring would make X dense; scaling alone gives the same classifier (the bias absorbs the shift), so the
    answer in the original units is the dense standardized solve's, to its solver's tolerance."""
    X, y = sparse_problem(n=80, d=12, seed=4)
    X = X @ sp.diags(np.logspace(-2, 2, 12))  # features in other units
    kw = dict(layer="cvxpy", backend="piqp", method="full", C=1.0, standardize=True, profile="high")
    sparse_sol, dense_sol = solve("soft_primal", X, y, **kw), solve("soft_primal", X.toarray(), y, **kw)
    assert sparse_sol.status == dense_sol.status == "optimal"
    assert sparse_sol.extras["standardized"]["mean"] == [0.0] * 12
    assert rel(sparse_sol.w, dense_sol.w) <= 1e-6
    assert rel(sparse_sol.decision, dense_sol.decision) <= 1e-6


@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(n=hs.integers(8, 60), d=hs.integers(1, 40), density=hs.floats(0.02, 0.6), seed=hs.integers(0, 10_000),
       C=hs.sampled_from([1e-3, 1.0, 100.0]), formulation=hs.sampled_from(["soft_primal", "dual"]))
def test_random_sparse_matrices(n, d, density, seed, C, formulation):
    """Any sparse X (empty rows and columns included) gives the dense solve's answer, or the same refusal."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=seed, data_rvs=rng.standard_normal)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sparse_sol = solve(formulation, X, y, layer="cvxpy", backend="piqp", C=C)
        dense_sol = solve(formulation, X.toarray(), y, layer="cvxpy", backend="piqp", C=C)
    assert sparse_sol.status == dense_sol.status
    if dense_sol.status == "optimal":
        assert rel(sparse_sol.objective, dense_sol.objective) <= RTOL
        assert rel(sparse_sol.decision, dense_sol.decision) <= RTOL


# --------------------------------------------------------------------------- no dense copy


@pytest.fixture
def no_dense_copy(monkeypatch):
    """toarray()/todense() raise on any matrix of X's shape (or its transpose): a dense copy of X fails the test.
    Small blocks (a few rows' inner products) may still be made dense."""
    shapes = set()
    for name in ("toarray", "todense"):
        original = getattr(sparse_base._spbase, name)

        def guarded(self, *args, _original=original, **kwargs):
            if self.shape in shapes:
                raise AssertionError(f"a dense copy of X {self.shape} was made")
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(sparse_base._spbase, name, guarded)
    return shapes


LINEAR_CASES = [
    ("soft_primal", "cvxpy", "full"), ("soft_primal", "pyomo", "full"), ("soft_primal", "cvxpy", "working_set"),
    ("soft_primal", "pyomo", "working_set"), ("soft_primal", "direct", "working_set"),
    ("dual", "cvxpy", "full"), ("dual", "pyomo", "full"), ("dual", "direct", "working_set"),
    ("hard_primal", "cvxpy", "full"), ("hard_primal", "pyomo", "full"),
]


@pytest.mark.parametrize("formulation, layer, method", LINEAR_CASES, ids=["-".join(c) for c in LINEAR_CASES])
def test_linear_formulations_make_no_dense_copy(no_dense_copy, formulation, layer, method):
    n, d = 120, 400
    X, y = sparse_problem(n=n, d=d, density=0.02, seed=5)
    no_dense_copy.update({(n, d), (d, n)})
    C = math.inf if formulation == "hard_primal" else 1.0
    sol = solve(formulation, X, y, layer=layer, backend="piqp", method=method, C=C)
    assert sol.status in ("optimal", "infeasible"), sol.message
    assert sol.extras["method"] == method


@pytest.mark.parametrize("formulation", ["l1_primal", "l1_dual", "separability"])
@pytest.mark.parametrize("layer", ["cvxpy", "pyomo"])
def test_lps_make_no_dense_copy(no_dense_copy, formulation, layer):
    n, d = 120, 400
    X, y = sparse_problem(n=n, d=d, density=0.02, seed=6)
    no_dense_copy.update({(n, d), (d, n)})
    sol = solve_lp(formulation, X, y, layer=layer, backend="highs", C=1.0 if formulation != "separability" else None)
    assert sol.status.startswith("optimal"), sol.message


def test_text_sized_X_that_would_not_fit_dense():
    """n = 20,000 x d = 200,000 (a dense copy: 32 GB, more than this machine has) with 10 nonzeros a row: solved
    by the default method, w_j = 0 exactly for the words in no sample."""
    n, d, words = 20_000, 200_000, 200
    rng = np.random.default_rng(7)
    cols = rng.integers(0, words, size=(n, 10))  # the words in use: 200 of the vocabulary
    X = sp.csr_matrix((rng.random(n * 10), cols.ravel(), np.arange(0, 10 * n + 1, 10)), shape=(n, d))
    w = np.zeros(d)
    w[:words] = rng.standard_normal(words)
    y = np.where(X @ w > 0, 1.0, -1.0)
    sol = solve("soft_primal", X, y, layer="cvxpy", backend="piqp", C=1.0)
    assert sol.status == "optimal", sol.message
    assert sol.w.shape == (d,)
    assert np.all(sol.w[words:] == 0.0)
    assert np.mean(np.sign(sol.decision) == y) > 0.95


# --------------------------------------------------------------------------- the input's checks


def test_sparse_X_is_checked_on_its_stored_entries():
    X = sp.random(30, 8, density=0.3, format="csr", random_state=0)
    checked = check_X(X)
    assert isinstance(checked, sp.csr_matrix) and checked.dtype == np.float64
    X.data[4] = np.nan
    with pytest.raises(SVMInputError, match=r"X contains NaN at row \d+, column \d+ \(1 non-finite"):
        check_X(X)
    X.data[4] = -np.inf
    with pytest.raises(SVMInputError, match="X contains infinity"):
        check_X(sp.csc_matrix(X))
    with pytest.raises(SVMInputError, match="X is empty"):
        check_X(sp.csr_matrix((0, 4)))


def test_stored_zeros_are_data():
    """Explicit zeros in the CSR arrays are zeros: the answer is the one without them."""
    X, y = sparse_problem(n=40, d=8, seed=8)
    padded = X.copy()
    padded.data[::3] = 0.0  # stored, not removed
    trimmed = padded.copy()
    trimmed.eliminate_zeros()
    assert padded.nnz > trimmed.nnz
    kw = dict(layer="cvxpy", backend="piqp", C=1.0)
    assert_same_solution(solve("soft_primal", padded, y, **kw), solve("soft_primal", trimmed, y, **kw))


def test_a_sparse_gram_matrix_is_refused_by_name():
    X, y = sparse_problem(n=30, d=5, seed=9)
    with pytest.raises(SVMInputError, match=r"K must be a dense array, got a scipy.sparse matrix.*K.toarray\(\)"):
        solve("kernel_dual", None, y, K=sp.csr_matrix(X @ X.T), layer="cvxpy", backend="piqp", C=1.0)


# --------------------------------------------------------------------------- the estimator


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("kind", [sp.csr_matrix, sp.csc_matrix, sp.csr_array])
def test_estimator_sparse_fit_equals_dense_fit(kernel, kind):
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    dense = SVMClassifier(kernel=kernel, C=1.0).fit(X, y)
    sparse = SVMClassifier(kernel=kernel, C=1.0).fit(kind(X), y)
    assert sp.issparse(sparse.support_vectors_) and sp.issparse(sparse.dual_coef_)  # SVC's after a sparse fit
    np.testing.assert_array_equal(sparse.support_, dense.support_)
    np.testing.assert_allclose(sparse.support_vectors_.toarray(), dense.support_vectors_)
    np.testing.assert_allclose(sparse.dual_coef_.toarray(), dense.dual_coef_, rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, rtol=RTOL)
    if kernel == "linear":
        assert sp.issparse(sparse.coef_)
        np.testing.assert_allclose(sparse.coef_.toarray(), dense.coef_, rtol=RTOL, atol=1e-12)
    f = dense.decision_function(X)
    assert rel(sparse.decision_function(kind(X)), f) <= RTOL
    assert rel(sparse.decision_function(X), f) <= RTOL  # dense input after a sparse fit, as SVC
    np.testing.assert_array_equal(sparse.predict(kind(X)), dense.predict(X))


def test_estimator_sparse_errors_are_svcs():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    dense = SVMClassifier(kernel="linear").fit(X, y)
    with pytest.raises(ValueError, match="cannot use sparse input in 'SVMClassifier' trained on dense data"):
        dense.predict(sp.csr_matrix(X))
    with pytest.raises(TypeError, match="Sparse precomputed kernels are not supported"):
        SVMClassifier(kernel="precomputed").fit(sp.csr_matrix(X @ X.T), y)


def test_estimator_gamma_scale_of_sparse_X():
    """gamma='scale' is 1 / (d Var(X)) over all entries, zeros included: the dense X's value."""
    X, y = sparse_problem(n=60, d=10, density=0.3, seed=10)
    sparse = SVMClassifier(kernel="rbf", gamma="scale").fit(X, y)
    dense = SVMClassifier(kernel="rbf", gamma="scale").fit(X.toarray(), y)
    assert sparse.kernel_.gamma == pytest.approx(dense.kernel_.gamma, rel=1e-12)
    assert rel(sparse.decision_function(X), dense.decision_function(X.toarray())) <= RTOL
