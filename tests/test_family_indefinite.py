"""The sigmoid kernel where its Gram matrix is indefinite: the family's duals are then non-convex QPs.

solvers.family.solve refuses such a K unless allow_indefinite=True (as solvers.api.solve does for the C-SVM); with
it, the row is never `optimal` (no convex proof applies: no gap bound, and a point meeting the KKT conditions is a
stationary point, not a certified optimum). The checks still find and check the KKT point of the point's active
set (extras["kkt_point"]), and say whether its reduced Hessian is positive semidefinite on its face. The estimators
fit the sigmoid kernel as SVC does, with an IndefiniteKernelWarning; a convex solver that finds no KKT point hands
the dual to Ipopt.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn import svm
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning

from experiments.estimator import IndefiniteKernelWarning
from experiments.family_estimators import NuSVMClassifier, OneClassSVMDetector
from experiments.family_peers import DECISION_RTOL
from formulations.errors import IndefiniteKernelError
from formulations.kernels import Kernel, gram
from solvers.family import solve
from tests.test_family_estimators import TIGHT

SIGMOID = Kernel("sigmoid", gamma=1.0)
#: scikit-learn's blobs (its test_sparse.py's third case): the sigmoid Gram matrix has eigenvalue -19.1
X_BLOBS, Y_BLOBS = (part[:80] for part in make_blobs(n_samples=100, centers=10, random_state=0))


def test_an_indefinite_kernel_is_refused_unless_allowed():
    with pytest.raises(IndefiniteKernelError, match=r"sigmoid\(gamma=1,coef0=0\).*-19\.11"):
        solve("one_class_kernel_dual", X_BLOBS, None, layer="pyomo", backend="piqp", nu=0.5, kernel=SIGMOID)


@pytest.mark.parametrize("backend", ["ipopt", "piqp"])
def test_a_non_convex_dual_is_never_optimal_and_its_kkt_point_is_checked(backend):
    """Ipopt's point meets the KKT conditions, and the checks find the KKT point of its active set: the row is
    optimal_inaccurate all the same, saying why, with the kernel's eigenvalue in its message. PIQP's point (its
    iteration cap) is no optimum of any kind. The KKT point is checked here independently: f = K alpha - rho is
    0 where alpha is strictly inside its box, >= 0 at 0 and <= 0 at the bound, to 1e-9 of max |f|."""
    sol = solve("one_class_kernel_dual", X_BLOBS, None, layer="pyomo", backend=backend, nu=0.5, kernel=SIGMOID,
                allow_indefinite=True)
    assert sol.status != "optimal"
    assert sol.extras["indefinite_kernel"] and sol.message.startswith("INDEFINITE KERNEL")
    assert "-19.11" in sol.message
    assert "non-convex" in sol.checks["verdict"]
    if backend == "piqp":
        return
    assert sol.status == "optimal_inaccurate" and sol.checks["reference"] == "KKT point (non-convex dual)"
    assert sol.checks["kkt_conditions"] == "hold"
    kkt = sol.extras["kkt_point"]
    alpha, U = kkt["alpha"], 1.0 / (0.5 * len(X_BLOBS))
    f = gram(SIGMOID, X_BLOBS) @ alpha - kkt["rho"]
    tol = 1e-9 * np.max(np.abs(f))
    assert abs(alpha.sum() - 1.0) <= 1e-12 and alpha.min() >= 0 and alpha.max() <= U
    assert np.all(f[alpha == 0] >= -tol) and np.all(f[alpha == U] <= tol)
    assert np.all(np.abs(f[(alpha > 0) & (alpha < U)]) <= tol)
    assert kkt["second_order"].startswith("holds")


def test_one_class_estimator_fits_the_sigmoid_kernel_with_a_warning():
    """As OneClassSVM fits it: PIQP finds no KKT point, Ipopt does; the model is that point in LIBSVM's scale,
    with an IndefiniteKernelWarning and no ConvergenceWarning (LIBSVM's own point is another KKT point: a
    non-convex dual has several, so no agreement with it is asked)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        with pytest.warns(IndefiniteKernelWarning, match=r"not positive semidefinite .*min eigenvalue -19\.1"):
            model = OneClassSVMDetector(kernel="sigmoid", gamma=1.0, nu=0.5).fit(X_BLOBS)
    sol = model.solution_
    assert sol.backend == "ipopt" and sol.extras["first_backend"].startswith("piqp")
    kkt = sol.extras["kkt_point"]
    scale = 0.5 * len(X_BLOBS)
    np.testing.assert_allclose(model.decision_function(X_BLOBS), scale * kkt["decision"], rtol=0,
                               atol=1e-9 * scale * np.max(np.abs(kkt["decision"])))


def test_nu_svc_with_the_sigmoid_kernel_agrees_with_nusvc():
    """Two classes of the blobs, sigmoid gamma 0.1 (indefinite), nu = 0.5: the KKT point Ipopt reaches is
    LIBSVM's here, decision values within LIBSVM's accuracy."""
    y = (Y_BLOBS < 5).astype(int)
    with pytest.warns(IndefiniteKernelWarning):
        ours = NuSVMClassifier(kernel="sigmoid", gamma=0.1, nu=0.5).fit(X_BLOBS, y)
    theirs = svm.NuSVC(kernel="sigmoid", gamma=0.1, nu=0.5, tol=TIGHT).fit(X_BLOBS, y)
    assert ours.solutions_[0].extras["indefinite_kernel"]
    ref = theirs.decision_function(X_BLOBS)
    assert np.max(np.abs(ours.decision_function(X_BLOBS) - ref)) <= DECISION_RTOL * np.max(np.abs(ref))


def test_a_kkt_point_failing_its_own_conditions_is_not_kept(monkeypatch):
    """The active set's KKT point is checked against its own conditions before it is kept: a wrong one (here the
    proof's point scaled by 1.5, so sum alpha = 1.5 breaks the one-class dual's equality sum alpha = 1) is no
    reference; the row's own point (Ipopt's, which meets its KKT conditions) is still judged."""
    import solvers.family as family_solver

    real = family_solver.prove
    monkeypatch.setattr(family_solver, "prove", lambda qp, a: None if (x := real(qp, a)) is None else 1.5 * x)
    sol = solve("one_class_kernel_dual", X_BLOBS, None, layer="pyomo", backend="ipopt", nu=0.5, kernel=SIGMOID,
                allow_indefinite=True)
    assert "kkt_point" not in sol.extras
    assert sol.checks["reference"].startswith("none (non-convex dual: the active set's KKT point fails")


def test_an_estimator_refuses_a_kkt_point_the_solver_did_not_claim(monkeypatch):
    """A row with a KKT point but a status that claims no optimum (the solver's iteration cap) is no fit: the
    estimator accepts a non-convex dual's point only as optimal_inaccurate with its KKT conditions verified."""
    import experiments.family_estimators as fe
    from experiments.estimator import SVMFitError

    def capped(est, formulation, X, K, y, params, backend, layer=None, method="full", options=None):
        sol = solve(formulation, X, None, layer="pyomo", backend="ipopt", nu=0.5, kernel=SIGMOID,
                    allow_indefinite=True)
        assert sol.extras.get("kkt_verified") and "kkt_point" in sol.extras
        sol.status = "iteration_limit"
        return sol

    monkeypatch.setattr(fe, "_solve_with", capped)
    with pytest.raises(SVMFitError, match="ended with status 'iteration_limit'"):
        OneClassSVMDetector(kernel="sigmoid", gamma=1.0, nu=0.5, backend="ipopt").fit(X_BLOBS)
