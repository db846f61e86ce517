"""The compiled Gram matrix on several threads and reads of a Gram matrix in memory (solvers.algorithms.compiled_gram,
FullGram): the same numbers to the bit as one thread and as numpy's indexing, and bad positions refused."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.datasets import hard
from formulations.kernels import EXACT_SLACK, Kernel, gram
from solvers.algorithms import compiled_gram
from solvers.algorithms.compiled_gram import rbf_gram, submatrix
from solvers.algorithms.kernel_rows import FullGram
from solvers.kernel_audit import rbf_values
from solvers.reference import Gram

#: Points: more than a few of compiled_gram.GRAM_ROWS' row blocks, and a last block cut short.
N = 3 * compiled_gram.GRAM_ROWS + 37


@pytest.fixture(scope="module")
def X():
    return hard(N, d=8, seed=3, clusters=3, flip=0.08).X + 50.0  # off the origin: the differences matter


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_the_gram_matrix_on_several_threads_is_one_thread_s_to_the_bit(X, threads):
    one = rbf_gram(0.3, X, threads=1)
    assert np.array_equal(rbf_gram(0.3, X, threads=threads), one)
    assert np.array_equal(one, one.T) and np.all(np.diag(one) == 1.0)
    # and it is the rbf's: formulations.kernels.gram's values, right to rounding (both from centered points)
    assert np.max(np.abs(one - gram(Kernel("rbf", gamma=0.3), X))) <= 1e-13


@pytest.mark.parametrize("shift, gamma", [(1e2, 1e2), (1e-1, 1e6), (1e5, 1e-3)])
def test_where_the_expansion_cancels_the_values_are_the_differences_right_to_rounding(shift, gamma):
    """Two clusters far from their mean in gamma's units (centering does not help): the expansion alone loses the
    digits of close pairs; the entries its rounding bound cannot vouch for are made from the differences, on
    every row block and thread."""
    rng = np.random.default_rng(4)
    X = np.repeat(rng.normal(size=(N // 2, 3)) * 1e-2, 2, axis=0)  # pairs of close points: values near 1
    X[1::2] += rng.normal(size=(N // 2, 3)) * 1e-4
    X[: N // 2] += shift
    X[N // 2:] -= shift
    K = rbf_gram(gamma, X, threads=2)
    t, exact = rbf_values(gamma, X, X)
    slack = (EXACT_SLACK + 2) * np.finfo(float).eps * (1.0 + (X.shape[1] + 2) * t) * exact
    assert np.all(np.abs(K - exact) <= slack + np.finfo(float).tiny)
    assert np.array_equal(K, rbf_gram(gamma, X, threads=1)) and np.array_equal(K, K.T)


def test_more_threads_than_row_blocks_and_tiny_inputs():
    X = np.random.default_rng(0).normal(size=(5, 2))
    assert np.array_equal(rbf_gram(1.0, X, threads=16), rbf_gram(1.0, X, threads=1))
    assert rbf_gram(1.0, X[:0], threads=2).shape == (0, 0)
    with pytest.raises(ValueError, match="threads"):
        rbf_gram(1.0, X, threads=0)


def test_the_submatrix_is_numpy_s_take(X):
    K = rbf_gram(0.3, X)
    rng = np.random.default_rng(1)
    I, J = rng.choice(N, 300, replace=False), np.sort(rng.choice(N, 500, replace=False))
    assert np.array_equal(submatrix(K, I, J), K[np.ix_(I, J)])
    assert np.array_equal(FullGram(K).submatrix(J, J), Gram(None, K).submatrix(J, J))
    assert submatrix(K, [], J).shape == (0, J.size)


@pytest.mark.parametrize("I, message", [([0, N], "out of range"), ([-1], "out of range"),
                                        (np.ones(N, dtype=bool), "integers")])
def test_bad_positions_are_refused(X, I, message):
    K = rbf_gram(0.3, X[:50])
    I = np.asarray(I)
    with pytest.raises(IndexError, match=message):
        submatrix(K if I.dtype == bool else np.eye(N), I, [0])


@pytest.mark.parametrize("absolute", [False, True])
def test_combinations_of_rows_on_several_threads_are_one_thread_s_to_the_bit(X, absolute):
    K = rbf_gram(0.3, X)
    rng = np.random.default_rng(2)
    I = rng.choice(N, 403, replace=False)  # not a multiple of the four rows a pass takes
    coef = rng.normal(size=I.size)
    combine = compiled_gram.abs_combination if absolute else compiled_gram.combination
    one = combine(K, I, coef, threads=1)
    for threads in (2, 3):
        assert np.array_equal(combine(K, I, coef, threads=threads), one)
    want = np.abs(coef) @ np.abs(K[I]) if absolute else coef @ K[I]
    size = np.abs(coef) @ np.abs(K[I])  # the terms' sizes: what the sums' rounding is relative to
    assert np.max(np.abs(one - want) / size) <= 1e-14
    with pytest.raises(ValueError, match="coefficients"):
        combine(K, I, coef[:-1])


def test_the_gram_matrix_s_products_read_rows_in_place(X):
    """FullGram's K u (dense and sparse u), c' K[I] and sum_j |K_ij u_j| are the base Gram's, to rounding."""
    K = rbf_gram(0.3, X)
    rng = np.random.default_rng(3)
    full, base = FullGram(K), Gram(None, K)
    for u in (rng.normal(size=N), np.where(rng.random(N) < 0.05, rng.normal(size=N), 0.0)):
        size = base.magnitudes(u)
        assert np.max(np.abs(full.times(u) - base.times(u)) / size) <= 1e-14
        assert np.max(np.abs(full.magnitudes(u) - size) / size) <= 1e-14
    I = np.flatnonzero(rng.random(N) < 0.3)
    c = rng.normal(size=I.size)
    assert np.max(np.abs(full.combination(I, c) - c @ K[I]) / (np.abs(c) @ K[I])) <= 1e-14


