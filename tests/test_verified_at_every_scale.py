"""`optimal` means the same at every scale of the data, C and n, on every solve path.

- the corpus (experiments.corpus): 512 solves, no `optimal` row off the proved optimum by
  more than its profile's tolerance in objective, w, b and decision values;
- invariances (hypothesis): X -> sX for s in 1e-6..1e6 (hard margin; soft margin with
  C -> C/s^2), permuted samples, flipped labels, an added constant feature: whatever the
  backend returns, `optimal` agrees with the transformed reference;
- every path that returns a Solution (solvers.api in both layers, direct, both working
  sets, the benchmark, the C path, the LPs) refutes a false claim fed to it;
- the support vectors, free or at the bound, from C = 1e-5 to 1e10; time limits honoured
  or refused; the working set's start feasible at every C.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as hs

from experiments import corpus
from experiments.datasets import example_5_1
from formulations.errors import SVMInputError
from formulations.kernels import Kernel, gram
from formulations.recovery import B_INTERVAL
from solvers.solution import OPTIMAL, OPTIMAL_INACCURATE, RawResult
from solvers.api import solve
from solvers.checks import decision_scale
from solvers.deadline import NEVER
from solvers.profiles import get_profile
from solvers.reference import Gram, Reference, polish
from solvers.registry import available_backends

PAIRS = available_backends()


# ----------------------------------------------------------------------------- the corpus


@pytest.mark.slow  # 512 solves: 5-10 minutes on 2 cores; the small cases of this file stay in the default run
@pytest.mark.parametrize("problem", corpus.problems(), ids=lambda p: p.name)
def test_corpus_no_optimal_row_is_off_the_proved_optimum(problem):
    df = corpus.run_problem(problem)
    assert len(df) == 2 * len(PAIRS)
    bad = corpus.wrong_optimal(df)
    assert bad.empty, "\n" + bad.to_string()
    assert (df["status"] == OPTIMAL).sum() >= 4, "the corpus problem should be solvable by most backends"


def test_corpus_has_at_least_500_solves():
    assert len(corpus.problems()) * 2 * len(PAIRS) >= 500


def test_the_issues_rescaled_example_is_never_wrong_and_optimal():
    """Example 5.1 with X in other units (x 1000), default profile: the three rows of the issue."""
    ds = example_5_1()
    p = corpus.Problem("x1000", "hard_primal", 1e3 * ds.X, ds.y)
    ref = corpus.reference(p)
    assert ref.objective == pytest.approx(7.1672e-7, rel=1e-4)
    for layer, backend, formulation in [("pyomo", "proxqp", "hard_primal"), ("cvxpy", "scs", "dual"),
                                        ("cvxpy", "clarabel", "hard_primal")]:
        q = corpus.Problem("x1000", formulation, 1e3 * ds.X, ds.y)
        sol = corpus._solve(q, layer, backend, "default")
        err = corpus.errors(sol, ref, q)
        worst = max(v for v in err.values() if not math.isnan(v)) if sol.decision is not None else math.inf
        assert sol.status != OPTIMAL or worst <= 1e-4, (layer, backend, formulation, err)
        if worst > 1e-4:
            assert sol.status != OPTIMAL


# ----------------------------------------------------------------------------- invariances

# HiGHS's QP solver hung in this process after earlier HiGHS errors in the same sequence (highspy
# 1.16; 30 solves of the same problem on their own did not); only a killed worker stops it, as the
# runner does. The corpus above covers HiGHS; the drawn cases use the others.
IN_PROCESS_PAIRS = [pair for pair in PAIRS if pair[1] != "highs"]
SETTINGS = settings(max_examples=12, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


@hs.composite
def cases(draw):
    """Small data, a transformation of them, a (layer, backend) and a profile."""
    seed = draw(hs.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    n, d = draw(hs.integers(6, 14)), draw(hs.integers(1, 3))
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[:2] = (1.0, -1.0)
    kind = draw(hs.sampled_from(["scale_hard", "scale_soft", "permute", "flip", "constant"]))
    if kind == "scale_hard":  # separable: along a random direction u, class y sits at y (1 + |x'u|)
        u = rng.normal(size=d)
        u /= np.linalg.norm(u)
        p = X @ u
        X = X + ((y * (1.0 + np.abs(p))) - p)[:, None] * u
    s = 10.0 ** draw(hs.sampled_from([-6, -3, -1, 1, 3, 6]))
    C = draw(hs.sampled_from([1e-3, 1.0, 100.0]))
    pair = draw(hs.sampled_from(IN_PROCESS_PAIRS))
    profile = draw(hs.sampled_from(["default", "high"]))
    return X, y, kind, s, C, pair, profile


def _transform(X, y, kind, s, C, rng_seed=0):
    """(X', y', C', how w, b, P map): the transformed problem with the same optimum up to the map."""
    n = len(y)
    if kind == "scale_hard":
        return s * X, y, None, lambda w: w / s, lambda b: b, lambda P: P / s**2
    if kind == "scale_soft":  # y (w'(s x) + b) with w/s: same slacks, and 1/2 ||w/s||^2 s^2 + (C/s^2) s^2 xi
        return s * X, y, C / s**2, lambda w: w / s, lambda b: b, lambda P: P / s**2
    if kind == "permute":
        perm = np.random.default_rng(rng_seed).permutation(n)
        return X[perm], y[perm], C, lambda w: w, lambda b: b, lambda P: P
    if kind == "flip":
        return X, -y, C, lambda w: -w, lambda b: -b, lambda P: P
    # a constant feature: b absorbs it, so its weight is 0 at the optimum
    Xc = np.column_stack([X, np.full(n, 7.0)])
    return Xc, y, C, lambda w: np.append(w, 0.0), lambda b: b, lambda P: P


def _moved_reference(ref, X2, map_w, map_b, map_P, flip: bool):
    """The transformed problem's optimum, from the base problem's by the invariance (exact maths)."""
    w2 = map_w(ref.w)
    lo, hi = (map_b(ref.b_upper), map_b(ref.b_lower)) if flip else (map_b(ref.b_lower), map_b(ref.b_upper))
    b2 = map_b(ref.b)
    return Reference(True, "transformed", None, X2 @ w2, b2, lo, hi, map_P(ref.objective), 0, w2)


@SETTINGS
@given(case=cases())
def test_no_transformation_turns_a_wrong_point_into_optimal(case):
    X, y, kind, s, C, (layer, backend), profile = case
    formulation = "hard_primal" if kind == "scale_hard" else "soft_primal"
    base = corpus.Problem("base", formulation, X, y, None if formulation == "hard_primal" else C)
    ref = corpus.reference(base)
    X2, y2, C2, map_w, map_b, map_P = _transform(X, y, kind, s, C)
    moved = corpus.Problem("moved", formulation, X2, y2, C2 if formulation == "soft_primal" else None)
    truth = _moved_reference(ref, X2, map_w, map_b, map_P, flip=kind == "flip")
    if abs(math.log10(s)) <= 3:  # the project's own proof finds the same optimum on the moved data
        ref2 = corpus.reference(moved)
        assert ref2.objective == pytest.approx(truth.objective, rel=1e-7)
        f_scale = decision_scale(truth.g + truth.b)
        np.testing.assert_allclose(X2 @ ref2.w, truth.g, rtol=0, atol=1e-7 * f_scale)
    sol = corpus._solve(moved, layer, backend, profile)
    if sol.status == OPTIMAL:
        err = corpus.errors(sol, truth, moved)
        tol = get_profile(profile).check_tol
        assert all(not v > tol for v in err.values()), (kind, s, layer, backend, profile, err)


# ----------------------------------------------------------------------------- every path refutes


def _perturbed(values: dict) -> dict:
    out = dict(values)
    for key in ("w", "alpha"):
        if out.get(key) is not None:
            out[key] = np.asarray(out[key]) * 1.01
    return out


@pytest.mark.parametrize("layer", ["pyomo", "cvxpy"])
def test_api_refutes_a_false_claim(monkeypatch, layer):
    import solvers.closing as closing

    real = closing.read_model  # what solve's closing step reads back from the model
    monkeypatch.setattr(closing, "read_model", lambda *a, **k: _perturbed(real(*a, **k)))
    ds = example_5_1()
    sol = solve("hard_primal", ds.X, ds.y, layer=layer, backend="clarabel", profile="high")
    assert sol.solver_status == OPTIMAL and sol.status == OPTIMAL_INACCURATE


def test_direct_refutes_a_false_claim(monkeypatch):
    from solvers.algorithms import direct

    real = direct.named_values
    monkeypatch.setattr(direct, "named_values", lambda asm, res: _perturbed(real(asm, res)))
    ds = example_5_1()
    sol = direct.solve("dual", ds.X, ds.y, backend="clarabel", profile="high")
    assert sol.solver_status == OPTIMAL and sol.status == OPTIMAL_INACCURATE


@pytest.mark.parametrize("rows_on_demand", [False, True])
def test_kernel_working_set_refutes_a_false_claim(monkeypatch, rows_on_demand):
    from solvers.algorithms import working_set
    from solvers.algorithms.kernel_rows import KernelRows

    ds = example_5_1()
    # the checks work on kernel rows as on the matrix (no n x n matrix at n = 50,000)
    K = KernelRows(Kernel("rbf", gamma=0.5), ds.X) if rows_on_demand else gram(Kernel("rbf", gamma=0.5), ds.X)
    real = working_set.decompose

    def lying(*a, **k):
        res = real(*a, **k)
        res.alpha = res.alpha * 1.01  # still balanced, no longer optimal
        res.Ku = None
        return res

    monkeypatch.setattr(working_set.solver, "decompose", lying)  # where solve looks it up
    sol = working_set.solve(K, ds.y, 1.0, backend="clarabel")
    assert sol.solver_status == OPTIMAL and sol.status == OPTIMAL_INACCURATE


def test_primal_working_set_refutes_a_false_claim(monkeypatch):
    from solvers.algorithms import primal_working_set

    ds = corpus.problems()[7]  # overlapping data
    real = primal_working_set.decompose

    def lying(*a, **k):
        res = real(*a, **k)
        res.w = res.w * 1.01
        return res

    monkeypatch.setattr(primal_working_set, "decompose", lying)
    sol = primal_working_set.solve(ds.X, ds.y, 1.0, backend="piqp")
    assert sol.solver_status == OPTIMAL and sol.status == OPTIMAL_INACCURATE


def test_bench_rows_refute_a_false_claim():
    from experiments.bench import scaling as bench

    ds = example_5_1()
    truth = solve("soft_primal", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=bench.C_VALUE, profile="high")
    raw = RawResult(status=OPTIMAL, raw_status="solved", objective=truth.objective)
    path = bench.BenchPath("linear", "soft_primal", "cvxpy", "clarabel")
    task = bench.BenchCase(path=path, n=len(ds.y), budget=10.0)
    row = bench.Row(path.problem, path.formulation, path.layer, path.backend, path.form, path.rank, path.profile,
                    path.label, len(ds.y), ds.X.shape[1])
    values = {"w": truth.w * 1.01, "b": truth.b, "alpha": truth.alpha}
    bench._verify_into(row, task, "cvxpy", raw, values, ds.X, ds.y, None, deadline=NEVER)
    assert row.status == OPTIMAL_INACCURATE


def test_c_path_refutes_a_false_claim():
    from experiments.bench import c_path
    from formulations import soft_primal
    from solvers.registry import get_backend

    ds = example_5_1()
    model = soft_primal.build_cvxpy(ds.X, ds.y, 1.0)
    raw = get_backend("cvxpy", "clarabel").solve(model, {}, None)
    model.variables["w"].value = model.variables["w"].value * 1.01
    _, status, _ = c_path._checked(model, "soft_primal", "clarabel", raw, ds.X, ds.y, 1.0, 1e-6)
    assert raw.status == OPTIMAL and status == OPTIMAL_INACCURATE


def test_lp_refutes_a_false_claim(monkeypatch):
    from solvers import lp

    real = lp.read_values
    monkeypatch.setattr(lp, "read_values", lambda *a, **k: _perturbed(real(*a, **k)))
    ds = example_5_1()
    sol = lp.solve_lp("l1_primal", ds.X, ds.y, layer="cvxpy", backend="highs", C=1.0)
    assert sol.solver_status == OPTIMAL and sol.status == OPTIMAL_INACCURATE


# ----------------------------------------------------------------------------- free or at the bound


def _moons(n=120, seed=0):
    from sklearn.datasets import make_moons

    X, y = make_moons(n, noise=0.2, random_state=seed)
    return X, np.where(y > 0, 1.0, -1.0)


@pytest.mark.parametrize("layer,backend", [("cvxpy", "clarabel"), ("pyomo", "piqp")])
def test_tiny_C_every_alpha_at_the_bound_and_b_from_the_interval(layer, backend):
    """C = 1e-5 on balanced two-moons data: LIBSVM has no free support vector; b is the midpoint."""
    from sklearn.svm import SVC

    X, y = _moons()
    C = 1e-5
    svc = SVC(C=C, kernel="rbf", gamma=1.0, tol=1e-10).fit(X, y)
    assert np.allclose(np.abs(svc.dual_coef_), C)  # every support vector at C
    sol = solve("kernel_dual", X, y, layer=layer, backend=backend, C=C, kernel=Kernel("rbf", gamma=1.0),
                profile="high")
    assert sol.status == OPTIMAL
    assert sol.checks["n_free_sv"] == 0 and sol.checks["n_bound_sv"] == len(y)
    assert sol.b_rule == B_INTERVAL
    assert sol.b == pytest.approx(0.5 * (sol.extras["b_lower"] + sol.extras["b_upper"]), abs=1e-12)
    assert sol.b == pytest.approx(float(svc.intercept_[0]), abs=2e-5)  # LIBSVM's float cache


def test_tiny_C_ipopt_stops_inside_the_bounds_and_is_not_called_exact():
    """Ipopt (high) stops with every alpha at 0.999999 C: its tolerances are absolute, 1e-11 here.
    Every alpha is still recognised as at the bound (no "free" support vector, the issue's 379),
    but the decision values are 1e-6 of max |f*| (~1e-4) away: `optimal` only if that is within `high`."""
    X, y = _moons()
    sol = solve("kernel_dual", X, y, layer="pyomo", backend="ipopt", C=1e-5, kernel=Kernel("rbf", gamma=1.0),
                profile="high")
    assert sol.solver_status == OPTIMAL
    assert sol.checks["n_free_sv"] == 0 and sol.checks["n_bound_sv"] == len(y)
    assert sol.checks["err_decision"] < 1e-4  # measured 1.0002e-6: just over `high`'s 1e-6
    tol = get_profile("high").check_tol
    exact = max(sol.checks["err_decision"], sol.checks["err_objective"], sol.checks["rel_duality_gap"]) <= tol
    assert (sol.status == OPTIMAL) == exact


def test_estimator_support_vectors_at_a_huge_C_match_svc():
    """C = 1e10 (max alpha ~ 5): n_support_ was [0, 0] with a threshold relative to C. DAQP (exact
    active set) through Pyomo: Clarabel reports the problem unbounded from C ~ 1e10 (refuted, an error)."""
    from sklearn.datasets import make_classification
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import SVC

    from experiments.estimator import SVMClassifier

    X, y = make_classification(random_state=0)
    for C in (1e6, 1e10):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ours = SVMClassifier(kernel="rbf", C=C, layer="pyomo", backend="daqp", profile="high").fit(X, y)
        svc = SVC(kernel="rbf", C=C, tol=1e-10).fit(X, y)
        assert ours.n_support_.tolist() == svc.n_support_.tolist(), C
        assert (ours.predict(X) == svc.predict(X)).all()
        f_svc = svc.decision_function(X)
        np.testing.assert_allclose(ours.decision_function(X), f_svc, atol=1e-4 * max(1.0, np.abs(f_svc).max()))
        warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
        assert warned == (ours.solution_.status == OPTIMAL_INACCURATE), C  # never silently inaccurate


@pytest.mark.parametrize("C", [1e-6, 1e-3, 1.0, 1e3, 1e10])
def test_polish_proves_the_optimum_at_every_C(C):
    """Free and bound points decided right from C = 1e-6 to 1e10: the proved optimum's support is
    LIBSVM's, and a tight solve is verified up to C = 1e3 (at 1e10, C times the hinge's rounding
    exceeds 1e-6 of the objective for every backend tried: `optimal_inaccurate`, honestly)."""
    from sklearn.svm import SVC

    X, y = _moons(60, seed=1)
    K = gram(Kernel("rbf", gamma=2.0), X)
    sol = solve("kernel_dual", None, y, K=K, layer="pyomo", backend="daqp", C=C, profile="high")
    ref = polish(Gram(None, K), y, C, sol.alpha, sol.decision)
    assert ref.ok, ref.reason
    assert np.all(ref.alpha >= 0) and np.all(ref.alpha <= C)
    assert abs(float(y @ ref.alpha)) <= 1e-9 * ref.alpha.sum()
    svc = SVC(kernel="precomputed", C=C, tol=1e-12).fit(K, y)
    assert int(np.sum(ref.alpha > 0)) == len(svc.support_)
    assert sol.checks["n_sv"] == len(svc.support_)
    if C <= 1e3:
        assert sol.status == OPTIMAL, sol.checks["verdict"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=hs.integers(0, 50), d=hs.sampled_from([2, 5]), above=hs.floats(1e-7, 1e-4), per_sample=hs.booleans())
def test_polish_puts_a_free_point_on_its_bound_where_the_margins_cannot_all_hold(seed, d, above, per_sample):
    """Linear data with one more free point than the d + 1 unknowns of (w, b): a point at 0 at the optimum
    whose margin is `above` over 1, which the solver left at alpha = 0.1 C (the soft primal with per-sample
    C at n = 200,000: 22 free points for 21 unknowns). The margin rows then hold only in least squares, the
    misses fall on free points inside (0, C), and the sets never changed: "the active sets did not settle",
    and the correct point was refused. The proof puts one free point on a bound and proves the optimum."""
    from experiments.datasets import overlapping
    from formulations.recovery import FREE, classify

    ds = overlapping(200, d=d, seed=seed)
    X, y = ds.X, ds.y
    C = np.random.default_rng(seed).uniform(0.5, 2.0, len(y)) if per_sample else 1.0
    sol = solve("soft_primal", X, y, layer="cvxpy", backend="clarabel", C=C, method="full", profile="high")
    optimum = polish(Gram(X, None), y, C, sol.alpha, X @ sol.w + sol.b)
    assert optimum.ok, optimum.reason
    x_new = (1.0 + above - optimum.b) * optimum.w / (optimum.w @ optimum.w)  # y f(x_new) = 1 + above, y = +1
    X2, y2 = np.vstack([X, x_new]), np.append(y, 1.0)
    C2 = np.append(C, 1.0) if per_sample else C
    alpha2 = np.append(optimum.alpha, 0.1)
    f2 = X2 @ optimum.w + optimum.b
    # the overdetermined case (the optimum's own free points: d + 1 on most of these data, fewer on a few)
    assume(np.count_nonzero(classify(alpha2, y2, f2, C2) == FREE) > d + 1)
    ref = polish(Gram(X2, None), y2, C2, alpha2, f2)
    assert ref.ok, ref.reason
    assert ref.alpha[-1] == 0.0  # the added point is not a support vector: the optimum is the old one
    np.testing.assert_allclose(ref.w, optimum.w, rtol=1e-9, atol=0)
    assert ref.objective == pytest.approx(optimum.objective, rel=1e-12)


# ----------------------------------------------------------------------------- limits and starts


@pytest.mark.parametrize("layer", ["pyomo", "cvxpy"])
@pytest.mark.parametrize("backend", ["piqp", "proxqp"])
def test_a_backend_without_a_time_limit_is_stopped_by_the_server_or_refused(monkeypatch, layer, backend):
    """PIQP and ProxQP have no time limit of their own: a whole QP with one runs in the solve server, whose kill
    stops it (solvers.isolation); where there is no server (the runner's solve processes, off Linux), the limit is
    refused by name, before any model is built."""
    from solvers import isolation

    ds = example_5_1()
    if isolation.ISOLATE:
        sol = solve("hard_primal", ds.X, ds.y, layer=layer, backend=backend, time_limit=600.0)
        assert sol.solver_status == OPTIMAL  # it ran, within the limit (Pyomo/ProxQP's point is 1e-4 off: inaccurate)
        if sol.status == OPTIMAL:
            assert sol.w == pytest.approx([-0.9229, 0.7627], abs=1e-4)  # Example 5.1
    monkeypatch.setattr(isolation, "ISOLATE", False)
    with pytest.raises(SVMInputError, match=f"{layer}/{backend} has no time limit of its own.*no solve server"):
        solve("hard_primal", ds.X, ds.y, layer=layer, backend=backend, time_limit=5.0)


@pytest.mark.parametrize("backend,option", [("daqp", "time_limit"), ("clarabel", "time_limit"),
                                            ("osqp", "time_limit"), ("scs", "time_limit_secs")])
def test_time_limit_reaches_the_pyomo_qpsolvers_backends(monkeypatch, backend, option):
    from solvers import isolation
    from solvers.adapters import pyomo_qp

    seen = {}
    real = pyomo_qp.solve_standard_qp

    def spy(qp, solver, options):
        seen.update(options)
        return real(qp, solver, options)

    monkeypatch.setattr(pyomo_qp, "solve_standard_qp", spy)
    monkeypatch.setattr(isolation, "ISOLATE", False)  # the spy is in this process, not in the solve server's
    ds = example_5_1()
    sol = solve("hard_primal", ds.X, ds.y, layer="pyomo", backend=backend, time_limit=7.0)
    assert 0 < seen.get(option) <= 7.0  # what remains of the call's 7 s once the model is built (solvers.deadline)
    assert sol.solver_status in (OPTIMAL, OPTIMAL_INACCURATE)


@pytest.mark.slow  # up to half a minute a case
@pytest.mark.parametrize("C", [1e-5, 1e-3, 10.0])
@pytest.mark.parametrize("backend", ["clarabel", "piqp", "daqp"])
def test_working_set_starts_feasible_at_every_C(C, backend):
    from solvers.algorithms import working_set

    X, y = _moons(2000, seed=0)
    K = gram(Kernel("rbf", gamma=1.0), X)
    sol = working_set.solve(K, y, C, backend=backend, q=500, validate=False)  # raised "alpha0 is infeasible"
    assert np.all(sol.alpha >= 0) and np.all(sol.alpha <= C)
    assert abs(float(y @ sol.alpha)) <= 1e-9 * sol.alpha.sum()
    if C < 1:  # at C = 10 the loop can stall short of 1e-6 (complementarity 1.3e-6 with Clarabel)
        assert sol.status == OPTIMAL, sol.checks["verdict"]
    else:
        assert sol.status in (OPTIMAL, OPTIMAL_INACCURATE)


def test_balance_classes_makes_a_solver_point_exactly_feasible():
    from solvers.algorithms.working_set import check_alpha0
    from solvers.algorithms.working_set.optimality import balance_classes

    y = np.array([1.0, 1.0, -1.0, -1.0])
    alpha = np.array([1e-5, 1e-5, 1e-5, 1e-5 - 3e-9])  # a subproblem's absolute tolerance at C = 1e-5
    alpha = balance_classes(alpha.copy(), y)
    assert abs(float(y @ alpha)) <= 1e-15 * alpha.sum()
    check_alpha0(alpha, y, 1e-5)


# ----------------------------------------------------------------------------- far from the origin


@pytest.mark.parametrize("shift", [1e4, 1e6])
@pytest.mark.parametrize("formulation, layer", [("soft_primal", "pyomo"), ("soft_primal", "cvxpy"), ("dual", "cvxpy"),
                                                ("kernel_dual", "pyomo")])
def test_data_far_from_the_origin_give_the_same_classifier(formulation, layer, shift):
    """A translation moves b only (w*, alpha*, xi* and the objective stay): clustered, noisy, unbalanced data moved
    by 1e4 were an `error` row (PIQP: dual infeasible through Pyomo, unbounded through cvxpy); they are solved
    centered and w*, b* mapped back, verified, with the unmoved data's decision values."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=300, n_features=8, n_informative=5, n_clusters_per_class=3, flip_y=0.1,
                               weights=[0.85, 0.15], random_state=4)
    kernel = Kernel("linear") if formulation == "kernel_dual" else None
    near = solve(formulation, X, y, layer=layer, backend="piqp", C=1.0, kernel=kernel, profile="high")
    far = solve(formulation, X + shift, y, layer=layer, backend="piqp", C=1.0, kernel=kernel, profile="high")
    assert near.status == far.status == OPTIMAL, far.message
    f_near, f_far = X @ near.w + near.b, (X + shift) @ far.w + far.b
    assert np.max(np.abs(f_far - f_near)) <= 1e-5 * np.max(np.abs(f_near))
    assert far.objective == pytest.approx(near.objective, rel=1e-6) and "centered" in far.extras
    # every b the checks report is in the data's units too (b's optimal interval was left in the centered ones)
    slack = 1e-9 * max(abs(far.b), 1e-300)
    assert far.checks["b_lower"] - slack <= far.b <= far.checks["b_upper"] + slack


@pytest.mark.parametrize("shift", [1e3, 1e6])
@pytest.mark.parametrize("layer, backend", [("pyomo", "clarabel"), ("cvxpy", "piqp")])
def test_features_of_different_spreads_moved_alike_are_centered(layer, backend, shift):
    """Features whose spreads differ by 1e5 (as breast cancer's), all moved by `shift`: the widest spread hid the
    narrow features' distance from the origin (no centering: optimal_inaccurate or a backend's error at + 1e4).
    Each feature is judged by its own spread; the row is the unmoved data's classifier, verified."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=200, n_features=6, n_informative=4, flip_y=0.05, random_state=7)
    X = X * np.logspace(-2, 3, 6)
    near = solve("soft_primal", X, y, layer=layer, backend=backend, C=10.0, profile="high")
    far = solve("soft_primal", X + shift, y, layer=layer, backend=backend, C=10.0, profile="high")
    assert near.status == far.status == OPTIMAL, far.message
    assert "centered" in far.extras and "centered" not in near.extras
    f_near, f_far = X @ near.w + near.b, (X + shift) @ far.w + far.b
    assert np.max(np.abs(f_far - f_near)) <= 1e-5 * np.max(np.abs(f_near))
    assert far.objective == pytest.approx(near.objective, rel=1e-6)


def test_decision_values_that_cancel_to_rounding_are_no_error():
    """rbf on data x 1e-6: K is 1 to 1e-12, every alpha_i = C (60 points a class) and f - b cancels to 6e-9 out of
    terms of size 120; the point's and the proof's f differ by their rounding alone (1e-14), which the `high`
    profile's 1e-6 of max |f| called a decision value error."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=120, centers=2, n_features=3, cluster_std=1.5, random_state=2)
    sol = solve("kernel_dual", X * 1e-6, y, layer="cvxpy", backend="clarabel", C=1.0, kernel="rbf", profile="high",
                method="full")
    assert sol.status == OPTIMAL, sol.message
    np.testing.assert_allclose(sol.alpha, 1.0, rtol=1e-6)
