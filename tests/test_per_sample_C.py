"""Per-sample bounds 0 <= alpha_i <= C_i (formulations.penalty) through `solve` and the direct path:
against LIBSVM's weighted C (SVC with sample_weight), a constant vector against the scalar, the
checks' use of C_i, bad vectors refused at the boundary; and through the working sets (the kernel
dual's blocks and split start, the soft primal's restricted QPs) against the whole QP."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as st_
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from experiments.datasets import overlapping
from formulations import soft_primal
from formulations.errors import SVMInputError
from formulations.kernels import Kernel, gram
from solvers import api
from solvers.solution import OPTIMAL
from solvers.algorithms import direct, primal_working_set
from solvers.algorithms import working_set as ws
from solvers.api import solve
from solvers.checks import compute_checks

SVC_TOL = 1e-10
GAMMA = 0.05
# LIBSVM keeps its kernel cache in single precision: its decision values are off by up to ~2e-5.
DECISION_RTOL = 1e-4


@pytest.fixture(scope="module")
def weighted():
    """120 standardized breast-cancer samples with sample weights from 0.2 to 3 (C_i = 0.5 w_i)."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)[:120]
    y = y[:120]
    weights = np.random.default_rng(0).uniform(0.2, 3.0, len(y))
    return X, y, np.where(y == 1, 1.0, -1.0), weights


def _svc_decision(X, y, weights, kernel):
    svc = SVC(kernel=kernel, C=0.5, gamma=GAMMA, tol=SVC_TOL).fit(X, y, sample_weight=weights)
    return svc.decision_function(X)


def _assert_close_to(decision, reference):
    scale = float(np.max(np.abs(reference)))
    assert float(np.max(np.abs(decision - reference))) <= DECISION_RTOL * scale


@pytest.mark.parametrize("layer,backend", [("pyomo", "piqp"), ("pyomo", "clarabel"), ("cvxpy", "piqp"),
                                           ("cvxpy", "clarabel")])
@pytest.mark.parametrize("formulation", ["soft_primal", "dual", "kernel_dual"])
def test_per_sample_C_matches_svc_sample_weight(weighted, layer, backend, formulation):
    X, y, signs, weights = weighted
    kernel = "rbf" if formulation == "kernel_dual" else "linear"
    sol = solve(formulation, X, signs, layer=layer, backend=backend, C=0.5 * weights, profile="high",
                kernel=Kernel("rbf", gamma=GAMMA) if kernel == "rbf" else None)
    assert sol.status == OPTIMAL, sol.checks["verdict"]
    _assert_close_to(sol.decision, _svc_decision(X, y, weights, kernel))
    alpha = np.asarray(sol.alpha)
    assert np.all(alpha <= 0.5 * weights * (1 + 1e-6))  # each alpha_i under its own C_i
    assert np.any(alpha > 0.5 * weights.min() * 1.01)  # ... and above the smallest: the bounds differ


@pytest.mark.parametrize("formulation,kernel_form", [("soft_primal", "dense"), ("dual", "dense"),
                                                     ("kernel_dual", "dense"), ("kernel_dual", "factor")])
def test_per_sample_C_through_the_solver_alone(weighted, formulation, kernel_form):
    X, y, signs, weights = weighted
    kernel = "rbf" if formulation == "kernel_dual" else "linear"
    K = gram(Kernel("rbf", gamma=GAMMA), X) if kernel == "rbf" else None
    sol = direct.solve(formulation, X, signs, backend="piqp", C=0.5 * weights, K=K, kernel_form=kernel_form,
                       profile="high")
    assert sol.status == OPTIMAL, sol.checks["verdict"]
    _assert_close_to(sol.decision, _svc_decision(X, y, weights, kernel))


@pytest.mark.parametrize("layer,backend,formulation", [("pyomo", "piqp", "kernel_dual"), ("cvxpy", "clarabel", "dual"),
                                                       ("pyomo", "highs", "soft_primal")])