def test_the_gram_matrix_remembers_its_last_products_by_their_vector(X, monkeypatch):
    """K u asked again for the same u (the closing checks' proof of the finish's sets) is not computed again: the
    same bits, a copy the caller may change; a vector that differs in one bit, or one asked after PRODUCTS_KEPT
    others, is computed; so are its magnitudes, remembered apart."""
    full = FullGram(rbf_gram(0.3, X))
    computed = []
    real = FullGram._times
    monkeypatch.setattr(FullGram, "_times", lambda self, u: (computed.append(1), real(self, u))[1])
    rng = np.random.default_rng(5)
    bound, free = rng.normal(size=N), np.where(rng.random(N) < 0.3, rng.normal(size=N), 0.0)
    first = [full.times(bound), full.times(free)]
    again = [full.times(bound), full.times(free)]
    assert len(computed) == 2 and all(np.array_equal(a, b) for a, b in zip(first, again))
    again[0][:] = 0.0  # the caller's copy
    assert np.array_equal(full.times(bound), first[0]) and len(computed) == 2
    nudged = bound.copy()
    nudged[7] = np.nextafter(nudged[7], np.inf)
    full.times(nudged)
    assert len(computed) == 3
    full.times(free), full.times(rng.normal(size=N)), full.times(rng.normal(size=N))  # bound: now 4th newest
    full.times(bound)
    assert len(computed) == 6
    # sum_j |K_ij u_j| likewise, told apart from K u of the same vector
    sizes = full.magnitudes(free)
    assert np.array_equal(full.magnitudes(free), sizes) and not np.array_equal(sizes, first[1])
    assert np.array_equal(full.times(free), first[1])


def test_the_threads_follow_the_environment(monkeypatch):
    monkeypatch.setenv(compiled_gram.THREADS_ENV, "1")
    assert compiled_gram.gram_threads() == 1
    monkeypatch.setenv(compiled_gram.THREADS_ENV, "3")
    assert compiled_gram.gram_threads() == 3
    for bad in ("0", "two", "-1", "1.5"):
        monkeypatch.setenv(compiled_gram.THREADS_ENV, bad)
        with pytest.raises(ValueError, match="SVM_THREADS"):
            compiled_gram.gram_threads()
    monkeypatch.delenv(compiled_gram.THREADS_ENV)
    assert compiled_gram.gram_threads() >= 1


