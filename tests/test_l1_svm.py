"""The 1-norm SVM LP and its LP dual: equal optima, multipliers that are the other's solution, sparsity."""

import math
import types

import numpy as np
import pytest
from scipy.optimize import linprog

from experiments.datasets import load_dataset
from experiments.coursework.l1_compare import compare_l1_l2, lp_timings
from formulations.errors import SVMInputError
from solvers.api import solve
from solvers.solution import ERROR, INFEASIBLE, RawResult
from solvers.lp import NZ_REL_TOL, count_nonzero, l1_objectives, parse_setting, setting_label, solve_lp
from tests.conftest import skip_unless_available

LAYERS = ("pyomo", "cvxpy")
METHODS = ("simplex", "ipm")
REL = 1e-9  # strong duality through HiGHS, relative


def lecture(name):
    ds = load_dataset(name)
    return ds.X, ds.y


def sparse_data():
    ds = load_dataset("sparse_features", n=300, d=50, n_informative=3, seed=0)
    return ds.X, ds.y


# (data, C): the lecture data with the notes' C = 10 (Exercise 5.4), Example 5.1 with
# C = 1, and 50 features of which 3 are informative with C = 0.05 (sparse optimum).
CASES = {
    "exercise_5_4-C10": (lambda: lecture("exercise_5_4"), 10.0),
    "example_5_1-C1": (lambda: lecture("example_5_1"), 1.0),
    "sparse_features-C0.05": (sparse_data, 0.05),
}


def reference_optimum(X, y, C):
    """The 1-norm primal as a matrix LP solved by scipy's linprog (variables w+, w-, b, xi)."""
    n, d = X.shape
    yX = y[:, None] * X
    c = np.concatenate([np.ones(2 * d), [0.0], C * np.ones(n)])
    # -(y_i x_i'(w+ - w-) + y_i b + xi_i) <= -1
    A_ub = -np.hstack([yX, -yX, y[:, None], np.eye(n)])
    bounds = [(0, None)] * (2 * d) + [(None, None)] + [(0, None)] * n
    res = linprog(c, A_ub=A_ub, b_ub=-np.ones(n), bounds=bounds, method="highs")
    assert res.status == 0
    return res.fun


@pytest.fixture(scope="module")
def solved():
    """Every (case, layer, method, formulation) through HiGHS, solved once."""
    out = {}
    for case, (make, C) in CASES.items():
        X, y = make()
        for layer in LAYERS:
            for method in METHODS:
                for f in ("l1_primal", "l1_dual"):
                    out[case, layer, method, f] = solve_lp(f, X, y, layer=layer, backend="highs", method=method, C=C)
    return out


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("method", METHODS)
def test_primal_and_dual_optima_agree(solved, case, layer, method):
    p = solved[case, layer, method, "l1_primal"]
    d = solved[case, layer, method, "l1_dual"]
    assert p.status == "optimal" and d.status == "optimal", (p.checks["verdict"], d.checks["verdict"])
    assert p.extras["setting"] == f"highs-{method}"
    # The solvers' own optima (min of the primal, max of the dual) agree to 1e-9 relative.
    assert abs(p.objective - d.objective) <= REL * max(1.0, abs(p.objective))
    # ... and the project's recomputation at each returned pair shows a zero gap.
    for sol in (p, d):
        assert sol.checks["rel_duality_gap"] <= REL
        assert sol.checks["dual_infeasibility"] <= 1e-9 * max(1.0, sol.extras["C"])


@pytest.mark.parametrize("case", CASES)
def test_optimum_matches_an_independent_lp(solved, case):
    make, C = CASES[case]
    ref = reference_optimum(*make(), C)
    for layer in LAYERS:
        for method in METHODS:
            for f in ("l1_primal", "l1_dual"):
                assert solved[case, layer, method, f].objective == pytest.approx(ref, rel=REL)


