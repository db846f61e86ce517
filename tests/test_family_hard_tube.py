"""epsilon-SVR with C = inf, the hard tube (scikit-learn's SVR(C=inf)): every target within epsilon of f, no slacks.

Its primal has a point only where some f of the kernel passes within epsilon of every target; there the row is
verified as any other (the dual without upper bounds), elsewhere the solver's "infeasible" / "unbounded" is kept
only when an independent LP finds the narrowest such tube wider than epsilon, and the estimator's error says how
wide a tube the data need.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn import svm
from sklearn.datasets import make_regression
from sklearn.exceptions import ConvergenceWarning

from experiments.family_estimators import SVMFitError, SVMRegressor
from experiments.family_peers import DECISION_RTOL, load
from formulations.errors import SVMInputError
from formulations.family.common import FamilyData
from solvers.family import solve
from solvers.family_proof import hard_tube_width
from tests.test_family_estimators import TIGHT


def test_svr_with_infinite_C_agrees_with_scikit_learn():
    """Diabetes (80 points, standardized features), rbf: SVR(C=inf) and ours predict alike to LIBSVM's accuracy,
    every target within epsilon of f, and our fit is the proved optimum of the hard tube."""
    X, y = load("diabetes", 80)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ours = SVMRegressor(C=math.inf, epsilon=10.0).fit(X, y)
    theirs = svm.SVR(C=math.inf, epsilon=10.0, tol=TIGHT).fit(X, y)
    ref = theirs.predict(X)
    assert np.max(np.abs(ours.predict(X) - ref)) <= DECISION_RTOL * np.max(np.abs(ref))
    assert np.max(np.abs(y - ours.predict(X))) <= 10.0 * (1 + 1e-9)
    assert "proved" in ours.solution_.extras


@pytest.mark.parametrize("layer", ["pyomo", "cvxpy"])
def test_hard_tube_primal_and_dual_are_verified_and_a_large_C_reaches_it(layer):
    """Linear kernel, a tube the data allow (epsilon 1.5 times the narrowest): the primal and the dual are
    verified with P* = D*, and epsilon-SVR at C = 1e8 (no multiplier near its bound) has the same f."""
    X, y = make_regression(n_samples=50, n_features=3, noise=5.0, random_state=1)
    eps = 1.5 * hard_tube_width(FamilyData(y, X), y)
    rows = [solve(f, X, y, layer=layer, backend="piqp", C=math.inf, epsilon=eps, profile="high",
                  kernel="linear" if f.endswith("dual") else None) for f in ("eps_svr_primal", "eps_svr_kernel_dual")]
    for sol in rows:
        assert sol.status == "optimal", (sol.formulation, sol.checks["verdict"])
        assert sol.checks["kkt_tube_(hard)"] <= 1e-6
    large = solve("eps_svr_kernel_dual", X, y, layer=layer, backend="piqp", C=1e8, epsilon=eps, profile="high",
                  kernel="linear").extras["proved"]["decision"]
    for sol in rows:
        assert np.max(np.abs(sol.decision - large)) <= 1e-6 * np.max(np.abs(large))


def test_a_tube_the_data_do_not_allow_is_said_with_its_width():
    """Linear kernel, noisy targets, epsilon = 0.1: the primal is infeasible and the dual unbounded, kept because
    the LP's narrowest tube (20.86 here) is wider; a tube a little wider than it is verified optimal; the estimator
    names the width."""
    X, y = make_regression(n_samples=60, n_features=3, noise=10, random_state=0)
    width = hard_tube_width(FamilyData(y, X), y)
    for formulation, claim in (("eps_svr_primal", "infeasible"), ("eps_svr_kernel_dual", "unbounded")):
        sol = solve(formulation, X, y, layer="cvxpy", backend="clarabel", C=math.inf, epsilon=0.1,
                    kernel="linear" if formulation.endswith("dual") else None)
        assert sol.status == claim
        assert sol.extras["hard_tube_epsilon"] == pytest.approx(width, rel=1e-12)
        assert f"narrowest such tube has epsilon = {width:.6g}" in sol.message
    wide = solve("eps_svr_primal", X, y, layer="cvxpy", backend="clarabel", C=math.inf, epsilon=width * 1.001)
    assert wide.status == "optimal"
    assert np.max(np.abs(y - wide.decision)) <= width * 1.001 * (1 + 1e-6)
    with pytest.raises(SVMFitError, match=rf"narrowest such tube has epsilon = {width:.6g}"):
        SVMRegressor(kernel="linear", C=math.inf, epsilon=0.1).fit(X, y)


def test_the_lp_width_is_the_smallest_max_residual():
    """The narrowest tube of a straight line through three points is half their vertical gap to it."""
    X = np.array([[0.0], [1.0], [2.0]])
    y = np.array([0.0, 2.0, 0.0])  # the best line is y = 1 with residuals 1, 1, 1
    assert hard_tube_width(FamilyData(y, X), y) == pytest.approx(1.0, rel=1e-9)


def test_nu_svr_refuses_infinite_C_with_its_reason():
    X, y = load("diabetes", 20)
    with pytest.raises(SVMInputError, match="C = inf has no meaning for nu-SVR"):
        solve("nu_svr_kernel_dual", X, y, layer="cvxpy", backend="clarabel", C=math.inf, nu=0.5, kernel="rbf")


def test_a_sparse_X_gets_the_same_tube_width():
    """The LP takes scipy.sparse X as it is: the hard tube's claim on sparse data is judged (the same width as the
    dense data's, to the LP's rounding), not a crash."""
    from scipy import sparse

    X, y = make_regression(n_samples=60, n_features=3, noise=10, random_state=0)
    width = hard_tube_width(FamilyData(y, X), y)
    assert hard_tube_width(FamilyData(y, sparse.csr_matrix(X)), y) == pytest.approx(width, rel=1e-9)
    sol = solve("eps_svr_primal", sparse.csr_matrix(X), y, layer="cvxpy", backend="clarabel", C=math.inf,
                epsilon=0.1)
    assert sol.status == "infeasible" and sol.extras["hard_tube_epsilon"] == pytest.approx(width, rel=1e-9)


def test_a_failed_lp_leaves_the_claim_unverified_and_says_why(monkeypatch):
    """Where the independent LP has no answer, the backend's claim is neither refuted (no "backend failure ...
    within nan") nor confirmed: the row keeps it, says it is not verified, and names the LP's failure."""
    from scipy.optimize import OptimizeResult

    import solvers.family_proof as proof

    monkeypatch.setattr(proof, "linprog", lambda *a, **k: OptimizeResult(status=4, message="numerical trouble"))
    X, y = make_regression(n_samples=60, n_features=3, noise=10, random_state=0)
    sol = solve("eps_svr_primal", X, y, layer="cvxpy", backend="clarabel", C=math.inf, epsilon=0.1)
    assert sol.status == "infeasible" and math.isnan(sol.extras["hard_tube_epsilon"])
    assert "not verified" in sol.message and "status 4: numerical trouble" in sol.message
    assert "backend failure" not in sol.message and "false_status" not in sol.extras


def test_a_backend_failure_on_the_hard_tube_does_not_call_it_feasible():
    """failure_advice: the hard tube (C = inf) may have no point, so the advice does not say the problem is feasible
    and bounded (as it does for a finite C), and it names every other backend of the layer available here."""
    from formulations.family import MEMBERS
    from solvers.family import failure_advice
    from solvers.registry import available_backends
    from solvers.solution import Solution

    sol = Solution("eps_svr_primal", "cvxpy", "clarabel", "error", "error", "solver_error", message="it failed")
    others = [name for _, name in available_backends("cvxpy") if name != "clarabel"]
    hard = failure_advice(sol, MEMBERS["eps_svr"], {"C": math.inf, "epsilon": 0.1})
    assert "feasible and bounded" not in hard and "or a finite C" in hard
    assert f"try another backend ({', '.join(others)})" in hard
    soft = failure_advice(sol, MEMBERS["eps_svr"], {"C": 1e9, "epsilon": 0.1})
    assert "the problem is feasible and bounded" in soft and soft.endswith("another profile or a smaller C")
