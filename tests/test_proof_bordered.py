"""The proof's next free set solved through the last one's factor (solvers.reference._bordered_solve): points that
joined, left, or both, give the dense system's answer; too many moved points, or a new point that duplicates a kept
one, are factored anew; the proof's rounds then factor once where they used to factor per round, and prove the same
optimum; a wrong bordered answer is still refused."""

from __future__ import annotations

import numpy as np
import pytest

from formulations.kernels import Kernel, gram
from solvers import reference
from tests.test_proof_dense_solve import _all_free

#: The bordered answer against the dense solve's, relative to x's size: both are backward stable, and the
#: systems here are well conditioned (an rbf near I).
SAME_X = 1e-10


def _kept(K: np.ndarray, F0: np.ndarray) -> reference.KeptFactor:
    """The factor of K[F0][:, F0] made in place as the proof makes it, kept."""
    A = K[np.ix_(F0, F0)].copy()
    diag = np.diag(A).copy()
    y0 = np.ones(F0.size)
    x, factored = reference._in_place_solve(A, y0, np.ones(F0.size + 1))
    assert x is not None and factored
    kept = reference.KeptFactor()
    kept.keep(F0, A, diag)
    return kept


def _dense(K, free, y, rhs):
    """M x = rhs for the free points' system M = [[Y K Y, y], [y', 0]], by LU on M formed whole."""
    KF = K[np.ix_(free, free)]
    yF = y[free]
    M = np.block([[(yF[:, None] * KF) * yF[None, :], yF[:, None]], [yF[None, :], np.zeros((1, 1))]])
    return np.linalg.solve(M, rhs)


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1100, 10))
    y = np.where(rng.random(1100) < 0.45, 1.0, -1.0)
    return gram(Kernel("rbf", gamma=2.0), X), y


@pytest.mark.parametrize("joined, left", [(5, 0), (0, 4), (6, 3), (16, 0)])
def test_a_set_a_few_points_apart_is_solved_through_the_kept_factor(problem, joined, left):
    K, y = problem
    rng = np.random.default_rng(joined + 10 * left)
    F0 = np.arange(1000)
    kept = _kept(K, F0)
    out = rng.choice(1000, size=left, replace=False)
    free = np.union1d(np.setdiff1d(F0, out), np.arange(1000, 1000 + joined))
    rhs = rng.normal(size=free.size + 1)
    got = reference._bordered_solve(kept, reference.Gram(None, K), free, y[free], rhs)
    assert got is not None
    want = _dense(K, free, y, rhs)
    np.testing.assert_allclose(got, want, rtol=0, atol=SAME_X * float(np.max(np.abs(want))))


def test_too_many_moved_points_are_left_to_a_new_factor(problem):
    """More than max(BORDER_AT_LEAST, |F0| / BORDER_SHARE) points moved: None (the caller factors the new set)."""
    K, y = problem
    F0 = np.arange(1000)
    kept = _kept(K, F0)
    most = max(reference.BORDER_AT_LEAST, 1000 // reference.BORDER_SHARE)
    free = np.arange(most + 1, 1000 + 0)  # most + 1 points left
    assert reference._bordered_solve(kept, reference.Gram(None, K), free, y[free], np.ones(free.size + 1)) is None
    free = np.arange(1000 + most)  # most joined: still bordered
    assert reference._bordered_solve(kept, reference.Gram(None, K), free, y[free], np.ones(free.size + 1)) is not None


def test_a_new_point_that_duplicates_a_kept_one_is_left_to_a_new_factor(problem):
    """K over F0 plus a copy of one of its points is singular: S is singular or the refinement's step is large, and
    the bordered solve gives no answer rather than a wrong one."""
    K, y = problem
    F0 = np.arange(1000)
    kept = _kept(K, F0)
    K2 = np.zeros((1001, 1001))
    K2[:1000, :1000] = K[:1000, :1000]
    K2[1000, :1000] = K2[:1000, 1000] = K[7, :1000]
    K2[1000, 1000] = 1.0
    free = np.arange(1001)
    y2 = np.append(y[:1000], y[7])
    rng = np.random.default_rng(1)
    assert reference._bordered_solve(kept, reference.Gram(None, K2), free, y2, rng.normal(size=1002)) is None


def _counting(monkeypatch):
    """Counts of the proof's new factors and bordered answers."""
    counts = {"factors": 0, "bordered": 0}
    real_cholesky, real_bordered = reference._cholesky, reference._bordered_solve

    def cholesky(A, m):
        counts["factors"] += 1
        return real_cholesky(A, m)

    def bordered(*args):
        x = real_bordered(*args)
        counts["bordered"] += x is not None
        return x

    monkeypatch.setattr(reference, "_cholesky", cholesky)
    monkeypatch.setattr(reference, "_bordered_solve", bordered)
    return counts


def test_the_rounds_factor_once_and_prove_the_same_optimum(monkeypatch):
    """1,040 free points at the optimum, 3 of them given at 0: the first round's 1,037 free points miss those 3
    margins, and the second round's 1,040 are solved through the first factor. The proof is the one that factors
    each round, to POLISH_TOL."""
    K, y, C, alpha, f = _all_free(1040)
    alpha = alpha.copy()
    alpha[[3, 500, 900]] = 0.0
    found = {}
    for bordered in (True, False):
        monkeypatch.setattr(reference, "BORDER_AT_LEAST", 16 if bordered else -1)
        monkeypatch.setattr(reference, "BORDER_SHARE", 32 if bordered else 10**9)
        counts = _counting(monkeypatch)
        reference._keep(None, b"", np.zeros(1), False)  # nothing remembered from another run
        got = reference.polish(reference.Gram(None, K), y, C, alpha, f)
        assert got.ok and got.rounds == 2, got.reason
        assert counts == ({"factors": 1, "bordered": 1} if bordered else {"factors": 2, "bordered": 0})
        found[bordered] = got
    new, old = found[True], found[False]
    np.testing.assert_allclose(new.alpha, old.alpha, rtol=0, atol=reference.POLISH_TOL * float(np.max(old.alpha)))
    np.testing.assert_allclose(new.g + new.b, old.g + old.b, rtol=0,
                               atol=reference.POLISH_TOL * float(np.max(np.abs(old.g + old.b))))


def test_a_wrong_bordered_answer_is_still_refused(monkeypatch):
    """The bordered answer off by 1e-6 of its size: the second round's KKT test refuses it, and no proof is given."""
    K, y, C, alpha, f = _all_free(1040)
    alpha = alpha.copy()
    alpha[[3, 500, 900]] = 0.0
    real = reference._bordered_solve
    used = []

    def off(*args):
        x = real(*args)
        used.append(x is not None)
        return None if x is None else x * (1 + 1e-6)

    monkeypatch.setattr(reference, "_bordered_solve", off)
    reference._keep(None, b"", np.zeros(1), False)
    got = reference.polish(reference.Gram(None, K), y, C, alpha, f)
    assert used and used[0]
    assert not got.ok
