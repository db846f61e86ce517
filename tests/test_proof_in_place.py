"""The proof's large rbf system solved in K_FF's own memory (solvers.reference._in_place_solve: no system M, no Ruiz
copy): the point it proves is the equilibrated route's to POLISH_TOL with distinct and with duplicated points (the
factor refused, K_FF put back, LU's least squares), on 1 and 3 threads; its Dot2 residual read from K's kept lower
triangle is residual(M, x, rhs) to the bit; a system that needs scaling still goes through Ruiz; a wrong factor's
point is refused."""

from __future__ import annotations

import numpy as np
import pytest

from solvers import lapack_inplace, reference
from tests.test_proof_dense_solve import _all_free


def _proved(monkeypatch, K, y, C, alpha, f, in_place: bool):
    """The proof's answer, through the in-place route or (in_place=False) the equilibrated one, and how many
    systems the in-place route solved."""
    monkeypatch.setattr(reference, "IN_PLACE_ENTRIES", reference.IN_PLACE_ENTRIES if in_place else np.inf)
    reference._keep(None, b"", np.zeros(1), False)  # nothing remembered from another run
    solved = []
    real = reference._in_place_solve

    def counted(*args):
        x, factored = real(*args)
        solved.append(x is not None)
        return x, factored

    monkeypatch.setattr(reference, "_in_place_solve", counted)
    got = reference.polish(reference.Gram(None, K), y, C, alpha, f)
    assert got.ok, got.reason
    return got, solved


@pytest.mark.parametrize("threads", ["1", "3"])
@pytest.mark.parametrize("duplicates", [0, 40])
def test_the_in_place_route_proves_the_equilibrated_route_s_point(monkeypatch, threads, duplicates):
    """1,040 free points (the system has 1,041^2 > IN_PLACE_ENTRIES entries): distinct ones are solved in place,
    duplicated ones are refused by the factor's pivot floor and K_FF goes back to the equilibrated route (LU, least
    squares); either way the decision values are that route's to POLISH_TOL of their size, and alpha where it is
    unique (distinct points)."""
    monkeypatch.setenv("SVM_THREADS", threads)
    K, y, C, alpha, f = _all_free(1040, duplicates=duplicates)
    assert 1041**2 >= reference.IN_PLACE_ENTRIES
    got, solved = _proved(monkeypatch, K, y, C, alpha, f, in_place=True)
    assert solved and all(solved) == (duplicates == 0)
    want, not_tried = _proved(monkeypatch, K, y, C, alpha, f, in_place=False)
    assert not not_tried
    f_got, f_want = got.g + got.b, want.g + want.b
    np.testing.assert_allclose(f_got, f_want, rtol=0, atol=reference.POLISH_TOL * float(np.max(np.abs(f_want))))
    if not duplicates:
        np.testing.assert_allclose(got.alpha, want.alpha, rtol=0, atol=reference.POLISH_TOL * float(np.max(want.alpha)))
        assert np.array_equal(got.alpha, want.alpha)  # K symmetric: a sign changes no rounding (to the bit)


def test_the_in_place_point_does_not_depend_on_the_thread_count(monkeypatch):
    K, y, C, alpha, f = _all_free(1040)
    got = {}
    for threads in ("1", "3"):
        monkeypatch.setenv("SVM_THREADS", threads)
        got[threads], solved = _proved(monkeypatch, K, y, C, alpha, f, in_place=True)
        assert solved == [True]
    assert np.array_equal(got["1"].alpha, got["3"].alpha) and got["1"].b == got["3"].b


@pytest.mark.parametrize("threads", ["1", "3"])
def test_the_residual_from_the_kept_triangle_is_m_s_to_the_bit(monkeypatch, threads):
    """After the factor has overwritten K's upper triangle, the residual summed from the lower one and the saved
    diagonal is residual(M, x, rhs) with M formed whole, to the bit; mirroring puts K back exactly."""
    monkeypatch.setenv("SVM_THREADS", threads)
    rng = np.random.default_rng(3)
    K, y, _, _, _ = _all_free(1030)
    x, rhs = rng.normal(size=1031), rng.normal(size=1031)
    M, _ = reference._free_system(K, y, np.zeros(1030), 0.0)
    want = reference.residual(M, x, rhs)
    A, diag = K.copy(), np.diag(K).copy()
    assert reference._cholesky(A, 1030) == 0
    assert not np.array_equal(np.triu(A), np.triu(K))
    assert np.array_equal(reference._saddle_residual(A, diag, y, x, rhs), want)
    reference._unfactor(A, diag)
    assert np.array_equal(A, K)