def test_known_lecture_optima(solved):
    # Pinned from the runs above (and scipy's linprog): the 1-norm SVM on Exercise 5.4 with
    # C = 10 and on Example 5.1 with C = 1. On Example 5.1 the LP's vertex is the hard-margin
    # solution of the notes (w = (-0.9229, 0.7627), b = 1.1976): its three active margin
    # rows also fix the 1-norm optimum.
    s = solved["exercise_5_4-C10", "pyomo", "simplex", "l1_primal"]
    assert s.objective == pytest.approx(27.951585869419716, rel=1e-12)
    np.testing.assert_allclose(s.w, [-0.7885431, 0.6516938], atol=1e-7)
    assert s.b == pytest.approx(0.8777154, abs=1e-7)
    s = solved["example_5_1-C1", "cvxpy", "ipm", "l1_dual"]
    assert s.objective == pytest.approx(1.6855992354660305, rel=1e-12)
    np.testing.assert_allclose(s.w, [-0.9229, 0.7627], atol=1e-4)
    assert s.b == pytest.approx(1.1976, abs=1e-4)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("method", METHODS)
def test_multipliers_of_one_are_the_solution_of_the_other(solved, case, layer, method):
    """margin multipliers of l1_primal = alpha of l1_dual; corr/balance multipliers of l1_dual = (w, b)."""
    make, C = CASES[case]
    X, y = make()
    p = solved[case, layer, method, "l1_primal"]
    d = solved[case, layer, method, "l1_dual"]
    alpha_from_primal = p.extras["multipliers"]["margin"]
    np.testing.assert_allclose(alpha_from_primal, d.alpha, atol=1e-7 * max(1.0, C))
    np.testing.assert_allclose(d.w, p.w, atol=1e-7)  # d.w = dual(lift): corr_j = sum_i alpha_i y_i x_ij
    assert d.b == pytest.approx(p.b, abs=1e-7)  # d.b = dual(balance)
    np.testing.assert_allclose(d.extras["multipliers"]["cap"], np.maximum(0, 1 - y * (X @ p.w + p.b)), atol=1e-7)
    # Whatever vertex each LP lands on, the other's multipliers are optimal for it:
    cross = l1_objectives(X, y, C, d.w, d.b, alpha_from_primal)
    assert cross["primal"] == pytest.approx(p.objective, rel=REL)  # P(w, b from the dual's multipliers) = P*
    assert cross["dual"] == pytest.approx(d.objective, rel=REL)  # D(alpha from the primal's multipliers) = D*
    assert cross["dual_infeasibility"] <= 1e-9 * max(1.0, C)
    # Stationarity in w of the "bound" form: dual(abs_pos) - dual(abs_neg) = sum_i alpha_i y_i x_ij.
    assert p.extras["corr_multiplier_mismatch"] <= 1e-9
    assert d.extras["xi_multiplier_mismatch"] <= 1e-9


@pytest.mark.parametrize("case", CASES)
def test_both_layers_agree(solved, case):
    ref = solved[case, "pyomo", "simplex", "l1_primal"]
    for layer in LAYERS:
        for method in METHODS:
            for f in ("l1_primal", "l1_dual"):
                s = solved[case, layer, method, f]
                assert s.objective == pytest.approx(ref.objective, rel=REL)
                np.testing.assert_allclose(s.w, ref.w, atol=1e-7)


def test_one_norm_w_is_sparse_and_two_norm_w_is_not(solved):
    X, y = sparse_data()
    # The informative columns, read from the data: class means differ by 2 there, by ~0.1 elsewhere.
    informative = np.flatnonzero(np.abs(X[y > 0].mean(0) - X[y < 0].mean(0)) > 1.0)
    assert informative.tolist() == [25, 31, 40]
    l2 = solve("soft_primal", X, y, layer="cvxpy", backend="clarabel", C=0.05)
    assert l2.status == "optimal"
    # Nonzero: |w_j| > 1e-6 max_k |w_k| (NZ_REL_TOL).
    assert NZ_REL_TOL == 1e-6
    assert count_nonzero(l2.w) == 50
    assert np.abs(l2.w).min() > 1e-4 * np.abs(l2.w).max()  # every 2-norm weight clearly nonzero
    for layer in LAYERS:
        for method in METHODS:
            for f in ("l1_primal", "l1_dual"):
                s = solved["sparse_features-C0.05", layer, method, f]
                assert s.checks["nnz_w"] == 3
                assert np.flatnonzero(np.abs(s.w) > NZ_REL_TOL * np.abs(s.w).max()).tolist() == informative.tolist()
                # the dropped features are zero to rounding, not merely small
                assert np.abs(np.delete(s.w, informative)).max() <= 1e-10 * np.abs(s.w).max()


