"""Weighted points in the LIBSVM members (LIBSVM's W_i, scikit-learn's sample_weight): the formulations' per-point
bounds in both layers, primal and dual, their checks, the estimators against scikit-learn at tol=1e-10, and the
weights' bad input.

A weight scales its point's bound in the dual: epsilon-SVR's C omega_i, the nu members' omega_i / W (W = sum omega).
With integer weights that is exactly the problem with each point repeated omega_i times, which the tests use as an
independent reference; scikit-learn is compared at LIBSVM's single-precision accuracy (DECISION_RTOL).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import datasets, svm
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import (check_sample_weight_equivalence_on_dense_data,
                                            check_sample_weight_equivalence_on_sparse_data)

from experiments.family_estimators import NuSVMClassifier, NuSVMRegressor, OneClassSVMDetector, SVMRegressor
from experiments.family_peers import DECISION_RTOL, load
from formulations.errors import SVMInputError
from formulations.family import MEMBERS
from formulations.family.common import FamilyData
from formulations.kernels import Kernel, gram
from solvers.family import close, solve
from tests.test_family_estimators import TIGHT, _assert_same_model

#: the proved optima of two equivalent problems agree to their rounding
PROVED_RTOL = 1e-9
RBF = Kernel("rbf", gamma=0.1)


def _weights(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.2, 3.0, n)


def _weighted_cases(n: int = 120):
    """(name, ours, theirs, X, y, values, weights) on bundled data with unequal weights."""
    Xd, yd = load("diabetes", n)
    Xb, yb = load("breast_cancer", n)
    Xi, yi = datasets.load_iris(return_X_y=True)
    Xi = StandardScaler().fit_transform(Xi)
    predict = lambda m, X: m.predict(X)  # noqa: E731
    decision = lambda m, X: m.decision_function(X)  # noqa: E731
    return [
        ("SVR", SVMRegressor(C=100.0, epsilon=10.0), svm.SVR(C=100.0, epsilon=10.0, tol=TIGHT), Xd, yd, predict,
         _weights(len(yd), 1)),
        ("NuSVR", NuSVMRegressor(C=10.0, nu=0.4), svm.NuSVR(C=10.0, nu=0.4, tol=TIGHT), Xd, yd, predict,
         _weights(len(yd), 2)),
        ("NuSVC breast cancer", NuSVMClassifier(nu=0.3), svm.NuSVC(nu=0.3, tol=TIGHT), Xb, yb, decision,
         _weights(len(yb), 3)),
        ("NuSVC iris", NuSVMClassifier(nu=0.27, decision_function_shape="ovo"),
         svm.NuSVC(nu=0.27, tol=TIGHT, decision_function_shape="ovo"), Xi, yi, decision, _weights(len(yi), 4)),
        ("OneClassSVM", OneClassSVMDetector(nu=0.1), svm.OneClassSVM(nu=0.1, tol=TIGHT), Xb, None, decision,
         _weights(len(yb), 5)),
    ]


@pytest.mark.parametrize("case", range(5), ids=[c[0] for c in _weighted_cases(10)])
def test_weighted_fit_agrees_with_scikit_learn(case):
    """Unequal weights (uniform in [0.2, 3]): decision values, dual coefficients and intercepts within LIBSVM's
    single-precision accuracy of scikit-learn's, every solve proved."""
    name, ours, theirs, X, y, values, w = _weighted_cases()[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ours.fit(X, y, sample_weight=w)
    theirs.fit(X, y, sample_weight=w)
    solutions = getattr(ours, "solutions_", [ours.solution_])
    assert all("proved" in sol.extras and sol.extras["weighted"] for sol in solutions), name
    _assert_same_model(ours, theirs, X, lambda m: values(m, X))
    if isinstance(ours, OneClassSVMDetector):
        assert abs(ours.offset_ - theirs.offset_) <= DECISION_RTOL * abs(theirs.offset_)


def _repeated(X, y, counts):
    return np.repeat(X, counts, axis=0), (None if y is None else np.repeat(y, counts))


MEMBER_CASES = {  # member -> (data, params); the regressions' C per point
    "nu_svc": ("breast_cancer", {"nu": 0.3}),
    "one_class": ("breast_cancer", {"nu": 0.2}),
    "eps_svr": ("diabetes", {"C": 10.0, "epsilon": 10.0}),
    "nu_svr": ("diabetes", {"C": 10.0, "nu": 0.4}),
}


@pytest.mark.parametrize("member", list(MEMBER_CASES))
def test_integer_weights_are_repeated_points(member):
    """omega_i = k is the point repeated k times (the nu members normalise by W = sum omega, the repeated set's l;
    nu-SVR's C is per point, so C W against C l'): the proved optima's decision values agree to their rounding, and
    the weighted nu-property holds."""
    data, params = MEMBER_CASES[member]
    X, y = load(data, 40)
    y = None if member == "one_class" else y
    counts = np.random.default_rng(7).integers(1, 4, len(X))
    Xr, yr = _repeated(X, y, counts)
    scale = {"nu_svr": {"C": params.get("C", 0) * len(Xr)}}.get(member, {})
    weighted = solve(f"{member}_kernel_dual", X, y, layer="cvxpy", backend="clarabel", kernel=RBF, profile="high",
                     sample_weight=counts.astype(float), **{**params, **scale})
    repeated = solve(f"{member}_kernel_dual", Xr, yr, layer="cvxpy", backend="clarabel", kernel=RBF,
                     profile="high", **{**params, **scale})
    f_w = weighted.extras["proved"]["decision"]
    f_r = repeated.extras["proved"]["decision"][np.cumsum(counts) - 1]  # one copy of each point
    assert np.max(np.abs(f_w - f_r)) <= PROVED_RTOL * np.max(np.abs(f_r)), member
    if member != "eps_svr":
        assert weighted.extras["proved"]["nu_bounds_hold"]
        assert weighted.extras["proved"]["fraction_sv"] == pytest.approx(repeated.extras["proved"]["fraction_sv"],
                                                                        abs=1e-12)


@pytest.mark.parametrize("layer", ["pyomo", "cvxpy"])
@pytest.mark.parametrize("member", list(MEMBER_CASES))
def test_weighted_primal_and_dual_agree(member, layer):
    """Linear kernel, unequal weights: the primal and the duals in both layers are verified, with P* = D* and the
    same decision values as the proved optimum of the kernel dual."""
    data, params = MEMBER_CASES[member]
    X, y = load(data, 40)
    if member == "one_class":
        X, y = X + 3.0, None  # the linear one-class SVM separates the data from the origin
    w = _weights(len(X), 11)
    reference = solve(f"{member}_kernel_dual", X, y, layer="cvxpy", backend="clarabel", kernel="linear",
                      profile="high", sample_weight=w, **params).extras["proved"]
    size = np.max(np.abs(reference["decision"]))
    for formulation in (f"{member}_primal", f"{member}_kernel_dual"):
        kernel = "linear" if formulation.endswith("kernel_dual") else None
        sol = solve(formulation, X, y, layer=layer, backend="piqp", kernel=kernel, profile="high", sample_weight=w,
                    **params)
        assert sol.status == "optimal", (formulation, sol.checks["verdict"])
        assert sol.checks["rel_duality_gap"] <= 1e-6
        assert np.max(np.abs(sol.decision - reference["decision"])) <= 1e-5 * size, formulation


def test_the_checks_hold_each_point_to_its_own_bound():
    """A point the solver put above its own bound omega_i / W (but below the largest) is refused, its excess
    measured against its own bound: the box is each point's, not the largest's."""
    X, y = load("breast_cancer", 40)
    w = _weights(len(X), 3)
    sol = solve("nu_svc_kernel_dual", X, y, layer="cvxpy", backend="clarabel", kernel=RBF, profile="high",
                sample_weight=w, nu=0.3)
    alpha = sol.extras["proved"]["alpha"].copy()
    U = w / w.sum()
    low = int(np.argmin(np.where(alpha > 0.5 * U, U, np.inf)))  # a support vector of a small weight
    alpha[low] = 1.5 * U[low]  # over its own bound, under max U
    assert alpha[low] < U.max()
    again = close(sol, {"alpha": alpha}, FamilyData(np.where(y == 1, 1.0, -1.0), None, gram(RBF, X)),
                  {"nu": 0.3, "sample_weight": w}, "kernel_dual", MEMBERS["nu_svc"], 1e-6)
    assert not again.checks["verified"]
    assert again.checks["kkt_dual_feasibility"] == pytest.approx(0.5, rel=1e-9)  # 1.5 U_i over U_i, by U_i


def test_nu_svc_class_weight_is_ignored_with_a_warning():
    """As NuSVC's: class_weight changes nothing (LIBSVM weighs classes in C-SVC's C only), and fit says so."""
    X, y = load("breast_cancer", 60)
    plain = NuSVMClassifier(nu=0.3).fit(X, y)
    with pytest.warns(UserWarning, match="class_weight is ignored"):
        weighted = NuSVMClassifier(nu=0.3, class_weight={0: 5.0, 1: 0.2}).fit(X, y)
    np.testing.assert_allclose(weighted.decision_function(X), plain.decision_function(X), rtol=0, atol=1e-12)


def test_weighted_nu_feasibility_is_the_weights_balance():
    """nu-SVC with weights is feasible for nu <= 2 min(W+, W-)/W (LIBSVM's check), said with the numbers."""
    X, y = load("breast_cancer", 40)
    w = np.where(y == 1, 1.0, 0.25)  # W- is a quarter of its count
    limit = 2 * min(w[y == 1].sum(), w[y == 0].sum()) / w.sum()
    with pytest.raises(SVMInputError, match=rf"weighted nu-SVC needs nu <= 2 min\(W\+, W-\)/W = .* = {limit:.6g}"):
        solve("nu_svc_kernel_dual", X, y, layer="cvxpy", backend="clarabel", kernel=RBF, sample_weight=w,
              nu=limit * 1.01)
    with pytest.raises(SVMInputError, match="specified nu is infeasible"):
        NuSVMClassifier(nu=limit * 1.01).fit(X, y, sample_weight=w)


@pytest.mark.parametrize("weights, match", [
    (np.r_[np.ones(39), 0.0], r"finite and > 0 \(leave a point of weight 0 out.*sample_weight\[39\] = 0"),
    (np.r_[np.ones(39), -1.0], r"sample_weight\[39\] = -1"),
    (np.r_[np.ones(39), np.nan], r"sample_weight\[39\] = nan"),
    (np.ones(39), r"shape \(40,\)"),
    (["a"] * 40, "sample_weight must be numeric"),
])
def test_bad_weights_are_refused_at_the_boundary(weights, match):
    X, y = load("diabetes", 40)
    with pytest.raises(SVMInputError, match=match):
        solve("eps_svr_kernel_dual", X, y, layer="cvxpy", backend="clarabel", kernel=RBF, sample_weight=weights,
              C=1.0, epsilon=1.0)


def test_a_member_without_weights_refuses_them():
    X, y = load("breast_cancer", 30)
    with pytest.raises(SVMInputError, match="squared_hinge takes no sample_weight"):
        solve("squared_hinge_primal", X, y, layer="cvxpy", backend="clarabel", C=1.0, sample_weight=np.ones(30))


@pytest.mark.parametrize("check", [check_sample_weight_equivalence_on_dense_data,
                                   check_sample_weight_equivalence_on_sparse_data], ids=["dense", "sparse"])
@pytest.mark.parametrize("model", [NuSVMClassifier(nu=0.3, gamma=0.1), SVMRegressor(gamma=0.1),
                                   NuSVMRegressor(gamma=0.1), OneClassSVMDetector(gamma=0.1)],
                         ids=["NuSVC", "SVR", "NuSVR", "OneClassSVM"])
def test_weights_are_repeated_samples_for_scikit_learns_check(model, check):
    """scikit-learn's own check that integer weights (0 included) are removed or repeated samples, which its
    LIBSVM estimators fail: with a fixed gamma (gamma="scale" reads X's variance, which repeating changes) the
    proved optima of the weighted and the repeated fits predict alike."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        check(type(model).__name__, model)


X_INV, Y_INV = load("diabetes", 40)
LABELS_INV = (Y_INV > np.median(Y_INV)).astype(int)


@settings(max_examples=4, deadline=None)
@given(exponent=st.floats(-3, 3), seed=st.integers(0, 2**16))
def test_weights_in_other_units_and_order(exponent, seed):
    """Weights times s, samples in any order: nu-SVC's and the one-class SVM's fits are unchanged (their bounds
    are w_i / W; the one-class decision_function is in LIBSVM's scale nu W, so s times), and SVR's is SVR with
    C s (C_i = C w_i); each fit proved."""
    s = 10.0 ** exponent
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(Y_INV))
    w = rng.uniform(0.2, 3.0, len(Y_INV))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        pairs = [(NuSVMClassifier(nu=0.4, gamma=0.1).fit(X_INV, LABELS_INV, sample_weight=w),
                  NuSVMClassifier(nu=0.4, gamma=0.1).fit(X_INV[order], LABELS_INV[order], sample_weight=s * w[order])),
                 (OneClassSVMDetector(nu=0.3, gamma=0.1).fit(X_INV, sample_weight=w),
                  OneClassSVMDetector(nu=0.3, gamma=0.1).fit(X_INV[order], sample_weight=s * w[order])),
                 (SVMRegressor(C=10.0 * s, epsilon=5.0, gamma=0.1).fit(X_INV, Y_INV, sample_weight=w),
                  SVMRegressor(C=10.0, epsilon=5.0, gamma=0.1).fit(X_INV[order], Y_INV[order], sample_weight=s * w[order]))]
    for (base, other), scale in zip(pairs, (1.0, s, 1.0)):
        values = (lambda m: m.predict(X_INV)) if isinstance(base, SVMRegressor) else (
            lambda m: m.decision_function(X_INV))
        ref = values(base)
        np.testing.assert_allclose(values(other) / scale, ref, rtol=0, atol=1e-7 * np.max(np.abs(ref)))
