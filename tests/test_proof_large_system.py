"""The proof's large free-point system formed and equilibrated on several threads: the kernel block
(compiled_gram.submatrix), the system (reference._free_system) and the copy Ruiz scales (reference._ruiz) the same
bits on any thread count as the whole-array steps; Ruiz stops once a round would divide by 1 everywhere (an rbf's
system is already scaled) with the same bits as all its rounds."""

from __future__ import annotations

import numpy as np
import pytest

from formulations.kernels import Kernel, gram
from solvers import reference
from solvers.algorithms import compiled_gram
from tests.test_closing_compiled import _ruiz_by_arrays
from tests.test_closing_fused import _free_system_by_arrays


def _rbf_system(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return gram(Kernel("rbf", gamma=0.7), X), y, rng.normal(size=n)


@pytest.mark.parametrize("threads", ["1", "3"])
def test_the_large_system_is_the_array_steps_on_any_thread_count(monkeypatch, threads):
    monkeypatch.setenv("SVM_THREADS", threads)
    K, y, g = _rbf_system(1100)
    rng = np.random.default_rng(1)
    free = np.sort(rng.choice(1100, size=1050, replace=False))
    K_FF = compiled_gram.submatrix(K, free, free)
    assert K_FF.size >= compiled_gram.THREADED_ENTRIES / 4 and np.array_equal(K_FF, K[np.ix_(free, free)])
    assert np.array_equal(compiled_gram.submatrix(K, free, free, threads=3), K[np.ix_(free, free)])
    got = reference._free_system(K_FF, y[free], g[free], -0.25)
    assert got[0].size >= reference.THREADED_ENTRIES
    for a, b in zip(got, _free_system_by_arrays(K_FF, y[free], g[free], -0.25)):
        assert np.array_equal(a, b)


def test_ruiz_stops_where_the_system_is_already_scaled(monkeypatch):
    """An rbf system (unit diagonal, labels +-1) has every row and column maximum 1: after the first pass of maxima
    no round is run, and A, r, c are the five rounds' to the bit. A system with one row scaled runs its rounds."""
    monkeypatch.setenv("SVM_THREADS", "2")
    K, y, g = _rbf_system(1000)
    M = reference._free_system(K, y, g, 0.0)[0]
    passes = []
    real = reference.in_threads

    def counted(work, items, threads):
        passes.append(1)
        return real(work, items, threads)

    monkeypatch.setattr(reference, "in_threads", counted)
    for got, want in zip(reference._ruiz(M, 5), _ruiz_by_arrays(M, 5)):
        assert np.array_equal(got, want)
    assert len(passes) == 1  # the maxima only
    passes.clear()
    M[3] *= 1e3
    for got, want in zip(reference._ruiz(M, 5), _ruiz_by_arrays(M, 5)):
        assert np.array_equal(got, want)
    assert len(passes) > 1
