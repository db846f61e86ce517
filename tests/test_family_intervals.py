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


def test_a_light_point_moves_its_groups_multiplier_off_a_shared_interval():
    """Two points at 0 with s = -1 (each asks t >= h_i), one of bound 1e-10 of the other's: every
    t >= max h is optimal, however small the light point's price. A slack of 1e-9 of the prices' sum would merge
    its price into the heavy one's and call [h_0, h_1] optimal, t = 0.5, which breaks the light point's own bound."""
    from formulations.family.common import recover_multiplier

    U = np.array([1.0, 1e-10])
    t, lo, hi = recover_multiplier(np.array([0.0, 1.0]), -np.ones(2), np.zeros(2), U)
    assert (t, lo, hi) == (1.0, 1.0, np.inf)


def test_each_point_is_held_to_its_own_bound():
    """box_residuals: a_i over its bound U_i by 10% is a dual feasibility residual of 0.1 whatever the other bounds
    (measured against max U it would be 1e-7 here, below any check's bar); under 0 likewise by U_i."""
    from formulations.family.common import box_residuals

    U = np.array([1.0, 1e-6, 1e-6])
    a = np.array([0.5, 1.1e-6, -1e-7])
    feasibility, _ = box_residuals(a, U, np.zeros(3), 1.0)
    np.testing.assert_allclose(feasibility, [0.0, 0.1, 0.1], rtol=1e-9, atol=0)
