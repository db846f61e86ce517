"""The kernel dual's block and its polish bounded by what finishing with SMO costs (solvers.algorithms.smo_dual
block_pays, working_set.polish's POLISH_FACTORS). Two far clusters with gamma "scale": K is nearly constant within
each half, every point lies within the band of the margin and the block was the whole problem, solved densely and
polished one bound at a time, where SMO needed a few more steps. A large gamma: K near the identity, most points
free after few SMO steps, which finish it for less than a dense block of them. Small data, seconds, no timings."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import SVC

from experiments.datasets import hard
from formulations.kernels import Kernel, gram
from solvers.api import solve
from solvers.solution import OPTIMAL
from solvers.algorithms import smo_dual
from solvers.algorithms.working_set import polish, subproblems

#: The decision values' agreement with LIBSVM at a tight tolerance, relative to their largest: LIBSVM's
#: single-precision kernel cache leaves ~1e-6 on these data.
DECISION_RTOL = 1e-5


def _far_clusters(n: int, offset: float = 1e3, gamma_times: float = 1.0):
    """The hard family with alternate rows shifted by +-offset (two far clusters; 0: none), y in {-1, +1}, and
    gamma_times times gamma "scale"."""
    ds = hard(n, d=8, seed=9)
    X = np.asarray(ds.X, float).copy()
    X[::2] += offset
    X[1::2] -= offset
    return X, np.where(np.asarray(ds.y) > 0, 1.0, -1.0), gamma_times / (X.shape[1] * X.var())


def _assert_agrees_with_svc(sol, X, y, C, gamma):
    assert sol.status == OPTIMAL and sol.checks["reference"] == "proved optimum"
    reference = SVC(C=C, gamma=gamma, tol=1e-8).fit(X, y).decision_function(X)
    assert np.max(np.abs(sol.decision - reference)) <= DECISION_RTOL * np.max(np.abs(reference))


def _recording_blocks(monkeypatch) -> list[int]:
    """The sizes of the blocks smo_dual hands to the layer's solve, as they are solved."""
    sizes: list[int] = []
    solve_block = smo_dual.subproblems.solve_block

    def recorded(src, y, alpha, g_B, B, *args, **kwargs):
        sizes.append(int(B.size))
        return solve_block(src, y, alpha, g_B, B, *args, **kwargs)

    monkeypatch.setattr(smo_dual.subproblems, "solve_block", recorded)
    return sizes


def test_far_clusters_are_finished_by_smo_and_the_proof_not_by_a_dense_block(monkeypatch):
    """n = 1,000, C = 1: the band holds every point (a block of ~1,000 after ~500 SMO steps); SMO to the loop's
    tolerance and the proof from the active set give the optimum, agreeing with SVC(tol=1e-8)."""
    X, y, gamma = _far_clusters(1000)
    sizes = _recording_blocks(monkeypatch)
    sol = solve("kernel_dual", X, y, layer="direct", backend="piqp", C=1.0, kernel=Kernel("rbf", gamma=gamma),
                method="working_set")
    assert all(size <= smo_dual.BLOCK_ALWAYS for size in sizes), sizes  # no dense solve of the whole problem
    assert sol.extras["smo_steps"] > 0
    _assert_agrees_with_svc(sol, X, y, 1.0, gamma)


def test_many_free_points_after_few_smo_steps_are_finished_by_smo_and_the_proof(monkeypatch):
    """n = 1,200, ten times gamma "scale", C = 1: ~820 free points after ~1,300 steps, a block of ~840 (|B|^3 some
    370 times SMO's n per step). No block is solved: SMO to the loop's tolerance and the proof give the optimum."""
    X, y, gamma = _far_clusters(1200, offset=0.0, gamma_times=10.0)
    sizes = _recording_blocks(monkeypatch)
    sol = solve("kernel_dual", X, y, layer="direct", backend="piqp", C=1.0, kernel=Kernel("rbf", gamma=gamma),
                method="working_set")
    assert sizes == []
    assert sol.extras["polished_blocks"] == 0 and sol.extras["smo_steps"] > 0
    _assert_agrees_with_svc(sol, X, y, 1.0, gamma)


