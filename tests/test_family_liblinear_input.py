"""The LIBLINEAR members' boundary (one clear SVMInputError, before any model is built) and their invariances
(hypothesis: a permutation of the points, a relabelling of the classes, the two classes swapped, the units)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

from formulations.errors import SVMInputError
from formulations.family import MEMBERS, crammer_singer, squared_hinge
from formulations.family.common import FamilyData
from solvers.solution import OPTIMAL, OPTIMAL_INACCURATE, Solution
from solvers import family


def solve_member(member, form, X, y, **kwargs):
    kind = "primal" if form == "primal" else "linear_dual"
    return family.solve(f"{member}_{kind}", X, y, **kwargs)


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    keep = np.r_[0:12, 50:62, 100:112]  # 12 points of each class
    return StandardScaler().fit_transform(X)[keep], y[keep]


@pytest.fixture
def no_model(monkeypatch):
    """Every builder of both members fails the test if it is reached: the input must be refused before."""
    def reached(*args, **kwargs):
        raise AssertionError("a model was built from bad input")

    for module in (squared_hinge, crammer_singer):
        for name in ("build_primal_pyomo", "build_primal_cvxpy", "build_linear_dual_pyomo", "build_linear_dual_cvxpy"):
            monkeypatch.setattr(module, name, reached)


def _two_class(iris):
    X, y = iris
    return X[y < 2], y[y < 2]


@pytest.mark.parametrize("member", ["squared_hinge", "crammer_singer"])
@pytest.mark.parametrize("C, words", [(0.0, "C must be > 0"), (-1.0, "C must be > 0"), (float("nan"), "C must be > 0"),
                                      (float("inf"), "C must be finite"), ("1", "C must be a number")])
def test_bad_C(iris, no_model, member, C, words):
    X, y = iris if member == "crammer_singer" else _two_class(iris)
    with pytest.raises(SVMInputError, match=words):
        solve_member(member, "primal", X, y, C=C, layer="cvxpy", backend="clarabel")


@pytest.mark.parametrize("member", ["squared_hinge", "crammer_singer"])
def test_nan_in_X_and_y(iris, no_model, member):
    X, y = iris if member == "crammer_singer" else _two_class(iris)
    X_bad = X.copy()
    X_bad[3, 1] = np.nan
    with pytest.raises(SVMInputError, match="X contains NaN at row 3, column 1"):
        solve_member(member, "dual", X_bad, y, C=1.0, layer="cvxpy", backend="clarabel")
    y_bad = y.astype(float)
    y_bad[5] = np.nan
    with pytest.raises(SVMInputError, match="y contains a non-finite label .* at row 5"):
        solve_member(member, "dual", X, y_bad, C=1.0, layer="cvxpy", backend="clarabel")


def test_class_counts(iris, no_model):
    X, y = iris
    with pytest.raises(SVMInputError, match="at least two classes for a multiclass SVM, found 1"):
        solve_member("crammer_singer", "primal", X[y == 0], y[y == 0], C=1.0, layer="cvxpy", backend="clarabel")
    with pytest.raises(SVMInputError, match="exactly two classes, found 3"):
        solve_member("squared_hinge", "primal", X, y, C=1.0, layer="cvxpy", backend="clarabel")
    with pytest.raises(SVMInputError, match="exactly two classes, found 1"):
        solve_member("squared_hinge", "primal", X[y == 0], y[y == 0], C=1.0, layer="cvxpy", backend="clarabel")
    with pytest.raises(SVMInputError, match="X has 36 rows but y has 35 labels"):
        solve_member("crammer_singer", "primal", X, y[:-1], C=1.0, layer="cvxpy", backend="clarabel")


def test_bad_choices(iris, no_model):
    X, y = iris
    with pytest.raises(SVMInputError, match="intercept 'free' is not available for crammer_singer .*no bias"):
        solve_member("crammer_singer", "primal", X, y, C=1.0, layer="cvxpy", backend="clarabel", intercept="free")
    with pytest.raises(SVMInputError, match="intercept_scaling must be finite and > 0"):
        solve_member("crammer_singer", "primal", X, y, C=1.0, layer="cvxpy", backend="clarabel",
                     intercept="regularized", intercept_scaling=0.0)
    with pytest.raises(SVMInputError, match="unknown family formulation 'crammer_singer_lagrangian'"):
        family.solve("crammer_singer_lagrangian", X, y, C=1.0, layer="cvxpy", backend="clarabel")
    with pytest.raises(SVMInputError, match="intercept_scaling is the regularized bias's constant feature"):
        solve_member("squared_hinge", "primal", *_two_class(iris), C=1.0, layer="cvxpy", backend="clarabel",
                     intercept_scaling=2.0)
    with pytest.raises(SVMInputError, match="nu_svc takes nu, not intercept"):
        family.solve("nu_svc_primal", *_two_class(iris), nu=0.5, intercept="none", layer="cvxpy", backend="clarabel")
    with pytest.raises(SVMInputError, match="squared_hinge takes C, intercept, intercept_scaling, not nu"):
        solve_member("squared_hinge", "primal", *_two_class(iris), C=1.0, nu=0.5, layer="cvxpy", backend="clarabel")


def _solve(member, X, y, form="dual"):
    return solve_member(member, form, X, y, C=0.7, layer="cvxpy", backend="clarabel",
                        intercept="none" if member == "crammer_singer" else "free")


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=hs.permutations(range(36)), relabel=hs.permutations(["setosa", "versicolor", "virginica"]))
def test_crammer_singer_invariant_to_point_order_and_class_names(iris, order, relabel):
    """Permuting the points and renaming the classes (which reorders them: classes are sorted) gives the same
    optimum: the objective, and each class's w_m and decision values, found under its new name."""
    X, y = iris
    base = _solve("crammer_singer", X, y)
    names = np.array(relabel)
    moved = _solve("crammer_singer", X[order], names[y][order])
    assert base.status == moved.status == OPTIMAL
    assert abs(base.objective - moved.objective) <= 1e-7 * base.objective
    classes = list(moved.extras["labels"])  # the moved solve's classes, in its column order
    column = [classes.index(name) for name in relabel]  # class m's column in the moved solve
    assert np.linalg.norm(moved.w[column] - base.w) <= 1e-5 * np.linalg.norm(base.w)
    F = moved.decision[:, column]
    assert np.max(np.abs(F[np.argsort(order)] - base.decision)) <= 1e-5 * np.max(np.abs(base.decision))


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=hs.permutations(range(24)), form=hs.sampled_from(["primal", "dual"]))
def test_squared_hinge_invariant_to_point_order_and_label_swap(iris, order, form):
    """Permuting the points leaves (w, b) as they are; swapping the two classes' labels negates them."""
    X, y = _two_class(iris)
    base = _solve("squared_hinge", X, y, form)
    swapped = _solve("squared_hinge", X[order], (1 - y)[order], form)
    assert base.status == swapped.status == OPTIMAL
    assert abs(base.objective - swapped.objective) <= 1e-7 * base.objective
    assert np.linalg.norm(base.w + swapped.w) <= 1e-5 * np.linalg.norm(base.w)
    assert abs(base.b + swapped.b) <= 1e-5 * np.max(np.abs(base.decision))