def test_constant_vector_C_equals_the_scalar(weighted, layer, backend, formulation):
    X, _, signs, _ = weighted
    kernel = Kernel("rbf", gamma=GAMMA) if formulation == "kernel_dual" else None
    one = solve(formulation, X, signs, layer=layer, backend=backend, C=0.7, kernel=kernel, profile="high")
    each = solve(formulation, X, signs, layer=layer, backend=backend, C=np.full(len(signs), 0.7), kernel=kernel,
                 profile="high")
    assert one.status == each.status
    np.testing.assert_allclose(each.decision, one.decision, rtol=0, atol=1e-9 * np.max(np.abs(one.decision)))
    assert each.b == pytest.approx(one.b, rel=1e-9)
    assert each.checks["primal_objective"] == pytest.approx(one.checks["primal_objective"], rel=1e-12)


def test_all_infinite_C_is_the_hard_margin():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 3.0], [4.0, 3.0]])
    y = np.array([-1.0, -1.0, 1.0, 1.0])
    hard = solve("dual", X, y, layer="cvxpy", backend="clarabel", C=math.inf, profile="high")
    each = solve("dual", X, y, layer="cvxpy", backend="clarabel", C=np.full(4, math.inf), profile="high")
    assert hard.status == each.status == OPTIMAL
    np.testing.assert_allclose(each.w, hard.w, rtol=1e-9)


def test_checks_measure_each_alpha_against_its_own_C(weighted):
    """A verified point is refused once one bound C_i is lowered below its alpha_i (scalar C could not tell)."""
    X, _, signs, weights = weighted
    C = 0.5 * weights
    sol = solve("dual", X, signs, layer="pyomo", backend="piqp", C=C, profile="high")
    assert sol.status == OPTIMAL
    at_bound = int(np.argmax(np.asarray(sol.alpha) / C))  # an alpha_i at its own bound C_i
    assert sol.alpha[at_bound] == pytest.approx(C[at_bound], rel=1e-6)
    lowered = C.copy()
    lowered[at_bound] *= 0.5  # alpha_i is now twice its bound: dual feasibility 1.0 (relative to C_i)
    checks = compute_checks(sol, X, signs, lowered, tol=1e-6)
    assert checks.kkt_dual_feasibility == pytest.approx(1.0, rel=1e-4)
    assert not checks.verified
    assert compute_checks(sol, X, signs, C, tol=1e-6).verified


@pytest.mark.parametrize(
    "C,match",
    [
        (np.ones(5), "C has 5 values but there are 120 samples"),
        (np.ones((120, 1)), r"one value per sample \(shape \(120,\)\)"),
        (np.r_[np.ones(119), 0.0], r"C must be > 0 for every sample; C\[119\] = 0 "),
        (np.r_[-1.0, np.ones(119)], r"C\[0\] = -1 "),
        (np.r_[np.ones(60), np.nan, np.ones(59)], r"C\[60\] = nan"),
        (np.r_[np.ones(119), np.inf], r"C\[119\] is infinite but other C_i are finite"),
        (["a"] * 120, "C must be numeric"),
    ],
)
def test_bad_per_sample_C_is_refused_by_name(weighted, monkeypatch, C, match):
    X, _, signs, _ = weighted

    def no_build(*args, **kwargs):  # the error must come before any model is built
        raise AssertionError("a model was built")

    monkeypatch.setattr(api.formulations, "build", no_build)
    with pytest.raises(SVMInputError, match=match):
        solve("dual", X, signs, layer="cvxpy", backend="clarabel", C=C)


def test_infinite_per_sample_C_refused_by_the_soft_primal(weighted):
    X, _, signs, _ = weighted
    with pytest.raises(SVMInputError, match="C must be finite"):
        solve("soft_primal", X, signs, layer="cvxpy", backend="clarabel", C=np.full(len(signs), np.inf))


@pytest.fixture(scope="module")
def whole_qp(weighted):
    """The whole QP's proved optimum at C_i = 0.2 w_i (7-47 alphas at their own bounds), for the rbf kernel dual
    and the linear dual: {formulation: dual objective}."""
    X, _, signs, weights = weighted
    out = {}
    for formulation, kernel in (("kernel_dual", Kernel("rbf", gamma=GAMMA)), ("dual", None)):
        sol = solve(formulation, X, signs, layer="cvxpy", backend="clarabel", C=0.2 * weights, kernel=kernel,
                    profile="high", method="full")
        assert sol.status == OPTIMAL and sol.checks["reference"] == "proved optimum"
        out[formulation] = sol.checks["dual_objective"]
    return out