def test_a_block_that_pays_is_still_solved_and_polished(monkeypatch):
    """The hard family at C = 100 (n = 2,000): SMO's steps to 1e-2 are many and its free points ~700; the
    block of them, solved through the layer and polished, is what finishes it."""
    ds = hard(2000, d=10, seed=0, clusters=3, flip=0.08, separation=0.85, positive=0.4)
    sizes = _recording_blocks(monkeypatch)
    sol = solve("kernel_dual", ds.X, ds.y.astype(float), layer="direct", backend="piqp", C=100.0,
                kernel=Kernel("rbf", gamma=0.1), method="working_set")
    assert sol.status == OPTIMAL
    assert sizes and sizes[0] > smo_dual.BLOCK_ALWAYS
    assert sol.extras["polished_blocks"] >= 1


@pytest.mark.parametrize("size, steps, pays", [(400, 1, True), (722, 13_319, True), (2_000, 2_265, False)])
def test_block_pays_compares_the_dense_solve_with_smo_so_far(size, steps, pays):
    """A small block always; a larger one where |B|^3 is within BLOCK_PAYS times SMO's n per step (n = 5,000:
    the hard family's block at C = 10, the far clusters' at C = 1)."""
    assert smo_dual.block_pays(size, 5000 * steps) is pays


@pytest.mark.parametrize("layer, pays", [("direct", True), ("pyomo", False), ("cvxpy", False)])
def test_a_block_s_model_counts_against_it_in_its_layer(layer, pays):
    """800 points after 3,107 steps at n = 5,000 (the d = 30 set at C = 1, its rows from the whole matrix): within
    BLOCK_PAYS as a dense solve alone, not once Pyomo's or cvxpy's model of its 640,000 entries is added."""
    assert smo_dual.block_pays(800, 5000 * 3107, layer) is pays
    assert smo_dual.block_pays(smo_dual.BLOCK_ALWAYS, 0.0, layer)  # a small block whatever it costs


def test_the_d30_block_at_c1_does_not_pay():
    """That set's own block, 889 points: at 0.91 of 50 times SMO's work it cost more than SMO's finish (BLOCK_PAYS
    40, not 50)."""
    assert not smo_dual.block_pays(889, 5000 * 3107)


def test_every_layer_has_a_block_model_cost():
    assert set(smo_dual.LAYER_ENTRY_COST) == set(subproblems.SUBSOLVERS)


def test_the_polish_stops_within_its_factor_budget(monkeypatch):
    """A far-cluster block of 1,000 points from an interior feasible point: the optimum has nearly every point on
    a bound and the polish reaches them one per step (a factor per MAX_FIXED of them). It gives up (None: the
    loop keeps the solver's point) before its factors exceed POLISH_FACTORS whole-block ones, where the caller
    gives it that budget (the SMO engine); the loop of blocks gives none."""
    X, y, gamma = _far_clusters(1000)
    Q = gram(Kernel("rbf", gamma=gamma), X) * np.outer(y, y)
    start = np.random.default_rng(0).uniform(0.2, 0.8, len(y))
    factored: list[int] = []

    class Counted(polish._ProjectedSteps):
        def __init__(self, Q_FF, y_F, delta):
            factored.append(len(y_F))
            super().__init__(Q_FF, y_F, delta)

    monkeypatch.setattr(polish, "_ProjectedSteps", Counted)
    budget = polish.factor_budget(len(y))
    assert polish.polish_block(Q, -np.ones(len(y)), y, float(y @ start), 1.0, start, budget=budget) is None
    assert 0 < sum(float(f) ** 3 for f in factored) <= budget == polish.POLISH_FACTORS * float(len(y)) ** 3


def test_rows_that_became_the_whole_matrix_do_not_count_as_work_to_come(monkeypatch):
    """d = 50, n = 2,000, C = 1: SMO's rows become the whole matrix, and about a third of the points are free. The
    rows computed before the switch (n d each) no longer count as SMO's work to come, so no dense block of the
    free points is chosen (it was: 680 points, slower than SMO's remaining steps, which only read rows); SMO to the
    loop's tolerance and the proof give the optimum, agreeing with SVC."""
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler

    X, label = make_classification(2000, 50, n_informative=10, n_clusters_per_class=3, flip_y=0.08, weights=[0.6],
                                   class_sep=0.85, random_state=16)
    X, y = StandardScaler().fit_transform(X), np.where(label == 1, 1.0, -1.0)
    sizes = _recording_blocks(monkeypatch)
    sol = solve("kernel_dual", X, y, layer="direct", backend="piqp", C=1.0, kernel=Kernel("rbf", gamma=1 / 50),
                method="working_set")
    assert sol.extras["gram_formed"]
    assert all(size <= smo_dual.BLOCK_ALWAYS for size in sizes), sizes
    _assert_agrees_with_svc(sol, X, y, 1.0, 1 / 50)
