"""The proof's free-point system solved once where the finish and the closing checks ask for the same one
(solvers.reference._equilibrated_solve remembers the last large system by a digest of every input): the same
bits as solving again, and any changed input solved afresh. Small systems, no timings."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.datasets import hard
from formulations.kernels import Kernel
from solvers import api, reference
from solvers.solution import OPTIMAL


@pytest.fixture
def counted(monkeypatch):
    """The number of real solves, with the memory emptied first."""
    calls = []
    real = reference._solve_equilibrated
    monkeypatch.setattr(reference, "_last_answer", None)
    monkeypatch.setattr(reference, "_solve_equilibrated", lambda *args: (calls.append(args[0].shape), real(*args))[1])
    return calls


def _system(m: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, m))
    return A @ A.T / m + np.eye(m), rng.normal(size=m)


def test_the_same_large_system_is_solved_once_and_gives_the_same_bits(counted):
    M, rhs = _system(1001)
    first, singular = reference._equilibrated_solve(M, rhs)
    first_copy = first.copy()
    first[:] = np.nan  # the caller's array is its own: the memory keeps a copy
    again, singular_again = reference._equilibrated_solve(M.copy(), rhs.copy())
    assert len(counted) == 1 and singular == singular_again is False
    assert np.array_equal(again, first_copy)
    fresh = reference._solve_equilibrated(M, rhs, False, True)[0]
    assert np.array_equal(again, fresh)  # what solving again gives, to the bit


@pytest.mark.parametrize("change", ["rhs", "matrix", "flag"])
def test_any_changed_input_is_solved_afresh(counted, change):
    M, rhs = _system(1001)
    reference._equilibrated_solve(M, rhs)
    M2, rhs2, least_squares = M.copy(), rhs.copy(), True
    if change == "rhs":
        rhs2[7] = np.nextafter(rhs2[7], np.inf)
    elif change == "matrix":
        M2[3, 5] = np.nextafter(M2[3, 5], np.inf)
    else:
        least_squares = False
    x, _ = reference._equilibrated_solve(M2, rhs2, least_squares=least_squares)
    assert len(counted) == 2
    assert np.array_equal(x, reference._solve_equilibrated(M2, rhs2, False, least_squares)[0])


def test_small_systems_are_not_remembered(counted):
    M, rhs = _system(50)
    reference._equilibrated_solve(M, rhs)
    reference._equilibrated_solve(M, rhs)
    assert len(counted) == 2 and reference._last_answer is None


def test_a_working_set_solve_with_many_free_points_solves_their_system_once(counted, monkeypatch):
    """gamma 10 on 10 features: K near I, every point free at C = 100. The finish proves the point from its active
    set and the closing checks prove it again: one solve of the 1,201 x 1,201 system between them (by either route:
    M equilibrated, or K_FF's own memory)."""
    real = reference._in_place_solve

    def in_place(K, yF, rhs, *diag):
        x, factored = real(K, yF, rhs, *diag)
        if x is not None:
            counted.append((K.shape[0] + 1, K.shape[1] + 1))
        return x, factored

    monkeypatch.setattr(reference, "_in_place_solve", in_place)
    ds = hard(1200, d=10, seed=3)
    sol = api.solve("kernel_dual", ds.X, ds.y.astype(float), layer="direct", backend="piqp", C=100.0,
                    kernel=Kernel("rbf", gamma=10.0), method="working_set")
    assert sol.status == OPTIMAL and sol.checks["reference"] == "proved optimum"
    large = [shape for shape in counted if shape[0] * shape[1] >= reference.REMEMBERED_ENTRIES]
    assert sol.checks["n_free_sv"] >= 1000 and large and len(large) == len(set(large))
