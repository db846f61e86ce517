"""The compiled SMO for the family (solvers.algorithms.smo's general form, solvers.family_smo, solve(method="smo")):
the C-SVM's path unchanged bit for bit, the SVR index map against the explicit 2l x 2l matrix, every member's
SMO row against the interior-point optimum of the same dual, and the method's errors."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn import datasets
from sklearn.preprocessing import StandardScaler

from formulations.errors import SVMInputError
from formulations.kernels import Kernel, gram
from solvers.algorithms.smo import RowCache, smo
from solvers.family import choose_method, solve
from solvers.family_smo import problem
from solvers.solution import OPTIMAL

KERNEL = Kernel("rbf", gamma=0.2)


def _digest(alpha: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(alpha).tobytes()).hexdigest()[:16]


@pytest.fixture(scope="module")
def integer_problem():
    """A C-SVM on integer features with the linear kernel: K is exact, so SMO's arithmetic is the same anywhere."""
    rng = np.random.default_rng(0)
    X = rng.integers(-3, 4, size=(600, 3)).astype(float)
    y = np.where(X @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=600) > 0, 1.0, -1.0)
    return X @ X.T, y


# (keywords, steps, sha256 of alpha's bytes) of the C-SVM's SMO: the general form must leave its path unchanged
GOLDEN = [({}, 23048, "42f4a4117430f05b"), ({"shrinking": False}, 19570, "e92ca7b32e9fc293")]


@pytest.mark.parametrize("kwargs, steps, digest", GOLDEN)
def test_csvm_path_is_bit_identical(integer_problem, kwargs, steps, digest):
    K, y = integer_problem
    res = smo(K, y, 100.0, tol=1e-8, **kwargs)
    assert (res.iterations, _digest(res.alpha)) == (steps, digest)
    given = smo(K, y, 100.0, tol=1e-8, p=-np.ones(len(y)), **kwargs)  # the C-SVM's p given: the same steps
    assert given.iterations == steps and np.array_equal(given.alpha, res.alpha)


def test_csvm_per_sample_bounds_bit_identical(integer_problem):
    K, y = integer_problem
    res = smo(RowCache.full(K, cache_bytes=8 * 600 * 40), y, np.where(y > 0, 2.0, 0.5), tol=1e-8)
    assert (res.iterations, _digest(res.alpha)) == (1968, "719fb9c5e19a6817")


@pytest.fixture(scope="module")
def diabetes():
    X, y = datasets.load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X[:150])
    return X, y[:150]


def test_svr_index_map_equals_the_explicit_matrix(diabetes):
    X, y = diabetes
    n = len(y)
    K = gram(KERNEL, X)
    prob = problem("eps_svr", y, {"C": 100.0, "epsilon": 10.0}, n)
    mapped = smo(RowCache.full(K, index=prob.index), prob.signs, prob.upper, tol=1e-6, p=prob.p)
    explicit = smo(np.block([[K, K], [K, K]]), prob.signs, prob.upper, tol=1e-6, p=prob.p)
    assert mapped.iterations == explicit.iterations > 0
    assert np.array_equal(mapped.alpha, explicit.alpha)
    rows = RowCache.from_data(KERNEL, X, cache_bytes=8 * 2 * n * 30, index=prob.index)  # rows from the data
    computed = smo(rows, prob.signs, prob.upper, tol=1e-6, p=prob.p)
    beta = lambda a: a[:n] - a[n:]
    assert np.max(np.abs(beta(computed.alpha) - beta(mapped.alpha))) <= 1e-4 * 100.0  # same optimum, tol apart


def _data(member):
    if member in ("eps_svr", "nu_svr"):
        X, y = datasets.load_diabetes(return_X_y=True)
        return StandardScaler().fit_transform(X[:80]), y[:80]
    X, y = datasets.load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X[:80]), (None if member == "one_class" else y[:80])


