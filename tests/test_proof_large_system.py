"""The proof's large free-point system formed and equilibrated on several threads: the kernel block
(compiled_gram.submatrix), the system (reference._free_system) and the copy Ruiz scales (reference._ruiz) the same
bits on any thread count as the whole-array steps; Ruiz stops once a round would divide by 1 everywhere (an rbf's
system is already scaled) with the same bits as all its rounds; the Cholesky factor by panels on our own threads
(lapack_inplace.blocked_cholesky): LAPACK's to rounding, the same bits on any thread count, the proof's point
LU's, and a wrong factor's point refused."""

from __future__ import annotations

import numpy as np
import pytest

from formulations.kernels import Kernel, gram
from solvers import blas, lapack_inplace, reference
from solvers.algorithms import compiled_gram
from tests.test_closing_compiled import _ruiz_by_arrays
from tests.test_closing_fused import _free_system_by_arrays
from tests.test_proof_dense_solve import _kernel_problem


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


def _spd_saddle(n: int, seed: int = 0):
    K, y, _ = _rbf_system(n, seed)
    A = np.zeros((n + 1, n + 1))
    A[:n, :n], A[:n, n], A[n, :n] = K + 1e-3 * np.eye(n), y, y
    return A


def test_the_blocked_cholesky_is_lapack_s_factor_on_any_thread_count(monkeypatch):
    """Panels of 32 over 200 unknowns: L' in the leading block's upper triangle to rounding of LAPACK's (relative to
    the factor's largest entry), the lower triangle and the last row and column untouched, the same bits on 1 and 3
    threads; a leading minor that is not positive definite reported where LAPACK reports it."""
    monkeypatch.setattr(lapack_inplace, "PANEL", 32)
    A0 = _spd_saddle(200)
    want = A0.copy()
    with blas.one_thread():
        assert lapack_inplace.cholesky(want, 200) == 0
    got = {}
    for threads in (1, 3):
        got[threads] = A0.copy()
        assert lapack_inplace.blocked_cholesky(got[threads], 200, threads) == 0
    assert np.array_equal(got[1], got[3])
    U, U_want = np.triu(got[1][:200, :200]), np.triu(want[:200, :200])
    np.testing.assert_allclose(U, U_want, rtol=0, atol=1e-13 * np.abs(U_want).max())
    assert np.array_equal(np.tril(got[1][:200, :200], -1), np.tril(A0[:200, :200], -1))
    assert np.array_equal(got[1][200], A0[200]) and np.array_equal(got[1][:, 200], A0[:, 200])
    bad = A0.copy()
    bad[70, 70] = bad[70, 69] = bad[69, 70] = bad[69, 69]  # rows 69 and 70 equal in the leading 71 x 71 minor
    lapack_bad = bad.copy()
    assert lapack_inplace.blocked_cholesky(bad, 200, 2) == lapack_inplace.cholesky(lapack_bad, 200) > 0


@pytest.mark.parametrize("duplicates", [0, 30])
def test_the_blocked_route_proves_lu_s_point(monkeypatch, duplicates):
    """The proof through the blocked factor (forced at this size: panels of 32, from 0 unknowns) proves the LU route's
    optimum to POLISH_TOL, with distinct points and with duplicated ones (the factor refused, LU decides)."""
    K, y, C, alpha, f = _kernel_problem(300, duplicates)
    monkeypatch.setattr(reference, "SADDLE_FROM", 0)
    monkeypatch.setattr(reference, "BLOCKED_CHOLESKY_FROM", 0)
    monkeypatch.setattr(lapack_inplace, "PANEL", 32)
    calls = []
    real = lapack_inplace.blocked_cholesky
    monkeypatch.setattr(lapack_inplace, "blocked_cholesky", lambda *a: calls.append(1) or real(*a))
    got = reference.polish(reference.Gram(None, K), y, C, alpha, f)
    assert got.ok, got.reason
    assert calls
    monkeypatch.setattr(reference, "_saddle_factor", lambda A: None)
    want = reference.polish(reference.Gram(None, K), y, C, alpha, f)
    assert want.ok, want.reason
    f_got, f_want = got.g + got.b, want.g + want.b
    np.testing.assert_allclose(f_got, f_want, rtol=0, atol=reference.POLISH_TOL * float(np.max(np.abs(f_want))))
    if not duplicates:
        np.testing.assert_allclose(got.alpha, want.alpha, rtol=0, atol=reference.POLISH_TOL * float(np.max(want.alpha)))


def test_a_wrong_factor_is_still_refused(monkeypatch):
    """The blocked factor of twice the block (a solve off by a factor of 2, halved again by the refinement): the
    KKT checks refuse the point it gives; they are what accepts, whatever factor solved."""
    K, y, C, alpha, f = _kernel_problem(300, 0)
    monkeypatch.setattr(reference, "SADDLE_FROM", 0)
    monkeypatch.setattr(reference, "BLOCKED_CHOLESKY_FROM", 0)
    real = lapack_inplace.blocked_cholesky

    def doubled(A, m, threads):
        A[:m, :m] *= 2.0
        return real(A, m, threads)

    monkeypatch.setattr(lapack_inplace, "blocked_cholesky", doubled)
    monkeypatch.setattr(reference, "_lu_factor", lambda A: None)  # no other route to a right answer
    got = reference.polish(reference.Gram(None, K), y, C, alpha, f)
    assert not got.ok


def test_the_proved_point_does_not_depend_on_the_thread_count(monkeypatch):
    """1,100 free points (every point): the system formed, equilibrated, factored by panels and its residual summed
    on 1 and on 3 threads; the proof accepts the same point to the bit."""
    from tests.test_proof_dense_solve import _all_free

    K, y, C, alpha, f = _all_free(1100)
    assert 1100 >= reference.BLOCKED_CHOLESKY_FROM
    got = {}
    for threads in ("1", "3"):
        monkeypatch.setenv("SVM_THREADS", threads)
        reference._keep(None, b"", np.zeros(1), False)  # nothing remembered from the other run
        got[threads] = reference.polish(reference.Gram(None, K), y, C, alpha, f)
        assert got[threads].ok, got[threads].reason
    assert np.array_equal(got["1"].alpha, got["3"].alpha) and got["1"].b == got["3"].b
