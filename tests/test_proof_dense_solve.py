"""The proof's dense solve of the free points' system (solvers.reference._solve_equilibrated): Cholesky of the kernel
block and the Schur complement for b where that block is clearly definite, LU where not (duplicated points); the
refinement's residual by Dot2, against exact rational sums; the compiled equilibration split between threads to
the bit; and the dense limit sized by memory (more than 4,000 free points proved)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from sklearn.svm import SVC

from formulations.kernels import Kernel, gram
from solvers import reference
from tests.test_closing_compiled import _ruiz_by_arrays

EPS = np.finfo(float).eps


def _kernel_problem(n: int, duplicates: int, seed: int = 0):
    """Noisy labels in 3 features, rbf kernel, the solver's point (SVC, precomputed K, tolerance 1e-7); the last
    `duplicates` points copy the first ones, labels and all."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=n) > 0, 1.0, -1.0)
    if duplicates:
        X[n - duplicates:], y[n - duplicates:] = X[:duplicates], y[:duplicates]
    K = gram(Kernel("rbf", gamma=0.5), X)
    C = 10.0
    svc = SVC(C=C, kernel="precomputed", tol=1e-7).fit(K, y)
    alpha = np.zeros(n)
    alpha[svc.support_] = np.abs(svc.dual_coef_[0])
    return K, y, C, alpha, svc.decision_function(K) * (1.0 if svc.classes_[1] == 1 else -1.0)


@pytest.mark.parametrize("duplicates", [0, 30])
def test_cholesky_and_lu_prove_the_same_point(monkeypatch, duplicates):
    """Where the free points are distinct the Cholesky route solves their system; where some are duplicated it falls
    back to LU (and its least squares); either way the proved optimum is the LU's, to POLISH_TOL."""
    K, y, C, alpha, f = _kernel_problem(300, duplicates)
    monkeypatch.setattr(reference, "SADDLE_FROM", 0)  # the Cholesky route at this test's size too
    factors = []
    real = reference._saddle_factor

    def counted(A):
        solve = real(A)
        factors.append(solve is not None)
        return solve

    monkeypatch.setattr(reference, "_saddle_factor", counted)
    got = reference.polish(reference.Gram(None, K), y, C, alpha, f)
    assert got.ok, got.reason
    free = (got.alpha > 0) & (got.alpha < C)
    if duplicates:
        assert free[:duplicates].any() and not all(factors)  # duplicated free points: Cholesky refused, LU decided
    else:
        assert factors and all(factors)
    monkeypatch.setattr(reference, "_saddle_factor", lambda A: None)  # LU throughout, as before
    want = reference.polish(reference.Gram(None, K), y, C, alpha, f)
    assert want.ok, want.reason
    scale = float(np.max(want.alpha))
    f_got, f_want = got.g + got.b, want.g + want.b
    np.testing.assert_allclose(f_got, f_want, rtol=0, atol=reference.POLISH_TOL * float(np.max(np.abs(f_want))))
    if not duplicates:  # with duplicates the split of alpha between copies is any of many optima
        np.testing.assert_allclose(got.alpha, want.alpha, rtol=0, atol=reference.POLISH_TOL * scale)
    assert got.objective == pytest.approx(want.objective, rel=reference.POLISH_TOL)


def test_a_singular_kernel_block_is_not_solved_by_cholesky():
    """Two equal rows and columns: rounding leaves a pivot of a few eps (of either sign), which the floor refuses."""
    rng = np.random.default_rng(3)
    B = rng.normal(size=(40, 6))
    Q = B @ B.T  # rank 6 of 40
    M = np.zeros((41, 41))
    M[:40, :40], M[:40, 40], M[40, :40] = Q, 1.0, 1.0
    A = reference._ruiz(M, 5)[0]
    assert reference._saddle_factor(A) is None
    assert reference._saddle_factor(reference._ruiz(M + np.diag(np.append(np.ones(40), 0.0)), 5)[0]) is not None


def _exact(M, x, rhs):
    return [Fraction(float(rhs[i])) - sum(Fraction(float(a)) * Fraction(float(b)) for a, b in zip(M[i], x))
            for i in range(M.shape[0])]


def _within_dot2_bound(got, M, x, rhs):
    """Dot2's error bound (Ogita, Rump, Oishi 2005, Prop. 5.5): |got - exact| <= eps |exact| + gamma_n^2 sum |terms|,
    gamma_n = n eps / (1 - n eps), n the number of terms, here with 2 for the products' splitting."""
    n = M.shape[1] + 1
    gamma = n * EPS / (1 - n * EPS)
    exact = _exact(M, x, rhs)
    for i, e in enumerate(exact):
        size = abs(float(rhs[i])) + float(np.sum(np.abs(M[i] * x)))
        if not abs(Fraction(float(got[i])) - e) <= EPS * abs(float(e)) + 2 * gamma ** 2 * size:
            return False
    return True