CASES = [("one_class", {"nu": 0.2}), ("eps_svr", {"C": 100.0, "epsilon": 10.0}), ("nu_svc", {"nu": 0.3}),
         ("nu_svr", {"C": 800.0, "nu": 0.5})]
#: SMO's row against the interior-point row's proved optimum at profile high: the objective relative to the size
#: of its terms, the decision values relative to the margin's or tube's size (the checks' own scales)
OBJECTIVE_RTOL = 1e-8
DECISION_RTOL = 1e-6


@pytest.mark.parametrize("member, params", CASES)
def test_smo_row_matches_the_interior_point_optimum(member, params):
    X, y = _data(member)
    formulation = f"{member}_kernel_dual"
    fast = solve(formulation, X, y, layer="cvxpy", backend="clarabel", kernel=KERNEL, profile="high",
                 method="smo", **params)
    full = solve(formulation, X, y, layer="cvxpy", backend="clarabel", kernel=KERNEL, profile="high",
                 method="full", **params)
    assert fast.status == OPTIMAL, fast.checks.get("verdict")
    assert (fast.layer, fast.backend, fast.extras["method"]) == ("direct", "smo", "smo")
    reference = full.extras["proved"]
    scale = fast.checks["objective_scale"]
    assert abs(fast.objective - reference["dual_objective"]) <= OBJECTIVE_RTOL * scale
    size = np.max(np.abs(reference["decision"] - np.median(reference["decision"])))
    assert np.max(np.abs(fast.decision - reference["decision"])) <= DECISION_RTOL * size
    if member in ("nu_svc", "one_class"):
        total = params["nu"] if member == "nu_svc" else 1.0
        assert abs(fast.alpha.sum() - total) <= 1e-12 * total  # the equality SMO's steps keep


def test_nu_svc_keeps_both_equalities():
    X, y = _data("nu_svc")
    labels = np.where(y > 0, 1.0, -1.0)
    prob = problem("nu_svc", labels, {"nu": 0.4}, len(y))
    res = smo(gram(KERNEL, X), prob.signs, prob.upper, prob.start, tol=1e-10, p=prob.p, nu=True)
    assert res.converged
    assert abs(res.alpha.sum() - 0.4) <= 1e-13 and abs(labels @ res.alpha) <= 1e-13
    assert np.all((res.alpha >= 0) & (res.alpha <= prob.upper))


def test_methods_and_their_errors():
    assert choose_method("one_class_kernel_dual", 499) == "full"
    assert choose_method("one_class_kernel_dual", 500) == "smo"
    assert choose_method("eps_svr_primal", 10_000) == "full"
    with pytest.raises(SVMInputError, match="method 'smo' is for the kernel duals"):
        choose_method("nu_svc_primal", 10, "smo")
    with pytest.raises(SVMInputError, match="positive semidefinite"):
        choose_method("one_class_kernel_dual", 10, "smo", Kernel("sigmoid"))
    assert choose_method("one_class_kernel_dual", 10_000, "auto", Kernel("sigmoid")) == "full"
    # weighted points or the hard tube (C = inf) are not in SMO's form: one finite bound for every point
    assert choose_method("eps_svr_kernel_dual", 10_000, "auto", bounded=False) == "full"
    with pytest.raises(SVMInputError, match="neither sample weights nor C = inf"):
        choose_method("eps_svr_kernel_dual", 10, "smo", bounded=False)
    # options given are the backend's: "auto" then keeps the layer and backend asked for
    assert choose_method("one_class_kernel_dual", 10_000, "auto", backend_options=True) == "full"
    with pytest.raises(SVMInputError, match="method"):
        solve("one_class_kernel_dual", np.eye(3), None, layer="cvxpy", backend="clarabel", nu=0.5, method="fast")
    with pytest.raises(ValueError, match="alpha0 is needed"):
        smo(np.eye(3), np.ones(3), 1.0, balance=1.0, p=np.zeros(3))
    with pytest.raises(ValueError, match="alpha0 is infeasible"):
        smo(np.eye(3), np.ones(3), 1.0, alpha0=np.array([0.5, 0.0, 0.0]), balance=1.0, p=np.zeros(3))


