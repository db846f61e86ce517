"""The closing checks' compiled parts give what their whole-array definitions give: the proof's equilibration
(solvers.reference._ruiz) to the bit, and a whole closing (the recovery of b, the hinge interval, the proof) the
same verdict and residuals on right points and on perturbed ones."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from sklearn.datasets import load_digits

from experiments.estimator_gram import SharedGram
from formulations import recovery
from formulations.kernels import Kernel
from solvers import reference
from solvers.algorithms import smo_gram
from solvers.algorithms.smo import smo
from solvers.deadline import NEVER
from solvers.profiles import get_profile
from solvers.reference import _ruiz
from tests.test_recovery import _numpy_interval


def _ruiz_by_arrays(M, rounds):
    """Ruiz's scaling as whole-array numpy steps: each row and then each column divided by the square root of its
    largest |entry| (both from the same A), 0 left as 1."""
    r, c, A = np.ones(M.shape[0]), np.ones(M.shape[1]), M.copy()
    for _ in range(rounds):
        row, col = np.sqrt(np.max(np.abs(A), axis=1)), np.sqrt(np.max(np.abs(A), axis=0))
        row[row == 0] = 1.0
        col[col == 0] = 1.0
        A /= row[:, None]
        A /= col[None, :]
        r /= row
        c /= col
    return A, r, c


def test_equilibration_is_the_numpy_steps_to_the_bit():
    """Rows and columns 1e-12 to 1e12 apart, zero rows, a nan and an inf: the same A, r and c, bit for bit."""
    rng = np.random.default_rng(1)
    with np.errstate(all="ignore"):
        for _ in range(500):
            m, k = rng.integers(1, 30, size=2)
            M = (rng.normal(size=(m, k)) * 10.0 ** rng.integers(-12, 12, size=(1, k))
                 * 10.0 ** rng.integers(-6, 6, size=(m, 1)))
            if rng.random() < 0.2:
                M[rng.integers(m)] = 0.0
            if rng.random() < 0.1:
                M[rng.integers(m), rng.integers(k)] = rng.choice([np.nan, np.inf])
            for got, want in zip(_ruiz(M, 5), _ruiz_by_arrays(M, 5)):
                assert np.array_equal(got, want, equal_nan=True)


def _recover_bias_by_arrays(alpha, y, g, C):
    """recover_bias by array steps throughout (its interval by _numpy_interval, not the compiled walk)."""
    weights = C if isinstance(C, np.ndarray) else np.ones(len(y))
    lo, hi = _numpy_interval(y, g, weights)
    b0 = recovery._middle(lo, hi)
    codes = recovery.classify(alpha, y, g + (0.0 if math.isnan(b0) else b0), C)
    lower, upper = recovery.kkt_interval(y, g, codes)
    free = codes == recovery.FREE
    if free.any():
        C_free = C[free] if isinstance(C, np.ndarray) else C
        room = np.maximum(alpha[free] if np.isinf(C_free).all() else np.minimum(alpha[free], C_free - alpha[free]),
                          0.0)
        values = y[free] - g[free]
        b = float(np.average(values, weights=room)) if room.sum() > 0 else float(values.mean())
        b = float(np.clip(b, min(lower, upper), max(lower, upper)))
        return recovery.BiasEstimate(b, recovery.B_FREE_SV, int(free.sum()), lower, upper)
    b = recovery._middle(lower, upper)
    rule = recovery.B_NONE if math.isnan(b) else recovery.B_INTERVAL
    return recovery.BiasEstimate(b, rule, 0, lower, upper)


@pytest.fixture(scope="module")
def digits_pairs():
    """Four digits pairs (rbf, C = 1) on blocks of the fit's Gram matrix, each with SMO's point."""
    X, y = load_digits(return_X_y=True)
    shared = SharedGram.of(Kernel("rbf", gamma=1 / (X.shape[1] * X.var())), X, np.arange(len(y)), y, 10)
    pairs = []
    for i, j in [(0, 1), (3, 8), (1, 7), (5, 9)]:
        _, signs, block = shared.pair(i, j)
        pairs.append((block, signs, smo(block.K, signs, 1.0, tol=1e-6)))
    return pairs


def _closings(pairs, perturb: bool):
    """Each pair's point closed as smo_gram closes it; perturb: alpha moved by 1e-3 of itself (at random)."""
    rng = np.random.default_rng(4)
    out = []
    for block, signs, res in pairs:
        alpha = res.alpha * (1 + 1e-3 * rng.normal(size=res.alpha.size)) if perturb else res.alpha
        point = replace(res, alpha=np.clip(alpha, 0.0, 1.0))
        out.append(smo_gram._closed(point, block, signs, 1.0, get_profile("default"), 1, 1e-6, 0.0, NEVER))
    return out


@pytest.mark.parametrize("perturb", [False, True])
def test_closing_gives_the_array_steps_verdict_and_residuals(digits_pairs, monkeypatch, perturb):
    """SMO's points on digits pairs (verified) and the same points with alpha moved by 1e-3 of itself (refused):
    the compiled recovery, hinge interval and equilibration give the same status, b and every residual of the
    checks as their array steps, to 1e-12 of each residual's size (the ones made by sums to the bit)."""
    fast = _closings(digits_pairs, perturb)
    monkeypatch.setattr(reference, "_ruiz", _ruiz_by_arrays)
    monkeypatch.setattr(reference, "hinge_argmin", lambda y, g, w=None: _numpy_interval(
        y, g, np.ones(len(y)) if w is None else w))
    monkeypatch.setattr(recovery, "recover_bias", _recover_bias_by_arrays)
    slow = _closings(digits_pairs, perturb)
    for a, b in zip(fast, slow):
        assert a.status == b.status == ("optimal_inaccurate" if perturb else "optimal")
        assert a.checks["verdict"] == b.checks["verdict"]
        assert a.b == b.b
        for key, value in b.checks.items():
            if isinstance(value, float):
                assert a.checks[key] == pytest.approx(value, rel=1e-12, abs=0, nan_ok=True), key
            else:
                assert a.checks[key] == value, key