def test_the_residual_is_as_accurate_as_twice_the_working_precision():
    rng = np.random.default_rng(7)
    for _ in range(20):  # random sizes over wide exponents
        m, k = rng.integers(1, 12, size=2)
        M = rng.normal(size=(m, k)) * 10.0 ** rng.integers(-8, 8, size=(m, k))
        x, rhs = rng.normal(size=k) * 10.0 ** rng.integers(-8, 8, size=k), rng.normal(size=m)
        assert _within_dot2_bound(reference.residual(M, x, rhs), M, x, rhs)
    # cancelling terms: each row sums huge products that cancel to a small remainder (condition ~1e30)
    M = np.zeros((6, 9))
    x = np.zeros(9)
    for i in range(6):
        big = rng.normal(size=4) * 2.0 ** rng.integers(40, 80, size=4)
        x[:4] = 1.0 + rng.random(4) * 2.0 ** -30
        M[i, :4], M[i, 4:8], x[4:8] = big, -big, x[:4] * (1 + 2.0 ** -52)
        M[i, 8], x[8] = rng.normal(), 1.0
    rhs = rng.normal(size=6)
    got = reference.residual(M, x, rhs)
    assert _within_dot2_bound(got, M, x, rhs)
    assert not _within_dot2_bound(rhs - M @ x, M, x, rhs)  # plain sums do not: the test can fail


def test_threads_leave_the_bits_alone(monkeypatch):
    """The equilibration and the residual split between threads on a large system: the same bits as one pass."""
    rng = np.random.default_rng(2)
    M = rng.normal(size=(1001, 1003)) * 10.0 ** rng.integers(-6, 6, size=(1, 1003))
    x, rhs = rng.normal(size=1003), rng.normal(size=1001)
    monkeypatch.setenv("SVM_THREADS", "3")  # three parts, whatever the machine
    assert M.size >= reference.THREADED_ENTRIES
    for got, want in zip(reference._ruiz(M, 5), _ruiz_by_arrays(M, 5)):
        assert np.array_equal(got, want)
    threaded = reference.residual(M, x, rhs)
    monkeypatch.setenv("SVM_THREADS", "1")
    assert np.array_equal(threaded, reference.residual(M, x, rhs))


def _all_free(n: int, seed: int = 0, duplicates: int = 0):
    """A kernel near I (rbf, gamma 2 over 10 features) whose KKT system's solution has every alpha inside
    (0, C): every point free at the optimum; the last `duplicates` points copies of the first ones sharing their
    alphas. The point given to the proof is that optimum perturbed by 1e-7."""
    rng = np.random.default_rng(seed)
    distinct = n - duplicates
    X = rng.normal(size=(distinct, 10))
    y = np.where(rng.random(distinct) < 0.45, 1.0, -1.0)
    K = gram(Kernel("rbf", gamma=2.0), X)
    M = np.block([[(y[:, None] * K) * y[None, :], y[:, None]], [y[None, :], np.zeros((1, 1))]])
    z = np.linalg.solve(M, np.append(np.ones(distinct), 0.0))
    alpha, b = z[:distinct], z[distinct]
    assert alpha.min() > 0  # the construction's premise
    if duplicates:
        X, y = np.vstack([X, X[:duplicates]]), np.append(y, y[:duplicates])
        alpha = np.append(alpha, 0.5 * alpha[:duplicates])
        alpha[:duplicates] *= 0.5
        K = gram(Kernel("rbf", gamma=2.0), X)
    C = 2.0 * float(alpha.max())
    alpha = alpha * (1 + 1e-7 * rng.normal(size=n))
    return K, y, C, alpha, K @ (y * alpha) + b


@pytest.mark.slow  # a 4,101-square system solved twice (the construction's and the proof's): 5 s
def test_more_than_4000_free_points_are_proved():
    """4,100 free points: the fixed limit of 4,000 refused them; the memory-sized one (1 GiB for three copies)
    solves their system."""
    K, y, C, alpha, f = _all_free(4100)
    assert reference.dense_limit() >= 4100
    ref = reference.polish(reference.Gram(None, K), y, C, alpha, f)
    assert ref.ok, ref.reason
    assert np.count_nonzero((ref.alpha > 0) & (ref.alpha < C)) == 4100


def test_a_system_too_large_for_memory_is_refused_with_its_size(monkeypatch):
    K, y, C, alpha, f = _all_free(300)
    monkeypatch.setattr(reference, "DENSE_BYTES", 3 * 8 * 200**2)
    assert reference.dense_limit() == 199
    ref = reference.polish(reference.Gram(None, K), y, C, alpha, f)
    assert not ref.ok and "300 free points" in ref.reason and "GiB" in ref.reason and "at most 199" in ref.reason