def test_auto_with_backend_options_solves_with_that_backend():
    """500 points (where "auto" picks SMO) and options for Clarabel: the solve is Clarabel's, its max_iter
    Clarabel's iterations (not SMO's steps), and an option only Clarabel knows is not refused as SMO's."""
    X = np.random.default_rng(0).normal(size=(500, 2))
    sol = solve("one_class_kernel_dual", X, None, layer="cvxpy", backend="clarabel", nu=0.5, kernel="rbf",
                options={"max_iter": 200, "tol_gap_rel": 1e-9})
    assert (sol.extras["method"], sol.layer, sol.backend) == ("full", "cvxpy", "clarabel")
    assert sol.status == "optimal", sol.checks["verdict"]


#: LIBSVM's single-precision kernel cache puts scikit-learn's decision values ~2e-5 of their size from the optimum
SKLEARN_RTOL = 2e-5


@pytest.mark.parametrize("name", ["SVR", "NuSVR", "OneClassSVM", "NuSVC"])
def test_estimators_fit_by_smo_and_agree_with_scikit_learn(name):
    from sklearn import svm

    from experiments import family_estimators as fe

    ours, theirs, params = {"SVR": (fe.SVMRegressor, svm.SVR, {"C": 100.0, "epsilon": 10.0}),
                            "NuSVR": (fe.NuSVMRegressor, svm.NuSVR, {"C": 10.0, "nu": 0.5}),
                            "OneClassSVM": (fe.OneClassSVMDetector, svm.OneClassSVM, {"nu": 0.2}),
                            "NuSVC": (fe.NuSVMClassifier, svm.NuSVC, {"nu": 0.5})}[name]
    if name in ("SVR", "NuSVR"):
        X, y = datasets.load_diabetes(return_X_y=True)
        X, y = X[:150], y[:150]
    else:
        X, y = datasets.load_iris(return_X_y=True)
        y = None if name == "OneClassSVM" else y
    X = StandardScaler().fit_transform(X)
    model = ours(**params).fit(X, y)
    reference = theirs(**params, tol=1e-10).fit(X, y)
    solutions = getattr(model, "solutions_", None) or [model.solution_]
    assert {(s.backend, s.status) for s in solutions} == {("smo", OPTIMAL)}
    if name in ("SVR", "NuSVR"):
        mine, ref = model.predict(X), reference.predict(X)
        size = np.max(np.abs(ref - ref.mean()))
    else:
        mine, ref = model.decision_function(X), reference.decision_function(X)
        size = np.max(np.abs(ref))
    assert np.max(np.abs(mine - ref)) <= SKLEARN_RTOL * size
    if y is not None and name == "NuSVC":
        np.testing.assert_array_equal(model.predict(X), reference.predict(X))


@pytest.mark.slow
def test_regression_too_large_to_prove_is_verified_by_the_gap_bound():
    """6,200 multipliers (more than the proof takes): SMO goes on to check_tol^2 of the spread, and the row is
    verified by the gap's bound on f."""
    from solvers.family import PROOF_MAX_SIZE

    X, y = datasets.make_regression(n_samples=3100, n_features=8, noise=20.0, random_state=0)
    X = StandardScaler().fit_transform(X)
    sol = solve("eps_svr_kernel_dual", X, y, layer="cvxpy", backend="clarabel", kernel=KERNEL, C=10.0, epsilon=5.0,
                method="smo")
    assert 2 * len(y) > PROOF_MAX_SIZE
    assert sol.checks["reference"].startswith("gap bound")
    assert sol.status == OPTIMAL, sol.checks["verdict"]