def test_memory_mapped_ahead_goes_to_the_next_request_it_holds(monkeypatch):
    """map_ahead's memory is taken by the next fresh_doubles(populate=True) of at most its size (a view of it), not by
    a larger request or one that asks for no mapping, and drop_ahead lets an unused one go."""
    monkeypatch.setattr(compiled_gram, "HEAP_BYTES", 8 * 1000)  # these small sizes through fresh memory
    compiled_gram.map_ahead(5000)
    assert compiled_gram.fresh_doubles(6000, populate=True).base.shape != (5000,)  # too large: fresh memory
    assert compiled_gram.fresh_doubles(4000).base.shape != (5000,) and compiled_gram._AHEAD  # no mapping asked
    taken = compiled_gram.fresh_doubles(4000, populate=True)
    assert taken.shape == (4000,) and taken.base.shape == (5000,) and not compiled_gram._AHEAD
    taken[:] = 1.0  # writable
    compiled_gram.map_ahead(5000)
    compiled_gram.drop_ahead()
    assert not compiled_gram._AHEAD and compiled_gram.fresh_doubles(4000, populate=True).base.shape != (5000,)
    compiled_gram.map_ahead(10)  # within the heap: nothing mapped ahead
    assert not compiled_gram._AHEAD


class _Holder:
    """An object that holds a matrix (weak references need a class of its own, not an ndarray's base)."""

    def __init__(self, count: int):
        self.matrix = compiled_gram.fresh_doubles(count)
        self.matrix[:] = 1.0


def test_let_go_frees_fresh_memory_on_a_thread_and_heap_memory_here(monkeypatch):
    """A matrix in fresh memory is freed by the thread let_go starts (the holder gone once it is joined, and the
    caller's list empty); one from the heap at once, with no thread."""
    import threading
    import weakref

    monkeypatch.setattr(compiled_gram, "HEAP_BYTES", 8 * 1000)
    started = []
    real_thread = threading.Thread

    def recorded(*args, **kwargs):
        thread = real_thread(*args, **kwargs)
        started.append(thread)
        return thread

    monkeypatch.setattr(compiled_gram.threading, "Thread", recorded)
    fresh = _Holder(5000)
    gone = weakref.ref(fresh)
    held, fresh = [fresh], None
    compiled_gram.let_go(held, 5000)
    assert len(started) == 1
    started[0].join()
    assert gone() is None and held == []
    small = _Holder(500)
    gone = weakref.ref(small)
    held, small = [small], None
    compiled_gram.let_go(held, 500)
    assert gone() is None and held == [] and len(started) == 1


def test_in_threads_works_on_the_calling_thread_and_one_helper_fewer():
    """Every item once, the results in the items' order; the calling thread takes items too, so two threads
    need one helper, and one thread none."""
    import threading

    seen = []

    def work(item):
        seen.append(threading.get_ident())
        return item * item

    assert compiled_gram.in_threads(work, range(40), 2) == [k * k for k in range(40)]
    assert len(seen) == 40 and len(set(seen)) <= 2
    seen.clear()
    assert compiled_gram.in_threads(work, range(5), 1) == [0, 1, 4, 9, 16]
    assert set(seen) == {threading.get_ident()}


def test_in_threads_raises_an_error_once_every_thread_is_done():
    """An item's error (on either thread) is raised by in_threads, after the other thread's items are done."""
    import time

    done = []

    def work(item):
        if item == 0:
            raise ValueError("item 0")
        time.sleep(0.001)
        done.append(item)
        return item

    with pytest.raises(ValueError, match="item 0"):
        compiled_gram.in_threads(work, range(6), 2)
    assert sorted(done) == [1, 2, 3, 4, 5]
