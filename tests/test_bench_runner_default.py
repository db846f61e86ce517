"""experiments.runner_bench: the runner's default against the benchmark's best path, per layer."""

from __future__ import annotations

import math
import os

import pandas as pd
import pytest

from experiments.bench import scaling_report as bench_report
from experiments.bench import runner_default as rd

KERNEL = rd.PROBLEMS[0]


def _runner_rows():
    return pd.DataFrame([
        {"layer": "pyomo", "backend": "piqp", "method_used": "working_set", "status": "optimal",
         "raw_objective": 100.0, "total_s": 2.0},
        {"layer": "pyomo", "backend": "osqp", "method_used": "working_set", "status": "time_limit",
         "raw_objective": math.nan, "total_s": math.nan},
        {"layer": "pyomo", "backend": "daqp", "method_used": "working_set", "status": "optimal_inaccurate",
         "raw_objective": 100.1, "total_s": 1.0},  # faster, but not verified: not the best row
        {"layer": "cvxpy", "backend": "piqp", "method_used": "working_set", "status": "optimal_inaccurate",
         "raw_objective": 100.0 * (1 + 2e-8), "total_s": 3.0},  # no verified cvxpy row: the fastest with a point
    ])


def _bench_rows():
    return pd.DataFrame([
        {"layer": "pyomo", "label": "pyomo/piqp/working_set", "status": "optimal", "objective": 100.0, "total_s": 1.0},
        {"layer": "pyomo", "label": "pyomo/piqp/auto", "status": "optimal", "objective": 100.0, "total_s": 1.6},
        {"layer": "cvxpy", "label": "cvxpy/piqp/working_set", "status": "optimal", "objective": 100.0, "total_s": 2.0},
    ])


def test_compare_takes_each_sides_fastest_verified_row_per_layer():
    table = rd.compare(KERNEL, 5_000, _runner_rows(), _bench_rows(), runner_wall=9.0).set_index("layer")
    pyomo, cvxpy = table.loc["pyomo"], table.loc["cvxpy"]
    assert (pyomo.runner_row, pyomo.runner_status, pyomo.bench_path) == ("pyomo/piqp", "optimal",
                                                                          "pyomo/piqp/working_set")
    assert pyomo.ratio == pytest.approx(2.0) and pyomo.rel_obj_diff == 0.0
    assert (cvxpy.runner_row, cvxpy.runner_status) == ("cvxpy/piqp", "optimal_inaccurate")
    assert cvxpy.ratio == pytest.approx(1.5) and cvxpy.rel_obj_diff == pytest.approx(2e-8, rel=1e-6)
    text = rd.markdown(table.reset_index(), _runner_rows().assign(problem="kernel", round=1, build_s=1.0,
                                                                    solve_s=1.0, wall_s=2.0, error=""), "cmd", 1.0)
    assert "- kernel n = 5,000, pyomo: 2.00x (NOT met)" in text
    assert "- kernel n = 5,000, cvxpy: 1.50x (met; not both verified optimal)" in text


def test_a_layer_without_rows_has_no_ratio():
    table = rd.compare(KERNEL, 5_000, _runner_rows()[lambda r: r.layer == "pyomo"], _bench_rows(), 1.0)
    assert math.isnan(table.set_index("layer").loc["cvxpy", "ratio"])


@pytest.mark.slow  # a whole command line run (10 s or more): with the heavier tests
def test_quick_run_writes_the_comparison_and_the_bench_report_includes_it(tmp_path):
    """The runner in a subprocess and the benchmark's paths at small n: every layer compared, both sides
    verified, the same optimum; the section joins the benchmark's report."""
    assert rd.main(["--quick", "--out", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "runner_default.csv")
    assert sorted(zip(table.problem, table.layer)) == [("kernel", "cvxpy"), ("kernel", "pyomo"),
                                                       ("linear", "cvxpy"), ("linear", "pyomo")]
    assert (table.runner_status == "optimal").all() and (table.bench_status == "optimal").all()
    assert (table.rel_obj_diff <= bench_report.MATCH_TOL).all() and (table.ratio > 0).all()
    assert table.runner_workers.between(1, os.cpu_count()).all()  # the runner's own choice, from its run.json
    rows = pd.read_csv(tmp_path / "runner_default_rows.csv")
    assert set(rows.backend) == {"piqp"} and len(rows) == 4
    section = bench_report._runner_default_section(tmp_path)
    assert section[0] == "## The runner's default against the benchmark's best path"
    assert any(line.startswith("| kernel") for line in section)


@pytest.mark.slow  # a whole command line run (10 s or more): with the heavier tests
def test_rounds_keep_each_sides_fastest_row(tmp_path):
    """--rounds 2: the runner ran twice (a folder each), every row is kept with its round, and each side's row in
    the comparison is its fastest verified one over both rounds."""
    assert rd.main(["--quick", "--problems", "kernel", "--rounds", "2", "--out", str(tmp_path)]) == 0
    rows = pd.read_csv(tmp_path / "runner_default_rows.csv")
    assert sorted(rows["round"].unique()) == [1, 2] and len(rows) == 4  # piqp in both layers, twice
    assert (tmp_path / "runner_default" / "run_kernel_300" / "round2" / "results.csv").exists()
    table = pd.read_csv(tmp_path / "runner_default.csv").set_index("layer")
    for layer in ("pyomo", "cvxpy"):
        verified = rows[(rows.layer == layer) & (rows.status == "optimal")]
        assert table.loc[layer, "runner_s"] == pytest.approx(verified.total_s.min(), rel=1e-12)


@pytest.mark.parametrize("argv, words", [(["--problems", "kernel,nope"], "--problems: unknown ['nope']"),
                                         (["--workers", "0"], "--workers must be >= 1"),
                                         (["--rounds", "0"], "--rounds must be >= 1"),
                                         (["--budget", "-1"], "--budget must be a finite number")])
def test_bad_options_are_refused_before_any_work(argv, words, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        rd.main([*argv, "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2 and words in capsys.readouterr().err and not (tmp_path / "out").exists()
