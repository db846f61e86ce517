"""The LIBLINEAR members (squared hinge, Crammer-Singer): primal and dual in both layers, verified, the multipliers'
meaning, every scale, and wrong points refused. The peers (LinearSVC) are in test_family_liblinear_peers.py."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.preprocessing import StandardScaler

from formulations.family import MEMBERS, crammer_singer, squared_hinge
from formulations.family.common import FamilyData
from formulations.family.liblinear import w_size
from solvers import family
from solvers.solution import OPTIMAL, OPTIMAL_INACCURATE, Solution
from tests.conftest import backend_params, skip_unless_available


def solve_member(member, form, X, y, **kwargs):
    kind = "primal" if form == "primal" else "linear_dual"
    return family.solve(f"{member}_{kind}", X, y, **kwargs)


def _judged(member, form, X, y, values, objective, **params):
    """A claimed optimum (the point `values`, its objective) through the family's closing step: its status."""
    kind = "primal" if form == "primal" else "linear_dual"
    sol = Solution(formulation=f"{member}_{kind}", layer="cvxpy", backend="clarabel", status=OPTIMAL,
                      solver_status=OPTIMAL, raw_status="claimed", objective=objective)
    task = MEMBERS[member]
    codes = y if member == "crammer_singer" else np.where(y == y.max(), 1.0, -1.0)
    data = FamilyData(codes, X)
    full = {"intercept": "free" if member == "squared_hinge" else "none", "intercept_scaling": None, **params}
    return family.close(sol, values, data, full, kind, task, 1e-4)


