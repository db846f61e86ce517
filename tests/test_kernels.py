"""Kernels: Gram matrices against scikit-learn, Mercer's condition, factors, feature maps."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.metrics.pairwise import (
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
    sigmoid_kernel,
)

from formulations.errors import IndefiniteKernelError, SVMInputError
from formulations.kernels import (
    MAX_FEATURES,
    Kernel,
    decision_function,
    factorize,
    gram,
    mercer_check,
    poly2_feature_map_notes,
    poly_feature_count,
    poly_feature_map,
)


def data(n, d, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


# Sigmoid parameters found by experiment: on data(40, 2, seed=0) the Gram matrix of
# tanh(x'z - 1) has min eigenvalue -21.83 (max 16.61): far from PSD.
INDEFINITE_SIGMOID = Kernel("sigmoid", gamma=1.0, coef0=-1.0)


# --------------------------------------------------------------------------- Kernel


def test_gaussian_is_an_alias_of_rbf():
    assert Kernel("gaussian", gamma=1).name == "rbf"
    assert Kernel("Gaussian", gamma=1) == Kernel("rbf", gamma=1.0)


@pytest.mark.parametrize(
    "kernel, label",
    [
        (Kernel("linear"), "linear"),
        (Kernel("rbf", gamma=1), "rbf(gamma=1)"),
        (Kernel("rbf"), "rbf(gamma=auto)"),
        (Kernel("poly", gamma=1, degree=2, coef0=1), "poly(degree=2,gamma=1,coef0=1)"),
        (Kernel("sigmoid", gamma=0.5, coef0=-1), "sigmoid(gamma=0.5,coef0=-1)"),
        (Kernel("precomputed"), "precomputed"),
    ],
)
def test_label(kernel, label):
    assert kernel.label == label


@pytest.mark.parametrize(
    "kwargs, keywords",
    [
        (dict(name="rbf", gamma=0.0), ["gamma", "> 0"]),
        (dict(name="rbf", gamma=-1.0), ["gamma", "> 0"]),
        (dict(name="rbf", gamma=float("inf")), ["gamma", "finite"]),
        (dict(name="poly", degree=0), ["degree", "positive integer"]),
        (dict(name="poly", degree=2.5), ["degree", "positive integer"]),
        (dict(name="poly", degree=True), ["degree", "positive integer"]),
        (dict(name="poly", coef0=-0.5), ["coef0", ">= 0"]),
        (dict(name="sigmoid", coef0=float("nan")), ["coef0", "finite"]),
        (dict(name="laplacian"), ["unknown kernel", "linear", "poly", "rbf", "sigmoid"]),
    ],
)
def test_invalid_parameters_rejected(kwargs, keywords):
    with pytest.raises(SVMInputError) as err:
        Kernel(**kwargs)
    for word in keywords:
        assert word in str(err.value)


def test_negative_coef0_allowed_for_sigmoid():
    assert INDEFINITE_SIGMOID.coef0 == -1.0


# --------------------------------------------------------------------------- gram


@pytest.mark.parametrize("gamma", [None, 0.3, 2.0])
@pytest.mark.parametrize("same", [True, False])
def test_gram_matches_sklearn(gamma, same):
    X, Z = data(30, 4, seed=1), data(20, 4, seed=2)
    Zs = None if same else Z
    Zref = X if same else Z
    cases = [
        (Kernel("linear"), linear_kernel(X, Zref)),
        (Kernel("poly", gamma=gamma, degree=3, coef0=1.0),
         polynomial_kernel(X, Zref, degree=3, gamma=gamma, coef0=1.0)),
        (Kernel("poly", gamma=gamma, degree=2, coef0=0.0),
         polynomial_kernel(X, Zref, degree=2, gamma=gamma, coef0=0.0)),
        (Kernel("rbf", gamma=gamma), rbf_kernel(X, Zref, gamma=gamma)),
        (Kernel("sigmoid", gamma=gamma, coef0=-0.5),
         sigmoid_kernel(X, Zref, gamma=gamma, coef0=-0.5)),
    ]
    for kernel, expected in cases:
        G = gram(kernel, X, Zs)
        assert G.shape == expected.shape
        np.testing.assert_allclose(G, expected, rtol=1e-12, atol=1e-12, err_msg=kernel.label)


def test_gamma_none_is_one_over_d():
    X = data(15, 5)
    assert Kernel("rbf").resolved_gamma(5) == 0.2
    np.testing.assert_allclose(gram(Kernel("rbf"), X), gram(Kernel("rbf", gamma=0.2), X),
                               rtol=0, atol=0)
    np.testing.assert_allclose(
        gram(Kernel("poly", degree=2, coef0=1.0), X),
        (X @ X.T / 5 + 1.0) ** 2, rtol=1e-12)


def test_rbf_gram_is_exactly_symmetric_with_unit_diagonal():
    X = 1e3 + data(50, 3)  # large offset: cancellation in ||x||^2 + ||z||^2 - 2x'z
    G = gram(Kernel("rbf", gamma=1.0), X)
    assert np.array_equal(G, G.T)
    assert np.all(np.diag(G) == 1.0)
    assert G.min() >= 0.0 and G.max() <= 1.0


@pytest.mark.parametrize("kernel", [Kernel("linear"), Kernel("poly", degree=3, gamma=0.5, coef0=1.0),
                                    Kernel("sigmoid", gamma=0.01, coef0=0.0), Kernel("rbf", gamma=0.3)])
@pytest.mark.parametrize("n", [1, 2, 7, 1500])
def test_gram_is_exactly_symmetric_at_every_size(kernel, n):
    """The Gram matrix is built in place from X X' (BLAS syrk from a size on): no symmetrisation pass."""
    X = np.asfortranarray(data(n, 4))  # any memory order
    G = gram(kernel, X)
    assert np.array_equal(G, G.T)
    np.testing.assert_allclose(G[: min(n, 5)], gram(kernel, X[: min(n, 5)], X), rtol=1e-12, atol=1e-14)


