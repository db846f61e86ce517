"""The fit's one Gram matrix and the pairs' blocks cut from it (experiments.estimator_gram)."""

from __future__ import annotations

import numpy as np

from experiments.estimator_gram import SharedGram
from formulations.kernels import Kernel, gram
from solvers.algorithms.kernel_rows import compiled_ok


def test_a_reused_block_is_the_pairs_block_of_the_gram_matrix():
    """Classes of unequal sizes, in any order in y: each pair's block written into the kept array (reuse=True) is
    the Gram matrix of the pair's samples (class i first), entry for entry, as a fresh block is, and goes to the
    compiled functions as it is (C-ordered, writable)."""
    rng = np.random.default_rng(3)
    sizes = [7, 3, 11, 5]
    y = rng.permutation(np.repeat(np.arange(4), sizes))
    X = rng.normal(size=(y.size, 4))
    kernel = Kernel("rbf", gamma=0.3)
    shared = SharedGram.of(kernel, X, np.arange(y.size), y, 4)
    for i in range(4):
        for j in range(i + 1, 4):
            rows, signs, fresh = shared.pair(i, j)
            rows_again, signs_again, kept = shared.pair(i, j, reuse=True)
            assert np.array_equal(rows, rows_again) and np.array_equal(signs, signs_again)
            assert np.array_equal(kept.K, fresh.K)
            assert np.array_equal(y[rows], np.where(signs > 0, j, i))
            assert np.allclose(kept.K, gram(kernel, X[rows]), rtol=0, atol=1e-12)
            assert compiled_ok(kept.K) and kept.K.shape == (rows.size, rows.size)