@pytest.mark.parametrize("layer", ["direct", "cvxpy", "pyomo"])
@pytest.mark.parametrize("formulation", ["kernel_dual", "dual"])
def test_per_sample_C_by_the_working_set_reaches_the_whole_qp_s_optimum(weighted, whole_qp, layer, formulation):
    """The duals' working set takes each point's own bound C_i: in its blocks (each layer's per-index bounds),
    its violation sets, snap and SMO steps; every alpha_i stays under its own C_i."""
    X, _, signs, weights = weighted
    C = 0.2 * weights
    sol = solve(formulation, X, signs, layer=layer, backend="piqp", C=C, method="working_set", profile="high",
                kernel=Kernel("rbf", gamma=GAMMA) if formulation == "kernel_dual" else None)
    assert sol.status == OPTIMAL and sol.extras["method"] == "working_set", sol.checks.get("verdict")
    assert sol.extras["loop_gap"] <= ws.WorkingSetOptions.gap_tol  # the loop's own point, not the closing proof's
    assert abs(sol.checks["dual_objective"] - whole_qp[formulation]) <= 1e-7 * abs(whole_qp[formulation])
    alpha = np.asarray(sol.alpha)
    assert np.all(alpha <= C)
    at_own_bound = alpha == C
    assert np.unique(C[at_own_bound]).size >= 5  # points at bounds of different sizes, each exactly on its own


def test_the_split_start_takes_per_sample_C(weighted, whole_qp):
    """From the split start (every point a candidate: split_from = n) the points put at the bound take their own
    C_i, the balance of the restricted dual counts them so, and the loop ends at the whole QP's optimum."""
    X, _, signs, weights = weighted
    res = ws.decompose(gram(Kernel("rbf", gamma=GAMMA), X), signs, 0.2 * weights, backend="piqp", q=20,
                       split_from=len(signs), engine="blocks")
    assert res.start.startswith("split: Nystrom"), res.start
    assert res.converged and res.gap <= ws.WorkingSetOptions.gap_tol
    assert abs(res.objective - whole_qp["kernel_dual"]) <= 1e-7 * abs(whole_qp["kernel_dual"])


@pytest.mark.parametrize("layer", ["direct", "pyomo"])
def test_a_constant_vector_C_by_the_working_set_is_the_scalar(weighted, layer):
    X, _, signs, _ = weighted
    kw = {"layer": layer, "backend": "piqp", "kernel": Kernel("rbf", gamma=GAMMA), "method": "working_set",
          "profile": "high"}
    one = solve("kernel_dual", X, signs, C=3.0, **kw)
    each = solve("kernel_dual", X, signs, C=np.full(len(signs), 3.0), **kw)
    assert one.status == each.status == OPTIMAL
    assert each.iterations == one.iterations  # the same steps: the scalar path is the vector one
    np.testing.assert_allclose(each.alpha, one.alpha, rtol=0, atol=1e-12 * 3.0)
    assert each.objective == pytest.approx(one.objective, rel=1e-12)


@settings(max_examples=8, deadline=None)
@given(seed=st_.integers(0, 2**16), flip=st_.booleans(), scale=st_.sampled_from([1e-3, 1.0, 1e3]))
def test_per_sample_working_set_is_invariant_to_permutation_and_label_flip_at_any_scale_of_C(seed, flip, scale):
    """Permuting the points with their C_i and flipping every label leave the working set's optimum (objective,
    decision values permuted and flipped), with C_i from 1e-4 to 5e3; both points proved by the closing checks."""
    rng = np.random.default_rng(seed)
    n = 80
    X = rng.normal(size=(n, 4))
    signs = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    C = scale * rng.uniform(0.1, 5.0, n)
    order = rng.permutation(n)
    sign = -1.0 if flip else 1.0
    kw = {"kernel": Kernel("rbf", gamma=0.3), "layer": "direct", "backend": "piqp", "profile": "high",
          "method": "working_set"}
    first = solve("kernel_dual", X, signs, C=C, **kw)
    moved = solve("kernel_dual", X[order], sign * signs[order], C=C[order], **kw)
    for sol in (first, moved):
        assert sol.status == OPTIMAL and sol.checks["reference"] == "proved optimum", sol.checks.get("verdict")
        assert sol.checks["err_objective"] <= 1e-7
        assert sol.extras["loop_gap"] <= ws.WorkingSetOptions.gap_tol
    assert moved.objective == pytest.approx(first.objective, rel=1e-7)
    decision = sign * first.decision[order]
    assert np.max(np.abs(moved.decision - decision)) <= 1e-6 * np.max(np.abs(decision))