def test_gram_rejects_bad_input():
    with pytest.raises(SVMInputError, match="precomputed"):
        gram(Kernel("precomputed"), data(3, 2))
    with pytest.raises(SVMInputError, match="features"):
        gram(Kernel("linear"), data(3, 2), data(3, 3))
    with pytest.raises(SVMInputError, match="2-D"):
        gram(Kernel("linear"), np.ones(3))
    X = data(3, 2)
    X[1, 0] = np.nan
    with pytest.raises(SVMInputError, match="row 1, column 0"):
        gram(Kernel("linear"), X)


# --------------------------------------------------------------------------- Mercer


def test_rbf_gram_is_psd():
    K = gram(Kernel("rbf", gamma=1.0), data(60, 2))
    report = mercer_check(K, kernel_label="rbf(gamma=1)")
    w = np.linalg.eigvalsh(K)
    assert report.is_psd and report.symmetric
    assert report.min_eigenvalue == pytest.approx(w[0], abs=1e-12)
    assert report.max_eigenvalue == pytest.approx(w[-1], rel=1e-12)
    assert report.min_eigenvalue > -report.tolerance
    assert report.tolerance == pytest.approx(1e-10 * w[-1])


def test_low_rank_linear_gram_is_psd_despite_rounding():
    # 97 eigenvalues are zero up to rounding, some of them slightly negative.
    K = gram(Kernel("linear"), data(100, 3))
    assert mercer_check(K).is_psd


def test_indefinite_sigmoid_refused_with_label_and_eigenvalue():
    K = gram(INDEFINITE_SIGMOID, data(40, 2))
    lam_min = np.linalg.eigvalsh(K)[0]
    assert lam_min < -20.0
    with pytest.raises(IndefiniteKernelError) as err:
        mercer_check(K, kernel_label=INDEFINITE_SIGMOID.label)
    message = str(err.value)
    assert "sigmoid(gamma=1,coef0=-1)" in message
    assert f"{lam_min:.6g}" in message
    assert "allow_indefinite=True" in message


def test_allow_indefinite_returns_report():
    K = gram(INDEFINITE_SIGMOID, data(40, 2))
    report = mercer_check(K, kernel_label=INDEFINITE_SIGMOID.label, allow_indefinite=True)
    assert not report.is_psd
    assert report.min_eigenvalue == pytest.approx(-21.827257489, rel=1e-8)


def test_random_symmetric_indefinite_matrix_refused():
    A = data(30, 30, seed=5)
    K = A + A.T
    with pytest.raises(IndefiniteKernelError, match="precomputed"):
        mercer_check(K)
    # what to do, for a user of solve() and of the estimator alike (which has no allow_indefinite)
    with pytest.raises(IndefiniteKernelError, match=r"use a Mercer kernel \(rbf, poly with coef0 >= 0, linear\), "
                                                    r"or pass allow_indefinite=True \(solvers.api.solve"):
        mercer_check(K)