@pytest.fixture(scope="module")
def optima(iris):
    """Each member's verified optimum on the iris subset (Clarabel), solved once."""
    X, y = iris
    two = _two_class(iris)
    return {"squared_hinge": (two, _solve("squared_hinge", *two, form="primal")),
            "crammer_singer": ((X, y), _solve("crammer_singer", X, y, form="primal"))}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(log_s=hs.floats(-3.0, 3.0), member=hs.sampled_from(["squared_hinge", "crammer_singer"]))
def test_the_verdict_is_the_same_in_any_units(optima, log_s, member):
    """(s X, C / s^2) has the optimum w* / s with the same decision values and multipliers alpha* / s^2: that point is
    verified in any units s, and the same point with w moved by 1e-3 of its norm is refused (the closing step's
    verdict, solvers.family.close, recomputed from the point)."""
    (X, y), sol = optima[member]
    s = 10.0 ** log_s
    Xs, Cs, ws = X * s, 0.7 / s**2, sol.w / s
    if member == "squared_hinge":
        signs = np.where(y == y.max(), 1.0, -1.0)
        values = {"w": ws, "b": sol.b, "alpha": sol.alpha / s**2}
        codes = signs
    else:
        codes = np.searchsorted(np.unique(y), y)
        values = {"w": ws.ravel(), "alpha": (0.7 * np.eye(3)[codes] - sol.alpha).ravel() / s**2}
    params = {"C": Cs, "intercept": "free" if member == "squared_hinge" else "none", "intercept_scaling": None}

    def verdict(point):
        module = crammer_singer if member == "crammer_singer" else squared_hinge
        cond = module.conditions(point, FamilyData(codes, Xs), params, "primal")
        claim = Solution(formulation=f"{member}_primal", layer="cvxpy", backend="clarabel", status=OPTIMAL,
                            solver_status=OPTIMAL, raw_status="claimed", objective=cond.primal_objective)
        return family.close(claim, point, FamilyData(codes, Xs), params, "primal", MEMBERS[member], 1e-4).status

    assert verdict(values) == OPTIMAL
    step = np.random.default_rng(3).normal(size=values["w"].shape)
    moved = {**values, "w": values["w"] + 1e-3 * np.linalg.norm(values["w"]) * step / np.linalg.norm(step)}
    assert verdict(moved) == OPTIMAL_INACCURATE
