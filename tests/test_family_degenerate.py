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


def _degenerate_cases():
    """(formulation, X, y, params): nu-SVC with the linear kernel where the classes' reduced convex hulls meet,
    and the linear one-class SVM on centered data (the origin inside their reduced hull): w* = 0, rho* = 0."""
    from experiments.datasets import overlapping
    from experiments.family_peers import load

    ds = overlapping(60, 2, 0)
    wine, _ = load("wine", 40)
    return [("nu_svc_primal", ds.X, ds.y, {"nu": 0.1}), ("nu_svc_kernel_dual", ds.X, ds.y, {"nu": 0.1}),
            ("one_class_primal", wine, None, {"nu": 0.2}), ("one_class_kernel_dual", wine, None, {"nu": 0.2})]


@pytest.mark.parametrize("case", range(4))
def test_a_degenerate_optimum_is_verified_in_any_units(case):
    """w* = 0 and rho* = 0 leave f* and the objectives no size of their own; the checks measure the point against
    the size of the terms f is made of at the proved optimum (checks["degenerate_floor"], which scales as K does),
    so the solver's point is optimal and says what its optimum means, and the proved optimum carried to data x1e-3
    and x1e3 (alpha unchanged; w scales as X, rho and b as K) is optimal there too."""
    formulation, X, y, params = _degenerate_cases()[case]
    kernel = {"kernel": "linear"} if formulation.endswith("kernel_dual") else {}
    sol = solve(formulation, X, y, layer="cvxpy", backend="clarabel", profile="high", **params, **kernel)
    assert sol.status == "optimal" and sol.checks["degenerate"], sol.checks["verdict"]
    assert "w* = 0, rho* = 0" in sol.extras["degenerate"]
    member_y = None if y is None else np.where(y > 0, 1.0, -1.0)
    proved = sol.extras["proved"]
    for scale in (1e-3, 1e3):
        Xs = scale * X
        if formulation.endswith("primal"):
            data = FamilyData(member_y, Xs)
            point = {"alpha": proved["alpha"], "w": Xs.T @ proved["coef"], "rho": scale ** 2 * proved["rho"]}
            if y is not None:
                point["b"] = scale ** 2 * proved["b"]
        else:
            data, point = FamilyData(member_y, Xs, Xs @ Xs.T), {"alpha": proved["alpha"]}
        again = _claimed(point, formulation, params, data)
        assert again.status == "optimal", again.checks["verdict"]
        assert again.checks["degenerate_floor"] == pytest.approx(scale ** 2 * sol.checks["degenerate_floor"], rel=1e-6)


@pytest.mark.parametrize("case", range(4))
def test_a_point_moved_off_a_degenerate_optimum_is_refused(case):
    """The proved degenerate optimum is verified; a point whose f moves by 1e-3 of the checks' scale (the floor:
    max |f*| is 0 there) is refused: a primal's w moved off 0, a dual's alpha moved along its equalities."""
    formulation, X, y, params = _degenerate_cases()[case]
    member_y = None if y is None else np.where(y > 0, 1.0, -1.0)
    kernel = {"kernel": "linear"} if formulation.endswith("kernel_dual") else {}
    sol = solve(formulation, X, y, layer="cvxpy", backend="clarabel", profile="high", **params, **kernel)
    floor = sol.checks["degenerate_floor"]
    alpha = sol.extras["proved"]["alpha"]
    if formulation.endswith("primal"):
        data = FamilyData(member_y, X)
        point = {"alpha": alpha, "w": np.zeros(X.shape[1]), "rho": 0.0, **({"b": 0.0} if y is not None else {})}
        assert _claimed(point, formulation, params, data).status == "optimal"
        rows = float(np.sqrt(np.max(np.einsum("ij,ij->i", X, X))))
        direction = X[np.argmax(np.einsum("ij,ij->i", X, X))] / rows
        moved = {**point, "w": 1e-3 * floor / rows * direction}  # moves f at the largest x_i by 1e-3 floor
    else:
        data = FamilyData(member_y, X, X @ X.T)
        point = {"alpha": alpha}
        assert _claimed(point, formulation, params, data).status == "optimal"
        moved = {"alpha": _moved_alpha(alpha, member_y, X, 1e-3 * floor, len(X) * params["nu"])}
    refused = _claimed(moved, formulation, params, data)
    assert refused.status == "optimal_inaccurate" and not refused.checks["verified"]


def _moved_alpha(alpha, y, X, target, bound_times_n):
    """alpha moved from one point to another of its class (the equalities kept, the box kept) so that the
    kernel part of f moves by at least `target` somewhere."""
    n = len(alpha)
    U = 1.0 / bound_times_n if y is None else 1.0 / n  # one-class: 1/(nu l); nu-SVC: 1/l
    labels = np.ones(n) if y is None else y
    for i in np.argsort(-alpha):
        for j in np.flatnonzero((labels == labels[i]) & (alpha < U)):
            shift = labels[i] * (X @ (X[j] - X[i]))  # f's change per unit moved from i to j
            step = min(target / max(float(np.max(np.abs(shift))), 1e-300), alpha[i], U - alpha[j])
            moved = alpha.copy()
            moved[i] -= step
            moved[j] += step
            if np.max(np.abs(step * shift)) >= target * (1 - 1e-9):
                return moved
    raise AssertionError("no transfer moves f by the target")


def test_nu_svc_with_meeting_hulls_advises_a_larger_nu():
    """At a small nu the classes' reduced convex hulls meet (rho* = 0): the estimator's error says to raise nu, up
    to the balance bound 2 min(n+, n-)/n it names, and following that advice gives a model with rho > 0."""
    from sklearn.datasets import make_classification

    from experiments.family_estimators import NuSVMClassifier, SVMFitError

    X, y = make_classification(500, 12, n_informative=4, n_clusters_per_class=4, flip_y=0.2, weights=[0.7, 0.3],
                               random_state=21)
    limit = 2 * min(np.sum(y == 0), np.sum(y == 1)) / len(y)
    with pytest.raises(SVMFitError, match=r"larger nu") as info:
        NuSVMClassifier(kernel="linear", nu=0.05).fit(X, y)
    assert "smaller nu" not in str(info.value) and f"= {limit:.6g} here" in str(info.value)
    # between the last nu where the hulls meet (an LP puts it near 0.6) and the bound: the fit succeeds
    model = NuSVMClassifier(kernel="linear", nu=0.97 * limit).fit(X, y)
    assert model.score(X, y) > 1 - limit / 2  # better than always predicting the larger class


def test_a_pair_whose_hulls_meet_at_the_suites_case_says_rho_is_0():
    """scikit-learn's test_n_iter_libsvm case (NuSVC, linear kernel, 4 classes, nu = 0.5) at its default seed 42:
    classes 0 and 2 have rho* = 0 to rounding, and the fit says so with the numbers instead of dividing by it."""
    from sklearn.datasets import make_classification

    from experiments.family_estimators import NuSVMClassifier, SVMFitError

    X, y = make_classification(n_classes=4, n_informative=4, random_state=42)
    with pytest.raises(SVMFitError, match=r"nu = 0\.5: rho is 0 to rounding \(\|rho\| = .*, the terms of f .*\), so "
                                          r"there is no margin.*nu <= 2 min\(n\+, n-\)/n = "):
        NuSVMClassifier(kernel="linear").fit(X, y)
