"""report.md is rebuilt from a saved table; the derived tables compute what they say."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments import analysis, results_table
from experiments.run import main

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "run"
    assert main(["--suite", "smoke", "--backends", "clarabel,daqp", "--out", str(out), "--workers", "2",
                 "--no-progress"]) == 0
    return out


def test_report_module_rebuilds_report_from_the_saved_table(smoke_run):
    report = smoke_run / "report.md"
    original = report.read_text()
    report.unlink()
    (smoke_run / "duality.csv").unlink()
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "experiments.report", str(smoke_run), "--no-figures"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    rebuilt = report.read_text()
    assert (smoke_run / "duality.csv").exists()
    for section in ("## Status per layer/backend", "## w* and b* per backend and layer",
                    "## Strong duality across formulations", "## Agreement across formulations",
                    "## Primal multipliers vs dual alpha*", "## KKT residuals", "## Timings",
                    "## Failures and rejected solves", "## Environment"):
        assert section in rebuilt, section
    assert "(-0.9229, 0.7627) / 1.1976" in rebuilt
    assert "scikit-learn SVC" in rebuilt and "clarabel" in rebuilt
    # same tables as the report the run wrote (the run's wall time line aside)
    assert rebuilt.split("## Status")[1].split("## Environment")[0] == \
        original.split("## Status")[1].split("## Figures")[0]


def test_report_from_csv_only(smoke_run, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(smoke_run, copy)
    (copy / "results.parquet").unlink()
    (copy / "rows.jsonl").unlink()
    from experiments.report import build_report

    text = build_report(copy, figures=False).read_text()
    assert "(-0.9229, 0.7627) / 1.1976" in text
    df_csv = results_table.load(copy)
    df_pq = pd.read_parquet(smoke_run / "results.parquet")
    assert list(df_csv.task_key) == list(df_pq.task_key)
    np.testing.assert_allclose(df_csv.objective, df_pq.objective, equal_nan=True)
    assert math.isinf(df_csv[df_csv.formulation == "hard_primal"].C.iloc[0])


def test_report_of_a_missing_run_is_a_clear_error(tmp_path, capsys):
    from experiments.report import main as report_main

    assert report_main([str(tmp_path)]) == 2
    assert "no results table" in capsys.readouterr().err


def _row(**kw):
    base = dict(task_key="", dataset="toy", n=2, d=2, kernel="linear", C=1.0, profile="default", order=0,
                status="optimal", w="[1.0, 2.0]", b=0.5, alpha="[0.1, 0.1]", objective=3.0, alpha_source="solver")
    base.update(kw)
    return base


def test_duality_pairs_are_primal_times_dual():
    rows = [
        _row(task_key="p1", formulation="soft_primal", layer="pyomo", backend="a", primal_objective=3.0,
             dual_objective=2.9),
        _row(task_key="p2", formulation="soft_primal", layer="cvxpy", backend="b", primal_objective=3.2,
             dual_objective=3.0),
        _row(task_key="d1", formulation="dual", layer="pyomo", backend="a", primal_objective=3.1,
             dual_objective=2.95, alpha="[0.1, 0.3]"),
        _row(task_key="x", formulation="dual", layer="pyomo", backend="c", status="iteration_limit",
             primal_objective=9.0, dual_objective=1.0),
    ]
    df = results_table.frame(rows)
    pairs = analysis.duality_pairs(df)
    assert len(pairs) == 2  # the unverified dual is left out
    np.testing.assert_allclose(sorted(pairs.gap), [3.0 - 2.95, 3.2 - 2.95])
    np.testing.assert_allclose(sorted(pairs.rel_gap), [0.05 / 3.0, 0.25 / 3.2])
    m = analysis.multipliers(df)
    np.testing.assert_allclose(m.max_diff, [0.2, 0.2])
    agree = analysis.agreement(df)
    assert agree.w_spread[0] == 0.0 and agree.optimal[0] == 3 and agree.rows[0] == 4


def test_results_table_journal_survives_a_partial_line(tmp_path):
    j = results_table.Journal(tmp_path)
    j.append({"task_key": "a", "status": "optimal", "order": 0})
    with j.path.open("a") as fh:
        fh.write('{"task_key": "b", "sta')  # a run killed mid-write
    j.append({"task_key": "c", "status": "error", "order": 2})
    assert [r["task_key"] for r in j.rows()] == ["a", "c"]
    assert j.done_keys() == {"a", "c"}
    assert j.done_keys(retry_failed=True) == {"a"}
