"""b, rho and eps where no multiplier of their group is free: an interval of optimal values, not one value.

nu-SVR on diabetes (100 points, linear kernel, C = 1000, nu = 0.8) has no free alpha* at its optimum: b - eps may
be anywhere in an interval 2.6 wide, and the backends' primals report different points of it (b from 149.88 to
150.53). Each row is held against the interval the proved optimum allows (`extras["b_lower"]`, ..., as the C-SVM
reports b's), so all of them are verified, and a b moved outside it is refused.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from experiments.family_peers import load
from formulations.family import MEMBERS
from formulations.family.common import FamilyData
from solvers.family import close, solve

X, Y = load("diabetes", 100)
PARAMS = {"C": 1000.0, "nu": 0.8}
ROWS = [("nu_svr_primal", "cvxpy", "clarabel"), ("nu_svr_primal", "cvxpy", "piqp"), ("nu_svr_primal", "cvxpy", "daqp"),
        ("nu_svr_kernel_dual", "pyomo", "piqp")]


@pytest.fixture(scope="module")
def rows():
    return [solve(f, X, Y, layer=layer, backend=backend, profile="high", kernel="linear" if "dual" in f else None,
                  **PARAMS) for f, layer, backend in ROWS]


def test_every_backend_is_verified_inside_the_optimal_interval(rows):
    e = rows[0].extras
    assert e["epsilon_upper"] - e["epsilon_lower"] > 1.0  # not unique: b - eps in an interval 2.6 wide
    lo_u, hi_u = e["proved"]["multiplier_intervals"]["b + eps"]
    lo_d, hi_d = e["proved"]["multiplier_intervals"]["b - eps"]
    assert hi_u - lo_u <= 1e-9 * abs(hi_u)  # a free alpha pins b + eps
    size = np.max(np.abs(Y - Y.mean()))
    for sol in rows:
        assert sol.status == "optimal", (sol.formulation, sol.backend, sol.checks["verdict"])
        up, down = sol.b + sol.extras["epsilon"], sol.b - sol.extras["epsilon"]
        assert lo_u - 1e-6 * size <= up <= hi_u + 1e-6 * size
        assert lo_d - 1e-6 * size <= down <= hi_d + 1e-6 * size
        assert (sol.extras["b_lower"], sol.extras["b_upper"]) == pytest.approx((e["b_lower"], e["b_upper"]), rel=1e-9)
    primal_b = [sol.b for sol in rows if sol.formulation == "nu_svr_primal"]
    assert np.ptp(primal_b) > 0.1  # the backends' points of the interval differ, each verified


def test_a_b_outside_the_interval_is_refused(rows):
    """The first primal row's point judged again as it is (verified), and with b and eps moved so that b - eps
    leaves its interval by 1e-3 of the targets' spread (w, so f - b, and b + eps unchanged): refused, naming it."""
    sol = rows[0]
    e = sol.extras
    values = {"w": sol.w, "b": sol.b, "eps": e["epsilon"], "alpha": sol.alpha, "alpha_star": e["alpha_star"]}
    member = MEMBERS["nu_svr"]
    again = close(copy.deepcopy(sol), values, FamilyData(Y, X), PARAMS, "primal", member, 1e-6)
    assert again.checks["verified"], again.checks["verdict"]
    lo_d = e["proved"]["multiplier_intervals"]["b - eps"][0]
    shift = (sol.b - e["epsilon"]) - lo_d + 1e-3 * np.max(np.abs(Y - Y.mean()))
    moved = {**values, "b": values["b"] - shift / 2, "eps": values["eps"] + shift / 2}  # b + eps kept
    refused = close(copy.deepcopy(sol), moved, FamilyData(Y, X), PARAMS, "primal", member, 1e-6)
    assert not refused.checks["verified"]
    assert "multipliers outside the optimal interval" in refused.checks["verdict"]
