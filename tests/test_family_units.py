"""The family trusted in any units: a proof is no proof unless its point passes the member's own conditions, data
far from the origin or in other units are solved where the solvers are well conditioned and judged in the user's,
and a fit whose model is not verified says so."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs
from sklearn import datasets

from formulations.family.common import FamilyData
from solvers.family import solve
from tests.test_family_checks import _claimed

MOVE = 1e4


@pytest.fixture(scope="module")
def blobs():
    X, y = datasets.make_classification(n_samples=120, n_features=4, n_informative=2, n_redundant=0,
                                        n_clusters_per_class=1, flip_y=0.0, random_state=1)
    return X, np.where(y > 0, 1.0, -1.0)


def _class_uniform(y, nu):
    """A feasible nu-SVC point with every coordinate free: nu/2 spread evenly over each class."""
    return np.where(y > 0, nu / (2 * np.sum(y > 0)), nu / (2 * np.sum(y < 0)))


def test_a_proof_far_from_the_origin_must_pass_the_members_conditions(blobs):
    """On data moved by 1e4, K's entries are 1e8 and the proof's rounding allowance (relative to them) let a
    wrong active set pass: its 'proved optimum' was 3.6e-2 of the margin off. Closed from a poor feasible point,
    the row either proves the true optimum (f equal to the unmoved data's to 1e-6 of max|f|) or proves nothing."""
    X, y = blobs
    nu = 0.2
    truth = solve("nu_svc_kernel_dual", X, y, layer="cvxpy", backend="clarabel", nu=nu, kernel="linear",
                  profile="high")
    assert truth.status == "optimal"
    poor = 0.7 * truth.extras["proved"]["alpha"] + 0.3 * _class_uniform(y, nu)
    row = _claimed({"alpha": poor}, "nu_svc_kernel_dual", {"nu": nu}, FamilyData(y, X + MOVE, None))
    assert row.status != "optimal"
    proved = row.extras.get("proved")
    if proved is not None:
        f_true = truth.extras["proved"]["decision"]
        assert np.max(np.abs(proved["decision"] - f_true)) <= 1e-6 * np.max(np.abs(f_true))


def _regression(X):
    return X @ np.array([1.0, -2, 0.5, 3]) + np.random.default_rng(0).normal(0, 0.3, len(X))


@pytest.mark.parametrize("name", ["NuSVMClassifier", "NuSVMRegressor", "SVMRegressor"])
def test_a_fit_far_from_the_origin_is_the_fit_at_the_origin(blobs, name):
    """Moving X by 1e4 changes only b for these members: the fit keeps the same function, verified, without a
    warning (before: PIQP stopped at its own iteration cap and the model kept was 0.32 of max|f| (NuSVC), 11 times
    the target range (SVR) off, with no warning and fit_status_ 0)."""
    import warnings

    from experiments import family_estimators

    X, y = blobs
    cls = getattr(family_estimators, name)
    params = {"nu": 0.2} if name == "NuSVMClassifier" else {"C": 10.0, **({"nu": 0.5} if "Nu" in name else {})}
    target = y if name == "NuSVMClassifier" else _regression(X)
    at_origin = cls(kernel="linear", **params).fit(X, target)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning, a ConvergenceWarning above all, fails the test
        moved = cls(kernel="linear", **params).fit(X + MOVE, target)
    sol = getattr(moved, "solution_", None)
    assert sol.status == "optimal" and moved.fit_status_ == 0
    if name == "NuSVMClassifier":
        f0, f1 = at_origin.decision_function(X), moved.decision_function(X + MOVE)
        size = np.max(np.abs(f0))
    else:
        f0, f1 = at_origin.predict(X), moved.predict(X + MOVE)
        size = np.ptp(target)
    assert np.max(np.abs(f1 - f0)) <= 1e-5 * size


@pytest.fixture(scope="module")
def unit_references(blobs):
    """nu-SVC and the one-class SVM (on the blobs moved off the origin: its problem has one) in the blobs' units."""
    X, y = blobs
    cases = {"nu_svc_kernel_dual": (X, y), "one_class_kernel_dual": (X + 3.0, None)}
    out = {}
    for formulation, (data, labels) in cases.items():
        ref = solve(formulation, data, labels, layer="cvxpy", backend="clarabel", nu=0.2, kernel="linear",
                    profile="high")
        assert ref.status == "optimal"
        out[formulation] = (data, labels, ref.extras["proved"]["decision"])
    return out


@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(exponent=hs.one_of(hs.floats(-4.0, -1.5), hs.floats(1.5, 4.0)),
       formulation=hs.sampled_from(["nu_svc_kernel_dual", "one_class_kernel_dual"]))
def test_the_nu_members_are_verified_in_any_units(unit_references, exponent, formulation):
    """X times s is the same nu-SVC or one-class problem for every s (alpha the same, f times s^2): verified, with
    f / s^2 equal to the f in the data's units to 1e-5 of max|f| (before: x 1e-3 left PIQP 3e-2 (nu-SVC) and
    2e-4 (one-class) of max|f| off, optimal_inaccurate)."""
    X, y, f_ref = unit_references[formulation]
    s = 10.0 ** exponent
    row = solve(formulation, X * s, y, layer="pyomo", backend="piqp", nu=0.2, kernel="linear")
    assert row.status == "optimal", row.checks.get("verdict")
    assert np.max(np.abs(row.decision / s ** 2 - f_ref)) <= 1e-5 * np.max(np.abs(f_ref))


def test_an_infeasible_nu_names_the_classes_as_given_and_says_infeasible_once():
    from experiments.family_estimators import NuSVMClassifier
    from formulations.errors import SVMInputError

    X = np.arange(40.0).reshape(20, 2)
    y = np.r_[np.full(3, -1.0), np.ones(17)]
    with pytest.raises(SVMInputError) as caught:
        NuSVMClassifier(nu=0.99, kernel="linear").fit(X, y)
    text = str(caught.value)
    assert "classes -1.0 and 1.0" in text and "np." not in text and text.count("infeasible") == 1
    assert "2 * 3 / 20 = 0.3" in text


def test_rho_zero_to_rounding_is_said_as_zero_with_what_it_means():
    """make_classification's two classes overlap at nu = 0.2: rho* = 0, computed as -3.4e-17 (x 1) or -4.8e-9
    (x 1e4, where the terms of f are 6e7): both are said as 0 to rounding, with what that means."""
    from experiments.family_estimators import NuSVMClassifier, SVMFitError

    X, y = datasets.make_classification(n_samples=120, n_features=4, n_informative=2, n_redundant=0,
                                        random_state=1)
    for scale in (1.0, 1e4):
        with pytest.raises(SVMFitError) as caught:
            NuSVMClassifier(nu=0.2, kernel="linear").fit(X * scale, y)
        text = str(caught.value)
        assert "rho is 0 to rounding" in text and "overlap completely at this nu" in text
        assert "rho is -" not in text


def test_rho_zero_with_positive_rounding_is_refused_as_zero():
    """Two overlapping classes at nu = 0.6 (make_classification, seed 913, standardized): rho* = 0, computed as
    +4.3e-17 here. A positive rounding was divided into the coefficients (1e16 of them, every pair `optimal`, 19% of
    the predictions NuSVC's f / rho noise) where a negative one raised: both are rho* = 0 and raise."""
    from sklearn.preprocessing import StandardScaler

    from experiments.family_estimators import NuSVMClassifier, SVMFitError

    X, y = datasets.make_classification(n_samples=600, n_features=12, n_informative=6, n_classes=3,
                                        n_clusters_per_class=2, flip_y=0.1, weights=[0.5, 0.3, 0.2], random_state=913)
    X = StandardScaler().fit_transform(X)
    kept = y != 2
    with pytest.raises(SVMFitError, match=r"nu = 0\.6: rho is 0 to rounding \(\|rho\| = .*, the terms of f "):
        NuSVMClassifier(nu=0.6, kernel="linear").fit(X[kept], y[kept])


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_rho_zero_is_refused_whatever_the_sign_of_its_rounding(monkeypatch, sign):
    """The degenerate pair of test_rho_zero_to_rounding_is_said_as_zero_with_what_it_means with its rho's rounding
    given either sign: the fit raises the same error."""
    import experiments.family_estimators as family_estimators

    point = family_estimators._point

    def signed(sol):
        values = dict(point(sol))
        values["rho"] = sign * abs(float(values["rho"]))
        return values

    monkeypatch.setattr(family_estimators, "_point", signed)
    X, y = datasets.make_classification(n_samples=120, n_features=4, n_informative=2, n_redundant=0,
                                        random_state=1)
    with pytest.raises(family_estimators.SVMFitError, match="rho is 0 to rounding"):
        family_estimators.NuSVMClassifier(nu=0.2, kernel="linear").fit(X, y)


def test_a_backends_own_failure_names_the_member_and_backend_and_what_helps(monkeypatch, blobs):
    from solvers.errors import BackendError
    from solvers.registry import available_backends, get_backend

    def fails(*args, **kwargs):
        raise BackendError("Solver 'CLARABEL' failed. Try another solver, or solve with verbose=True for more "
                           "information.")

    monkeypatch.setattr(get_backend("cvxpy", "clarabel"), "solve", fails)
    X, y = blobs
    row = solve("nu_svc_kernel_dual", X, y, layer="cvxpy", backend="clarabel", nu=0.2, kernel="linear")
    assert row.status == "error"
    assert row.message.startswith("nu_svc_kernel_dual (nu_svc) via cvxpy/clarabel failed: Solver 'CLARABEL' failed")
    others = ", ".join(name for _, name in available_backends("cvxpy") if name != "clarabel")
    assert f"try another backend ({others})" in row.message and "piqp" in others


@pytest.fixture(scope="module")
def regression_references(blobs):
    X, _ = blobs
    y = _regression(X)
    params = {"eps_svr_kernel_dual": {"C": 10.0, "epsilon": 0.1}, "nu_svr_kernel_dual": {"C": 1200.0, "nu": 0.5}}
    out = {}
    for formulation, p in params.items():
        ref = solve(formulation, X, y, layer="cvxpy", backend="clarabel", kernel="linear", profile="high", **p)
        assert ref.status == "optimal"
        out[formulation] = (X, y, p, ref.extras["proved"]["decision"])
    return out


@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(exponent=hs.one_of(hs.floats(-5.0, -3.5), hs.floats(3.5, 5.0)), moved=hs.booleans(),
       formulation=hs.sampled_from(["eps_svr_kernel_dual", "nu_svr_kernel_dual"]))
def test_the_regressions_are_verified_with_targets_and_features_in_any_units(regression_references, exponent,
                                                                             moved, formulation):
    """Targets times a (C and epsilon times a; |log10 a| >= 3.5, beyond the units kept as the user's) and moved by
    1e6 a, X moved by 1e4 or not: the same problem, f times a plus the move, verified and equal to the f in the
    data's units to 1e-5 of the targets' spread."""
    X, y, params, f_ref = regression_references[formulation]
    a = 10.0 ** exponent
    move = 1e6 * a if moved else 0.0
    scaled = {name: value * a if name in ("C", "epsilon") else value for name, value in params.items()}
    row = solve(formulation, X + (MOVE if moved else 0.0), y * a + move, layer="pyomo", backend="piqp",
                kernel="linear", **scaled)
    assert row.status == "optimal", row.checks.get("verdict")
    assert np.max(np.abs((row.decision - move) / a - f_ref)) <= 1e-5 * np.ptp(y)


def test_a_right_point_far_from_the_origin_is_proved_on_the_centered_data():
    """Unbalanced classes moved by 1e4: PIQP's point is 4e-7 from the optimum, but the proof on K in the user's
    units (1e8 entries) found an active set whose solution failed the conditions, and the row was
    optimal_inaccurate; proved on the centered data (the same optimum) it is verified, equal to the unmoved f."""
    X, y = datasets.make_classification(n_samples=120, n_features=4, n_informative=2, n_redundant=0,
                                        n_clusters_per_class=1, weights=[0.85], random_state=1)
    y = np.where(y > 0, 1.0, -1.0)
    ref = solve("nu_svc_kernel_dual", X, y, layer="cvxpy", backend="clarabel", kernel="linear", nu=0.2,
                profile="high")
    row = solve("nu_svc_kernel_dual", X + MOVE, y, layer="pyomo", backend="piqp", kernel="linear", nu=0.2)
    assert row.status == "optimal", row.checks["verdict"]
    f_ref = ref.extras["proved"]["decision"]
    assert np.max(np.abs(row.extras["proved"]["decision"] - f_ref)) <= 1e-6 * np.max(np.abs(f_ref))