def test_a_system_that_needs_scaling_is_still_equilibrated(monkeypatch):
    """K times 1e3 (entries above 1: Ruiz divides them): the in-place route declines before factoring, Ruiz runs
    its rounds on M, and the proof's point is the optimum of the scaled problem (alpha / 1e3, the same f)."""
    K, y, C, alpha, f = _all_free(1040)
    rounds = []
    real_ruiz = reference._to_scales

    def counted(*args):
        moved = real_ruiz(*args)
        rounds.append(moved)
        return moved

    monkeypatch.setattr(reference, "_to_scales", counted)
    declined = []
    real = reference._in_place_solve
    monkeypatch.setattr(reference, "_in_place_solve", lambda *a: (lambda r: declined.append(r) or r)(real(*a)))
    reference._keep(None, b"", np.zeros(1), False)
    base = reference.polish(reference.Gram(None, K), y, C, alpha, f)
    reference._keep(None, b"", np.zeros(1), False)
    rounds.clear()
    scaled = reference.polish(reference.Gram(None, 1e3 * K), y, C / 1e3, alpha / 1e3, f)
    assert base.ok and scaled.ok, scaled.reason
    assert declined[-1] == (None, False)  # not factored: K's entries are not <= 1
    assert any(rounds)  # Ruiz divided
    np.testing.assert_allclose(scaled.alpha * 1e3, base.alpha, rtol=0, atol=1e-7 * float(np.max(base.alpha)))
    np.testing.assert_allclose(scaled.g + scaled.b, base.g + base.b, rtol=0,
                               atol=reference.POLISH_TOL * float(np.max(np.abs(base.g + base.b))))


def test_a_wrong_factor_in_place_is_still_refused(monkeypatch):
    """The in-place factor of twice K's upper triangle (the residual still reads the right K: each solve is off by
    a factor of 2, the refinement leaves a quarter): the KKT checks refuse the point; no other route is left."""
    K, y, C, alpha, f = _all_free(1040)
    real = reference._cholesky

    def doubled(A, m):
        A[np.triu_indices(m)] *= 2.0
        return real(A, m)

    monkeypatch.setattr(reference, "_cholesky", doubled)
    monkeypatch.setattr(reference, "_lu_factor", lambda A: None)
    reference._keep(None, b"", np.zeros(1), False)
    solved = []
    real_solve = reference._in_place_solve
    monkeypatch.setattr(reference, "_in_place_solve", lambda *a: (lambda r: solved.append(r[0] is not None) or r)(
        real_solve(*a)))
    got = reference.polish(reference.Gram(None, K), y, C, alpha, f)
    assert solved and solved[0]  # the wrong factor was used
    assert not got.ok


def test_the_two_right_hand_sides_are_two_solves():
    """cholesky_solve_many's rows are cholesky_solve's answers (to rounding of their size)."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(50, 50))
    A = A @ A.T + 50 * np.eye(50)
    F = A.copy()
    assert lapack_inplace.cholesky(F, 50) == 0
    B = rng.normal(size=(2, 50))
    got = lapack_inplace.cholesky_solve_many(F, 50, B)
    for b, x in zip(B, got):
        np.testing.assert_allclose(A @ x, b, rtol=0, atol=1e-12 * np.abs(b).max())
        np.testing.assert_allclose(x, lapack_inplace.cholesky_solve(F, 50, b), rtol=0, atol=1e-14 * np.abs(x).max())
    with pytest.raises(ValueError, match="rows of 50 values"):
        lapack_inplace.cholesky_solve_many(F, 50, np.ones(50))


@pytest.mark.parametrize("m", [1, 255, 256, 257, 700])
def test_a_few_right_hand_sides_by_panels_are_lapack_s_solves(m):
    """Up to ONE_AT_A_TIME_UP_TO rows solved one at a time by panels of dtrsv and dgemv, in the leading block of a
    wider array, give LAPACK's dpotrs answers (more rows) to rounding of their size; each solves its system."""
    rng = np.random.default_rng(m)
    G = rng.normal(size=(m, m))
    A = G @ G.T + m * np.eye(m)
    F = np.zeros((m, m + 5))
    F[:, :m] = A
    assert lapack_inplace.cholesky(F, m) == 0
    k = lapack_inplace.ONE_AT_A_TIME_UP_TO
    B = rng.normal(size=(k + 1, m))
    by_lapack = lapack_inplace.cholesky_solve_many(F, m, B)
    by_panels = lapack_inplace.cholesky_solve_many(F, m, B[:k])
    for b, x, want in zip(B, by_panels, by_lapack):
        np.testing.assert_allclose(A @ x, b, rtol=0, atol=1e-12 * np.abs(b).max())
        np.testing.assert_allclose(x, want, rtol=0, atol=1e-13 * np.abs(want).max())
