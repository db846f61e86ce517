"""The kernel dual's default engine (solvers.algorithms.smo_dual): the compiled SMO, then one block declared and
solved through the layer; the proved optimum in every layer, the block really through the layer's model, a warm
start, rows computed from the data, per-sample C_i, a time limit inside the SMO steps and one in the block.
Small data (a few hundred points): seconds, no timings."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from experiments.datasets import hard
from formulations import ahead_of_time
from formulations.kernels import Kernel, gram
from solvers.solution import OPTIMAL
from solvers.algorithms import compiled_gram
from solvers.algorithms import smo as smo_module
from solvers.algorithms import smo_dual
from solvers.algorithms import working_set as ws
from solvers.algorithms.working_set import subproblems
from solvers.algorithms.kernel_rows import FullGram, KernelRows
from solvers.deadline import Deadline

KERNEL = Kernel("rbf", gamma=0.1)
N = 300
#: The issue's exactness: objective and decision values within 1e-7 of the proved reference, relative.
RTOL = 1e-7


@pytest.fixture(scope="module")
def data():
    ds = hard(N, d=10, seed=5, clusters=2, flip=0.1)
    return ds.X, ds.y.astype(float), gram(KERNEL, ds.X)


@pytest.fixture(scope="module")
def reference(data):
    """The former engine (blocks through PIQP) at the `high` profile: proved optimum, per C."""
    X, y, K = data
    out = {}
    for C in (1.0, 100.0):
        sol = ws.solve(K, y, C, backend="piqp", layer="direct", q=60, validate=False, engine="blocks", profile="high")
        assert sol.status == OPTIMAL and sol.checks["reference"] == "proved optimum"
        out[C] = sol
    return out


def _assert_is_reference(sol, ref):
    assert sol.status == OPTIMAL, sol.checks.get("verdict")
    assert sol.checks["reference"] == "proved optimum"
    want = ref.checks["dual_objective"]
    assert abs(sol.checks["dual_objective"] - want) <= RTOL * abs(want)
    assert np.max(np.abs(sol.decision - ref.decision)) <= RTOL * np.max(np.abs(ref.decision))


@pytest.mark.parametrize("C", [1.0, 100.0])
@pytest.mark.parametrize("layer", ["direct", "cvxpy", "pyomo"])
def test_the_engine_reaches_the_proved_optimum_through_the_layer(data, reference, monkeypatch, layer, C):
    X, y, K = data
    blocks = []
    real = subproblems.SUBSOLVERS[layer]

    def spy(Q_BB, p, *args, **kwargs):
        blocks.append(len(p))
        return real(Q_BB, p, *args, **kwargs)

    monkeypatch.setitem(subproblems.SUBSOLVERS, layer, spy)
    sol = ws.solve(K, y, C, backend="piqp", layer=layer, q=60, validate=False)
    _assert_is_reference(sol, reference[C])
    assert sol.extras["start"] == "smo from zero" and sol.extras["smo_steps"] > 0
    # the free points as the checks count them: the proof's alpha can end a rounding away from a bound
    # (C - 1.4e-14 on one machine's BLAS), which a strict 0 < alpha < C would count as free
    assert blocks and blocks[-1] >= sol.extras["n_free_sv"]  # the last block holds the free points, through the layer
    assert sol.extras["polished_blocks"] >= 1


def test_rows_from_the_data_and_per_sample_C(data):
    X, y, K = data
    C = np.random.default_rng(1).uniform(0.5, 20.0, N)
    rows = KernelRows(KERNEL, X, cache_bytes=8 * N * 40)
    assert smo_dual.applies(rows) and smo_dual.compiled_rows(rows).capacity == 40
    on_rows = ws.solve(rows, y, C, backend="piqp", layer="direct", q=60, validate=False)
    blocks = ws.solve(K, y, C, backend="piqp", layer="direct", q=60, validate=False, engine="blocks", profile="high")
    assert blocks.status == OPTIMAL and blocks.checks["reference"] == "proved optimum"
    _assert_is_reference(on_rows, blocks)


def test_a_warm_start_is_taken(data, reference):
    X, y, K = data
    start = reference[1.0].alpha * 100.0  # feasible for C = 100 (experiments.c_path's scaling)
    sol = ws.solve(K, y, 100.0, backend="piqp", layer="direct", q=60, validate=False, alpha0=start)
    _assert_is_reference(sol, reference[100.0])
    assert sol.extras["start"] == "smo from alpha0"


def test_the_linear_kernel_keeps_the_block_loop(data):
    """LinearRows' products go through X (O(n d)): the block loop, not the compiled SMO's O(n) rows a step."""
    from solvers.algorithms.kernel_rows import LinearRows

    X, y, K = data
    assert not smo_dual.applies(LinearRows(X)) and smo_dual.applies(FullGram(K))


def test_the_time_limit_stops_the_smo_steps_and_the_block(data, monkeypatch):
    X, y, K = data
    res = ws.decompose(K, y, 100.0, backend="piqp", q=60, time_limit=Deadline(0.0))
    assert res.timed_out and not res.converged and res.stopped_in == "in the SMO steps of round 1"
    # a deadline that passes while the block is being solved: its point is not taken, the row says where
    clock = [0.0]
    real = smo_module.smo

    def smo_then_late(*args, **kwargs):
        out = real(*args, **{**kwargs, "deadline": None})
        clock[0] = 10.0
        return out

    monkeypatch.setattr(smo_dual, "smo", smo_then_late)
    res = ws.decompose(K, y, 100.0, backend="piqp", q=60, time_limit=Deadline(5.0, clock=lambda: clock[0]))
    assert res.timed_out and not res.converged
    assert res.stopped_in == "before the block of round 1 (" + res.stopped_in.split("(")[1]


def test_a_solve_after_warm_loads_no_other_compiled_smo():
    """smo.warm() (a server's preload) compiles the SMO for the argument types every kernel dual solve passes: the
    bounds as an array (smo_dual) and as one number (warm) are the same type inside, so no solve loads numba's
    cache again (tens of milliseconds a function). In a fresh process: a process keeps what it loaded."""
    script = """
import numpy as np
from experiments.datasets import hard
from solvers.algorithms import smo, working_set
from solvers.algorithms.kernel_rows import row_source
from formulations.kernels import Kernel
ds = hard(300, d=10, seed=5, clusters=2, flip=0.1)
smo.warm()
compiled = [len(getattr(smo, name).signatures) for name in ("_load", "_run", "_sync")]
sol = working_set.solve(row_source(Kernel("rbf", gamma=0.1), ds.X), ds.y.astype(float), 1.0, backend="piqp",
                        validate=False)
print(sol.status, compiled == [len(getattr(smo, name).signatures) for name in ("_load", "_run", "_sync")])
"""
    env = {**os.environ, ahead_of_time.ENV: "0"}  # numba's own loading (a build's entries compile nothing either)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-2:] == [OPTIMAL, "True"]


def test_the_checks_warm_up_starts_once_per_process(data, monkeypatch):
    """The thread that loads what comes after the SMO (the closing checks) starts once per process: loaded once, it
    needs no second one."""
    X, y, K = data
    warmed = []
    monkeypatch.setattr(smo_dual.isolation, "_WARMING", {})
    monkeypatch.setattr(smo_dual.isolation, "warm_after_smo", lambda: warmed.append(os.getpid()))
    for C in (1.0, 100.0):
        assert ws.solve(K, y, C, backend="piqp", layer="direct", q=60, validate=False).status == OPTIMAL
    assert warmed == [os.getpid()]


def test_a_tiny_C_keeps_the_block_to_its_free_points_and_a_few_bound_ones(data, monkeypatch):
    """At a tiny C every point is at C and the margins are flat: the band around the margin holds nearly every
    point. The block takes at most max(free points, NEAR_AT_LEAST) of them (SMO moves the rest), and the point
    is still the proved optimum (the former engine's, at the same C)."""
    X, y, K = data
    C = 1e-5
    ref = ws.solve(K, y, C, backend="piqp", layer="direct", q=60, validate=False, engine="blocks", profile="high")
    assert ref.status == OPTIMAL
    seen = []
    real = smo_dual._block

    def spy(alpha, g, y_, upper, *args, **kwargs):
        B = real(alpha, g, y_, upper, *args, **kwargs)
        seen.append((B.size, int(np.count_nonzero((alpha[B] > 0) & (alpha[B] < upper[B])))))
        return B

    monkeypatch.setattr(smo_dual, "_block", spy)
    sol = ws.solve(K, y, C, backend="piqp", layer="direct", q=60, validate=False)
    _assert_is_reference(sol, ref)
    assert seen and all(size - free <= max(free, smo_dual.NEAR_AT_LEAST) for size, free in seen), seen


@pytest.fixture(scope="module")
def many_free():
    """gamma 10 on 10 features: K near I, every point free at C = 100 (more than proof.TAIL_MIN_FREE), and
    their block too large to pay: SMO finishes, the proof from the active set makes the point exact."""
    ds = hard(1200, d=10, seed=3)
    return gram(Kernel("rbf", gamma=10.0), ds.X), ds.y.astype(float)


def test_many_free_points_are_proved_at_the_early_tolerance(many_free, monkeypatch):
    """The proof tried once SMO is within EARLY_PROOF_TOL ends the solve there: the same proved optimum as SMO run
    to the loop's tolerance first, in fewer SMO steps."""
    K, y = many_free
    early = ws.solve(K, y, 100.0, backend="piqp", layer="direct", validate=False)
    monkeypatch.setattr(smo_dual, "EARLY_PROOF_TOL", 0.0)  # never above the loop's tolerance: no early proof
    late = ws.solve(K, y, 100.0, backend="piqp", layer="direct", validate=False)
    _assert_is_reference(early, late)
    assert int(np.count_nonzero((early.alpha > 0) & (early.alpha < 100.0))) >= 1000
    assert early.extras["proved_at_step"] == 1 and late.extras["proved_at_step"] == 0  # round 1: by SMO from there
    assert early.extras["smo_steps"] < late.extras["smo_steps"]


def test_an_early_proof_that_does_not_settle_leaves_smo_to_finish(many_free, monkeypatch):
    """Where the proof at EARLY_PROOF_TOL does not settle the point, SMO goes on from it to the loop's tolerance
    and the finish proves that point, as without the early proof."""
    K, y = many_free
    early = ws.solve(K, y, 100.0, backend="piqp", layer="direct", validate=False)
    tried = []
    monkeypatch.setattr(smo_dual, "finished_by_proof", lambda *args, **kwargs: tried.append(1) and False)
    unsettled = ws.solve(K, y, 100.0, backend="piqp", layer="direct", validate=False)
    _assert_is_reference(unsettled, early)
    assert tried == [1] and unsettled.extras["proved_at_step"] == 0
    assert unsettled.extras["smo_steps"] > early.extras["smo_steps"]


def test_the_early_proof_s_matrix_is_mapped_in_on_the_other_core_while_smo_runs(many_free, monkeypatch):
    """Before SMO's run to EARLY_PROOF_TOL the proof's K_FF (the free points' block, with a margin for more of them)
    is mapped in ahead on another thread, and the proof's gather takes that memory: the same proved optimum. With
    one thread allowed ($SVM_THREADS=1) nothing is mapped ahead."""
    K, y = many_free
    monkeypatch.setattr(compiled_gram, "HEAP_BYTES", 2**20)  # this small K_FF through fresh memory, as a large one
    monkeypatch.setattr(compiled_gram, "THREADED_ENTRIES", 2**16)
    asked, taken = [], []
    real_ahead, real_take = compiled_gram.map_ahead, compiled_gram._take_ahead
    monkeypatch.setattr(smo_dual, "map_ahead", lambda count: asked.append(count) or real_ahead(count))
    monkeypatch.setattr(compiled_gram, "_take_ahead", lambda count: taken.append(real_take(count)) or taken[-1])
    monkeypatch.setenv(compiled_gram.THREADS_ENV, "2")
    ahead = ws.solve(K, y, 100.0, backend="piqp", layer="direct", validate=False)
    free = int(np.count_nonzero((ahead.alpha > 0) & (ahead.alpha < 100.0)))
    assert ahead.extras["proved_at_step"] == 1 and len(asked) == 1 and asked[0] >= free ** 2
    assert any(t is not None and t.size >= free ** 2 for t in taken) and not compiled_gram._AHEAD
    asked.clear()
    monkeypatch.setenv(compiled_gram.THREADS_ENV, "1")
    alone = ws.solve(K, y, 100.0, backend="piqp", layer="direct", validate=False)
    assert asked == []
    _assert_is_reference(ahead, alone)


def test_no_memory_is_mapped_ahead_where_the_proof_cannot_run(monkeypatch):
    """Rows on demand whose cache holds fewer than every row: the tail's proof is not tried there
    (proof.products_cheap), so its matrix is not mapped ahead either (at n = 50,000 it would be memory for nothing)."""
    ds = hard(1200, d=10, seed=3)
    rows = KernelRows(Kernel("rbf", gamma=10.0), ds.X, cache_bytes=8 * 1200 * 100)
    asked = []
    monkeypatch.setattr(smo_dual, "map_ahead", asked.append)
    monkeypatch.setenv(compiled_gram.THREADS_ENV, "2")
    tried = []
    real = smo_dual._smo_steps
    monkeypatch.setattr(smo_dual, "_smo_steps", lambda *args: tried.append(args[-1]) or real(*args))
    sol = ws.solve(rows, ds.y.astype(float), 100.0, backend="piqp", layer="direct", validate=False)
    assert sol.status == OPTIMAL and smo_dual.EARLY_PROOF_TOL in tried and asked == []


def test_a_few_free_points_keep_smo_s_run_to_the_loop_s_tolerance(data, monkeypatch):
    """Below proof.TAIL_MIN_FREE free points (the block loop's own threshold for its tail's proof) SMO's runs are as
    they were: none stops at EARLY_PROOF_TOL."""
    X, y, K = data
    tols = []
    real = smo_module.smo

    def spy(*args, **kwargs):
        tols.append(kwargs["tol"])
        return real(*args, **kwargs)

    monkeypatch.setattr(smo_dual, "smo", spy)
    monkeypatch.setattr(smo_dual, "block_pays", lambda size, work, layer: False)  # SMO, then the proof
    sol = ws.solve(K, y, 100.0, backend="piqp", layer="direct", validate=False)
    assert sol.status == OPTIMAL and sol.checks["reference"] == "proved optimum"
    assert smo_dual.EARLY_PROOF_TOL not in tols and len(tols) == 2, tols


def test_smo_at_a_huge_C_gives_way_to_the_block_after_its_budget():
    """300 noisy moons at C = 1e8 (rbf): SMO alone ran 244 million steps (56-90 s; LIBSVM 352 million) to its first
    tolerance. It stops at its budget (smo_dual._smo_budget), the block of the support vectors is solved through the
    solver alone, and the row is the optimum Ipopt's interior point finds, to 1e-6 of max |f|."""
    from sklearn.datasets import make_moons

    from solvers.api import solve

    X, labels = make_moons(300, noise=0.3, random_state=503)
    y = np.where(labels == 1, 1.0, -1.0)
    kernel = Kernel("rbf", gamma=1.0 / (X.var() * X.shape[1]))
    source = FullGram(gram(kernel, X), kernel, X)
    budget = smo_dual._smo_budget(source, len(y), ws.WorkingSetOptions())
    assert budget == 225_000
    assert smo_dual._smo_budget(source, len(y), ws.WorkingSetOptions(max_q=299)) is None  # no block holds them all
    sol = solve("kernel_dual", X, y, C=1e8, layer="direct", backend="clarabel", kernel=kernel)
    assert sol.status == OPTIMAL and sol.checks["reference"] == "proved optimum"
    assert sol.extras["smo_steps"] <= 2 * budget
    ref = solve("kernel_dual", X, y, C=1e8, layer="pyomo", backend="ipopt", kernel=kernel, profile="high")
    assert ref.status == OPTIMAL
    assert np.max(np.abs(sol.decision - ref.decision)) <= 1e-6 * np.max(np.abs(ref.decision))
