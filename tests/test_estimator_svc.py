"""SVMClassifier as a drop-in for SVC beyond scikit-learn's own tests (tests/test_sklearn_svc_suite.py): SVC's
defaults, one intercept rule for any weights, negative weights, huge C, a Gram matrix indefinite by rounding,
no ConvergenceWarning on a verified fit, max_iter, and CalibratedClassifierCV in place of probability=True."""

from __future__ import annotations

import ast
import contextlib
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_digits, load_iris, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import experiments.estimator as estimator_module
from experiments.estimator import SVMClassifier
from formulations.errors import IndefiniteKernelError
from formulations.kernels import Kernel, gram

SVC_TIGHT = 1e-10


def _iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@contextlib.contextmanager
def _no_convergence_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        yield


def test_defaults_are_svcs():
    ours, svc = SVMClassifier().get_params(), SVC().get_params()
    shared = set(ours) & set(svc)
    assert shared == set(svc)  # every SVC parameter is accepted
    assert {k: ours[k] for k in shared} == {k: svc[k] for k in shared}
    assert ours["kernel"] == "rbf" and ours["gamma"] == "scale"


@pytest.mark.parametrize("kernel", ["rbf", "poly", "linear"])
def test_unit_weights_give_the_unweighted_fit(kernel):
    """Weights all 1.0 (sample_weight, or class_weight='balanced' on iris's equal classes) are per-sample C_i all
    equal to C: the same optimum and the same b, the midpoint where no alpha is free (as LIBSVM). The lower end
    was taken before: rbf, C = 0.01, 'balanced' agreed with SVC, and with its own unweighted fit, on 31%."""
    X, y = _iris()
    kw = dict(kernel=kernel, C=0.01, decision_function_shape="ovo")
    plain = SVMClassifier(**kw).fit(X, y)
    svc = SVC(**kw, tol=SVC_TIGHT).fit(X, y)
    f = plain.decision_function(X)
    for weighted in (SVMClassifier(**kw, class_weight="balanced").fit(X, y),
                     SVMClassifier(**kw).fit(X, y, sample_weight=np.ones(len(y)))):
        np.testing.assert_array_equal(weighted.predict(X), plain.predict(X))
        np.testing.assert_allclose(weighted.decision_function(X), f, rtol=0, atol=1e-9 * np.max(np.abs(f)))
        np.testing.assert_allclose(weighted.intercept_, plain.intercept_, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(plain.predict(X), svc.predict(X))
    # SVC's single-precision kernel cache: its values are off by up to ~2e-5
    np.testing.assert_allclose(f, svc.decision_function(X), rtol=0, atol=1e-5 * np.max(np.abs(f)))


def test_negative_sample_weights_drop_their_samples():
    X, y = _iris()
    weights = np.ones(len(y))
    weights[::5] = -0.5
    kept = weights > 0
    # gamma fixed: "scale" takes Var(X) of every sample given, as SVC's
    weighted = SVMClassifier(C=1.0, gamma=0.2).fit(X, y, sample_weight=weights)
    removed = SVMClassifier(C=1.0, gamma=0.2).fit(X[kept], y[kept])
    np.testing.assert_allclose(weighted.decision_function(X), removed.decision_function(X), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(weighted.support_, np.flatnonzero(kept)[removed.support_])
    # SVC's support_ counts rows of the data without the dropped samples; its model is the same
    svc = SVC(C=1.0, gamma=0.2, tol=SVC_TIGHT).fit(X, y, sample_weight=weights)
    f = svc.decision_function(X)
    np.testing.assert_allclose(weighted.decision_function(X), f, rtol=0, atol=1e-5 * np.max(np.abs(f)))
    np.testing.assert_array_equal(weighted.n_support_, svc.n_support_)


@pytest.mark.parametrize("kernel", ["rbf", "poly", "linear"])
def test_huge_C_fits_as_the_hard_margin(kernel):
    """C = 1e10 raised SVMFitError (PIQP stops at its iteration cap there, on a point the checks prove optimal);
    on separable data it is the hard margin (C = inf), which SVC takes too."""
    X, y = make_classification(random_state=42)
    with _no_convergence_warning():
        huge = SVMClassifier(kernel=kernel, C=1e10).fit(X, y)
        hard = SVMClassifier(kernel=kernel, C=math.inf).fit(X, y)
    f = hard.decision_function(X)
    np.testing.assert_array_equal(huge.predict(X), hard.predict(X))
    np.testing.assert_allclose(huge.decision_function(X), f, rtol=0, atol=1e-6 * np.max(np.abs(f)))
    assert huge.fit_status_ == 0


def test_gram_matrix_indefinite_by_rounding_is_fitted_a_truly_indefinite_one_refused():
    X, y = _iris()
    K32 = (X.astype(np.float32) @ X.astype(np.float32).T)  # float32 rounding: slightly indefinite
    assert np.linalg.eigvalsh(K32.astype(np.float64))[0] < -1e-10 * np.linalg.eigvalsh(K32.astype(np.float64))[-1]
    ours = SVMClassifier(kernel="precomputed").fit(K32, y)
    exact = SVMClassifier(kernel="precomputed").fit(X @ X.T, y)
    np.testing.assert_array_equal(ours.predict(X @ X.T), exact.predict(X @ X.T))
    sigmoid = gram(Kernel("sigmoid", gamma=1.0), X[:, :2])  # eigenvalues far below 0
    with pytest.raises(IndefiniteKernelError, match="not positive semidefinite"):
        SVMClassifier(kernel="precomputed").fit(sigmoid, y)


def test_the_sigmoid_kernel_is_fitted_where_indefinite_with_a_warning():
    """SVC fits the sigmoid kernel whatever its Gram matrix: so does SVMClassifier, saying which pairs' duals were
    non-convex. scikit-learn's blobs (test_sparse.py's third case): pair (8, 9) has eigenvalue -1.99, where PIQP
    stops at its iteration limit; it goes to Ipopt, whose point meets every KKT condition (`optimal_inaccurate`
    with kkt_verified: no convex proof applies). The same kernel given
    as a precomputed matrix is refused (the test above): there the project cannot tell it was meant."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=100, centers=10, random_state=0)
    X, y = X[:80], y[:80]
    with pytest.warns(estimator_module.IndefiniteKernelWarning, match=r"not positive semidefinite \(sigmoid\)"):
        model = SVMClassifier(kernel="sigmoid", gamma=1.0).fit(X, y)
    indefinite = [sol for sol in model.solutions_ if sol.extras.get("indefinite_kernel")]
    # a non-convex dual's point is never `optimal`: where the checks hold it is a KKT point, said so
    assert any(sol.backend == "ipopt" and sol.extras.get("kkt_verified") for sol in indefinite)
    assert {sol.status for sol in indefinite} == {"optimal_inaccurate"}
    assert model.score(X, y) == pytest.approx(SVC(kernel="sigmoid", gamma=1.0).fit(X, y).score(X, y))  # 0.0875


def test_no_convergence_warning_on_verified_fits_and_ovr_values_as_svc():
    """Digits (600 rows), rbf: ConvergenceWarnings came on 25 of 27 such fits whose answers agreed with SVC to
    2.6e-7 (the checks proved the optimum from the solver's point; the warning is for points without proof)."""
    X, y = load_digits(return_X_y=True)
    X, y = StandardScaler().fit_transform(X[:600]), y[:600]
    with _no_convergence_warning():
        ours = SVMClassifier(C=1.0).fit(X, y)
    svc = SVC(C=1.0, tol=SVC_TIGHT).fit(X, y)
    np.testing.assert_array_equal(ours.predict(X), svc.predict(X))
    ovo_ours = ours.set_params(decision_function_shape="ovo").decision_function(X)
    ovo_svc = svc.set_params(decision_function_shape="ovo").decision_function(X)
    np.testing.assert_allclose(ovo_ours, ovo_svc, rtol=0, atol=1e-5 * np.max(np.abs(ovo_svc)))
    ovr_ours = ours.set_params(decision_function_shape="ovr").decision_function(X)
    ovr_svc = svc.set_params(decision_function_shape="ovr").decision_function(X)
    # a vote flips only where a pair's value is within the two solvers' difference of 0
    clear = np.all(np.abs(ovo_svc) > 1e-4, axis=1)
    assert clear.mean() > 0.99
    np.testing.assert_allclose(ovr_ours[clear], ovr_svc[clear], rtol=0, atol=1e-5)


def test_n_iter_counts_smo_steps_where_the_working_set_started_from_them():
    """From 2,000 points a pair is the kernel working set's, which starts from SMO: n_iter_ is those SMO steps (the
    unit of SVC's n_iter_), not its one outer step. On this noisy set both SMOs stop at 1e-2 and 1e-3: the counts are
    of a size (LIBSVM took 2,107 steps where ours took 1,304)."""
    X, y = make_classification(n_samples=2500, n_features=10, n_informative=7, n_redundant=2, n_clusters_per_class=3,
                               flip_y=0.08, weights=[0.6, 0.4], class_sep=0.85, random_state=5)
    X = StandardScaler().fit_transform(X)
    est = SVMClassifier().fit(X, y)
    sol = est.solutions_[0]
    assert sol.extras["method"] == "working_set" and sol.iterations < 10
    assert est.n_iter_.tolist() == [sol.extras["smo_steps"]]
    assert 0.2 < est.n_iter_[0] / SVC().fit(X, y).n_iter_[0] < 5


def test_max_iter_stops_the_fit_with_svcs_warning():
    X, y = _iris()
    with pytest.warns(ConvergenceWarning, match=r"Solver terminated early \(max_iter=3\)"):
        est = SVMClassifier(max_iter=3).fit(X, y)
    assert est.fit_status_ == 1
    np.testing.assert_array_equal(est.n_iter_, [3, 3, 3])
    with _no_convergence_warning():
        free = SVMClassifier().fit(X, y)
    assert free.fit_status_ == 0 and np.all(free.n_iter_ > 3)


def test_calibrated_classifier_cv_gives_the_probabilities():
    """scikit-learn 1.9 deprecates SVC(probability=True); SVMClassifier has no predict_proba: CalibratedClassifierCV
    around it gives them (the README's snippet)."""
    X, y = _iris()
    with pytest.warns(FutureWarning, match="probability.+parameter.+deprecated"):
        assert not hasattr(SVMClassifier(probability=True).fit(X, y), "predict_proba")
    model = CalibratedClassifierCV(SVMClassifier(C=1.0), ensemble=False, cv=5).fit(X, y)
    proba = model.predict_proba(X)
    assert proba.shape == (len(y), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.all((proba >= 0) & (proba <= 1))
    assert np.mean(model.predict(X) == y) > 0.95
    assert np.mean(np.argmax(proba, axis=1) == SVMClassifier(C=1.0).fit(X, y).predict(X)) > 0.95


def test_estimator_uses_no_private_sklearn_module():
    """scikit-learn's private helpers change without notice: the estimator imports public names only
    (sklearn.utils._safe_indexing is documented in scikit-learn's public API reference)."""
    tree = ast.parse(Path(estimator_module.__file__).read_text())
    imported = [(node.module, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module and node.module.startswith("sklearn") for alias in node.names]
    assert imported
    for module, name in imported:
        assert not any(part.startswith("_") for part in module.split(".")), module
        assert not name.startswith("_") or name == "_safe_indexing", name


@pytest.mark.parametrize("C", [1e7, 1e8])
def test_large_C_where_the_solver_claims_an_inaccurate_optimum_is_proved(C):
    """PIQP claims an optimum at C = 1e7 and 1e8 whose gap is 1.2e-3 (the checks refuse it and, its residuals
    failing, try no proof): the estimator proves the optimum from its active set, and keeps it without warning."""
    X, y = make_classification(random_state=42)
    with _no_convergence_warning():
        est = SVMClassifier(C=C).fit(X, y)
    hard = SVMClassifier(C=math.inf).fit(X, y)
    f = hard.decision_function(X)
    np.testing.assert_allclose(est.decision_function(X), f, rtol=0, atol=1e-9 * np.max(np.abs(f)))
    assert est.solution_.status == "optimal_inaccurate" and "proved_by" in est.solution_.extras