def test_compare_table():
    X, y = sparse_data()
    order = np.random.default_rng(0).permutation(len(y))  # the data come +1 rows first
    tr, te = order[:200], order[200:]
    df = compare_l1_l2(X[tr], y[tr], 0.05, X_test=X[te], y_test=y[te], layer="cvxpy", dataset="sparse")
    assert df["model"].tolist() == ["1-norm SVM", "2-norm SVM"]
    assert df["status"].tolist() == ["optimal", "optimal"]
    l1, l2 = df.iloc[0], df.iloc[1]
    assert l1["nnz_w"] < l2["nnz_w"] == 50
    assert l1["kept_features"] == [25, 31, 40]
    # Bayes accuracy here is Phi(sqrt(3)) = 0.958; both models come close on 100 test points.
    assert l1["test_accuracy"] >= 0.9 and l2["test_accuracy"] >= 0.85
    assert l1["n_sv"] > 0 and l2["n_sv"] > 0
    assert l1["build_s"] > 0 and l1["solve_s"] > 0


def test_other_ways_of_writing_the_absolute_values(solved):
    """l1_primal with w = w+ - w- ("split"), l1_dual with two rows per feature ("rows", the notes' form)."""
    X, y = lecture("exercise_5_4")
    ref = solved["exercise_5_4-C10", "pyomo", "simplex", "l1_primal"]
    for layer in LAYERS:
        s = solve_lp("l1_primal", X, y, layer=layer, backend="highs", method="simplex", C=10.0, abs_form="split")
        assert s.status == "optimal" and s.extras["abs_form"] == "split"
        assert s.objective == pytest.approx(ref.objective, rel=REL)
        np.testing.assert_allclose(s.w, ref.w, atol=1e-7)
        np.testing.assert_allclose(s.alpha, ref.alpha, atol=1e-6)
        s = solve_lp("l1_dual", X, y, layer=layer, backend="highs", method="simplex", C=10.0, corr_form="rows")
        assert s.status == "optimal" and set(s.extras["multipliers"]) >= {"corr_upper", "corr_lower"}
        assert s.objective == pytest.approx(ref.objective, rel=REL)
        up, lo = s.extras["multipliers"]["corr_upper"], s.extras["multipliers"]["corr_lower"]
        assert up.min() >= -1e-12 and lo.max() <= 1e-12  # Pyomo's signs: <= row of a max >= 0, >= row <= 0
        np.testing.assert_allclose(s.w, ref.w, atol=1e-7)  # w = dual(corr_upper) + dual(corr_lower)
        assert s.b == pytest.approx(ref.b, abs=1e-7)


# Other LP-capable backends, at the `high` profile. Left out, as measured: OSQP stops at its
# iteration limit on these LPs; ProxQP reports the (feasible) LPs infeasible; DAQP through
# the Pyomo bridge finds no point for the feasibility LPs. Tolerances: interior point 1e-7,
# SCS (first order) 1e-6.
OTHERS = [("pyomo", "clarabel"), ("pyomo", "piqp"), ("pyomo", "scs"), ("pyomo", "ipopt"),
          ("cvxpy", "clarabel"), ("cvxpy", "piqp"), ("cvxpy", "scs"), ("cvxpy", "daqp")]


@pytest.mark.parametrize("layer,backend", OTHERS)
def test_other_backends_alongside(layer, backend):
    skip_unless_available(layer, backend)
    X, y = lecture("exercise_5_4")
    tol = 1e-6 if backend == "scs" else 1e-7
    for f in ("l1_primal", "l1_dual"):
        s = solve_lp(f, X, y, layer=layer, backend=backend, C=10.0, profile="high")
        assert s.solver_status == "optimal", (s.raw_status, s.message)
        assert s.objective == pytest.approx(27.951585869419716, rel=tol)
        assert s.checks["rel_duality_gap"] <= tol


def test_a_claim_that_the_lp_is_infeasible_is_refused(monkeypatch):
    """l1_primal and l1_dual are feasible and bounded for any data: such a claim becomes an error."""
    from solvers.registry import get_backend

    adapter = get_backend("cvxpy", "highs")
    def claim_infeasible(self, model, options, time_limit=None):
        return RawResult(status=INFEASIBLE, raw_status="x")

    # on the instance: an earlier test's monkeypatch of the instance leaves a bound method there
    monkeypatch.setattr(adapter, "solve", types.MethodType(claim_infeasible, adapter))
    X, y = lecture("exercise_5_4")
    s = solve_lp("l1_dual", X, y, layer="cvxpy", backend="highs", C=10.0)
    assert s.status == ERROR and s.solver_status == INFEASIBLE
    assert "feasible and bounded" in s.message