def test_asymmetric_matrix_refused_naming_position():
    K = gram(Kernel("rbf", gamma=1.0), data(10, 2))
    K[2, 7] += 1e-3
    with pytest.raises(SVMInputError, match=r"not symmetric.*\(2, 7\)"):
        mercer_check(K)
    with pytest.raises(SVMInputError, match="square"):
        mercer_check(np.ones((3, 4)))


def test_tiny_asymmetry_tolerated():
    K = gram(Kernel("rbf", gamma=1.0), data(10, 2))
    K[2, 7] += 1e-13
    assert mercer_check(K).is_psd


@pytest.mark.parametrize(
    "kernel", [Kernel("rbf", gamma=0.5), Kernel("rbf", gamma=50.0), Kernel("linear"),
               INDEFINITE_SIGMOID])
def test_large_n_eigen_path_agrees_with_dense(kernel):
    # dense_max_n=100 forces the path used for n > 4000 on a small matrix.
    K = gram(kernel, data(300, 2, seed=3))
    dense = mercer_check(K, allow_indefinite=True)
    sparse = mercer_check(K, allow_indefinite=True, dense_max_n=100)
    assert dense.method == "eigvalsh"
    assert sparse.method == ("cholesky+eigsh" if dense.is_psd else "eigsh")
    assert sparse.is_psd == dense.is_psd
    assert sparse.max_eigenvalue == pytest.approx(dense.max_eigenvalue, rel=1e-10)
    if dense.is_psd:  # min eigenvalue ~ 0: documented accuracy is 1% of the tolerance
        assert abs(sparse.min_eigenvalue - dense.min_eigenvalue) < 0.01 * dense.tolerance
    else:
        assert sparse.min_eigenvalue == pytest.approx(dense.min_eigenvalue, rel=1e-8)


# --------------------------------------------------------------------------- factorize


@pytest.mark.parametrize("method", ["pivoted_cholesky", "eig"])
def test_factorize_rbf_full(method):
    K = gram(Kernel("rbf", gamma=1.0), data(200, 2))
    f = factorize(K, method=method)
    assert f.method == method
    assert f.L.shape == (200, f.rank)
    assert f.residual < 1e-8
    assert np.linalg.norm(K - f.L @ f.L.T) / np.linalg.norm(K) == pytest.approx(f.residual)


@pytest.mark.parametrize("method", ["pivoted_cholesky", "eig"])
def test_factorize_low_rank_linear(method):
    K = gram(Kernel("linear"), data(200, 3))
    f = factorize(K, method=method)
    assert f.rank == 3
    assert f.residual < 1e-12


@pytest.mark.parametrize("method", ["pivoted_cholesky", "eig"])
def test_factorize_max_rank(method):
    K = gram(Kernel("rbf", gamma=1.0), data(200, 2))
    f = factorize(K, max_rank=5, method=method)
    assert f.rank == 5 and f.L.shape == (200, 5)
    assert np.linalg.norm(K - f.L @ f.L.T) / np.linalg.norm(K) == pytest.approx(f.residual)
    # rbf(gamma=1) on 200 Gaussian points: pivoted Cholesky 0.72, eig 0.26 at rank 5
    assert 0.1 < f.residual < 0.8
    assert factorize(K, max_rank=40, method=method).residual < 0.05


def test_factorize_eig_truncation_is_optimal():
    # Eckart-Young: the eig factor of rank r is the best rank-r approximation.
    K = gram(Kernel("rbf", gamma=1.0), data(100, 2))
    w = np.linalg.eigvalsh(K)[::-1]
    f = factorize(K, max_rank=4, method="eig")
    assert f.residual == pytest.approx(np.sqrt(np.sum(w[4:] ** 2) / np.sum(w**2)), rel=1e-6)


def test_factorize_rejects_bad_arguments():
    K = np.eye(3)
    with pytest.raises(SVMInputError, match="unknown factorization method"):
        factorize(K, method="qr")
    with pytest.raises(SVMInputError, match="max_rank"):
        factorize(K, max_rank=0)


# --------------------------------------------------------------------------- feature maps


@pytest.mark.parametrize("degree", [1, 2, 3])
@pytest.mark.parametrize("coef0", [0.0, 1.0])
@pytest.mark.parametrize("gamma", [0.5, 2.0])
@pytest.mark.parametrize("d", [1, 2, 3])
def test_poly_feature_map_reproduces_kernel(degree, coef0, gamma, d):
    X = data(12, d, seed=d)
    Phi = poly_feature_map(X, degree, gamma=gamma, coef0=coef0)
    K = gram(Kernel("poly", gamma=gamma, degree=degree, coef0=coef0), X)
    assert Phi.shape == (12, poly_feature_count(d, degree, coef0))
    assert np.linalg.norm(Phi @ Phi.T - K) <= 1e-10 * np.linalg.norm(K)


