"""The kernel audit's compiled rbf pass (solvers.kernel_audit.rbf_excess) against exact_values' arrays: the same
excess, a wrong entry found, a nan entry never taken as right; kernel_error's sample within its cost budget."""

from __future__ import annotations

import numpy as np
import pytest

from formulations.kernels import Kernel
from solvers import kernel_audit
from solvers.algorithms.kernel_rows import FullGram
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


@pytest.mark.parametrize("d", [2, 10, 40])
def test_the_sample_fills_the_cost_budget_at_any_d(d):
    """Entries x (d + ENTRY_COST) within AUDIT_COST and most of it used: an entry's exp costs as much as many
    features, so at d = 2 the audit does not take five times d = 10's entries (nor d = 40 too few)."""
    rng = np.random.default_rng(d)
    X = rng.normal(size=(2000, d))
    kernel = Kernel("rbf", gamma=1.0 / d)
    u = np.where(rng.random(2000) < 0.5, rng.normal(size=2000), 0.0)
    margins, codes = rng.normal(size=2000), np.zeros(2000, dtype=np.int8)
    worst, entries = kernel_audit.kernel_error(kernel, X, FullGram(kernel_audit.rbf_values(kernel.gamma, X, X)[1]),
                                               u, margins, codes, 1.0)
    budget = kernel_audit.AUDIT_COST / (d + kernel_audit.ENTRY_COST)
    assert 0.5 * budget <= entries <= budget
    assert worst <= 1e-12  # the matrix was computed by the audit's own formula
