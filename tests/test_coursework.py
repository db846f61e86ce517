"""experiments.coursework: the seeds report reproduces every published number, the
perceptron figure, the lecture demos and choosing C (small grids to stay fast)."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

from experiments.coursework import cli as coursework_cli
from experiments.coursework.choosing_C import choose_C
from experiments.coursework.demos import COMPARE_KERNELS, demo_compare, demo_linear, demo_rbf
from experiments.coursework.perceptron_vs_svm import perceptron_vs_svm
from experiments.coursework.seeds import PUBLISHED, seeds
from experiments.datasets import gendata


@pytest.fixture(scope="module")
def seeds_section(tmp_path_factory):
    return seeds(tmp_path_factory.mktemp("seeds"))


def test_seeds_report_marks_every_published_number_reproduced(seeds_section):
    sec = seeds_section
    df = sec.table
    assert sec.passed is True
    assert (df["result"] == "pass").all(), df.loc[df["result"] != "pass", ["item", "quantity", "criterion"]]
    # Every worked example is there, for both default backends where an SVM is solved.
    items = set(df["item"])
    for prefix in ("Example 5.1", "Example 5.2", "Exercise 5.4", "Exercise 5.5", "Perceptron (002)"):
        assert any(i.startswith(prefix) for i in items), prefix
    assert set(df.loc[~df["item"].str.startswith("Perceptron"), "solved by"]) == {"cvxpy/clarabel", "pyomo/highs"}
    published = df[df["kind"] == "published"]
    assert len(published) == 11  # 4 numbers x 2 backends for Examples 5.1/5.2, 3 for the perceptron
    # The published numbers themselves, as printed in the notes.
    w_rows = published[published["quantity"] == "w*"]
    assert set(w_rows["published / reference"]) == {"(-0.9229, 0.7627)"}
    assert set(w_rows["ours"]) == {"(-0.9229, 0.7627)"}
    w14 = published[published["quantity"] == "W14 after 14 iterations"]
    assert w14["ours"].item() == "(-3.0000, 0.0000, 2.0000), 14 iterations"
    # The report says so, and shows its table and figures.
    md = (sec.figures[0].parent / "seeds.md").read_text()
    assert "Published numbers reproduced: 11 of 11 checks (all)" in md
    assert not re.search(r"\|\s*FAIL\s*\|", md) and len(re.findall(r"\|\s*pass\s*\|", md)) == len(df)
    assert "(-3, 0, 2) gives (2, 2, 1, 1)" in md  # the slides' inconsistency, reported
    for fig in sec.figures:
        assert fig.exists() and fig.stat().st_size > 10_000, fig
    assert pd.read_csv(sec.tables["seeds"]).shape == df.shape


def test_seeds_exercise_5_4_slacks(seeds_section):
    df = seeds_section.table
    row = df[(df["quantity"] == "slack vector xi (nonzero entries)") & (df["solved by"] == "cvxpy/clarabel")]
    # Two nonzero slacks: A's (6.7750, 7.9386) inside the margin, B's (6, 8) misclassified.
    assert row["ours"].item() == "xi_18=0.2911, xi_56=2.3600"


def test_seeds_fail_is_reported(tmp_path, monkeypatch):
    # A wrong "published" number must turn its row and the section to FAIL.
    monkeypatch.setitem(PUBLISHED, "example_5_1_b", 1.1986)
    sec = seeds(tmp_path, backends=(("pyomo", "highs"),), figures=False)
    assert sec.figures == []
    assert sec.passed is False
    bad = sec.table[sec.table["result"] == "FAIL"]
    assert set(bad["quantity"]) == {"b*", "b* = 1/y_i - w*'x_i (lambda_i > 0)"}
    assert len(re.findall(r"\|\s*FAIL\s*\|", (tmp_path / "seeds.md").read_text())) == 2


def test_perceptron_vs_svm_figure(tmp_path):
    sec = perceptron_vs_svm(tmp_path, max_iter=500)
    assert sec.figures == [tmp_path / "perceptron_vs_svm.png"] and sec.figures[0].stat().st_size > 20_000
    df = sec.table.set_index(["dataset", "method"])
    # The slides' example: the perceptron's line x1 = 2/3 has margins 2/3 and 1/3; the SVM's x1 = 1/2 has 1/2.
    per = df.loc[("perceptron_slides(order=notebook)", "perceptron")]
    svm = df.loc[("perceptron_slides(order=notebook)", "SVM hard_primal")]
    assert per["w"] == "(-3.0000, 0.0000)" and per["b"] == 2.0 and per["iterations"] == 14
    assert per["margin_to_A"] == pytest.approx(2 / 3) and per["margin_to_B"] == pytest.approx(1 / 3)
    assert svm["min_margin"] == pytest.approx(0.5, abs=1e-6)
    # Example 5.1: both separate, the SVM's smallest margin is the largest possible.
    per, svm = df.loc[("example_5_1", "perceptron")], df.loc[("example_5_1", "SVM hard_primal")]
    assert per["converged"] and per["train_acc"] == 1.0
    assert svm["min_margin"] == pytest.approx(1 / math.hypot(-0.9229, 0.7627), rel=1e-3)
    assert per["min_margin"] < svm["min_margin"]
    # Exercise 5.4 is not separable: the perceptron stops at the cap and says so.
    per = df.loc[("exercise_5_4", "perceptron")]
    assert not per["converged"] and per["iterations"] == 500
    assert per["message"] == ("did not converge within max_iter=500 iterations: "
                              "the data may not be linearly separable")
    assert "did not converge" in (tmp_path / "perceptron_vs_svm.md").read_text()


def test_demo_linear_needs_slack_on_gendata(tmp_path):
    sec = demo_linear(tmp_path, C_values=(1.0, 100.0))
    df = sec.table
    assert (tmp_path / "demo_linear.png").exists() and (tmp_path / "demo_linear.md").exists()
    assert (df["status"] == "optimal").all()
    # No line separates the disc from the ring.
    assert (df["train_acc"] < 0.9).all() and (df["sum_xi"] > 1.0).all()
    # Primal and dual give the same w; SVC the same decision values.
    assert (df["max_abs_w_primal_minus_dual"] < 1e-5).all()
    assert (df["max_abs_f_minus_svc"] < 1e-3).all()
    # A larger C never widens the margin.
    assert df["margin"].iloc[1] <= df["margin"].iloc[0] + 1e-9


def test_demo_rbf_separates_gendata(tmp_path):
    sec = demo_rbf(tmp_path, gammas=(0.5, 2.0))
    df = sec.table.set_index("gamma")
    assert (tmp_path / "demo_rbf.png").exists()
    assert df.loc[2.0, "train_acc"] == 1.0
    assert df.loc[2.0, "n_sv"] > df.loc[0.5, "n_sv"]  # a narrower kernel leans on more points
    assert (df["max_abs_f_minus_svc"] < 1e-3).all()
    assert (df["n_sv"] == df["svc_n_sv"]).all()


def test_demo_compare_grid(tmp_path):
    kernels = (COMPARE_KERNELS[0], COMPARE_KERNELS[1], COMPARE_KERNELS[3])
    sec = demo_compare(tmp_path, C_values=(1.0, 10.0), kernels=kernels)
    df = sec.table
    assert len(df) == 6 and (tmp_path / "demo_compare.png").exists()
    assert set(df["formulation"]) == {"kernel_dual"}
    by = df.set_index(["setting", "C"])
    assert by.loc[("linear", 10.0), "train_acc"] < 0.9
    assert by.loc[("poly Q=2", 10.0), "train_acc"] == 1.0
    assert (df["max_abs_f_minus_svc"] < 1e-3).all()
    # The linear kernel through the kernel dual gives the linear SVM of demo_linear.
    lin = demo_linear(tmp_path / "lin", C_values=(10.0,)).table
    assert by.loc[("linear", 10.0), "b"] == pytest.approx(lin["b"].item(), abs=1e-4)


def test_choose_C_small_grid(tmp_path):
    C_grid, gamma_grid, path_C = (0.1, 10.0), (0.5, 5.0), (0.01, 1.0, 100.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sec = choose_C(tmp_path, dataset="gendata", dataset_params={"n_pos": 20, "n_neg": 20, "seed": 1},
                       C_grid=C_grid, gamma_grid=gamma_grid, path_C=path_C, k=3)
    # the folds' fits speak through their scores, not 10 ConvergenceWarnings from inside GridSearchCV
    assert not [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert sec.table["refit_verified"].dtype == bool
    assert [p.name for p in sec.figures] == ["choose_C_cv.png", "choose_C_path.png"]
    assert all(p.exists() for p in sec.figures)
    chosen = sec.table.set_index("kernel")
    cv_rbf = pd.read_csv(sec.tables["choose_C_cv_rbf"])
    assert len(cv_rbf) == 4
    # The chosen (C, gamma) is the best mean validation accuracy of the grid.
    best = cv_rbf.loc[cv_rbf["rank_test_score"] == 1].iloc[0]
    assert (chosen.loc["rbf", "C"], chosen.loc["rbf", "gamma"]) == (best["C"], best["gamma"])
    assert chosen.loc["rbf", "cv_accuracy"] == pytest.approx(cv_rbf["mean_test_score"].max())
    assert chosen.loc["rbf", "cv_accuracy"] > chosen.loc["linear", "cv_accuracy"]  # a circle, not a line
    # Regularization path on Exercise 5.4: ||w*|| grows with C, so the margin 2/||w*|| shrinks.
    path = pd.read_csv(sec.tables["choose_C_path"])
    assert list(path["C"]) == list(path_C)
    assert np.all(np.diff(path["norm_w"]) >= -1e-6)
    np.testing.assert_allclose(path["margin"], 2 / path["norm_w"])
    assert path["n_sv"].iloc[0] > path["n_sv"].iloc[-1] >= 3  # a small C leaves many points inside the margin
    md = (tmp_path / "choose_C.md").read_text()
    assert "Chosen values" in md and "![regularization path](choose_C_path.png)" in md


def test_gendata_is_the_demo_data():
    ds = gendata(15, 15)
    assert ds.n == 30 and int((ds.y > 0).sum()) == 15


def test_run_suite_and_cli(tmp_path, capsys):
    with pytest.raises(ValueError, match="unknown coursework suite 'nope'.*seeds"):
        coursework_cli.run_suite("nope", tmp_path)
    assert set(coursework_cli.COURSEWORK_SUITES) >= {"demo-linear", "demo-rbf", "demo-compare", "seeds", "choose-C"}
    assert coursework_cli.main(["perceptron-vs-svm", "--out", str(tmp_path), "--layer", "pyomo", "--backend", "highs"]) == 0
    assert "perceptron-vs-svm: 1 figures" in capsys.readouterr().out
    assert (tmp_path / "perceptron_vs_svm.png").exists()


def test_runner_runs_the_coursework_suites(tmp_path):
    """`python -m experiments.run --suite NAME` reaches every coursework suite."""
    from experiments.runner.cli import main as run_main
    from experiments.runner.suites import SUITES

    for name in coursework_cli.COURSEWORK_SUITES:
        assert SUITES[name].section is not None, name
    assert run_main(["--suite", "perceptron-vs-svm", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "perceptron_vs_svm.png").exists()
    assert "margin" in (tmp_path / "perceptron_vs_svm.md").read_text()
