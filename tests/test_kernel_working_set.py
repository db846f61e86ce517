"""The kernel working set at every C, rows on demand through a bounded cache, shrinking,
and solve(method=...) with its chooser. Small data (a few hundred points): seconds, no timings."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st_

from experiments.datasets import overlapping
from formulations.errors import SVMInputError
from formulations.kernels import Kernel, gram
from solvers import api, isolation
from solvers.solution import ERROR, OPTIMAL, OPTIMAL_INACCURATE, TIME_LIMIT
from solvers.algorithms import kernel_rows, working_set as ws
from solvers.algorithms.working_set import loop, optimality, polish, proof, start, subproblems
from solvers.algorithms.working_set import selection as block_selection
from solvers.algorithms.kernel_rows import FullGram, KernelRows, LinearRows, row_source
from tests.conftest import backend_params

KERNEL = Kernel("rbf", gamma=0.1)
N = 240
#: The exactness the issue asks for: the objective within 1e-7 of the proved optimum.
OBJECTIVE_RTOL = 1e-7


@pytest.fixture(scope="module")
def data():
    ds = overlapping(N, d=10, seed=3)
    y = ds.y.astype(float)
    return ds.X, y, gram(KERNEL, ds.X)


@pytest.fixture(scope="module")
def reference(data):
    """The full kernel dual through cvxpy/Clarabel (tight), verified and proved by the closing step."""
    X, y, K = data
    out = {}
    for C in (1e-5, 1e-3, 1.0, 10.0, 100.0, 1000.0):
        sol = api.solve("kernel_dual", None, y, K=K, layer="cvxpy", backend="clarabel", C=C, profile="high",
                        method="full")
        assert sol.status == OPTIMAL and sol.checks["reference"] == "proved optimum"
        out[C] = sol.checks["dual_objective"]
    return out


def _rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


@pytest.mark.parametrize("C", [1e-5, 1e-3, 10.0, 100.0, 1000.0])
@pytest.mark.parametrize("layer", ["direct", "cvxpy", "pyomo"])
def test_working_set_reaches_the_optimum_at_every_C(data, reference, layer, C):
    X, y, K = data
    sol = ws.solve(K, y, C, backend="piqp", layer=layer, q=120, validate=False)
    assert sol.status == OPTIMAL, sol.checks.get("verdict")
    assert sol.checks["reference"] == "proved optimum"
    assert _rel(sol.checks["dual_objective"], reference[C]) <= OBJECTIVE_RTOL
    assert sol.checks["err_objective"] <= OBJECTIVE_RTOL


def test_kernel_rows_are_the_gram_matrix(data):
    X, y, K = data
    rows = KernelRows(KERNEL, X, cache_bytes=8 * N * 10)
    I = np.array([5, 0, 5, 17, 230])
    np.testing.assert_allclose(rows.rows(I), K[I], rtol=0, atol=1e-15)
    np.testing.assert_allclose(rows.submatrix(I, I[::-1]), K[np.ix_(I, I[::-1])], rtol=0, atol=1e-15)
    u = np.zeros(N)
    u[[1, 50, 99]] = [0.5, -2.0, 1.0]
    assert rows.rows_computed == 4  # 5 appears twice, and only once computed
    np.testing.assert_allclose(rows.times(u), K @ u, rtol=1e-13, atol=1e-13)
    assert rows.rows_computed == 7  # the three rows of u's nonzeros ...
    np.testing.assert_allclose(rows.times(u), K @ u, rtol=1e-13, atol=1e-13)
    assert rows.rows_computed == 7  # ... and the same product again computes nothing: it is the last one kept
    np.testing.assert_array_equal(rows.diagonal(), np.diag(K))


def test_products_never_evict_rows_and_stay_within_the_cache(data):
    X, y, K = data
    rows = KernelRows(KERNEL, X, cache_bytes=8 * N * 10)
    rows.rows([3, 4])
    u = np.random.default_rng(0).normal(size=N)  # every row is needed: far more than the 10 the cache holds
    np.testing.assert_allclose(rows.times(u), K @ u, rtol=1e-12, atol=1e-12)
    assert rows.max_held <= rows.capacity == 10
    assert 3 in rows._cache and 4 in rows._cache  # the rows asked for by the loop are still there
    np.testing.assert_allclose(rows.rows(np.arange(20, 40)), K[20:40], rtol=0, atol=1e-15)
    assert list(rows._cache) == list(range(30, 40))  # more than the cache holds: the newest 10 are kept ...
    np.testing.assert_allclose(rows.rows(np.arange(30, 40)), K[30:40], rtol=0, atol=1e-15)  # ... as they are
    # every cached row owns its memory: a view would keep its whole block alive after an eviction
    assert all(row.base is None for row in rows._cache.values())


@settings(max_examples=40, deadline=None)
@given(steps=st_.lists(st_.tuples(st_.integers(0, 2), st_.integers(0, 2**31 - 1)), min_size=1, max_size=8))
def test_products_from_the_kept_ones_are_k_times_u(data, steps):
    """times() starts from a kept product where u changed in fewer entries than it has nonzeros: whatever the
    sequence (a few entries moved, many moved, a different support), every answer is K u, and a product that
    changed in k entries computes at most k rows."""
    X, y, K = data
    rows = KernelRows(KERNEL, X, cache_bytes=8 * N * 10)
    u = np.zeros(N)
    scale = 0.0  # the largest sum |u| so far: a product started from kept ones carries their rounding (|K_ij| <= 1)
    for kind, seed in steps:
        rng = np.random.default_rng(seed)
        before = u.copy()
        if kind == 0:  # a few entries move (the working set's loop between two products)
            u[rng.choice(N, size=3, replace=False)] = rng.normal(size=3)
        elif kind == 1:  # a new support (the proof's free points alone)
            u = np.where(rng.random(N) < 0.2, rng.normal(size=N), 0.0)
        else:  # back to an earlier product's u, scaled entries at C
            u = np.where(u != 0, 2.0 * np.sign(u), 0.0)
        computed = rows.rows_computed
        scale = max(scale, float(np.abs(u).sum()))
        np.testing.assert_allclose(rows.times(u), K @ u, rtol=0, atol=1e-13 * len(steps) * scale)
        assert rows.rows_computed - computed <= min(np.count_nonzero(u), np.count_nonzero(u != before))


def test_evicted_rows_come_back_right(data):
    """The least recently used rows leave for new ones; every row read back, and every product, is K's,
    however the cache was filled (rows asked for again, products between the rows' reads)."""
    X, y, K = data
    rows = KernelRows(KERNEL, X, cache_bytes=8 * N * 7)
    rng = np.random.default_rng(3)
    for _ in range(40):
        I = rng.choice(N, size=rng.integers(1, 6), replace=True)
        np.testing.assert_allclose(rows.rows(I), K[I], rtol=0, atol=1e-15)
        u = np.zeros(N)
        u[rng.choice(N, size=rng.integers(1, 12), replace=False)] = rng.normal(size=1)
        np.testing.assert_allclose(rows.times(u), K @ u, rtol=1e-13, atol=1e-13)
        assert set(I.tolist()) <= set(rows._cache)  # the rows just asked for are held
        assert len(rows._cache) <= rows.capacity


def test_cache_is_bounded_and_rows_are_recomputed_on_demand(data):
    X, y, K = data
    capacity = 30
    rows = KernelRows(KERNEL, X, cache_bytes=8 * N * capacity)
    assert rows.capacity == capacity
    res = ws.decompose(rows, y, 10.0, backend="piqp", q=20, split_from=0, engine="blocks")
    full = ws.decompose(K, y, 10.0, backend="piqp", q=20, split_from=0, engine="blocks")
    assert res.converged and full.converged
    assert rows.max_held <= capacity  # never more rows held than the budget allows
    assert rows.rows_computed > capacity  # ... so rows were evicted and computed again when needed
    assert res.rows_computed == rows.rows_computed
    assert _rel(res.objective, full.objective) <= 1e-10


def test_shrinking_does_not_change_the_optimum(data):
    X, y, K = data
    shrunk = ws.decompose(K, y, 100.0, backend="piqp", q=20, split_from=0, shrinking=True, shrink_every=2,
                           engine="blocks")
    plain = ws.decompose(K, y, 100.0, backend="piqp", q=20, split_from=0, shrinking=False, engine="blocks")
    assert shrunk.converged and plain.converged
    assert shrunk.min_active < N and shrunk.unshrinks >= 1  # it did shrink, and rechecked every point
    assert _rel(shrunk.objective, plain.objective) <= 1e-9
    assert ws.kkt_violation(K, y, shrunk.alpha, 100.0, bound_tol=1e-10) <= 1e-6


@pytest.mark.parametrize("selection", block_selection.SELECTIONS)
def test_both_selections_reach_the_optimum(data, reference, selection):
    X, y, K = data
    res = ws.decompose(K, y, 1000.0, backend="piqp", q=40, split_from=0, selection=selection)
    assert res.converged
    assert _rel(res.objective, reference[1000.0]) <= OBJECTIVE_RTOL


def test_row_source_forms_the_gram_matrix_only_within_the_budget(data):
    X, y, K = data
    assert isinstance(row_source(KERNEL, X, budget=1e9), FullGram)
    small = row_source(KERNEL, X, budget=3 * 8.0 * N * N - 1)
    assert isinstance(small, KernelRows) and small.capacity * 8 * N <= 3 * 8.0 * N * N / 2


# ----------------------------------------------------------------------------- solve(method=...)


@pytest.mark.parametrize("layer", ["cvxpy", "pyomo", "direct"])
@pytest.mark.parametrize("method", ["full", "working_set", "auto"])
def test_solve_method_in_each_layer(data, reference, layer, method):
    X, y, K = data
    if layer == "direct" and method == "full":
        with pytest.raises(SVMInputError, match="working sets only"):
            api.solve("kernel_dual", X, y, kernel=KERNEL, layer=layer, backend="piqp", C=10.0, method=method)
        return
    sol = api.solve("kernel_dual", X, y, kernel=KERNEL, layer=layer, backend="piqp", C=10.0, method=method,
                    profile="high")
    expected = api.choose_method("kernel_dual", N, layer, 10.0, method)
    assert sol.extras["method"] == expected
    assert sol.status == OPTIMAL
    assert _rel(sol.checks["dual_objective"], reference[10.0]) <= OBJECTIVE_RTOL


@pytest.mark.parametrize("formulation", ["dual", "soft_primal"])
@pytest.mark.parametrize("layer", ["cvxpy", "pyomo"])
def test_linear_formulations_by_working_set_match_the_full_solve(data, formulation, layer):
    X, y, K = data
    kw = dict(layer=layer, backend="piqp", C=0.1, profile="high")
    full = api.solve(formulation, X, y, method="full", **kw)
    fast = api.solve(formulation, X, y, method="working_set", **kw)
    assert full.status == fast.status == OPTIMAL
    assert fast.extras["method"] == "working_set" and full.extras["method"] == "full"
    assert fast.formulation == formulation
    np.testing.assert_allclose(fast.w, full.w, rtol=0, atol=1e-5 * np.linalg.norm(full.w))
    assert _rel(fast.checks["primal_objective"], full.checks["primal_objective"]) <= 1e-7


@settings(max_examples=25, deadline=None)
@given(n=st_.integers(3, 40), d=st_.integers(1, 30), seed=st_.integers(0, 2**16),
       scale=st_.sampled_from([1e-3, 1.0, 1e3]))
def test_linear_rows_answer_as_the_gram_matrix(n, d, seed, scale):
    rng = np.random.default_rng(seed)
    X = scale * rng.normal(size=(n, d))
    K = X @ X.T
    rows = LinearRows(X, cache_bytes=8 * n * 2)
    I = rng.choice(n, size=min(n, 3), replace=False)
    coef, u = rng.normal(size=len(I)), rng.normal(size=n) * (rng.random(n) < 0.5)
    size = scale ** 2 * d  # |K_ij| is about that: the tolerances are relative to it
    np.testing.assert_allclose(rows.rows(I), K[I], rtol=0, atol=1e-12 * size)
    np.testing.assert_allclose(rows.combination(I, coef), coef @ K[I], rtol=0, atol=1e-12 * size * np.abs(coef).sum())
    np.testing.assert_allclose(rows.times(u), K @ u, rtol=0, atol=1e-12 * size * np.abs(u).sum())
    np.testing.assert_allclose(rows.diagonal(), np.diag(K), rtol=1e-13, atol=0)
    sub = rows.restricted(I)
    np.testing.assert_allclose(sub.times(coef), K[np.ix_(I, I)] @ coef, rtol=0, atol=1e-12 * size * np.abs(coef).sum())


def test_the_linear_dual_by_working_set_takes_its_products_through_x(data, monkeypatch):
    """From ROWS_FROM_N points the linear kernel's rows are LinearRows: the gradient's updates go through X,
    and only the selection's pairs and SMO steps compute rows. The optimum is the full lifted dual's."""
    X, y, K = data
    monkeypatch.setattr(kernel_rows, "ROWS_FROM_N", 100)
    kw = dict(layer="direct", backend="piqp", C=0.1, profile="high")
    fast = api.solve("dual", X, y, method="working_set", **kw)
    full = api.solve("dual", X, y, method="full", **{**kw, "layer": "cvxpy"})
    assert fast.extras["row_source"] == "LinearRows"
    assert fast.status == full.status == OPTIMAL, fast.checks["verdict"]
    assert fast.extras["kernel_rows_computed"] < N  # no block's rows: those of a few pairs at most
    assert _rel(fast.checks["primal_objective"], full.checks["primal_objective"]) <= 1e-7
    np.testing.assert_allclose(fast.w, full.w, rtol=0, atol=1e-5 * np.linalg.norm(full.w))


def test_kernel_rows_path_when_the_gram_matrix_is_over_the_budget(data, reference):
    X, y, K = data
    sol = api.solve("kernel_dual", X, y, kernel=KERNEL, layer="cvxpy", backend="piqp", C=10.0, method="working_set",
                    profile="high", memory_budget=8.0 * N * N)  # less than 3 n^2 doubles: no Gram matrix
    assert sol.extras["row_source"] == "KernelRows" and sol.extras["kernel_rows_computed"] > 0
    assert sol.status == OPTIMAL
    assert _rel(sol.checks["dual_objective"], reference[10.0]) <= OBJECTIVE_RTOL


def test_working_set_refused_where_there_is_none(data):
    X, y, K = data
    with pytest.raises(SVMInputError, match="not available for 'hard_primal'"):
        api.solve("hard_primal", X, y, layer="cvxpy", backend="piqp", method="working_set")
    with pytest.raises(SVMInputError, match="hard margin"):
        api.solve("dual", X, y, layer="cvxpy", backend="piqp", method="working_set")  # C = inf
    with pytest.raises(SVMInputError, match="unknown method"):
        api.solve("dual", X, y, layer="cvxpy", backend="piqp", C=1.0, method="fast")
    with pytest.raises(SVMInputError, match="cannot solve the working set's subproblems alone"):
        api.solve("kernel_dual", X, y, kernel=KERNEL, layer="direct", backend="ipopt", C=1.0)


def test_auto_chooses_by_n_without_solving():
    for layer in ("cvxpy", "pyomo"):
        assert api.choose_method("kernel_dual", 100, layer, 1.0) == "full"
        assert api.choose_method("kernel_dual", 50_000, layer, 1.0) == "working_set"
        assert api.choose_method("soft_primal", 100, layer, 1.0) == "full"
        assert api.choose_method("soft_primal", 1_000_000, layer, 1.0) == "working_set"
        assert api.choose_method("hard_primal", 50_000, layer, math.inf) == "full"
        assert api.choose_method("dual", 50_000, layer, math.inf) == "full"  # hard-margin dual: no bounds
        assert api.choose_method("dual", 50_000, layer, 1.0) == "full"  # measured: its full lifted QP is faster
        threshold = api.AUTO_MIN_N[("kernel_dual", layer)]
        assert api.choose_method("kernel_dual", threshold - 1, layer, 1.0) == "full"
        assert api.choose_method("kernel_dual", threshold, layer, 1.0) == "working_set"
    assert api.choose_method("kernel_dual", 100, "cvxpy", 1.0, "working_set") == "working_set"
    assert api.choose_method("kernel_dual", 50_000, "cvxpy", 1.0, "full") == "full"


def test_an_indefinite_kernel_is_refused_or_marked_by_the_working_set(data):
    X, y, K = data
    sigmoid = Kernel("sigmoid", gamma=1.0, coef0=-1.0)
    with pytest.raises(SVMInputError, match="sigmoid"):
        api.solve("kernel_dual", X, y, kernel=sigmoid, layer="direct", backend="piqp", C=1.0)
    sol = api.solve("kernel_dual", X, y, kernel=sigmoid, layer="direct", backend="piqp", C=1.0, allow_indefinite=True)
    assert sol.extras["method"] == "working_set" and sol.extras["psd"] is False
    assert sol.extras["indefinite_kernel"] and "INDEFINITE KERNEL" in sol.message
    # rows on demand (here: the matrix over the memory budget), so Mercer's condition is not checked: said so
    rows = api.solve("kernel_dual", X, y, kernel=sigmoid, layer="direct", backend="piqp", C=1.0,
                     allow_indefinite=True, memory_budget=1e3)
    assert rows.extras["row_source"] == "KernelRows" and rows.extras["psd"] is None
    assert rows.status != OPTIMAL and "UNCHECKED KERNEL" in rows.message and "not checked" in rows.message


@pytest.mark.parametrize("layer,backend", backend_params())
def test_every_backend_runs_the_working_set_and_optimal_means_the_optimum(data, reference, layer, backend):
    """Each (layer, backend) takes the working set's subproblems (cvxpy's Ipopt included: through
    cvxpy's NLP path, as in the full solve): no error row; an `optimal` one is the optimum."""
    X, y, K = data
    sol = api.solve("kernel_dual", None, y, K=K, layer=layer, backend=backend, C=10.0, method="working_set")
    assert sol.status != ERROR, sol.message
    if sol.status == OPTIMAL:
        assert _rel(sol.checks["dual_objective"], reference[10.0]) <= 1e-4  # the default profile's tol


def test_a_subproblem_the_solver_fails_on_is_a_status_not_a_crash(data, monkeypatch):
    """cvxpy/HiGHS raised SolverError on a subproblem (breast cancer, rbf, C = 1e6): the solve must end
    in a status like any failed solve, never an exception."""
    import cvxpy as cp

    def fail(self, *args, **kwargs):
        raise cp.error.SolverError("Solver 'HIGHS' failed")

    X, y, K = data
    monkeypatch.setattr(cp.Problem, "solve", fail)
    sol = api.solve("kernel_dual", None, y, K=K, layer="cvxpy", backend="highs", C=10.0, method="working_set")
    assert sol.status == ERROR and sol.w is None
    assert "the subproblem solver returned no point for the block of round 1" in sol.message


@pytest.mark.parametrize("C", [1.0, 100.0])
def test_the_cvxpy_block_is_the_direct_block(data, C):
    """The cvxpy subproblem (its Q_BB handed to cvxpy as a sparse constant) is the same QP as the
    solver-alone one: on a block with a nonzero balance and points at both bounds, the same backend
    returns the same point to 1e-8 of the bound."""
    from formulations.kernel_dual import dual_matrix

    _, y, K = data
    B = np.arange(0, N, 2)
    alpha = np.zeros(N)
    L = np.flatnonzero((np.arange(N) % 4 == 1) & (y > 0))
    alpha[L] = C  # points outside B at C: the block's linear term and its balance -y_L' alpha_L < 0
    Q = dual_matrix(K, y)
    g = Q @ alpha - 1.0
    Q_BB = Q[np.ix_(B, B)]
    size = C * np.abs(Q_BB).max()
    rhs = -float(y[L].sum()) * C
    args = (Q_BB * (C / size), (g[B] - Q_BB @ alpha[B]) / size, y[B], rhs / C, 1.0, "piqp", {})
    s_direct, _ = subproblems.subproblem_direct(*args)
    s_cvxpy, _ = subproblems.subproblem_cvxpy(*args)
    assert np.any(s_direct > 1 - 1e-6) and np.any(s_direct < 1e-6) and abs(rhs) > 0
    assert np.abs(s_cvxpy - s_direct).max() <= 1e-8


def test_row_source_forms_the_gram_matrix_up_to_gram_bytes_and_rows_on_demand_beyond(monkeypatch):
    from solvers.algorithms.kernel_rows import ROWS_FROM_N, AdaptiveRows

    X = np.random.default_rng(3).normal(size=(ROWS_FROM_N, 3))
    # 8 n^2 bytes within GRAM_BYTES: rows that become the matrix where SMO needs many (rbf, poly), else the matrix
    adaptive = row_source(KERNEL, X, budget=1e12)
    assert isinstance(adaptive, AdaptiveRows) and adaptive.gram is None
    assert np.allclose(adaptive.form(), gram(KERNEL, X), rtol=0, atol=1e-14) and adaptive.gram is not None
    whole = row_source(Kernel("sigmoid", gamma=0.1), X, budget=1e12)
    assert isinstance(whole, FullGram) and np.allclose(whole.K, gram(Kernel("sigmoid", gamma=0.1), X), rtol=0,
                                                       atol=1e-14)
    monkeypatch.setattr(kernel_rows, "GRAM_BYTES", 8.0 * ROWS_FROM_N ** 2 - 1)
    source = row_source(KERNEL, X, budget=1e12)
    assert isinstance(source, KernelRows) and source.rows_computed == 0  # nothing n x n was formed
    assert isinstance(row_source(KERNEL, X[: ROWS_FROM_N - 1], budget=1e12), FullGram)


@pytest.mark.parametrize("rows_on_demand", [False, True])
def test_the_split_start_from_nystrom_margins_reaches_the_optimum(data, reference, rows_on_demand):
    X, y, K = data
    source = KernelRows(KERNEL, X) if rows_on_demand else K
    res = ws.decompose(source, y, 100.0, backend="piqp", q=20, split_from=N, engine="blocks")
    assert res.start.startswith(f"split: Nystrom {start.LANDMARKS}, |W| "), res.start
    assert res.converged
    assert _rel(res.objective, reference[100.0]) <= OBJECTIVE_RTOL


def test_nystrom_margins_with_every_point_a_landmark_are_the_optimum_s_up_to_the_smoothing(data):
    """With all N points as landmarks the features reproduce K (Z Z' = K), so the margins are the kernel
    SVM's, off only by Huber's width (primal_working_set.SMOOTHING = 0.01) and L-BFGS's stop."""
    X, y, K = data
    sol = api.solve("kernel_dual", None, y, K=K, layer="cvxpy", backend="clarabel", C=1.0, profile="high",
                    method="full")
    y_pm = np.where(y == y.max(), 1.0, -1.0)
    optimum = y_pm * (K @ (y_pm * np.asarray(sol.alpha)) + sol.b)
    margins = start.nystrom_margins(optimality.as_rows(K), y_pm, 1.0, landmarks=N)
    assert np.abs(margins - optimum).max() <= 0.05  # measured 0.011
    few = start.nystrom_margins(optimality.as_rows(K), y_pm, 1.0, landmarks=N // 4)
    assert np.abs(few - optimum).mean() > np.abs(margins - optimum).mean()  # 0.21 against 0.004


def test_a_time_limit_stops_a_working_set_between_subproblems_whatever_the_backend(data, monkeypatch):
    """PIQP has no time limit of its own: the whole QP refuses one (it could not stop), the working set
    stops between its subproblems and says so (a time limit nothing can reach before the first check; a
    subproblem that runs past one: tests/test_time_limit.py)."""
    X, y, K = data
    monkeypatch.setattr(isolation, "ISOLATE", False)  # the working set's own stop, not the solve server's kill
    with pytest.raises(SVMInputError, match="cvxpy/piqp has no time limit"):
        api.solve("kernel_dual", X, y, layer="cvxpy", backend="piqp", C=1.0, kernel=KERNEL, method="full",
                  time_limit=5.0)
    for backend in ("piqp", "clarabel"):
        sol = api.solve("kernel_dual", X, y, layer="cvxpy", backend=backend, C=1.0, kernel=KERNEL,
                        method="working_set", time_limit=1e-9)
        assert sol.status == TIME_LIMIT and sol.iterations == 1
        # no step done, and no subproblem started past the limit: nothing to say about one
        assert sol.message.startswith("stopped at the time limit (1e-09 s) after 0 steps, ")
        assert sol.message.endswith(" s in all") and "no time limit of its own" not in sol.message
    # the soft primal's restricted QPs accept it too (here one QP of every point: it finishes)
    sol = api.solve("soft_primal", X, y, layer="cvxpy", backend="piqp", C=1.0, method="working_set", time_limit=60.0)
    assert sol.status == OPTIMAL


def test_restricted_qps_stopped_at_a_time_limit_say_how_far_past_it(monkeypatch):
    """The soft primal's restricted QPs stop at the time limit too, with the same message: here in the smoothed
    start, before any restricted QP (one that runs past the limit: tests/test_time_limit.py)."""
    ds = overlapping(3000, d=5, seed=1)
    monkeypatch.setattr(isolation, "ISOLATE", False)  # the loop's own stop, not the solve server's kill
    sol = api.solve("soft_primal", ds.X, ds.y, layer="cvxpy", backend="piqp", C=1.0, method="working_set",
                    time_limit=1e-9)
    assert sol.status == TIME_LIMIT and sol.w is None
    assert sol.message.startswith("stopped at the time limit (1e-09 s) after 0 restricted QPs, in the smoothed start, ")
    assert sol.message.endswith(" s in all")


@pytest.fixture(scope="module")
def separable_in_other_units():
    """make_classification's 3,000 x 10 points, class_sep 2, in other units (X x 1e3: max|Q| ~ 3e7)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(3000, 10, class_sep=2.0, random_state=3)
    return X * 1e3, np.where(y == 1, 1.0, -1.0)


def test_a_block_that_comes_back_is_solved_to_the_loop_s_tolerance(separable_in_other_units):
    """The polish held the multipliers' signs to 1e-9 of the gradient's scale (0.05 here), so a block of 12 free
    points 4.5e-3 apart was "stationary" and came back 10,000 times (iteration_limit). A block that comes back is
    now solved to a tenth of the loop's tolerance: the linear dual by the working set (the direct layer's
    default) ends at the proved optimum, which the whole QP through cvxpy reaches too."""
    X, y = separable_in_other_units
    fast = api.solve("dual", X, y, layer="direct", backend="piqp", C=1.0)
    full = api.solve("dual", X, y, layer="cvxpy", backend="piqp", C=1.0, method="full")
    assert fast.status == full.status == OPTIMAL, fast.raw_status
    assert fast.extras["method"] == "working_set" and fast.iterations <= 20
    assert _rel(fast.checks["primal_objective"], full.checks["primal_objective"]) <= 1e-7
    np.testing.assert_allclose(fast.w, full.w, rtol=0, atol=1e-5 * np.linalg.norm(full.w))


def test_the_loop_stops_at_its_stall_where_float64_cannot_reach_the_optimum(separable_in_other_units):
    """At C = 100 in those units (C max|Q| ~ 3e9) neither the working set nor the whole QP is proved; the loop
    stops at its stall rule (the same blocks without a new low) instead of running to its 10,000 steps."""
    X, y = separable_in_other_units
    sol = api.solve("dual", X, y, layer="direct", backend="piqp", C=100.0)
    assert sol.status == OPTIMAL_INACCURATE and not sol.checks["verified"]  # a claim the checks refuse
    assert sol.message.startswith("not verified: ") and sol.checks["verdict"] in sol.message  # and say why
    assert sol.iterations < 1000, sol.raw_status


def test_the_polish_tolerance_is_relative_until_a_block_comes_back():
    Q = np.array([[4e6, 1e6], [1e6, 3e6]])
    p, x = np.array([-1.0, 2.0]), np.array([0.5, 0.25])
    scale = 4e6 * 0.5 + 2.0
    assert polish.polish_tol(Q, p, x, scale, math.inf) == polish.POLISH_TOL * scale
    assert polish.polish_tol(Q, p, x, scale, 1e-6) == pytest.approx(1e-7)
    rounding = polish.POLISH_ROUNDING * np.finfo(float).eps * (4e6 * 0.5 + 1e6 * 0.25 + 1.0)
    assert polish.polish_tol(Q, p, x, scale, 1e-12) == pytest.approx(rounding)  # not below the gradient's rounding


def test_auto_takes_the_working_set_for_the_kernel_dual_with_the_linear_kernel():
    """The kernel dual's whole QP is the dense n x n one whatever the kernel: with the linear kernel auto takes
    the working set (its rows through X) from the kernel dual's threshold, and reaches the lifted dual's optimum."""
    ds = overlapping(1200, d=5, seed=4)
    y = ds.y.astype(float)
    fast = api.solve("kernel_dual", ds.X, y, kernel="linear", layer="cvxpy", backend="piqp", C=1.0)
    lifted = api.solve("dual", ds.X, y, layer="cvxpy", backend="clarabel", C=1.0, profile="high")
    assert fast.status == lifted.status == OPTIMAL, fast.checks.get("verdict")
    assert fast.extras["method"] == "working_set"
    assert _rel(fast.checks["dual_objective"], lifted.checks["dual_objective"]) <= OBJECTIVE_RTOL


def test_weakly_coupled_free_points_beyond_the_largest_block_take_the_base_block(data, monkeypatch):
    """K near I (rbf gamma = 10 on 10 features): every point is free at C = 100, more than the largest block holds,
    and the rows are diagonally dominant, so the blocks stay at the base q (WEAK_COUPLING's comment); the
    benchmark-like K of `data` is strongly coupled and keeps the largest block."""
    X, y, K = data
    K_near_I = gram(Kernel("rbf", gamma=10.0), X)
    everyone = np.ones(len(y), dtype=bool)
    assert block_selection.weakly_coupled(FullGram(K_near_I), everyone) and not block_selection.weakly_coupled(FullGram(K), everyone)
    seen, real = [], loop.solve_block

    def spy(src, y_, alpha, g_B, B, rhs, C, *args, **kwargs):
        seen.append((int(np.count_nonzero((alpha > 0) & (alpha < C))), len(B)))
        return real(src, y_, alpha, g_B, B, rhs, C, *args, **kwargs)

    monkeypatch.setattr(loop, "solve_block", spy)
    res = ws.decompose(K_near_I, y, 100.0, backend="piqp", q=20, max_q=40, split_from=0, engine="blocks")
    whole = api.solve("kernel_dual", None, y, K=K_near_I, layer="cvxpy", backend="clarabel", C=100.0,
                      profile="high", method="full")
    assert res.converged and _rel(res.objective, whole.checks["dual_objective"]) <= OBJECTIVE_RTOL
    beyond = [size for free, size in seen if free > 40]
    assert beyond and max(beyond) <= 22  # q = 20 and the most violating pair


@pytest.mark.parametrize("C", [10.0, 100.0])
@pytest.mark.parametrize("layer", ["direct", "cvxpy"])
def test_the_tail_ends_at_the_optimum_proved_from_the_active_set(monkeypatch, data, reference, layer, C):
    """From TAIL_MIN_FREE free points on, once the gap is within TAIL_GAP, the optimum proved from the loop's
    active set ends the loop (at n = 5,000, C = 100: 11 steps against 16, 4.2 s against 6.3 s). The test data
    have ~130 free points: the threshold is lowered to reach the tail here. Same optimum, a step earlier."""
    plain = ws.solve(data[2], data[1], C, backend="piqp", layer=layer, q=40, validate=False, engine="blocks")
    assert plain.extras["proved_at_step"] == 0  # below TAIL_MIN_FREE: the loop's own end
    monkeypatch.setattr(proof, "TAIL_MIN_FREE", 20)
    sol = ws.solve(data[2], data[1], C, backend="piqp", layer=layer, q=40, validate=False, engine="blocks")
    assert sol.extras["proved_at_step"] == sol.iterations < plain.iterations
    assert sol.status == OPTIMAL and sol.checks["reference"] == "proved optimum"
    assert _rel(sol.checks["dual_objective"], plain.checks["dual_objective"]) <= 1e-12  # measured 1.3e-15
    assert _rel(sol.checks["dual_objective"], reference[C]) <= OBJECTIVE_RTOL
    assert sol.extras["kkt_violation"] <= 1e-9 * C  # the proved point's own m - M


def test_the_tail_s_proof_gives_up_on_a_singular_system_without_least_squares(monkeypatch):
    """Duplicated points make the free points' system singular; the checks' proof then solves it by least squares
    (an SVD: 4.8 s over 1,300-2,600 free points), which the tail must not pay on every try (n = 3,000, C = 100:
    8.2 s against 3.1 s without the tail; 15.6 s against 7.2 s with per-sample C). With least_squares=False the
    proof says so and stops; the loop then goes on to the same optimum."""
    from formulations.recovery import classify
    from solvers import reference

    ds = overlapping(150, d=5, seed=2)
    X, y = np.vstack([ds.X, ds.X]), np.concatenate([ds.y, ds.y]).astype(float)
    K = gram(KERNEL, X)
    C = 100.0
    exact = ws.solve(K, y, C, backend="piqp", layer="direct", q=60, validate=False)
    assert exact.status == OPTIMAL
    f = exact.decision
    calls = []
    real = reference.np.linalg.lstsq
    monkeypatch.setattr(reference.np.linalg, "lstsq", lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    gave_up = reference.polish(reference.Gram(None, K), y, C, exact.alpha, f, least_squares=False)
    assert not gave_up.ok and "is singular" in gave_up.reason and calls == []
    assert reference.polish(reference.Gram(None, K), y, C, exact.alpha, f).ok and calls  # least squares: proved
    monkeypatch.setattr(proof, "TAIL_MIN_FREE", 20)
    assert np.count_nonzero(classify(exact.alpha, y, f, C) == reference.FREE) > 20
    sol = ws.solve(K, y, C, backend="piqp", layer="direct", q=60, validate=False)
    assert sol.status == OPTIMAL
    assert _rel(sol.checks["dual_objective"], exact.checks["dual_objective"]) <= 1e-12


def test_the_proof_moves_points_that_cross_a_bound_where_the_bounded_fit_is_too_large(monkeypatch, data):
    """A regular system whose free alphas leave [0, C]: the sets are wrong, and the rounds move the crossing
    points to their bounds. The bounded fit (BVLS) was tried first and, above BVLS_MAX_ENTRIES, ended the
    proof at once: on 1,637 free points of the benchmark's kernel dual at C = 100 a proof from step 13 held
    after 3 rounds with the moves, and failed at once without them. Here 16 points next to the margin are
    put in the free set by hand, and the fit is capped below any size."""
    from formulations.recovery import classify
    from solvers import reference

    X, y, K = data
    C = 10.0
    sol = ws.solve(K, y, C, backend="piqp", layer="direct", q=40, validate=False)
    codes = classify(sol.alpha, y, sol.decision, C)
    r = y * sol.decision - 1.0
    zero, at_C = np.flatnonzero(codes == reference.ZERO), np.flatnonzero(codes == reference.AT_BOUND)
    wrong = codes.copy()
    wrong[zero[np.argsort(r[zero])[:8]]] = reference.FREE  # outside the margin, by 0.003-0.07
    wrong[at_C[np.argsort(-r[at_C])[:8]]] = reference.FREE  # inside it, by 0.02-0.4
    monkeypatch.setattr(reference, "BVLS_MAX_ENTRIES", 10)
    proved = reference._polish_from(reference.Gram(None, K), y, C, sol.alpha, wrong)
    assert proved.ok and proved.rounds > 1, proved.reason
    np.testing.assert_allclose(proved.alpha, sol.alpha, rtol=0, atol=1e-9 * C)


def test_a_block_whose_polish_fails_is_handed_on_feasible(monkeypatch):
    """A block solver's point is clipped and snapped onto the bounds; where no polish held y_B'alpha_B to its
    share, that moves the balance by the solver's tolerance (OSQP: 2e-6 on breast cancer at C = 1e-3), and the
    SMO that takes the point on refused it with a traceback. The block's point is now put back on the balance."""
    rng = np.random.default_rng(7)
    m = 40
    X = rng.standard_normal((m, 3))
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    src = FullGram(gram(Kernel("rbf", gamma=0.5), X))
    alpha = np.zeros(m)
    B = np.arange(m)

    def loose(Q, p, y_B, rhs, C, backend, options, time_limit=None):  # a solver 1e-4 off its balance
        return np.clip(0.5 * C + 1e-4 * y_B, 0.0, C), 0.0

    monkeypatch.setattr(subproblems, "polish_block", lambda *args, **kwargs: None)
    new, _, polished = subproblems.solve_block(src, y, alpha, -np.ones(m), B, 0.0, 1.0, loose, "osqp", {})
    assert not polished
    assert abs(float(y @ new)) <= 1e-12 * float(new.sum())
    assert np.all((new >= 0.0) & (new <= 1.0))


def test_a_loose_block_solver_ends_in_a_verified_row_not_a_traceback():
    """End to end: OSQP's blocks at a small C on standardized breast cancer (the case an outside trial met)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    data = load_breast_cancer()
    X, y = StandardScaler().fit_transform(data.data), 2.0 * data.target - 1.0
    sol = api.solve("kernel_dual", X, y, layer="direct", backend="osqp", C=1e-3, kernel="rbf")
    assert sol.status == OPTIMAL, sol.message