def _standardized(loader, n=None):
    X, y = loader(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    if n is not None:  # every class kept: a stride, not a prefix (the bundled sets are sorted by class)
        keep = np.linspace(0, len(y) - 1, n).astype(int)
        X, y = X[keep], y[keep]
    return X, y


@pytest.fixture(scope="module")
def cancer():
    return _standardized(load_breast_cancer, n=120)


@pytest.fixture(scope="module")
def wine():
    return _standardized(load_wine, n=60)


@pytest.mark.parametrize("layer", ["cvxpy", "pyomo"])
@pytest.mark.parametrize("intercept", ["free", "none"])
def test_squared_hinge_primal_and_dual_agree_and_alpha_is_2C_xi(cancer, layer, intercept):
    X, y = cancer
    C = 0.05
    primal = solve_member("squared_hinge", "primal", X, y, C=C, layer=layer, backend="clarabel", intercept=intercept)
    dual = solve_member("squared_hinge", "dual", X, y, C=C, layer=layer, backend="clarabel", intercept=intercept)
    for sol in (primal, dual):
        assert sol.status == OPTIMAL, sol.message
        assert sol.checks["reference"].startswith("proved optimum")
        assert sol.checks["rel_duality_gap"] <= 1e-7
    # P* = D*, the same w and b, to the solvers' accuracy (relative to P*, ||w*||, max |f*|)
    assert abs(primal.objective - dual.objective) <= 1e-7 * primal.objective
    assert np.linalg.norm(primal.w - dual.w) <= 1e-5 * np.linalg.norm(primal.w)
    scale = np.max(np.abs(primal.decision))
    assert abs(primal.b - dual.b) <= 1e-5 * scale
    if intercept == "none":
        assert primal.b == 0.0 and dual.b == 0.0
    # the multipliers' meaning: the primal's margin multipliers are the dual's alpha, and alpha_i = 2C xi_i
    y_pm = np.where(y == y.max(), 1.0, -1.0)
    for sol in (primal, dual):
        xi = np.maximum(0.0, 1 - y_pm * sol.decision)
        assert np.max(np.abs(sol.alpha - 2 * C * xi)) <= 1e-5 * np.max(sol.alpha)
    assert np.max(np.abs(primal.alpha - dual.alpha)) <= 1e-5 * np.max(dual.alpha)
    # no upper bound: some alpha_i exceed C (a box 0 <= alpha <= C would have cut them)
    assert dual.alpha.max() > C
    if intercept == "free":  # the balance row's multiplier is b
        assert abs(dual.extras["solver_balance_multiplier"] - primal.b) <= 1e-5 * scale
        assert abs(y_pm @ dual.alpha) <= 1e-7 * dual.alpha.sum()


@pytest.mark.parametrize("layer", ["cvxpy", "pyomo"])
def test_crammer_singer_primal_and_dual_agree_and_couple_the_classes(wine, layer):
    X, y = wine
    C = 0.3
    primal = solve_member("crammer_singer", "primal", X, y, C=C, layer=layer, backend="clarabel")
    dual = solve_member("crammer_singer", "dual", X, y, C=C, layer=layer, backend="clarabel")
    for sol in (primal, dual):
        assert sol.status == OPTIMAL, sol.message
        assert sol.checks["reference"].startswith("proved optimum")
        assert sol.w.shape == (3, X.shape[1]) and sol.alpha.shape == (len(y), 3)
    assert abs(primal.objective - dual.objective) <= 1e-7 * primal.objective
    assert np.linalg.norm(primal.w - dual.w) <= 1e-5 * np.linalg.norm(primal.w)
    codes = np.searchsorted(np.unique(y), y)
    own = np.eye(3)[codes]
    for sol in (primal, dual):
        beta = C * own - sol.alpha  # the margin rows' multipliers
        # per point, the classes are coupled: sum_m alpha_i^m = 0, i.e. sum_m beta_i^m = C, beta >= 0
        assert np.max(np.abs(sol.alpha.sum(axis=1))) <= 1e-6 * C
        assert beta.min() >= -1e-6 * C
        # beta_i^m > 0 only on a class that attains xi_i = max_m (e_i^m + F_im) - F_{i y_i}
        violation = (1 - own) + sol.decision - sol.decision[np.arange(len(y)), codes][:, None]
        assert np.max(beta * (violation.max(axis=1)[:, None] - violation)) <= 1e-6 * C
    # w_m = sum_i alpha_i^m x_i
    assert np.linalg.norm(primal.w - primal.alpha.T @ X) <= 1e-6 * np.linalg.norm(primal.w)


def _moved(W, X, F, size, seed):
    """W moved so that the decision values move by about `size` of max |F| (the checks' own w scale)."""
    step = np.random.default_rng(seed).normal(size=W.shape)
    return W + size * w_size(W, X, F) * step / np.linalg.norm(step)


@pytest.mark.parametrize("C", [1e-2, 1.0, 1e2])
def test_squared_hinge_verified_at_every_scale_and_a_wrong_point_refused(cancer, C):
    """(s X, C / s^2) has the optimum (w* / s, b*) with the same f and alpha* / s^2: the optimum solved once is checked
    in every unit, at effective C from 1e-8 to 1e8. It is verified there, and the same point with f moved by 1e-3 of
    max |f| (through w, or through b) is refused, the residuals being relative to the point's own sizes."""
    X, y = cancer
    sol = solve_member("squared_hinge", "primal", X, y, C=C, layer="cvxpy", backend="clarabel")
    assert sol.status == OPTIMAL, sol.message
    for s in (1e-3, 1.0, 1e3):
        Xs, Cs, ws, alpha = X * s, C / s**2, sol.w / s, sol.alpha / s**2

        def judged(w, b):
            P = 0.5 * w @ w + Cs * np.sum(np.maximum(0.0, 1 - np.where(y == 1, 1, -1) * (Xs @ w + b)) ** 2)
            return _judged("squared_hinge", "primal", Xs, y, {"w": w, "b": b, "alpha": alpha}, P, C=Cs)

        good = judged(ws, sol.b)
        assert good.status == OPTIMAL, (s, good.message)
        assert good.checks["reference"].startswith("proved optimum")
        assert judged(_moved(ws, Xs, sol.decision, 1e-3, seed=0), sol.b).status == OPTIMAL_INACCURATE, s
        assert judged(ws, sol.b + 1e-3 * np.max(np.abs(sol.decision))).status == OPTIMAL_INACCURATE, s


@pytest.mark.parametrize("C", [1e-2, 1.0, 1e2])
def test_crammer_singer_verified_at_every_scale_and_a_wrong_point_refused(wine, C):
    """The same for Crammer-Singer: (s X, C / s^2) has the optimum W* / s, alpha* / s^2 (its dual's point is alpha
    alone: W = alpha'X, so the wrong point is the primal's W with the right multipliers)."""
    X, y = wine
    sol = solve_member("crammer_singer", "dual", X, y, C=C, layer="cvxpy", backend="clarabel")
    assert sol.status == OPTIMAL, sol.message
    codes = np.searchsorted(np.unique(y), y)
    own = np.eye(3)[codes]
    for s in (1e-3, 1.0, 1e3):
        Xs, Cs, Ws, alpha = X * s, C / s**2, sol.w / s, sol.alpha / s**2
        beta = (Cs * own - alpha).ravel()  # the primal's margin multipliers

        def judged(W):
            P = 0.5 * np.sum(W * W) + Cs * crammer_singer.values_at(Xs, codes, W)[2].sum()
            return _judged("crammer_singer", "primal", Xs, codes, {"w": W.ravel(), "alpha": beta}, P, C=Cs)

        good = judged(Ws)
        assert good.status == OPTIMAL, (s, good.message)
        assert judged(_moved(Ws, Xs, sol.decision, 1e-3, seed=1)).status == OPTIMAL_INACCURATE, s


def test_a_false_objective_claim_is_refused(cancer):
    """The optimum itself, claimed with an objective 1e-3 off the one recomputed at it, is not optimal."""
    X, y = cancer
    sol = solve_member("squared_hinge", "dual", X, y, C=1.0, layer="cvxpy", backend="clarabel")
    assert sol.status == OPTIMAL
    values = {"alpha": sol.alpha}
    honest = _judged("squared_hinge", "dual", X, y, values, sol.checks["dual_objective"], C=1.0)
    false = _judged("squared_hinge", "dual", X, y, values, sol.checks["dual_objective"] * (1 + 1e-3), C=1.0)
    assert honest.status == OPTIMAL
    assert false.status == OPTIMAL_INACCURATE and "objective claimed vs recomputed" in false.checks["verdict"]


def test_squared_hinge_optimum_is_proved_from_a_wrong_active_set(cancer):
    """The finite Newton rounds reach the optimum from every point inside the margin, and the proved optimum is
    a stationary point of the true objective: its gradient vanishes to rounding."""
    X, y = cancer
    y_pm = np.where(y == y.max(), 1.0, -1.0)
    C = 2.0
    ref = squared_hinge.optimum(X, y_pm, C, True, inside=np.ones(len(y), dtype=bool))
    assert ref.ok and ref.rounds > 1
    xi = np.maximum(0.0, 1 - y_pm * (X @ ref.w + ref.b))
    grad_w = ref.w - 2 * C * X.T @ (y_pm * xi)
    grad_b = -2 * C * (y_pm @ xi)
    assert np.linalg.norm(grad_w) <= 1e-10 * np.linalg.norm(ref.w)
    assert abs(grad_b) <= 1e-10 * 2 * C * np.abs(xi).sum()


def test_crammer_singer_proof_is_liblinear_optimum_and_never_a_wrong_one(wine):
    """The optimum proved from the solver's active rows is LIBLINEAR's (no bias, tol 1e-12) to 1e-6; from a wrong
    start (each point's own-class row only) the rounds either reach that optimum or prove nothing."""
    X, y = wine
    codes = np.searchsorted(np.unique(y), y)
    C = 0.3
    sol = solve_member("crammer_singer", "primal", X, y, C=C, layer="cvxpy", backend="clarabel")
    beta = C * np.eye(3)[codes] - sol.alpha
    ref = crammer_singer.optimum(X, codes, 3, C, rows=np.flatnonzero(beta.ravel() > 1e-6 * C))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        peer = LinearSVC(multi_class="crammer_singer", fit_intercept=False, C=C, tol=1e-12, max_iter=10**7).fit(X, y)
    assert ref.ok
    assert np.linalg.norm(ref.W - peer.coef_) <= 1e-6 * np.linalg.norm(peer.coef_)
    poor = crammer_singer.optimum(X, codes, 3, C, rows=np.arange(len(y)) * 3 + codes)
    assert not poor.ok or np.linalg.norm(poor.W - ref.W) <= 1e-9 * np.linalg.norm(ref.W)


def test_best_bias_minimises_the_squared_hinge():
    rng = np.random.default_rng(2)
    g = rng.normal(size=40)
    y = np.where(rng.random(40) < 0.4, 1.0, -1.0)
    b = squared_hinge.best_bias(g, y)

    def loss(bb):
        return np.sum(np.maximum(0.0, 1 - y * (g + bb)) ** 2)

    assert all(loss(b) <= loss(b + t) for t in (-1e-6, 1e-6, -0.1, 0.1))
    inside = 1 - y * (g + b) > 0
    assert abs(np.sum(y[inside] * (1 - y[inside] * (g[inside] + b)))) <= 1e-12 * inside.sum()


def test_regularized_intercept_is_the_constant_feature(cancer):
    """intercept="regularized" (LIBLINEAR's -B 1): b = intercept_scaling * w_last, penalised as (b / s)^2."""
    X, y = cancer
    s = 3.0
    sol = solve_member("squared_hinge", "primal", X, y, C=1.0, layer="cvxpy", backend="clarabel",
                       intercept="regularized", intercept_scaling=s)
    augmented = solve_member("squared_hinge", "primal", np.hstack([X, np.full((len(y), 1), s)]), y, C=1.0,
                             layer="cvxpy", backend="clarabel", intercept="none")
    assert sol.status == augmented.status == OPTIMAL
    assert sol.w.shape == (X.shape[1],)
    assert abs(sol.b - s * augmented.w[-1]) <= 1e-9 * abs(sol.b)
    assert np.allclose(sol.decision, augmented.decision, rtol=0, atol=1e-9 * np.max(np.abs(sol.decision)))


@pytest.fixture(scope="module")
def liblinear_optima():
    """Small sets and LIBLINEAR's optimum on each (the regularized bias; tol 1e-10): the reference of every backend."""
    cancer = _standardized(load_breast_cancer, n=40)
    wine = _standardized(load_wine, n=30)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        binary = LinearSVC(loss="squared_hinge", C=1.0, tol=1e-10, max_iter=10**7).fit(*cancer)
        multi = LinearSVC(multi_class="crammer_singer", C=1.0, tol=1e-10, max_iter=10**7).fit(*wine)
    return {"squared_hinge": (cancer, binary.decision_function(cancer[0])),
            "crammer_singer": (wine, multi.decision_function(wine[0]))}


@pytest.mark.parametrize("layer, backend", backend_params())
def test_every_backend_is_optimal_only_at_liblinears_optimum(liblinear_optima, layer, backend):
    """Whatever a backend claims, a row is `optimal` only with LIBLINEAR's decision values (to the default
    profile's 1e-4 of max |f|); the interior-point backends, which reach it, must be verified."""
    skip_unless_available(layer, backend)
    for member, ((X, y), f_peer) in liblinear_optima.items():
        for form in ("primal", "dual"):
            sol = solve_member(member, form, X, y, C=1.0, layer=layer, backend=backend, intercept="regularized")
            if backend in ("clarabel", "piqp"):
                assert sol.status == OPTIMAL, (member, form, sol.message)
            if sol.status != OPTIMAL:
                assert sol.w is None or sol.checks.get("verdict") != "verified", (member, form)
                continue
            f = (X @ sol.w + sol.b if member == "squared_hinge"
                 else X @ sol.w.T + np.asarray(sol.extras["intercepts"]))
            assert np.max(np.abs(f - f_peer)) <= 1e-4 * np.max(np.abs(f_peer)), (member, form)


def test_crammer_singer_proof_never_above_a_feasible_point_at_tiny_effective_C(wine):
    """At C = 1e-4 on X x 1e-3 every xi_i is near 1 and the classes differ by about 1e-10 in F, where Clarabel's point
    is far from the optimum. Any W is primal feasible, so no proved optimum may have a P above LIBLINEAR's: from the
    solver's rows the rounds either prove a W at or below it or prove nothing, and the row is optimal only at
    LIBLINEAR's W."""
    X, y = wine
    X = X * 1e-3
    C = 1e-4
    codes = np.searchsorted(np.unique(y), y)
    sol = solve_member("crammer_singer", "dual", X, y, C=C, layer="cvxpy", backend="clarabel", profile="high")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        peer = LinearSVC(multi_class="crammer_singer", fit_intercept=False, C=C, tol=1e-12, max_iter=10**6).fit(X, y)

    def P(W):
        return 0.5 * np.sum(W * W) + C * crammer_singer.values_at(X, codes, W)[2].sum()

    beta = C * np.eye(3)[codes] - sol.alpha
    proof = crammer_singer.optimum(X, codes, 3, C, np.flatnonzero(beta.ravel() > crammer_singer.START_BETA * C))
    assert not proof.ok or P(proof.W) <= P(peer.coef_) + 1e-12 * P(peer.coef_)
    if sol.status == OPTIMAL:
        assert np.linalg.norm(sol.w - peer.coef_) <= 1e-4 * np.linalg.norm(peer.coef_)


@pytest.mark.parametrize("member, data", [("squared_hinge", "cancer"), ("crammer_singer", "wine")])
def test_sparse_X_gives_the_dense_optimum(member, data, request):
    """A scipy.sparse X (kept sparse through the models, the conditions and the proof) has the dense X's optimum."""
    X, y = request.getfixturevalue(data)
    X = np.where(np.abs(X) > 0.5, X, 0.0)
    for form in ("primal", "dual"):
        sparse = solve_member(member, form, sp.csr_matrix(X), y, C=1.0, layer="pyomo", backend="piqp",
                              intercept="regularized")
        dense = solve_member(member, form, X, y, C=1.0, layer="cvxpy", backend="clarabel", intercept="regularized")
        assert sparse.status == dense.status == OPTIMAL, (form, sparse.message)
        assert sparse.checks["reference"].startswith("proved optimum")
        assert abs(sparse.objective - dense.objective) <= 1e-7 * abs(dense.objective)
        assert np.linalg.norm(sparse.w - dense.w) <= 1e-5 * np.linalg.norm(dense.w)
