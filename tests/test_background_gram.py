"""The Gram matrix formed on another core while the compiled SMO computes rows (solvers.algorithms.background_gram,
kernel_rows.AdaptiveRows): the same matrix as rbf_gram's, a switch at a point fixed by the work whenever the matrix
arrives, the work dropped where SMO ends first, and $SVM_THREADS=1's path without it. Small data, no timings: the
matrix's arrival is moved by a gate the test holds, not by sleeps."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from experiments.datasets import hard
from formulations.kernels import Kernel
from solvers.algorithms import background_gram, kernel_rows
from solvers.algorithms.background_gram import BackgroundGram
from solvers.algorithms.compiled_gram import THREADS_ENV, rbf_gram
from solvers.algorithms.kernel_rows import AdaptiveRows, overlap_entries, switch_entries
from solvers.algorithms.smo import RowCache, smo

N, D, C = 600, 10, 1.0
KERNEL = Kernel("rbf", gamma=1.0 / D)
#: A solve through rows that became the matrix against one on the matrix from the start: the dual objectives within
#: this of each other relative to the objective (SMO's tol 1e-9 on both: their points agree far past it).
RTOL = 1e-9


def _data(separated: bool):
    """Separated clusters (few support vectors: SMO ends before the switch) or overlapping ones with labels
    flipped at random (most points are support vectors: SMO computes many rows)."""
    ds = hard(N, d=D, seed=3, clusters=2, flip=0.0 if separated else 0.2, separation=6.0 if separated else 0.5)
    return ds.X, ds.y.astype(float)


def _held_back(monkeypatch) -> threading.Event:
    """The background thread held back, before it begins, until the returned event is set (or its work is dropped
    meanwhile): SMO then finds it not begun and waits for it whole."""
    gate = threading.Event()
    real = BackgroundGram._form

    def late(self):
        while not (gate.wait(0.01) or self._work.stop.is_set()):  # an event, not a time: the poll notices the drop
            pass
        real(self)

    monkeypatch.setattr(BackgroundGram, "_form", late)
    return gate


def _forming() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "form the Gram matrix" and t.is_alive()]


@pytest.fixture
def two_threads(monkeypatch):
    """A second core for the background work, whatever the machine running the tests has."""
    monkeypatch.setenv(THREADS_ENV, "2")


def _dual(alpha, K, y) -> float:
    v = y * alpha
    return float(alpha.sum() - 0.5 * v @ K @ v)


def _switched_solve(X, y, arrive: str, monkeypatch):
    """SMO through AdaptiveRows with the background matrix made to arrive before SMO's first step ("early") or only
    once SMO waits for it at the switch ("late"); (result, source, entries computed)."""
    source = AdaptiveRows(KERNEL, X)
    if arrive == "late":
        gate = _held_back(monkeypatch)
        form = source.form
        monkeypatch.setattr(source, "form", lambda: (gate.set(), form())[1])
    else:
        start = BackgroundGram.__init__

        def start_and_finish(self, *args, **kwargs):
            start(self, *args, **kwargs)
            assert self.result() is not None  # formed before SMO's next step

        monkeypatch.setattr(BackgroundGram, "__init__", start_and_finish)
    rows = source.row_cache()
    started_at = []
    on_limit = rows.on_limit
    rows.on_limit = lambda: (started_at.append(rows.entries_computed), on_limit())[1]
    res = smo(rows, y, C, tol=1e-9)
    source.drop_background()
    return res, source, started_at


def test_the_background_matrix_is_rbf_grams_to_the_bit():
    X, _ = _data(False)
    gamma = KERNEL.resolved_gamma(D)
    assert np.array_equal(BackgroundGram(gamma, X).result(), rbf_gram(gamma, X))


def test_the_switch_and_the_answer_do_not_depend_on_when_the_matrix_arrives(two_threads, monkeypatch):
    X, y = _data(False)
    early, source, early_points = _switched_solve(X, y, "early", monkeypatch)
    monkeypatch.undo()
    monkeypatch.setenv(THREADS_ENV, "2")
    late, late_source, late_points = _switched_solve(X, y, "late", monkeypatch)
    start, limit = kernel_rows.START_SHARE * overlap_entries(N, D), overlap_entries(N, D)
    assert limit < switch_entries(N, D)  # the switch comes earlier than without the second core
    # the other core started, then SMO stopped and read the matrix, each at its count of entries (a step's two
    # rows past it at most), both times
    assert early_points == late_points and len(early_points) == 2
    assert start <= early_points[0] < start + 2 * N and limit <= early_points[1] < limit + 2 * N
    assert source.gram is not None and late_source.gram is not None and not _forming()
    assert early.iterations == late.iterations
    assert np.array_equal(early.alpha, late.alpha) and np.array_equal(early.grad, late.grad)
    K = rbf_gram(KERNEL.resolved_gamma(D), X)
    assert np.array_equal(source.gram.K, K)
    given = smo(RowCache.full(K), y, C, tol=1e-9)
    want = _dual(given.alpha, K, y)
    assert abs(_dual(early.alpha, K, y) - want) <= RTOL * abs(want)


def test_the_work_is_dropped_where_smo_ends_before_the_switch(two_threads, monkeypatch):
    X, y = _data(True)
    # the matrix never starts on its own: it is surely still wanted when SMO ends; the other core from the start
    _held_back(monkeypatch)
    monkeypatch.setattr(kernel_rows, "START_SHARE", 0.0)
    answers = []
    for _ in range(2):  # a second solve right after the first
        source = AdaptiveRows(KERNEL, X)
        rows = source.row_cache()
        res = smo(rows, y, C, tol=1e-9)
        assert len(_forming()) == 1 and rows.entries_limit == overlap_entries(N, D)
        assert res.converged and rows.entries_computed < overlap_entries(N, D)
        source.drop_background()
        assert not _forming() and source.gram is None
        assert rows.entries_limit == source.switch_entries  # the steps after go as without the background work
        answers.append(res.alpha)
    today = smo(RowCache.from_data(KERNEL, X), y, C, tol=1e-9)
    assert np.array_equal(answers[0], answers[1]) and np.array_equal(answers[0], today.alpha)


def test_one_thread_keeps_the_path_without_background_work(monkeypatch):
    monkeypatch.setenv(THREADS_ENV, "1")
    started = []
    monkeypatch.setattr(background_gram.BackgroundGram, "__init__", lambda self, *a, **k: started.append(1))
    X, y = _data(False)
    source = AdaptiveRows(KERNEL, X)
    rows = source.row_cache()
    assert rows.entries_limit == source.switch_entries == switch_entries(N, D) and not started
    res = smo(rows, y, C, tol=1e-9)
    # below the rent-or-buy point the rows never became the matrix: the rows' own answer, to the bit
    assert source.gram is None and rows.entries_computed < switch_entries(N, D)
    assert not started and not _forming() and res.converged
    assert np.array_equal(res.alpha, smo(RowCache.from_data(KERNEL, X), y, C, tol=1e-9).alpha)


def test_the_api_leaves_no_thread_and_gives_the_one_thread_answer_where_smo_ends_first(monkeypatch):
    """Through solvers.api.solve (smo_dual's rounds drop the work after SMO): few support vectors, so SMO ends long
    before the switch and the answer is the one-thread path's to the bit."""
    from solvers.api import solve

    monkeypatch.setattr(kernel_rows, "ROWS_FROM_N", N)
    monkeypatch.setattr(kernel_rows, "START_SHARE", 0.0)  # the other core from SMO's first step
    X, y = _data(True)
    started, start = [], BackgroundGram.__init__

    def counted(self, *args, **kwargs):
        started.append(1)
        start(self, *args, **kwargs)

    monkeypatch.setattr(BackgroundGram, "__init__", counted)
    answers = {}
    for threads in ("2", "1"):
        monkeypatch.setenv(THREADS_ENV, threads)
        sol = solve("kernel_dual", X, y, layer="direct", backend="piqp", C=C, kernel=KERNEL)
        assert sol.status == "optimal" and not _forming()
        answers[threads] = np.asarray(sol.alpha)
    assert np.array_equal(answers["1"], answers["2"]) and started == [1]  # the work began with two threads only


def test_no_background_work_where_the_budget_does_not_allow_the_matrix(two_threads):
    X, y = _data(False)
    source = AdaptiveRows(KERNEL, X, budget=16.0 * N * N)  # below gram_fits's 24 n^2 bytes
    rows = source.row_cache()
    assert source._background is None and not _forming() and rows.entries_limit == source.switch_entries


def test_blas_has_its_threads_back_once_the_matrix_is_read(two_threads, monkeypatch):
    """The background work runs BLAS on one thread, process-wide: after the switch the caller's BLAS has its own
    count again."""
    from solvers import blas

    def blas_threads() -> list[int]:
        return [lib["num_threads"] for lib in blas.controller().info() if lib["user_api"] == "blas"]

    before = blas_threads()
    X, y = _data(False)
    _, source, _ = _switched_solve(X, y, "late", monkeypatch)
    assert source.gram is not None and blas_threads() == before


def test_smo_that_needs_few_rows_never_starts_the_other_core(two_threads, monkeypatch):
    X, y = _data(True)
    needed = RowCache.from_data(KERNEL, X)
    smo(needed, y, C, tol=1e-9)
    started = []
    monkeypatch.setattr(BackgroundGram, "__init__", lambda self, *a, **k: started.append(1))
    # the start point just past the entries this solve needs
    source = AdaptiveRows(KERNEL, X, entries=1.01 * needed.entries_computed / kernel_rows.START_SHARE)
    rows = source.row_cache()
    res = smo(rows, y, C, tol=1e-9)
    assert res.converged and rows.entries_computed == needed.entries_computed and not started


def test_the_solve_takes_the_blocks_left_where_the_matrix_is_not_done(monkeypatch):
    """The background thread held inside its first row block: the caller asking for the matrix does every other
    block itself (then both mirror), and the matrix is still rbf_gram's to the bit."""
    from formulations.kernels import RbfRows
    from solvers.algorithms import compiled_gram

    monkeypatch.setattr(compiled_gram, "GRAM_ROWS", 32)  # 19 row blocks of the 600 points
    blocks = -(-N // 32)
    X, _ = _data(False)
    gamma = KERNEL.resolved_gamma(D)
    inside, release = threading.Event(), threading.Event()
    filled = {"background": 0, "caller": 0}
    real = RbfRows.fill

    def fill(self, lo, hi):
        if threading.current_thread().name == "form the Gram matrix":
            if filled["background"] == 0:
                inside.set()
                release.wait(timeout=60)  # a guard against a hang only: the caller's last block releases it
            filled["background"] += 1
            return real(self, lo, hi)
        real(self, lo, hi)
        filled["caller"] += 1
        if filled["caller"] == blocks - 1:
            release.set()

    monkeypatch.setattr(RbfRows, "fill", fill)
    background = BackgroundGram(gamma, X)
    assert inside.wait(timeout=60)
    K = background.result()
    assert filled == {"background": 1, "caller": blocks - 1}
    monkeypatch.setattr(RbfRows, "fill", real)
    assert np.array_equal(K, rbf_gram(gamma, X)) and not _forming()