def test_a_time_limit_row_names_smo(monkeypatch):
    """An SMO that outlasts the limit (tests.stalled_smo: its steps never end, whatever the machine's speed) is
    killed at it: a time_limit row naming SMO (layer "direct", backend "smo") and the step it was in, no point."""
    import time

    from solvers import isolation

    preload = isolation.PRELOAD + ("tests.stalled_smo",)
    monkeypatch.setattr(isolation, "PRELOAD", preload)
    server, _ = isolation.Server.running(preload, until=time.monotonic() + isolation.SERVER_START_LIMIT_S)
    assert server is not None and server.ready
    try:
        X, y = datasets.load_diabetes(return_X_y=True)
        sol = solve("eps_svr_kernel_dual", X, y, layer="cvxpy", backend="clarabel", kernel=KERNEL, C=1e6,
                    epsilon=0.1, method="smo", time_limit=1.0)
    finally:
        server.close()
    assert (sol.status, sol.layer, sol.backend, sol.extras["method"]) == ("time_limit", "direct", "smo", "smo")
    assert "the SMO steps" in sol.message
    assert sol.decision is None  # nothing unverified reported


@settings(max_examples=4, deadline=None)
@example(seed=852, shift=0.0, flip=False)  # nu-SVR's two SMO points differ beyond DECISION_RTOL: compare the optima
@given(seed=st.integers(0, 2**16), shift=st.floats(-1e4, 1e4), flip=st.booleans())
def test_smo_rows_are_invariant(seed, shift, flip):
    """A permutation of the points permutes every member's f; a shift of the regressions' targets shifts f by
    as much; swapping nu-SVC's labels negates f: the optima proved from the SMO rows' points within DECISION_RTOL
    of f's size, each row optimal."""
    order = np.random.default_rng(seed).permutation(80)
    for member, params in CASES:
        X, y = _data(member)
        formulation = f"{member}_kernel_dual"
        base = solve(formulation, X, y, layer="cvxpy", backend="clarabel", kernel=KERNEL, method="smo", **params)
        moved_y = None if y is None else y[order]
        f = base.extras["proved"]["decision"]
        if member in ("eps_svr", "nu_svr"):
            moved_y, expected = moved_y + shift, f[order] + shift
        elif member == "nu_svc" and flip:
            moved_y, expected = 1 - moved_y, -f[order]
        else:
            expected = f[order]
        moved = solve(formulation, X[order], moved_y, layer="cvxpy", backend="clarabel", kernel=KERNEL,
                      method="smo", **params)
        assert base.status == moved.status == OPTIMAL
        size = np.max(np.abs(f - np.median(f)))
        assert np.max(np.abs(moved.extras["proved"]["decision"] - expected)) <= DECISION_RTOL * size, member


def test_smo_step_cap_and_its_errors():
    X, y = _data("eps_svr")
    capped = solve("eps_svr_kernel_dual", X, y, layer="cvxpy", backend="clarabel", kernel=KERNEL, C=100.0,
                   epsilon=10.0, method="smo", options={"max_iter": 5})
    assert (capped.status, capped.iterations) == ("iteration_limit", 5)
    assert not capped.checks["verified"]
    for bad in ({"tol": 1e-3}, {"max_iter": 0}, {"max_iter": 2.5}):
        with pytest.raises(SVMInputError, match="method 'smo' takes|max_iter must be"):
            solve("eps_svr_kernel_dual", X, y, layer="cvxpy", backend="clarabel", kernel=KERNEL, C=100.0,
                  epsilon=10.0, method="smo", options=bad)


def test_a_weighted_solve_goes_to_the_layer_and_is_verified():
    X, y = datasets.make_regression(n_samples=600, n_features=5, noise=10.0, random_state=0)  # 600: auto is SMO
    weights = np.random.default_rng(0).uniform(0.2, 3.0, size=len(y))
    sol = solve("eps_svr_kernel_dual", X, y, layer="cvxpy", backend="clarabel", C=10.0, epsilon=5.0,
                kernel=KERNEL, sample_weight=weights)
    assert sol.extras["method"] == "full" and sol.extras.get("weighted") is True
    assert sol.status == OPTIMAL
