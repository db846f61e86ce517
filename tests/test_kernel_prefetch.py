"""K u started on another thread (kernel_rows.KernelRows.prefetch) and taken up by the next times(); the kernel
working set's SMO engine prefetches the proof's product over the points at C after its first run
(solvers.algorithms.smo_dual). No timings: which thread computed the rows is asserted."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from formulations.kernels import Kernel
from solvers.algorithms import working_set as ws
from solvers.algorithms.kernel_rows import ROWS_FROM_N, AdaptiveRows, KernelRows, full_gram, row_source
from solvers.solution import OPTIMAL

N, D = 400, 5
KERNEL = Kernel("rbf", gamma=1.0 / D)
AHEAD = "kernel product ahead"


@pytest.fixture
def computed_on(monkeypatch):
    """The rows each thread computed (KernelRows._compute spied on), by thread name; two threads allowed."""
    monkeypatch.setenv("SVM_THREADS", "2")
    seen: dict[str, int] = {}
    real = KernelRows._compute

    def spy(self, I):
        name = threading.current_thread().name.split("_")[0]
        seen[name] = seen.get(name, 0) + len(I)
        return real(self, I)

    monkeypatch.setattr(KernelRows, "_compute", spy)
    return seen


def test_a_prefetched_product_is_computed_ahead_and_taken_up_by_times(computed_on):
    """The rows are computed on the prefetch's thread, none again by times(); K u as the Gram matrix gives it
    (1e-13 of sum |K_ij u_j|), and a product with 3 entries changed computes those 3 rows alone."""
    X = np.random.default_rng(0).normal(size=(N, D))
    u = np.zeros(N)
    u[::4] = np.linspace(-1.0, 2.0, N // 4) + 0.001  # no zero among them
    src = KernelRows(KERNEL, X)
    src.prefetch(u)
    Ku = src.times(u)
    assert computed_on == {AHEAD: N // 4} and src.rows_computed == N // 4
    K = full_gram(KERNEL, X).K
    np.testing.assert_allclose(Ku, K @ u, rtol=0, atol=1e-13 * float(np.max(np.abs(K) @ np.abs(u))))
    v = u.copy()
    v[[1, 2, 3]] = 0.5
    src.times(v)
    assert src.rows_computed == N // 4 + 3


def test_one_thread_allowed_prefetches_nothing(computed_on, monkeypatch):
    monkeypatch.setenv("SVM_THREADS", "1")
    src = KernelRows(KERNEL, np.random.default_rng(0).normal(size=(N, D)))
    src.prefetch(np.ones(N))
    assert computed_on == {} and not src._prefetched


def test_the_working_sets_proof_takes_the_product_over_the_points_at_c_from_the_prefetch(computed_on):
    """ROWS_FROM_N points of 90/10 classes, 8% flipped labels (many points at C, whose rows SMO's shrinking let go) on
    AdaptiveRows: rows of the points at C after SMO's first run computed on the prefetch's thread, the point
    verified, the matrix never formed."""
    X, y = make_classification(ROWS_FROM_N, 10, n_informative=5, n_clusters_per_class=3, flip_y=0.08,
                               weights=[0.9], class_sep=0.85, random_state=7)
    X = StandardScaler().fit_transform(X)
    source = row_source(Kernel("rbf", gamma=0.1), X, budget=1e12)
    assert isinstance(source, AdaptiveRows)
    sol = ws.solve(source, np.where(y == 1, 1.0, -1.0), 1.0, backend="piqp", validate=False)
    assert sol.status == OPTIMAL and source.gram is None
    assert computed_on.get(AHEAD, 0) > 0