def test_per_sample_C_takes_the_working_sets_as_one_C_does():
    """auto picks the method by n (and d) alone: per-sample bounds C_i change nothing in the choice."""
    for layer in ("cvxpy", "pyomo"):
        for formulation, n in (("kernel_dual", 50_000), ("kernel_dual", 100), ("soft_primal", 1_000_000),
                               ("soft_primal", 100), ("dual", 50_000)):
            assert api.choose_method(formulation, n, layer, np.ones(n), d=20) == api.choose_method(
                formulation, n, layer, 1.0, d=20)
        assert api.choose_method("kernel_dual", 50_000, layer, np.ones(50_000)) == "working_set"
        assert api.choose_method("dual", 100, layer, np.ones(100), "working_set") == "working_set"


@pytest.mark.parametrize("layer", ["direct", "cvxpy", "pyomo"])
def test_the_soft_primal_s_restricted_qps_take_per_sample_C(layer):
    """From 1,000 points the soft primal's restricted QPs (the held points' linear term sum_L C_i (1 - m_i), the
    bound on b from the weighted balance, the weighted line search) reach the whole QP's optimum with C_i."""
    ds = overlapping(3000, d=5, seed=2)
    y = ds.y.astype(float)
    C = np.random.default_rng(5).uniform(0.05, 5.0, len(y))
    fast = solve("soft_primal", ds.X, y, layer=layer, backend="piqp", C=C, profile="high")
    full = solve("soft_primal", ds.X, y, layer="cvxpy", backend="clarabel", C=C, profile="high", method="full")
    assert fast.status == full.status == OPTIMAL, fast.checks.get("verdict")
    assert fast.extras["method"] == "working_set" and fast.iterations >= 1  # restricted QPs, not the whole one
    assert fast.checks["primal_objective"] == pytest.approx(full.checks["primal_objective"], rel=1e-7)
    np.testing.assert_allclose(fast.w, full.w, rtol=0, atol=1e-5 * np.linalg.norm(full.w))


def test_the_held_points_term_weighs_each_point_by_its_own_C_i():
    rng = np.random.default_rng(6)
    X_L, y_L = rng.normal(size=(7, 3)), np.where(rng.normal(size=7) > 0, 1.0, -1.0)
    C_L = rng.uniform(0.1, 2.0, 7)
    s, t, constant = soft_primal.held_terms((X_L, y_L, C_L), 3, None)
    np.testing.assert_allclose(s, (C_L * y_L) @ X_L, rtol=1e-14)
    assert (t, constant) == pytest.approx((C_L @ y_L, C_L.sum()), rel=1e-14)
    one = soft_primal.held_terms((X_L, y_L), 3, 0.7)
    each = soft_primal.held_terms((X_L, y_L, np.full(7, 0.7)), 3, np.full(20, 0.7))
    np.testing.assert_allclose(each[0], one[0], rtol=1e-14)
    assert each[1:] == pytest.approx(one[1:], rel=1e-14)
    with pytest.raises(ValueError, match="their own bounds C_L"):
        soft_primal.held_terms((X_L, y_L), 3, np.ones(20))


def test_a_warm_start_above_its_own_C_i_is_refused_by_index():
    y = np.array([1.0, 1.0, -1.0, -1.0])
    C = np.array([1.0, 0.5, 1.0, 1.0])
    alpha0 = np.array([0.2, 0.8, 0.5, 0.5])  # below max C, above C_1
    with pytest.raises(ValueError, match=r"alpha0\[1\] = 0.8 > C = 0.5"):
        ws.check_alpha0(alpha0, y, C)
    np.testing.assert_array_equal(ws.check_alpha0(np.array([0.2, 0.3, 0.5, 0.0]), y, C), [0.2, 0.3, 0.5, 0.0])


