"""Rows on demand that become the whole Gram matrix once the compiled SMO shows it needs many of them
(solvers.algorithms.kernel_rows.AdaptiveRows, smo.RowCache.from_data's on_limit), and the compiled rows' exp.
Small data (a few hundred points): seconds, no timings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.datasets import hard
from formulations.kernels import Kernel, gram
from solvers.solution import OPTIMAL
from solvers.algorithms import kernel_rows, smo as smo_module
from solvers.algorithms import working_set as ws
from solvers.algorithms.kernel_rows import AdaptiveRows, FullGram, full_gram, row_source, switch_entries
from solvers.algorithms.smo import RowCache, smo

N, D = 400, 20
KERNEL = Kernel("rbf", gamma=1.0 / D)
#: Two solves of one problem by different row sources: objective and decision values within this of each other,
#: relative to the objective and to the largest decision value (the checks' own bar is 1e-6).
RTOL = 1e-7


def _data(separated: bool):
    """Separated clusters (few support vectors: the rows SMO needs are few) or overlapping ones with labels drawn
    at random (most points are support vectors)."""
    ds = hard(N, d=D, seed=1, clusters=2, flip=0.0 if separated else 0.2, separation=6.0 if separated else 0.5)
    return ds.X, ds.y.astype(float)


@pytest.fixture(scope="module")
def solved():
    """Each case solved through row_source's source (ROWS_FROM_N lowered so that N points get AdaptiveRows)."""
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kernel_rows, "ROWS_FROM_N", N)
        for separated in (True, False):
            X, y = _data(separated)
            source = row_source(KERNEL, X, budget=1e12)
            assert isinstance(source, AdaptiveRows) and source.gram is None
            out[separated] = source, ws.solve(source, y, 1.0, backend="piqp", validate=False)
    return out


def test_the_rows_become_the_matrix_where_smo_computes_many_and_stay_rows_where_it_needs_few(solved):
    # with a second core the matrix is formed beside SMO, which then reads it from an earlier point
    limit = kernel_rows.overlap_entries(N, D) if kernel_rows.background_allowed(N) else switch_entries(N, D)
    few, sol = solved[True]
    assert sol.status == OPTIMAL and few.gram is None and not sol.extras["gram_formed"]
    assert 0 < few.entries_computed < limit
    many, sol = solved[False]
    assert sol.status == OPTIMAL and sol.extras["gram_formed"] and sol.extras["row_source"] == "AdaptiveRows"
    # SMO stopped at the limit (a step's two rows past it at most), and every later question went to the matrix
    assert limit <= many.entries_computed < limit + 2 * N
    assert isinstance(many.gram, FullGram) and many.capacity == N and not many._cache
    np.testing.assert_allclose(many.rows([0, 5]), gram(KERNEL, many.data[[0, 5]], many.data), rtol=0, atol=1e-14)


@pytest.mark.parametrize("separated", [True, False])
def test_the_point_is_the_matrixs_and_the_rows_whichever_the_source_became(solved, separated):
    """The same problem through the whole matrix from the start and through rows that never become it."""
    X, y = _data(separated)
    _, adaptive = solved[separated]
    for source in (full_gram(KERNEL, X), AdaptiveRows(KERNEL, X, entries=math.inf)):
        other = ws.solve(source, y, 1.0, backend="piqp", validate=False)
        assert other.status == OPTIMAL and other.extras["gram_formed"] == isinstance(source, FullGram)
        want = other.checks["dual_objective"]
        assert abs(adaptive.checks["dual_objective"] - want) <= RTOL * abs(want)
        assert np.max(np.abs(adaptive.decision - other.decision)) <= RTOL * np.max(np.abs(other.decision))


def test_smo_goes_on_from_where_the_rows_stopped_on_the_matrix_on_limit_gives():
    X, y = _data(False)
    K = gram(KERNEL, X)
    formed = []
    rows = RowCache.from_data(KERNEL, X, entries_limit=50.0 * N, on_limit=lambda: formed.append(1) or K)
    switched = smo(rows, y, 1.0, tol=1e-9)
    whole = smo(K, y, 1.0, tol=1e-9)
    assert formed == [1] and rows.kind == smo_module.GIVEN and 50 * N <= rows.entries_computed < 52 * N
    assert switched.converged and whole.converged
    # the same optimum: the dual objective and K u (= y (G + 1)) to SMO's tolerance
    objective = lambda res: float(res.alpha.sum() - 0.5 * res.alpha @ (res.grad + 1.0))  # noqa: E731
    assert abs(objective(switched) - objective(whole)) <= 1e-8 * abs(objective(whole))
    Ku = y * (whole.grad + 1.0)
    assert np.max(np.abs(y * (switched.grad + 1.0) - Ku)) <= 1e-6 * np.max(np.abs(Ku))
    np.testing.assert_allclose(switched.grad, rows.gradient(y, switched.alpha), rtol=0, atol=1e-9)


