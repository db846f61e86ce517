"""The compiled SMO (solvers.algorithms.smo) against the project's tight, proved reference solve of the kernel
dual: the objective and the decision values, one C and per-sample C_i, a warm start, rows computed from the data
through a small cache against the whole K, each kernel's rows against formulations.kernels.gram, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.datasets import hard
from formulations.kernels import Kernel, gram
from solvers import api
from solvers.solution import OPTIMAL
from solvers.algorithms import smo as smo_module
from solvers.algorithms.smo import RowCache, smo
from solvers.deadline import Deadline

KERNEL = Kernel("rbf", gamma=0.1)
N = 200
#: The SMO's violation tolerance here: tight enough that its objective is the optimum's to OBJECTIVE_RTOL.
TOL = 1e-9
OBJECTIVE_RTOL = 1e-9
#: Decision values (K u + b, b from the free points' margins) against the reference's, relative to their largest.
DECISION_RTOL = 1e-7


@pytest.fixture(scope="module")
def data():
    ds = hard(N, d=10, seed=4, clusters=2, flip=0.1)
    return ds.X, ds.y.astype(float), gram(KERNEL, ds.X)


def _reference(K, y, C):
    sol = api.solve("kernel_dual", None, y, K=K, layer="cvxpy", backend="piqp", C=C, profile="high",
                    method="full")
    assert sol.status == OPTIMAL and sol.checks["reference"] == "proved optimum"
    return sol


def _objective(K, y, alpha):
    return float(alpha.sum() - 0.5 * (y * alpha) @ K @ (y * alpha))


def _decision(K, y, alpha, C):
    Ku = K @ (y * alpha)
    free = (alpha > 0) & (alpha < C)
    b = float(np.mean(y[free] - Ku[free]))
    return Ku + b


@pytest.mark.parametrize("C", [0.1, 10.0, 1000.0])
def test_smo_reaches_the_proved_optimum(data, C):
    X, y, K = data
    ref = _reference(K, y, C)
    res = smo(K, y, C, tol=TOL)
    assert res.converged and res.violation <= TOL
    assert np.all((res.alpha >= 0) & (res.alpha <= C))
    assert abs(y @ res.alpha) <= 1e-12 * res.alpha.sum()
    want = ref.checks["dual_objective"]
    assert abs(_objective(K, y, res.alpha) - want) <= OBJECTIVE_RTOL * abs(want)
    decision = _decision(K, y, res.alpha, C)
    assert np.max(np.abs(decision - ref.decision)) <= DECISION_RTOL * np.max(np.abs(ref.decision))
    # the gradient it keeps is Q alpha - 1 to rounding
    G = y * (K @ (y * res.alpha)) - 1.0
    assert np.max(np.abs(res.grad - G)) <= 1e-12 * np.max(np.abs(K)) * res.alpha.sum()


def test_per_sample_bounds(data):
    X, y, K = data
    C = np.random.default_rng(0).uniform(0.5, 5.0, len(y))
    ref = _reference(K, y, C)
    res = smo(K, y, C, tol=TOL)
    assert res.converged and np.all((res.alpha >= 0) & (res.alpha <= C))
    want = ref.checks["dual_objective"]
    assert abs(_objective(K, y, res.alpha) - want) <= OBJECTIVE_RTOL * abs(want)


def test_warm_start_and_its_gradient(data):
    X, y, K = data
    cold = smo(K, y, 10.0, tol=TOL)
    start = smo(K, y, 1.0, tol=TOL)
    warm = smo(K, y, 10.0, alpha0=start.alpha * 10.0, tol=TOL)
    given = smo(K, y, 10.0, alpha0=start.alpha * 10.0, grad0=y * (K @ (y * start.alpha * 10.0)) - 1.0, tol=TOL)
    assert warm.converged and warm.iterations < cold.iterations
    assert given.iterations == warm.iterations
    scale = abs(_objective(K, y, cold.alpha))
    assert abs(_objective(K, y, warm.alpha) - _objective(K, y, cold.alpha)) <= OBJECTIVE_RTOL * scale


@pytest.mark.parametrize("kernel", [KERNEL, Kernel("linear"), Kernel("poly", degree=2, gamma=0.1, coef0=1.0),
                                    Kernel("sigmoid", gamma=0.01, coef0=-1.0)])
def test_rows_from_the_data_match_the_gram_matrix(data, kernel):
    X, y, _ = data
    K = gram(kernel, X)
    rows = RowCache.from_data(kernel, X, cache_bytes=10 * 8 * N)  # 10 rows: evictions on every step
    for i in (0, 7, N - 1):
        assert np.max(np.abs(rows.row(i) - K[i])) <= 1e-13 * max(1e-300, np.max(np.abs(K)))
    assert np.max(np.abs(rows.diag - np.diag(K))) <= 1e-13 * np.max(np.abs(K))


def test_cached_rows_give_the_whole_matrix_answer(data):
    X, y, K = data
    whole = smo(K, y, 10.0, tol=TOL)
    rows = RowCache.from_data(KERNEL, X, cache_bytes=10 * 8 * N)
    cached = smo(rows, y, 10.0, tol=TOL)
    assert cached.converged and rows.capacity == 10 and cached.rows_computed > N
    scale = abs(_objective(K, y, whole.alpha))
    assert abs(_objective(K, y, cached.alpha) - _objective(K, y, whole.alpha)) <= OBJECTIVE_RTOL * scale


@pytest.mark.parametrize("case", ["matrix", "rows", "warm start", "per-sample C", "no shrinking", "long"])
def test_one_call_takes_the_steps_the_chunks_take(data, case, monkeypatch):
    """Without a deadline smo's first chunk is one compiled call (_first_chunk), and a solve it does not finish goes
    on in chunks ("long": a first chunk of 7 steps); with a deadline, chunks between which it looks at the deadline
    (_in_chunks): the same steps to the bit, wherever the chunks end (here every 100 steps)."""
    X, y, K = data
    C = np.where(y > 0, 3.0, 0.5) if case == "per-sample C" else 10.0
    kwargs = {"tol": TOL, "shrinking": case != "no shrinking"}
    if case == "warm start":  # one point of each class at 0.5: feasible (y'alpha = 0)
        first, second = np.flatnonzero(y > 0)[0], np.flatnonzero(y < 0)[0]
        kwargs["alpha0"] = np.zeros(N)
        kwargs["alpha0"][[first, second]] = 0.5

    def source():
        return RowCache.from_data(KERNEL, X, cache_bytes=30 * 8 * N) if case == "rows" else K

    if case == "long":
        monkeypatch.setattr(smo_module, "FIRST_CHUNK", 7)
    whole = smo(source(), y, C, **kwargs)
    monkeypatch.setattr(smo_module, "FIRST_CHUNK", 7)
    monkeypatch.setattr(smo_module, "CHUNK_SECONDS", 1e-9)  # every later chunk the fewest steps, 100
    chunked = smo(source(), y, C, deadline=Deadline(3600.0), **kwargs)
    assert whole.converged and chunked.converged and whole.iterations == chunked.iterations > 200
    assert np.array_equal(whole.alpha, chunked.alpha) and np.array_equal(whole.grad, chunked.grad)
    assert whole.violation == chunked.violation and whole.rows_computed == chunked.rows_computed


def test_a_small_solve_without_a_deadline_is_one_compiled_call(data, monkeypatch):
    """The chunked loop (and its looks at the clock) only where a deadline, a switch of rows or a solve longer than
    its first chunk needs it: a thread running Python beside a small solve waits once for it."""
    X, y, K = data
    chunked = []
    real = smo_module._in_chunks
    monkeypatch.setattr(smo_module, "_in_chunks", lambda *args: chunked.append(1) or real(*args))
    assert smo(K, y, 1.0, tol=TOL).converged and not chunked
    assert smo(K, y, 1.0, tol=TOL, deadline=Deadline(3600.0)).converged and chunked == [1]
    monkeypatch.setattr(smo_module, "FIRST_CHUNK", 7)
    assert smo(K, y, 1.0, tol=TOL).converged and chunked == [1, 1]


def test_a_passed_deadline_takes_no_step(data):
    X, y, K = data
    res = smo(K, y, 1.0, deadline=Deadline(0.0))
    assert res.timed_out and not res.converged and res.iterations == 0 and not res.alpha.any()


@pytest.mark.parametrize("kwargs, message", [
    ({"y": np.zeros(N)}, "labels"),
    ({"upper": -1.0}, "upper bound"),
    ({"alpha0": np.full(N, 2.0)}, "alpha0"),
    ({"tol": 0.0}, "tol"),
    ({"y": np.ones(N - 1)}, "labels"),
    ({"upper": np.r_[1.0, np.full(N - 1, np.inf)]}, "upper bound"),
    ({"upper": np.r_[np.nan, np.ones(N - 1)]}, "upper bound"),
    ({"alpha0": np.r_[np.nan, np.zeros(N - 1)]}, "alpha0 must"),
    ({"alpha0": np.r_[-1e-300, np.zeros(N - 1)]}, "alpha0 must"),
    ({"alpha0": np.zeros(N + 1)}, "alpha0 must"),
    ({"alpha0": np.zeros(N + 1), "upper": 0.0}, "upper bound"),
    ({"alpha0": np.r_[0.5, np.zeros(N - 1)]}, "infeasible"),
    ({"grad0": np.r_[np.nan, np.zeros(N - 1)]}, "grad0"),
])
def test_bad_input_is_one_clear_error(data, kwargs, message):
    X, y, K = data
    args = {"y": y, "upper": 1.0, **kwargs}
    with pytest.raises(ValueError, match=message):
        smo(K, **args)


def test_the_compiled_rbf_gram_matrix_is_the_project_s(data):
    X, y, K = data
    from solvers.algorithms.compiled_gram import rbf_gram

    G = rbf_gram(0.1, X + 1e3)  # far from the origin: the differences keep it exact
    assert np.array_equal(G, G.T) and np.all(np.diag(G) == 1.0)
    assert np.max(np.abs(G - K)) <= 1e-13


def test_the_gram_matrix_magnitudes_read_rows_in_place(data):
    """FullGram.magnitudes (the closing proof's rounding bound) is the base Gram's sum_j |K_ij u_j|, from rows."""
    from solvers.algorithms.kernel_rows import FullGram
    from solvers.reference import Gram

    X, y, K = data
    u = np.where(np.arange(N) % 3 == 0, -2.0 * y, 0.0)
    want = Gram(None, K).magnitudes(u)
    assert np.max(np.abs(FullGram(K).magnitudes(u) - want) / want) <= 1e-13


def test_an_rbf_gram_matrix_magnitudes_are_one_product_and_a_signed_one_s_are_not(data):
    """An rbf's FullGram takes sum_j |K_ij u_j| as K |u| (its entries are >= 0) where u is mostly nonzero: the compiled
    pass's sums to rounding; a precomputed K with negative entries keeps |K| (K |u| would be far below it there)."""
    from solvers.algorithms.compiled_gram import abs_combination
    from solvers.algorithms.kernel_rows import FullGram
    from formulations.kernels import Kernel

    X, y, K = data
    u = np.where(np.arange(N) % 3 == 0, 0.0, -2.0 * y)
    nz = np.flatnonzero(u)
    rbf = FullGram(K, Kernel("rbf", gamma=0.1), X)
    assert rbf.nonnegative() and not FullGram(K).nonnegative()
    want = abs_combination(K, nz, u[nz])
    assert np.max(np.abs(rbf.magnitudes(u) - want) / want) <= 1e-13
    signed = K - 0.5
    want = abs_combination(signed, nz, u[nz])
    assert np.array_equal(FullGram(signed).magnitudes(u), want)
    assert np.min(want - signed @ np.abs(u)) > 1.0
