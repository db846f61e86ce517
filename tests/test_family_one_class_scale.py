"""The one-class SVM's decision function is judged on its own spread, not on rho's size.

Digits in units 1e3 times smaller, gamma = 1: every K_ij is within 1e-3 of 1, so f = K alpha - rho lives in a
spread about 6e-4 of rho. Measured against rho, PIQP's point (sum alpha = 1 - 3.6e-6, decision values 0.35% of
their spread off) was `optimal` (2.1e-4 off the proved optimum). Each row here is compared with the optimum the project proves.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

from formulations.kernels import Kernel
from solvers.family import solve

TOL = 1e-4  # the default profile's


@pytest.fixture(scope="module")
def tiny_units():
    return load_digits().data[:600] * 1e-3


@pytest.fixture(scope="module")
def tight(tiny_units):
    sol = solve("one_class_kernel_dual", tiny_units, None, layer="cvxpy", backend="clarabel", nu=0.1,
                kernel=Kernel("rbf", gamma=1.0), profile="high", method="full")
    return sol.extras["proved"]["decision"]  # the optimum proved from its active set (the point itself may be off)


@pytest.mark.parametrize("layer, backend", [("pyomo", "piqp"), ("cvxpy", "clarabel"), ("pyomo", "daqp")])
def test_an_optimal_row_is_right_on_the_spread_of_f(tiny_units, tight, layer, backend):
    sol = solve("one_class_kernel_dual", tiny_units, None, layer=layer, backend=backend, nu=0.1,
                kernel=Kernel("rbf", gamma=1.0), method="full")
    spread = np.ptp(tight)
    error = np.max(np.abs(sol.decision - tight)) / spread if sol.decision is not None else np.inf
    if sol.status == "optimal":  # else refused: what matters is that no row off the optimum is called optimal
        assert error <= 10 * TOL, (sol.status, error)  # the checks' bar, with room for the reference's own error


def test_the_piqp_point_that_was_called_optimal_is_refused(tiny_units, tight):
    sol = solve("one_class_kernel_dual", tiny_units, None, layer="pyomo", backend="piqp", nu=0.1,
                kernel=Kernel("rbf", gamma=1.0), method="full")
    error = np.max(np.abs(sol.decision - tight)) / np.ptp(tight)
    assert error > TOL and sol.status == "optimal_inaccurate", (sol.status, error)
