"""The runner's LP part: separability before the hard margin, the `lp` suite, the 1-norm SVM in the report."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from experiments.runner import analysis

from experiments.runner import results_table
from experiments.datasets import load_dataset
from experiments.runner.cli import main

# Measured optima of the lp suite's 1-norm problems (every verified setting agrees to ~1e-10; HiGHS to 1e-15).
L1_OPTIMA = {"exercise_5_4": 27.9515858694, "example_5_1": 1.68559923547, "sparse_features": 3.7979067882}
HIGHS_SETTINGS = {("pyomo", "simplex"), ("pyomo", "ipm"), ("cvxpy", "simplex"), ("cvxpy", "ipm")}


@pytest.fixture(scope="module")
def lp_run(tmp_path_factory):
    """The lp suite reduced to HiGHS (simplex, ipm) and Clarabel, both layers."""
    out = tmp_path_factory.mktemp("lp") / "run"
    assert main(["--suite", "lp", "--backends", "highs,clarabel", "--out", str(out), "--workers", "2",
                 "--no-progress"]) == 0
    return out, results_table.load(out)


def test_lp_suite_rows_and_settings(lp_run):
    _, df = lp_run
    # 2 separability + 6 l1 problems x (HiGHS simplex, HiGHS ipm, Clarabel) x 2 layers
    assert len(df) == 8 * 3 * 2 and df.task_key.is_unique
    assert set(df.formulation) == {"separability", "l1_primal", "l1_dual"}
    highs = df[df.backend == "highs"]
    assert set(zip(highs.layer, highs.method)) == HIGHS_SETTINGS
    assert (df[df.backend == "clarabel"].method == "").all()
    assert (df.profile == "high").all()


def _certificate_point(cert: dict, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """sum lambda_i x_i over A and sum mu_j x_j over B, recomputed from the stored weights and rows."""
    lam_rows, mu_rows = np.asarray(cert["lam_rows"]), np.asarray(cert["mu_rows"])
    assert (y[lam_rows] > 0).all() and (y[mu_rows] < 0).all()  # lambda over A (+1), mu over B (-1)
    lam, mu = np.asarray(cert["lam_val"]), np.asarray(cert["mu_val"])
    assert (lam >= 0).all() and (mu >= 0).all()
    return X[lam_rows].T @ lam, X[mu_rows].T @ mu, float(lam.sum()), float(mu.sum())


def test_separability_verdicts_with_verified_proofs_in_both_layers(lp_run):
    out, df = lp_run
    data = analysis.load_data(out)
    sep = df[df.formulation == "separability"]
    # Exercise 5.4 (the notes added (6, 8) to B): not separable; every setting's common point lies in both hulls
    ex = sep[sep.dataset == "exercise_5_4"]
    assert set(ex.layer) == {"pyomo", "cvxpy"} and len(ex) == 6
    assert (ex.status == "infeasible").all() and (ex.separable == False).all()  # noqa: E712
    X, y = data["exercise_5_4"]
    for cell in ex.certificate:
        cert = json.loads(cell)
        p_a, p_b, s_lam, s_mu = _certificate_point(cert, X, y)
        assert np.abs(p_a - p_b).max() <= 1e-8
        assert abs(s_lam - 1) <= 1e-8 and abs(s_mu - 1) <= 1e-8
        np.testing.assert_allclose(cert["point"], p_a, atol=1e-8)
        assert cert["certificate"]["verified"] and cert["certificate"]["max_residual"] <= 1e-8
    # Example 5.1: separable; the returned hyperplane separates the data
    ok = sep[sep.dataset == "example_5_1"]
    assert (ok.status == "optimal").all() and (ok.separable == True).all() and len(ok) == 6  # noqa: E712
    X, y = data["example_5_1"]
    for w, b in zip(ok.w, ok.b):
        assert np.min(y * (X @ np.asarray(json.loads(w)) + b)) >= 1 - 1e-6


def test_report_shows_certificates_and_figures(lp_run):
    out, _ = lp_run
    report = (out / "report.md").read_text()
    sec = report.split("## Linear separability")[1].split("\n## ")[0]
    assert "### exercise_5_4 (n = 56, d = 2): not linearly separable" in sec
    assert "### example_5_1 (n = 60, d = 2): linearly separable" in sec
    ex = sec.split("### exercise_5_4")[1].split("###")[0]
    assert "NOT separable: conv(A) and conv(B) intersect" in ex and "- common point p = (" in ex
    assert "(all <= 1e-08)" in ex
    assert "separating hyperplane w = (" in sec.split("### example_5_1")[1]
    for name in ("exercise_5_4", "example_5_1"):
        fig = out / "figures" / f"separability_{name}.png"
        assert fig.is_file() and fig.stat().st_size > 10_000
        assert f"](figures/{fig.name})" in sec
    rec = json.loads((out / "separability.json").read_text())
    assert rec["exercise_5_4"]["separable"] is False and rec["example_5_1"]["separable"] is True
    assert rec["exercise_5_4"]["certificate"]["certificate"]["max_residual"] <= 1e-8


def test_l1_primal_and_dual_optima_agree_through_highs_in_both_layers(lp_run):
    out, df = lp_run
    l1 = df[df.formulation.isin(["l1_primal", "l1_dual"])]
    assert (l1.status == "optimal").all()  # HiGHS and Clarabel, every problem, both layers
    highs = l1[l1.backend == "highs"]
    for (dataset, layer, method), g in highs.groupby(["dataset", "layer", "method"]):
        assert len(g) == 2
        P = g[g.formulation == "l1_primal"].objective.iloc[0]
        D = g[g.formulation == "l1_dual"].objective.iloc[0]
        assert abs(P - D) <= 1e-9 * abs(P), (dataset, layer, method)
        expected = L1_OPTIMA[dataset.split("(")[0]]
        assert P == pytest.approx(expected, rel=1e-9)
    # the duality table holds every verified l1 primal x l1 dual pair of a problem
    pairs = pd.read_csv(out / "duality.csv")
    l1_pairs = pairs[pairs.primal_formulation == "l1_primal"]
    assert len(l1_pairs) == 3 * 6 * 6 and (l1_pairs.dual_formulation == "l1_dual").all()
    hh = l1_pairs[l1_pairs.primal_solver.str.contains("highs") & l1_pairs.dual_solver.str.contains("highs")]
    assert len(hh) == 3 * 4 * 4 and (hh.rel_gap <= 1e-9).all()
    # LP multipliers of one against the solution of the other (same setting)
    t = pd.read_csv(out / "l1_duality.csv")
    assert len(t) == 3 * 6
    assert (t.rel_objective_diff <= 1e-9).all()
    np.testing.assert_allclose(t.cross_primal, t.P_star, rtol=1e-9)
    np.testing.assert_allclose(t.cross_dual, t.D_star, rtol=1e-9)
    th = t[t.backend == "highs"]
    assert (th.alpha_mult_vs_dual <= 1e-8).all() and (th.w_mult_vs_primal <= 1e-8).all()
    assert "## 1-norm SVM (LP): primal and LP dual" in (out / "report.md").read_text()


def test_one_norm_svm_is_sparse_and_two_norm_is_not(lp_run):
    out, df = lp_run
    ds = load_dataset("sparse_features", n=300, d=50, seed=0)
    informative = sorted(json.loads(ds.description.split("only columns ")[1].split(" (0-based)")[0]))
    sparse = df[df.dataset.str.startswith("sparse_features") & (df.formulation == "l1_primal")]
    assert (sparse.nnz_w == 3).all()
    for w in sparse.w:
        w = np.asarray(json.loads(w))
        assert sorted(np.flatnonzero(np.abs(w) > 1e-6 * np.abs(w).max())) == informative
    comp = pd.read_csv(out / "l1_vs_l2.csv", dtype={"kept_features": str})
    assert len(comp) == 4 and (comp.status == "optimal").all()
    l1, l2 = comp[comp.model == "1-norm SVM"], comp[comp.model == "2-norm SVM"]
    assert (l1.nnz_w == 3).all() and (l2.nnz_w == 50).all()
    assert all(sorted(map(int, k.split())) == informative for k in l1.kept_features)
    report = (out / "report.md").read_text()
    assert "## 1-norm vs 2-norm SVM on the same data" in report and "all 50" in report


def test_hard_margin_on_data_that_are_not_separable_is_never_optimal(tmp_path):
    from solvers.registry import available_backends

    out = tmp_path / "hard"
    assert main(["--datasets", "exercise_5_4", "--C", "inf", "--out", str(out), "--workers", "2", "--no-progress",
                 "--no-figures"]) == 0
    df = results_table.load(out)
    assert len(df) == 3 * len(available_backends())  # hard_primal, dual, kernel_dual x every backend, both layers
    assert set(df.formulation) == {"hard_primal", "dual", "kernel_dual"}
    assert (df.status != "optimal").all()
    assert (df.separable == False).all()  # noqa: E712
    assert df.error.str.startswith("the data are not linearly separable").all()
    assert df.objective.isna().all() and (df.w == "").all()
    report = (out / "report.md").read_text()
    assert "### exercise_5_4 (n = 56, d = 2): not linearly separable" in report
    assert f"Hard-margin solves on these data: {len(df)} rows, 0 optimal" in report


def test_hard_margin_guard_refuses_an_optimal_row_on_non_separable_data():
    from experiments.runner.sweep import _hard_margin_guard, separability_task
    from formulations.kernels import Kernel

    ds = load_dataset("exercise_5_4")
    base = separability_task(ds)
    from dataclasses import replace

    task = replace(base, formulation="hard_primal", separable=False, kernel=Kernel("linear"))
    row = _hard_margin_guard({"status": "optimal", "objective": 1.0, "w": "[1.0, 2.0]", "b": 0.5, "alpha": "[]",
                              "b_multiplier": 0.1, "error": ""}, task)
    assert row["status"] == "error" and "not linearly separable" in row["error"]
    assert math.isnan(row["objective"]) and row["w"] == "" and math.isnan(row["b"])
    # separable data, or a soft margin, are left alone
    kept = _hard_margin_guard({"status": "optimal", "objective": 1.0, "error": ""}, replace(task, separable=True))
    assert kept["status"] == "optimal"
    soft = replace(task, formulation="soft_primal", C=1.0)
    assert _hard_margin_guard({"status": "optimal", "error": ""}, soft)["status"] == "optimal"


def test_lp_formulations_in_a_grid_of_your_own(tmp_path, capsys):
    out = tmp_path / "grid"
    assert main(["--datasets", "example_5_1", "--C", "1", "--formulations", "l1_primal,l1_dual,separability",
                 "--backends", "highs", "--layers", "pyomo", "--out", str(out), "--no-progress",
                 "--no-figures"]) == 0
    df = results_table.load(out)
    # separability once (no C) + 2 l1 LPs, each through HiGHS simplex and ipm
    assert sorted(zip(df.formulation, df.method)) == sorted(
        (f, m) for f in ("separability", "l1_primal", "l1_dual") for m in ("simplex", "ipm"))
    assert (df.status == "optimal").all()
    assert math.isinf(df[df.formulation == "separability"].C.iloc[0])
    np.testing.assert_allclose(df[df.formulation != "separability"].objective, L1_OPTIMA["example_5_1"], rtol=1e-9)
    assert main(["--datasets", "example_5_1", "--C", "inf", "--formulations", "l1_primal"]) == 2
    assert "no problem to solve" in capsys.readouterr().err


def test_separability_through_a_backend_without_its_own_time_limit(tmp_path):
    """The separability LPs through PIQP (no time limit of its own) in the runner's solve process, which its parent
    kills at --timeout: the LP is not refused for want of a solve server (it was an `error` row, 'has no time limit
    of its own ... no solve server'), and its verdict is the one HiGHS proves."""
    out = tmp_path / "run"
    assert main(["--suite", "lp", "--datasets", "example_5_1", "--formulations", "separability",
                 "--backends", "piqp,highs", "--timeout", "120", "--out", str(out), "--no-progress", "-q"]) == 0
    df = results_table.load(out)
    piqp = df[df.backend == "piqp"]
    assert len(piqp) == 2 and not piqp.error.fillna("").str.contains("time limit of its own").any(), piqp.error
    assert set(piqp.status) == {"optimal"}
