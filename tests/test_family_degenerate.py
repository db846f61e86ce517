"""Right points of the family on degenerate nu-SVC pairs are proved, and points moved off them are still refused."""

from __future__ import annotations

import numpy as np
import pytest
import sklearn.datasets

from formulations.family.common import FamilyData
from tests.test_family_checks import _claimed
from solvers.family import solve


def _iris_pair(dropped: int):
    """Two standardized iris classes (the third dropped), the larger label as +1."""
    data = sklearn.datasets.load_iris()
    keep = data.target != dropped
    X = data.data[keep]
    return (X - X.mean(axis=0)) / X.std(axis=0), np.where(data.target[keep] == data.target[keep].max(), 1.0, -1.0)


@pytest.mark.parametrize("formulation", ["nu_svc_primal", "nu_svc_kernel_dual"])
def test_an_inaccurate_points_too_large_free_set_is_proved(formulation):
    """Versicolor against virginica at nu = 0.15 with the linear kernel: PIQP's point at the default profile
    suggests more free points than the 4 features and 2 equalities can hold, its least-squares step leaves the box
    by hundreds of times the bound, and moving every coordinate that crossed a bound empties the free set. The
    proof reaches the optimum, the row is optimal, and its decision values are the proved optimum's within 1e-4
    of their size."""
    X, y = _iris_pair(0)
    kernel = {"kernel": "linear"} if formulation.endswith("kernel_dual") else {}
    sol = solve(formulation, X, y, layer="cvxpy", backend="piqp", nu=0.15, profile="default", **kernel)
    assert sol.checks["reference"] == "proved optimum" and sol.status == "optimal"
    best = sol.extras["proved"]["decision"]
    assert np.max(np.abs(sol.decision - best)) <= 1e-4 * np.max(np.abs(best))


def test_a_point_moved_off_the_proved_optimum_is_refused():
    """The proved optimum's alpha is verified; moved along the constraints so that f moves by 1e-3 of max |f|,
    it is refused."""
    X, y = _iris_pair(0)
    sol = solve("nu_svc_kernel_dual", X, y, layer="cvxpy", backend="piqp", nu=0.15, profile="default",
                kernel="linear")
    data = FamilyData(y, X, X @ X.T)
    alpha = sol.extras["proved"]["alpha"]
    assert _claimed({"alpha": alpha}, "nu_svc_kernel_dual", {"nu": 0.15}, data).status == "optimal"
    U = 1.0 / len(y)
    free = np.flatnonzero((alpha > 0.01 * U) & (alpha < 0.99 * U))
    i = free[0]
    j = next(k for k in np.flatnonzero((alpha > 0.01 * U) & (alpha < 0.99 * U) & (y == y[i])) if k != i) \
        if (y[free] == y[i]).sum() > 1 else next(k for k in range(len(y)) if y[k] == y[i] and k != i and alpha[k] < U)
    f_size = np.max(np.abs(sol.extras["proved"]["decision"]))
    moved = alpha.copy()
    step = 1e-3 * f_size / max(abs(float((X[i] - X[j]) @ X.T @ (y * alpha))), f_size, 1e-300) * U
    # a transfer between two points of one class keeps both equalities; sized so f moves by about 1e-3 max|f|
    step = min(step, alpha[i], U - alpha[j])
    moved[i] -= step
    moved[j] += step
    f_move = np.max(np.abs(X @ X.T @ (y * (moved - alpha))))
    assert f_move >= 1e-4 * f_size
    assert _claimed({"alpha": moved}, "nu_svc_kernel_dual", {"nu": 0.15}, data).status == "optimal_inaccurate"