def test_poly_feature_map_cross_gram():
    X, Z = data(5, 3, seed=1), data(7, 3, seed=2)
    Phi_x = poly_feature_map(X, 3, gamma=0.5, coef0=2.0)
    Phi_z = poly_feature_map(Z, 3, gamma=0.5, coef0=2.0)
    np.testing.assert_allclose(Phi_x @ Phi_z.T, (0.5 * X @ Z.T + 2.0) ** 3, rtol=1e-12)


def test_poly_feature_count():
    assert poly_feature_count(2, 2, coef0=1.0) == 6  # 1, x1, x2, x1^2, x1 x2, x2^2
    assert poly_feature_count(2, 2, coef0=0.0) == 3  # x1^2, x1 x2, x2^2


@settings(max_examples=40, deadline=None)
@given(
    X=hnp.arrays(
        np.float64,
        shape=st.tuples(st.integers(1, 6), st.integers(1, 3)),
        elements=st.floats(-3, 3, allow_nan=False, allow_infinity=False),
    ),
    degree=st.integers(1, 4),
    gamma=st.floats(0.1, 3.0),
    coef0=st.sampled_from([0.0, 0.5, 1.0, 2.0]),
)
def test_poly_feature_map_identity_property(X, degree, gamma, coef0):
    Phi = poly_feature_map(X, degree, gamma=gamma, coef0=coef0)
    K = (gamma * X @ X.T + coef0) ** degree
    scale = max(1.0, float(np.max(np.abs(K))))
    np.testing.assert_allclose(Phi @ Phi.T, K, rtol=1e-10, atol=1e-10 * scale)


def test_feature_map_size_limit():
    with pytest.raises(SVMInputError, match="features") as err:
        poly_feature_map(data(2, 100), degree=4)
    count = poly_feature_count(100, 4, 1.0)
    assert count > MAX_FEATURES
    assert f"{count:,}" in str(err.value)
    with pytest.raises(SVMInputError, match="features"):
        poly2_feature_map_notes(data(2, 500))


