"""The kernel audit's compiled rbf pass (solvers.kernel_audit.rbf_excess) against exact_values' arrays: the same
excess, a wrong entry found, a nan entry never taken as right."""

from __future__ import annotations

import numpy as np
import pytest

from formulations.kernels import Kernel
from solvers.kernel_audit import exact_values, rbf_excess

KERNEL = Kernel("rbf", gamma=0.7)


@pytest.fixture(scope="module")
def block():
    rng = np.random.default_rng(5)
    A, B = rng.normal(size=(40, 6)) + 3.0, rng.normal(size=(90, 6)) + 3.0
    values, allowed = exact_values(KERNEL, A, B)
    return A, B, values, allowed, rng.random(90)


def _by_arrays(used, values, allowed, weights):
    return float(np.max(np.maximum(np.abs(used - values) - allowed, 0.0) @ weights))


def test_right_values_have_no_excess(block):
    A, B, values, allowed, weights = block
    nudged = values + 0.5 * allowed * np.sign(np.sin(np.arange(values.size))).reshape(values.shape)
    assert rbf_excess(KERNEL.gamma, A, B, nudged, weights) == 0.0


def test_wrong_values_give_the_arrays_excess(block):
    A, B, values, allowed, weights = block
    rng = np.random.default_rng(6)
    used = values * (1.0 + rng.normal(size=values.shape) * 1e-9)  # far past the allowance (~1e-13)
    used[7, 11] += 0.25
    want = _by_arrays(used, values, allowed, weights)
    assert want > 0.2 * weights[11]
    assert abs(rbf_excess(KERNEL.gamma, A, B, used, weights) - want) <= 1e-12 * want


def test_a_nan_entry_is_never_right(block):
    A, B, values, allowed, weights = block
    used = values.copy()
    used[3, 4] = np.nan
    assert np.isnan(rbf_excess(KERNEL.gamma, A, B, used, weights))