def test_small_systems_are_solved_by_lu_and_large_ones_by_cholesky(monkeypatch):
    """Below SADDLE_FROM unknowns LU's one call costs less than the Cholesky route's several: it is not tried there."""
    tried = []
    monkeypatch.setattr(reference, "_saddle_factor", lambda A: tried.append(A.shape[0]))
    rng = np.random.default_rng(3)
    for m in (reference.SADDLE_FROM - 1, reference.SADDLE_FROM):
        K = gram(Kernel("rbf", gamma=0.5), rng.normal(size=(m - 1, 3)))
        y = np.where(rng.normal(size=m - 1) > 0, 1.0, -1.0)
        M, rhs = reference._free_system(K, y, np.zeros(m - 1), 0.0)
        x, singular = reference._solve_equilibrated(M, rhs, False, True, saddle=True)
        assert not singular
        np.testing.assert_allclose(M @ x, rhs, rtol=0, atol=1e-9 * float(np.max(np.abs(M)) * np.max(np.abs(x))))
    assert tried == [reference.SADDLE_FROM]


def test_the_in_place_cholesky_is_lapack_s_on_the_leading_block():
    """solvers.lapack_inplace factors the leading block of a larger array where it lies (the rest untouched) and solves
    with it: numpy's Cholesky factor and solve, to rounding."""
    from solvers import lapack_inplace

    rng = np.random.default_rng(4)
    B = rng.normal(size=(30, 30))
    Q = B @ B.T + 30 * np.eye(30)
    A = rng.normal(size=(31, 31))
    A[:30, :30] = Q
    border = A[:, 30].copy(), A[30].copy()
    assert lapack_inplace.cholesky(A, 30) == 0
    L = np.linalg.cholesky(Q)
    np.testing.assert_allclose(np.triu(A[:30, :30]).T, L, rtol=0, atol=1e-13 * np.abs(L).max())
    assert np.array_equal(A[:, 30], border[0]) and np.array_equal(A[30], border[1])
    b = rng.normal(size=30)
    want = np.linalg.solve(Q, b)
    np.testing.assert_allclose(lapack_inplace.cholesky_solve(A, 30, b), want, rtol=0, atol=1e-12 * np.abs(want).max())
    A[:30, :30] = -Q  # not positive definite: LAPACK's info says where
    assert lapack_inplace.cholesky(A, 30) == 1
    with pytest.raises(ValueError, match="C-ordered float64"):
        lapack_inplace.cholesky(np.asfortranarray(A), 30)


@pytest.mark.slow  # a working-set solve of 4,999 points with 4,082 free at the optimum: 2-3 s
def test_a_solve_with_more_than_4000_free_points_is_proved():
    """hard(4999, d=8, seed=9) at C = 10, gamma 10 x "scale": 4,082 free points. The proof refused above 4,000 and the
    gap bound (5.4e-2) left the row `iteration_limit`; SVC fits it. Now `optimal`, against the proved optimum."""
    from experiments.datasets import hard
    from solvers import api
    from solvers.solution import OPTIMAL

    ds = hard(4999, d=8, seed=9)
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y, dtype=float)
    gamma = 10.0 / (X.shape[1] * X.var())
    sol = api.solve("kernel_dual", X, y, layer="direct", backend="piqp", C=10.0, kernel=Kernel("rbf", gamma=gamma))
    assert sol.checks["n_free_sv"] > 4000
    assert sol.status == OPTIMAL and sol.checks["reference"] == "proved optimum", sol.checks.get("verdict")


def test_the_same_sets_on_the_same_rows_are_solved_once(monkeypatch):
    """The finish and the closing checks prove the same sets with the same Gram object: the second proof takes the
    first one's answer without forming the system; another Gram object (or other sets) is solved afresh."""
    K, y, C, alpha, f = _all_free(1000)
    assert 1001**2 >= reference.REMEMBERED_ENTRIES
    monkeypatch.setattr(reference, "_last_answer", None)
    built = []
    real = reference.Gram.submatrix  # K_FF: what every route of the system starts from
    monkeypatch.setattr(reference.Gram, "submatrix", lambda *args: (built.append(1), real(*args))[1])
    rows = reference.Gram(None, K)
    first = reference.polish(rows, y, C, alpha, f)
    again = reference.polish(rows, y, C, alpha, f)
    assert first.ok and again.ok and len(built) == 1
    assert np.array_equal(first.alpha, again.alpha) and first.b == again.b
    other = reference.polish(reference.Gram(None, K.copy()), y, C, alpha, f)
    assert len(built) == 2 and np.array_equal(other.alpha, first.alpha)
