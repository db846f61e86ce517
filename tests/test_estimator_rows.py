"""From kernel_rows.ROWS_FROM_N samples the estimator's pairs are solved on the row source solvers.api.solve takes
(rows on demand that become the Gram matrix only where SMO needs many: kernel_rows.AdaptiveRows); below it, on
the fit's one Gram matrix (experiments.estimator_gram). One rule for both: kernel_rows.gram_first."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_classification
from sklearn.preprocessing import StandardScaler

from experiments.estimator import SVMClassifier
from solvers.algorithms import kernel_rows
from solvers.algorithms.kernel_rows import ROWS_FROM_N
from solvers.profiles import get_profile
from solvers.solution import OPTIMAL


def _unbalanced(n: int):
    """90/10 classes, three clusters each, 8% flipped labels, standardized: SMO visits few of the rows."""
    X, y = make_classification(n, 10, n_informative=5, n_clusters_per_class=3, flip_y=0.08, weights=[0.9],
                               class_sep=0.85, random_state=7)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def unbalanced():
    return _unbalanced(ROWS_FROM_N)


def test_a_binary_fit_of_rows_from_n_samples_takes_rows_on_demand(unbalanced):
    """n = ROWS_FROM_N: the pair's source is AdaptiveRows that never formed the matrix, fewer rows computed than
    n, the point verified."""
    X, y = unbalanced
    sol = SVMClassifier().fit(X, y).solution_
    assert sol.status == OPTIMAL and sol.checks["verdict"] == "verified"
    assert sol.extras["row_source"] == "AdaptiveRows" and sol.extras["gram_formed"] is False
    assert 0 < sol.extras["kernel_rows_computed"] < len(y)


def test_rows_on_demand_give_the_whole_matrix_paths_decision_function(unbalanced, monkeypatch):
    """The same fit on the fit's one Gram matrix (ROWS_FROM_N raised above n: kernel_rows.gram_first then holds)
    gives the same predictions, and decision values within the checks' tolerance of their largest."""
    X, y = unbalanced
    rows = SVMClassifier().fit(X, y)
    assert rows.solution_.extras["row_source"] == "AdaptiveRows"
    monkeypatch.setattr(kernel_rows, "ROWS_FROM_N", len(y) + 1)
    whole = SVMClassifier().fit(X, y)
    assert (whole.solution_.layer, whole.solution_.backend) == ("direct", "smo")  # smo_gram on the whole matrix
    assert "row_source" not in whole.solution_.extras
    f, g = rows.decision_function(X), whole.decision_function(X)
    np.testing.assert_allclose(f, g, rtol=0, atol=get_profile("default").check_tol * np.max(np.abs(g)))
    np.testing.assert_array_equal(rows.predict(X), whole.predict(X))


def test_a_multiclass_fits_large_pairs_take_rows_on_demand_and_its_small_ones_the_fits_matrix(monkeypatch):
    """Classes of 250, 250 and 40 with ROWS_FROM_N lowered to 300: the pair (0, 1) (500 samples) on AdaptiveRows, as
    solvers.api.solve would take it, the pairs with class 2 (290) by SMO on blocks of the fit's one matrix; each
    verified, and the same predictions as with every pair on the matrix."""
    X, y = make_blobs([250, 250, 40], n_features=4, cluster_std=3.0, random_state=0)
    X = StandardScaler().fit_transform(X)
    monkeypatch.setattr(kernel_rows, "ROWS_FROM_N", 300)
    mixed = SVMClassifier().fit(X, y)
    assert [(s.status, s.backend, s.extras.get("row_source")) for s in mixed.solutions_] == [
        (OPTIMAL, "piqp", "AdaptiveRows"), (OPTIMAL, "smo", None), (OPTIMAL, "smo", None)]
    monkeypatch.setattr(kernel_rows, "ROWS_FROM_N", len(y) + 1)
    whole = SVMClassifier().fit(X, y)
    assert [(s.backend, s.extras.get("row_source")) for s in whole.solutions_] == [("smo", None)] * 3
    np.testing.assert_array_equal(mixed.predict(X), whole.predict(X))
