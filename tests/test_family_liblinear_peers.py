"""The LIBLINEAR members against LIBLINEAR itself (scikit-learn's LinearSVC), on scikit-learn's bundled data,
standardized.

Conventions normalised: LinearSVC's fit_intercept appends the constant feature intercept_scaling (= 1) to X, so its
bias is regularized; the project's intercept="regularized" does the same (formulations/family). Objectives are
recomputed for both points by the same formula (P = 1/2 ||(w, b)||^2 + C sum loss), and decision values compared
relative to max |f|. Two comparisons, each with its tolerance:
  - LinearSVC(tol=1e-10) against the optimum the checks proved from the solver's point: 1e-9 of max |f|
    (measured on breast cancer: 1.6e-12 to 6.6e-12 at C = 0.01, 1, 100);
  - the solver's own point (Clarabel, default profile) against LinearSVC: objectives 1e-8 relative, decision
    values 1e-5 of max |f| (measured: 4e-9 to 3.4e-6; the default profile's checks hold it to 1e-4).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from solvers import solution as st
from solvers import family


def solve_member(member, form, X, y, **kwargs):
    kind = "primal" if form == "primal" else "linear_dual"
    return family.solve(f"{member}_{kind}", X, y, **kwargs)


def _standardized(loader):
    X, y = loader(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _peer(**params):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # a peer stopped at its cap is no reference
        return LinearSVC(tol=1e-10, max_iter=10_000_000, **params)


@pytest.mark.parametrize("form", ["primal", "dual"])
@pytest.mark.parametrize("C", [0.01, 1.0, 100.0])
def test_squared_hinge_is_linearsvc(form, C):
    X, y = _standardized(load_breast_cancer)
    peer = _peer(loss="squared_hinge", dual=True, C=C)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        peer.fit(X, y)
    w, b = peer.coef_.ravel(), float(peer.intercept_[0])
    f_peer = X @ w + b
    y_pm = np.where(y == 1, 1.0, -1.0)
    P_peer = 0.5 * (w @ w + b * b) + C * np.sum(np.maximum(0.0, 1 - y_pm * f_peer) ** 2)
    sol = solve_member("squared_hinge", form, X, y, C=C, layer="cvxpy", backend="clarabel", intercept="regularized")
    assert sol.status == st.OPTIMAL, sol.message
    scale = np.max(np.abs(f_peer))
    f_proved = sol.extras["proved"]["decision"]
    assert np.max(np.abs(f_proved - f_peer)) <= 1e-9 * scale
    assert abs(sol.checks["primal_objective"] - P_peer) <= 1e-8 * P_peer
    assert np.max(np.abs(sol.decision - f_peer)) <= 1e-5 * scale


def _crammer_singer_against_peer(loader, C, form, proved_tol=1e-9):
    X, y = _standardized(loader)
    peer = _peer(multi_class="crammer_singer", C=C)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        peer.fit(X, y)
    F_peer = X @ peer.coef_.T + peer.intercept_
    codes = np.searchsorted(peer.classes_, y)
    n = len(y)
    violation = (1.0 - np.eye(len(peer.classes_))[codes]) + F_peer - F_peer[np.arange(n), codes][:, None]
    P_peer = 0.5 * (np.sum(peer.coef_**2) + np.sum(peer.intercept_**2)) + C * violation.max(axis=1).sum()
    sol = solve_member("crammer_singer", form, X, y, C=C, layer="cvxpy", backend="clarabel", intercept="regularized")
    assert sol.status == st.OPTIMAL, sol.message
    assert sol.checks["reference"].startswith("proved optimum")
    scale = np.max(np.abs(F_peer))
    F_proved = sol.extras["proved"]["decision"]
    assert np.max(np.abs(F_proved - F_peer)) <= proved_tol * scale
    assert abs(sol.checks["primal_objective"] - P_peer) <= 1e-8 * P_peer
    F = X @ sol.w.T + np.array(sol.extras["intercepts"])
    assert np.max(np.abs(F - F_peer)) <= 1e-5 * scale


@pytest.mark.parametrize("form", ["primal", "dual"])
@pytest.mark.parametrize("loader", [load_iris, load_wine], ids=["iris", "wine"])
def test_crammer_singer_is_linearsvc(loader, form):
    _crammer_singer_against_peer(loader, 1.0, form)


@pytest.mark.slow
@pytest.mark.parametrize("form", ["primal", "dual"])
def test_crammer_singer_is_linearsvc_on_digits(form):
    """1,797 points, 10 classes, 64 features: 17,970 margin rows (a minute or two per solve on a shared machine). The
    proved optimum is LinearSVC's to 1.1e-9 of max |F| here (its KKT system has 4,000-5,000 unknowns)."""
    _crammer_singer_against_peer(load_digits, 0.1, form, proved_tol=1e-8)