@pytest.mark.parametrize("gamma", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("d", [1, 2, 4])
def test_poly2_feature_map_notes_is_eq_9_27(gamma, d):
    X, Z = data(8, d, seed=1), data(6, d, seed=2)
    Phi_x, Phi_z = poly2_feature_map_notes(X, gamma), poly2_feature_map_notes(Z, gamma)
    assert Phi_x.shape == (8, 1 + d + d * d)
    K = (1 + gamma * X @ Z.T) ** 2
    np.testing.assert_allclose(Phi_x @ Phi_z.T, K, rtol=1e-12, atol=1e-12 * np.abs(K).max())
    np.testing.assert_allclose(Phi_x[:, 1 : d + 1], np.sqrt(2 * gamma) * X)


def test_squares_only_reading_of_eq_9_26_is_not_the_kernel():
    # Why poly2_feature_map_notes keeps the cross products x_i x_j (docstring note).
    X, gamma = data(5, 2), 1.0
    squares_only = np.hstack([np.ones((5, 1)), np.sqrt(2 * gamma) * X, gamma * X**2])
    K = (1 + gamma * X @ X.T) ** 2
    assert np.max(np.abs(squares_only @ squares_only.T - K)) > 1e-2


# --------------------------------------------------------------------------- decision


@pytest.mark.parametrize(
    "kernel",
    [Kernel("linear"), Kernel("rbf", gamma=0.7), Kernel("poly", degree=2, coef0=1.0),
     INDEFINITE_SIGMOID],
)
def test_decision_function_equals_full_sum(kernel):
    rng = np.random.default_rng(4)
    X, X_new = data(25, 3, seed=1), data(9, 3, seed=2)
    y = np.where(rng.random(25) < 0.5, -1.0, 1.0)
    alpha = np.where(rng.random(25) < 0.4, rng.random(25), 0.0)  # zero off the SVs
    b = 0.3
    full = np.array([sum(alpha[i] * y[i] * gram(kernel, X[[i]], x[None])[0, 0]
                         for i in range(25)) + b for x in X_new])
    sv = alpha > 0
    f = decision_function(kernel, X[sv], alpha[sv] * y[sv], b, X_new)
    assert f.shape == (9,)
    np.testing.assert_allclose(f, full, rtol=1e-12, atol=1e-12)


def test_decision_function_linear_is_w_x_plus_b():
    X, X_new = data(10, 3, seed=1), data(4, 3, seed=2)
    coef = np.linspace(-1, 1, 10)
    w = X.T @ coef  # (9.17)
    np.testing.assert_allclose(decision_function(Kernel("linear"), X, coef, -0.5, X_new),
                               X_new @ w - 0.5, rtol=1e-12)


def test_decision_function_precomputed_takes_kernel_rows():
    X, X_new = data(10, 3, seed=1), data(4, 3, seed=2)
    kernel, coef = Kernel("rbf", gamma=1.0), np.linspace(-1, 1, 10)
    K_new = gram(kernel, X_new, X)
    np.testing.assert_allclose(
        decision_function(Kernel("precomputed"), None, coef, 0.1, K_new),
        decision_function(kernel, X, coef, 0.1, X_new), rtol=1e-14)


def test_decision_function_rejects_mismatch():
    with pytest.raises(SVMInputError, match="coefficients"):
        decision_function(Kernel("linear"), data(5, 2), np.ones(4), 0.0, data(3, 2))
    with pytest.raises(SVMInputError, match="b must be"):
        decision_function(Kernel("linear"), data(5, 2), np.ones(5), np.nan, data(3, 2))


@pytest.mark.parametrize(
    "kernel",
    [Kernel("linear"), Kernel("rbf", gamma=0.5), Kernel("poly", gamma=0.5, degree=3, coef0=1.0)],
)
def test_decision_function_rebuilds_sklearn_svc(kernel):
    from sklearn.svm import SVC

    X = data(60, 2, seed=7)
    y = np.where(X[:, 0] ** 2 + X[:, 1] > 0.5, 1, -1)
    params = dict(kernel=kernel.name, degree=kernel.degree, coef0=kernel.coef0)
    if kernel.gamma is not None:
        params["gamma"] = kernel.gamma
    svc = SVC(C=1.0, tol=1e-10, **params).fit(X, y)
    X_new = data(10, 2, seed=8)
    f = decision_function(kernel, svc.support_vectors_, svc.dual_coef_[0],
                          svc.intercept_[0], X_new)
    np.testing.assert_allclose(f, svc.decision_function(X_new), rtol=1e-10, atol=1e-10)


# --------------------------------------------------------------------------- rounding at any translation and scale


def exact_rbf(X, Z, gamma):
    """exp(-gamma ||x - z||^2) from the differences themselves, summed exactly (math.fsum): no expansion."""
    import math
    return np.array([[math.exp(-gamma * math.fsum((a - b) ** 2 for a, b in zip(x, z))) for z in Z] for x in X])


def rbf_rounding(X, Z, gamma):
    """What the rbf's value may be off by (relative to its size): the exact differences' rounding,
    eps (1 + (d + 2) gamma ||x - z||^2), times the slack formulations.kernels allows the expansion, twice."""
    from scipy.spatial.distance import cdist

    from formulations.kernels import EXACT_SLACK
    d2 = cdist(X, Z, "sqeuclidean")
    return 2 * (EXACT_SLACK + 1) * np.finfo(float).eps * (1.0 + (X.shape[1] + 2) * gamma * d2)


def near_duplicates(draw, n, d):
    """n points in d dimensions, a third of them copies of others or copies moved by 1e-9 of their spread."""
    base = draw(hnp.arrays(np.float64, (n, d), elements=st.floats(-1, 1, allow_nan=False, allow_subnormal=False)))
    copies = draw(st.lists(st.tuples(st.integers(0, n - 1), st.sampled_from([0.0, 1e-9, 1e-6, 1e-3])),
                           min_size=1, max_size=max(1, n // 3)))
    extra = [base[i] + step * np.arange(1, d + 1) for i, step in copies]
    return np.vstack([base, *extra])


@st.composite
def placed_data(draw):
    """Points with near-duplicates, translated by 1e0..1e6 and scaled by 1e-4..1e4, and a gamma that stays
    the same kernel in the scaled units (gamma / scale^2): far from the origin or in large units."""
    n, d = draw(st.integers(2, 9)), draw(st.integers(1, 4))
    X = near_duplicates(draw, n, d)
    scale = 10.0 ** draw(st.integers(-4, 4))
    shift = draw(st.sampled_from([0.0, 1.0, 1e3, 1e4, 1e5, 1e6])) * scale
    direction = draw(hnp.arrays(np.float64, d, elements=st.floats(-1, 1, allow_nan=False, allow_subnormal=False)))
    gamma = 10.0 ** draw(st.integers(-1, 3)) / scale**2
    return X * scale + shift * direction, gamma


@settings(max_examples=300, deadline=None)
@given(placed_data())
def test_rbf_values_are_right_to_rounding_at_any_translation_and_scale(case):
    """Each rbf entry, of the Gram matrix (syrk), of rows against other points (the working set's rows, predict)
    and of a decision function, within rounding of exp(-gamma ||x - z||^2) computed from the differences."""
    X, gamma = case
    kernel = Kernel("rbf", gamma=gamma)
    exact = exact_rbf(X, X, gamma)
    allowed = rbf_rounding(X, X, gamma) * exact + np.finfo(float).tiny
    G = gram(kernel, X)
    assert np.array_equal(G, G.T)  # the entries recomputed from differences too
    for values in (G, gram(kernel, X[::-1], X)[::-1], gram(kernel, X, X[: len(X) // 2 + 1])):
        cols = values.shape[1]
        assert np.all(np.abs(values - exact[:, :cols]) <= allowed[:, :cols])
    coef = np.linspace(-1.0, 1.0, len(X))
    f = decision_function(kernel, X, coef, 0.0, X)
    summing = 4 * len(X) * np.finfo(float).eps * (exact @ np.abs(coef))  # the sum's own rounding
    assert np.all(np.abs(f - exact @ coef) <= allowed @ np.abs(coef) + summing)


def test_duplicates_far_from_the_origin_have_kernel_value_one():
    """Moons with 8 points copied and given the other label, x 1e4 (or shifted by 1e4, 1e5), gamma = 1e3, rows in
    any order: every copy's kernel value with its original is exactly 1 (it was 0.99994: the expansion lost 6e-5
    to cancellation), and every entry is right to rounding."""
    from sklearn.datasets import make_moons
    kernel = Kernel("rbf", gamma=1e3)
    for seed, scale, shift in [(1, 1e4, 0.0), (3, 1.0, 1e4), (4, 1.0, 1e5), (0, 1e4, 1e3)]:
        X, _ = make_moons(80, noise=0.1, random_state=seed)
        X = np.vstack([X, X[:8]]) * scale + shift
        order = np.random.default_rng(seed).permutation(len(X))
        X, where = X[order], np.argsort(order)
        copies = (where[:8], where[80:])
        K, rows = gram(kernel, X), gram(kernel, X[where[80:]], X)
        assert np.array_equal(K[copies], np.ones(8)) and np.array_equal(rows[np.arange(8), where[:8]], np.ones(8))
        exact = exact_rbf(X, X, 1e3)
        assert np.all(np.abs(K - exact) <= rbf_rounding(X, X, 1e3) * exact), (seed, scale, shift)


@pytest.mark.parametrize("name, by_theorem", [("linear", True), ("rbf", True), ("poly", True), ("sigmoid", False),
                                              ("precomputed", False)])
def test_mercer_by_theorem_is_one_rule_for_the_api_and_the_estimator(name, by_theorem):
    """A precomputed K has no formula and no theorem: its matrix is checked, as a sigmoid's (the API's extras and
    the estimator's SMO pairs both read Kernel.mercer_by_theorem)."""
    from solvers import closing

    kernel = Kernel(name)
    assert kernel.mercer_by_theorem is by_theorem
    assert closing.mercer_by_theorem(kernel) == ({"psd": True, "mercer_method": f"by theorem ({name})"} if by_theorem else {})


@pytest.mark.parametrize("degree", [1, 2, 3, 5, 8])
def test_the_poly_power_by_products_is_pow_to_its_rounding(degree):
    """integer_power's repeated squaring against extended precision: within (degree - 1) eps of each value (the
    bound its docstring gives), and the poly Gram matrix still exactly symmetric."""
    from formulations.kernels import integer_power

    rng = np.random.default_rng(degree)
    block = rng.normal(size=(200, 150)) * 3.0
    want = block.astype(np.longdouble) ** degree
    got = block.copy()
    integer_power(got, degree)
    relative = np.abs(got - want) / np.abs(want)
    assert float(np.max(relative)) <= max(degree - 1, 0.5) * np.finfo(float).eps
    G = gram(Kernel("poly", degree=degree, gamma=0.3, coef0=1.0), rng.normal(size=(300, 7)))
    assert np.array_equal(G, G.T)