def test_settings_round_trip():
    assert setting_label("highs", "ipm") == "highs-ipm" and parse_setting("highs-ipm") == ("highs", "ipm")
    assert parse_setting("clarabel") == ("clarabel", None)
    with pytest.raises(SVMInputError, match="unknown setting"):
        parse_setting("highs-barrier")


def test_lp_timings_rows(capsys):
    df = lp_timings(ns=(200,), d=5, layers=("cvxpy",), methods=("simplex",), progress=True)
    assert len(df) == 2 and set(df["formulation"]) == {"l1_primal", "l1_dual"}
    # stderr is no terminal here: progress is a line per solve (bench --lp in a log), not a bar drawn at the end
    lines = capsys.readouterr().err.strip().splitlines()
    assert [line.split(": ")[0] for line in lines] == [f"[{i + 1}/2] {f} cvxpy/highs simplex n=200"
                                                       for i, f in enumerate(df["formulation"])]
    assert (df["status"] == "optimal").all()
    assert df["objective"].iloc[0] == pytest.approx(df["objective"].iloc[1], rel=REL)


def test_bad_input_is_refused():
    X, y = lecture("exercise_5_4")
    with pytest.raises(SVMInputError, match="needs C"):
        solve_lp("l1_primal", X, y, layer="pyomo", backend="highs")
    with pytest.raises(SVMInputError, match="C must be > 0"):
        solve_lp("l1_dual", X, y, layer="pyomo", backend="highs", C=-1.0)
    with pytest.raises(SVMInputError, match="unknown HiGHS method"):
        solve_lp("l1_dual", X, y, layer="pyomo", backend="highs", C=1.0, method="barrier")
    with pytest.raises(SVMInputError, match="HiGHS only"):
        solve_lp("l1_dual", X, y, layer="pyomo", backend="clarabel", C=1.0, method="ipm")
    with pytest.raises(SVMInputError, match="unknown LP formulation"):
        solve_lp("l2_primal", X, y, layer="pyomo", backend="highs", C=1.0)
    with pytest.raises(SVMInputError, match="abs_form"):
        solve_lp("l1_primal", X, y, layer="cvxpy", backend="highs", C=1.0, abs_form="norm")
    with pytest.raises(SVMInputError, match="corr_form"):
        solve_lp("l1_dual", X, y, layer="pyomo", backend="highs", C=1.0, corr_form="abs")
    with pytest.raises(SVMInputError, match="two classes"):
        solve_lp("l1_primal", X, np.ones(len(y)), layer="pyomo", backend="highs", C=1.0)
    with pytest.raises(SVMInputError, match="not seen in training"):
        compare_l1_l2(X, y, 1.0, X_test=X, y_test=np.full(len(y), 7.0))
    assert not math.isnan(reference_optimum(X, y, 10.0))


def test_the_lps_on_data_far_from_the_origin_are_solved_centered():
    """Every LP formulation is translation invariant: breast cancer moved by 1e4 was an `error` row (Clarabel:
    separability and the hull intersection; HiGHS: the hull intersection); solved centered, its answers are the
    unmoved data's, with b (and the hulls' common point) in the data's units."""
    from sklearn.datasets import load_breast_cancer

    from solvers.lp import solve_lp

    X, y = load_breast_cancer(return_X_y=True)
    for formulation, status in (("separability", "optimal"), ("hull_intersection", "infeasible"),
                                ("l1_primal", "optimal")):
        near = solve_lp(formulation, X, y, layer="cvxpy", backend="clarabel", C=1.0)
        far = solve_lp(formulation, X + 1e4, y, layer="cvxpy", backend="clarabel", C=1.0)
        assert near.status == far.status == status, (formulation, far.message)
        assert "centered" in far.extras and "centered" not in near.extras
        if formulation == "l1_primal":
            assert far.objective == pytest.approx(near.objective, rel=1e-7)
            f_near, f_far = X @ near.w + near.b, (X + 1e4) @ far.w + far.b
            assert np.max(np.abs(f_far - f_near)) <= 1e-6 * np.max(np.abs(f_near))