def test_the_compiled_rows_exp_is_within_an_ulp_of_math_exp():
    """smo._exp_of_minus (the rbf's rows): exp(-gamma t) for t >= 0 within one ulp, exact at 0, and 0 only where
    exp is below 3e-308."""
    rng = np.random.default_rng(0)
    x = np.concatenate([[0.0, 1e-300, 5e-324, 708.0, 708.5, 745.0, 1e4, np.log(2) / 2], rng.random(20000) * 708,
                        rng.random(20000) * 2, rng.random(2000) * 1e-9])
    out = x.copy()
    smo_module._exp_of_minus(1.0, out)
    want = np.exp(-x)
    normal = x <= 708.0
    assert out[0] == 1.0 and np.all(out[normal] > 0)
    assert np.max(np.abs(out - want)[normal] / want[normal]) <= np.finfo(float).eps
    assert np.all(np.abs(out - want)[~normal] <= 3e-308)
    scaled = x[:100] * 2.0
    smo_module._exp_of_minus(0.5, scaled)
    assert np.array_equal(scaled, out[:100])  # gamma enters as -gamma t, one product


def test_adaptive_rows_refuse_other_kernels_and_sparse_data():
    from scipy.sparse import csr_matrix

    X, _ = _data(True)
    with pytest.raises(ValueError, match="rbf kernel's on dense data"):
        AdaptiveRows(Kernel("poly", gamma=0.1), X)
    with pytest.raises(ValueError, match="rbf kernel's on dense data"):
        AdaptiveRows(KERNEL, csr_matrix(X))


@pytest.mark.parametrize("C", [1e-4, 1.0 / (2 * N)])
def test_a_c_so_small_that_most_points_are_support_vectors_forms_the_matrix_before_any_row(C):
    """C n max K_ii < 1: every point of one class is at C and as many of the other in play (kernel_rows
    .fewest_support), so the rows would cost most of the matrix: it is formed at once, and the bound holds."""
    X, y = _data(True)
    source = AdaptiveRows(KERNEL, X)
    need = kernel_rows.fewest_support(y, np.full(N, C), 1.0)
    assert need == 2 * min(np.count_nonzero(y > 0), np.count_nonzero(y < 0))
    sol = ws.solve(source, y, C, backend="piqp", validate=False)
    assert sol.status == OPTIMAL and sol.extras["gram_formed"] and source.entries_computed == 0
    assert np.count_nonzero(sol.alpha) >= need
    assert kernel_rows.fewest_support(y, np.full(N, 1.0 / N), 1.0) == 0.0  # C n max K_ii = 1: no bound


def test_products_read_the_rows_smo_computed_and_agree_with_rows_computed_again(solved):
    """Where the matrix was not formed, K u and c' K[I, :] read the rows the compiled SMO holds (not computed
    again): the same numbers as KernelRows' to rounding (two formulas: 1e-14 of the sums' magnitudes)."""
    few, sol = solved[True]
    u = np.linspace(-1.0, 1.0, N)  # every point: rows SMO holds and others
    held, _ = few._held(np.arange(N))
    assert sol.status == OPTIMAL and few.gram is None and 0 < held.sum() < N
    plain = KernelRowsLike(few)
    before = few.rows_computed
    got = few.times(u)
    assert 0 < few.rows_computed - before <= N - held.sum()  # the rows SMO holds were not computed again
    want = plain.times(u)
    assert np.max(np.abs(got - want)) <= 1e-14 * np.max(plain.magnitudes_exact(u))
    I = np.flatnonzero(held)[:7]
    np.testing.assert_allclose(few.combination(I, np.arange(1.0, 8.0)), np.arange(1.0, 8.0) @ gram(KERNEL, few.data[I],
                               few.data), rtol=0, atol=1e-13 * 28)


class KernelRowsLike:
    """The same rows, computed again by KernelRows (no compiled SMO behind them)."""

    def __init__(self, source):
        from solvers.algorithms.kernel_rows import KernelRows

        self.rows = KernelRows(KERNEL, source.data)

    def times(self, u):
        return self.rows.times(u)

    def magnitudes_exact(self, u):
        return np.abs(self.rows.rows(np.arange(N))) @ np.abs(u)