def test_the_smoothed_primal_weighs_each_hinge_by_its_C_i():
    """Value and gradient of the smoothed start's objective with per-sample C: the scalar's for a constant vector,
    sum_i C_i huber_i for a general one, and the gradient its derivative (finite differences)."""
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(60, 3)), np.where(rng.normal(size=60) > 0, 1.0, -1.0)
    v = rng.normal(size=4)
    h = primal_working_set.SMOOTHING
    one = primal_working_set.smoothed_primal(v, X, y, 2.0, h)
    each = primal_working_set.smoothed_primal(v, X, y, np.full(60, 2.0), h)
    assert each[0] == pytest.approx(one[0], rel=1e-14)
    np.testing.assert_allclose(each[1], one[1], rtol=1e-14)
    C = rng.uniform(0.1, 3.0, 60)
    value, _ = primal_working_set.smoothed_primal(v, X, y, C, h)
    short = 1.0 - y * (X @ v[:-1] + v[-1])
    huber = np.where(short >= h, short - h / 2, np.where(short > 0, short ** 2 / (2 * h), 0.0))
    assert value == pytest.approx(0.5 * v[:-1] @ v[:-1] + C @ huber, rel=1e-13)
    assert scipy.optimize.check_grad(lambda u: primal_working_set.smoothed_primal(u, X, y, C, h)[0],
                                     lambda u: primal_working_set.smoothed_primal(u, X, y, C, h)[1], v) <= 1e-5


@pytest.mark.parametrize("method", ["working_set", "full"])
def test_a_zero_w_optimum_under_class_weights_is_verified(method):
    """Labels that carry no signal, the positives weighted 10:1: the optimum is w* = 0, b* = 1 (every positive on
    its margin, every negative at its C_i). Stationarity was measured against ||w|| ~ 1e-11, so a 1e-11 error in
    w read 0.9 and the optimum was refused; it is now measured by its effect on f (checks.w_scale)."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(4000, 10))
    y = np.where(rng.random(4000) < 0.5, 1.0, -1.0)
    C = np.where(y > 0, 10.0, 1.0)
    sol = solve("soft_primal", X, y, layer="cvxpy", backend="piqp", C=C, profile="high", method=method)
    assert sol.status == OPTIMAL and sol.checks["reference"] == "proved optimum", sol.checks.get("verdict")
    assert np.linalg.norm(sol.w) <= 1e-6 and sol.b == pytest.approx(1.0, abs=1e-6)
    assert sol.checks["kkt_stationarity"] <= 1e-6


@pytest.mark.parametrize("seed", [0, *(pytest.param(seed, marks=pytest.mark.slow) for seed in (1, 2, 3))])  # more draws
def test_the_linear_kernel_s_proof_solves_for_w_and_b_at_a_wide_spread_of_C(seed):
    """The kernel dual with the linear kernel and C_i from 10 to 1e7: more free points than the d + 1 unknowns of
    (w, b). The proof through the kernel's m x m system could not meet their margins (its bounded fit left
    residuals) and every one of these points was refused; its rows now carry X (LinearRows), and the proof
    solves for (w, b) as the linear dual's does. Reference: the linear dual by the working set (its checks'
    proof is the primal form's)."""
    ds = overlapping(1000, d=10, seed=seed)
    rng = np.random.default_rng(seed)
    rng.uniform(-3, 3, 1000)
    C = 1e4 * 10.0 ** rng.uniform(-3, 3, 1000)
    sol = solve("kernel_dual", ds.X, ds.y, kernel="linear", layer="direct", backend="piqp", C=C, method="working_set")
    ref = solve("dual", ds.X, ds.y, layer="direct", backend="piqp", C=C, method="working_set")
    assert sol.status == OPTIMAL and ref.status == OPTIMAL, (sol.checks["verdict"], ref.checks["verdict"])
    assert sol.checks["reference"] == "proved optimum"
    assert sol.checks["primal_objective"] == pytest.approx(ref.checks["primal_objective"], rel=1e-7)  # measured 8.6e-9
    f_ref = ref.decision
    assert np.abs(sol.decision - f_ref).max() <= 1e-6 * np.abs(f_ref).max()  # measured 4.0e-8

