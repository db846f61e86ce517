"""The compiled SMO's row cache across an unshrink (every point back in play, solvers.algorithms.smo): the rows it
keeps are the rows computed afresh, bit for bit; it computes fewer rows than when the cache was emptied there; and
its steps are those of the same solve on the whole K (whose rows it never keeps), to the last bit."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from formulations.kernels import Kernel
from solvers.algorithms.smo import RowCache, smo

N = 400
C = 1.0
TOL = 1e-6
#: Rows this case computed from the data when an unshrink emptied the cache (measured before the rows were kept).
ROWS_WHEN_EMPTIED = 196


@pytest.fixture(scope="module")
def unbalanced():
    """88/12 classes in overlapping clusters: shrinking leaves most points out, then brings them back."""
    X, y = make_classification(N, 6, n_informative=4, n_clusters_per_class=3, flip_y=0.08, weights=[0.88],
                               class_sep=0.85, random_state=3)
    return StandardScaler().fit_transform(X), np.where(y == 1, 1.0, -1.0)


def _solved(X, y, cache_rows=None):
    rows = RowCache.from_data(Kernel("rbf", gamma=1.0 / X.shape[1]), X,
                              **({} if cache_rows is None else {"cache_bytes": 8.0 * cache_rows * len(y)}))
    res = smo(rows, y, C, tol=TOL)
    assert res.converged and res.iterations > N  # shrinking (every min(n, 1000) steps) ran, and an unshrink ended it
    return rows, res


@pytest.mark.parametrize("cache_rows", [None, 10])  # 10: fewer rows fit at the whole width than were kept
def test_rows_kept_across_an_unshrink_are_the_fresh_rows(unbalanced, cache_rows):
    rows, res = _solved(*unbalanced, cache_rows)
    held = int(rows.meta[1])
    assert rows.whole_rows and held > 1  # emptied at the last unshrink, the cache held the one row read since
    for s in range(held):
        assert np.array_equal(rows.buffer[s * N:(s + 1) * N], rows.row(int(rows.slots[1][s])))
        assert rows.slots[0][rows.slots[1][s]] == s


def test_keeping_rows_computes_fewer(unbalanced):
    _, res = _solved(*unbalanced)
    assert res.rows_computed <= 0.8 * ROWS_WHEN_EMPTIED


@pytest.mark.parametrize("cache_rows", [None, 10])
def test_the_steps_are_those_on_the_whole_matrix(unbalanced, cache_rows):
    X, y = unbalanced
    rows, res = _solved(X, y, cache_rows)
    K = np.array([rows.row(i) for i in range(N)])  # the same bits as the rows the steps computed
    whole = smo(RowCache.full(K), y, C, tol=TOL)
    assert whole.iterations == res.iterations
    assert np.array_equal(whole.alpha, res.alpha) and np.array_equal(whole.grad, res.grad)


def test_rows_kept_through_an_index_are_the_matrix_s(unbalanced):
    """Variables that share points (an index into K, as epsilon-SVR's): K given, its rows copied out and kept."""
    X, y = unbalanced
    rows = RowCache.from_data(Kernel("rbf", gamma=1.0 / X.shape[1]), X)
    K = np.array([rows.row(i) for i in range(N)])
    order = np.random.default_rng(0).permutation(N)  # each variable on another point: the index is read
    indexed = RowCache.full(K, index=order)
    res = smo(indexed, y[order], C, tol=TOL)
    plain = smo(RowCache.full(K[np.ix_(order, order)]), y[order], C, tol=TOL)
    assert res.converged and indexed.whole_rows and int(indexed.meta[1]) > 1
    assert np.array_equal(res.alpha, plain.alpha) and np.array_equal(res.grad, plain.grad)
    for s in range(int(indexed.meta[1])):
        v = int(indexed.slots[1][s])
        assert np.array_equal(indexed.buffer[s * N:(s + 1) * N], K[order[v], order])
