"""The runner: the default suite end to end, failures, timeouts, kill + resume, Dask = local."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments.runner import analysis

from experiments.runner import results_table
from experiments.runner.cli import main, parse_dataset, split_top
from solvers.profiles import get_profile

REPO = Path(__file__).resolve().parents[1]
REQUIRED = [
    "dataset", "n", "d", "formulation", "layer", "backend", "profile", "kernel", "C", "status", "solver_status",
    "raw_status", "objective", "primal_objective", "dual_objective", "duality_gap", "rel_duality_gap", "w", "b",
    "b_rule", "b_multiplier", "n_sv", "kkt_stationarity", "kkt_primal_feasibility", "kkt_dual_feasibility",
    "kkt_complementarity", "train_accuracy", "build_s", "solve_s", "error", "backend_version", "task_key",
]
W_5_1, B_5_1 = (-0.9229, 0.7627), 1.1976


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


# ------------------------------------------------------------------ the default suite, end to end


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("default") / "run"
    assert main(["--out", str(out), "--workers", "2", "--no-progress"]) == 0
    return out, results_table.load(out)


@pytest.mark.slow
def test_default_suite_writes_every_output(default_run):
    out, df = default_run
    for name in ("results.parquet", "results.csv", "duality.csv", "report.md", "rows.jsonl", "run.json",
                 "environment.json"):
        assert (out / name).is_file(), name
    figs = {p.name for p in (out / "figures").glob("*.png")}
    assert {"gap_kkt_by_backend.png", "time_by_backend.png", "separator_example_5_1_linear_C_inf_high.png",
            "separator_exercise_5_5_rbf_gamma_1_C_1_high.png"} <= figs
    missing = [c for c in REQUIRED if c not in df.columns]
    assert not missing
    csv = pd.read_csv(out / "results.csv")
    assert len(csv) == len(df) and set(REQUIRED) <= set(csv.columns)
    # every lecture problem x every formulation that applies x every available backend of both layers
    from solvers.registry import available_backends

    pairs = len(available_backends())
    assert len(df) == 16 * pairs
    assert df.task_key.is_unique
    assert set(df.formulation) == {"hard_primal", "soft_primal", "dual", "kernel_dual"}
    assert set(df.layer) == {"pyomo", "cvxpy"}
    assert (df.profile == "high").all()


@pytest.mark.slow
def test_default_suite_optimal_rows_have_small_gaps_and_others_are_blank(default_run):
    _, df = default_run
    ok = df[df.status == "optimal"]
    assert len(ok) >= 0.9 * len(df)  # measured: 251 of 256
    tol = ok.profile.map(lambda p: get_profile(p).check_tol)
    assert (ok.rel_duality_gap.abs() <= tol).all()
    assert ok.objective.notna().all() and ok.b.notna().all()
    linear = ok[ok.kernel == "linear"]
    assert (linear.w != "").all()
    assert (ok[ok.kernel != "linear"].w == "").all()  # no w for a nonlinear kernel
    bad = df[df.status != "optimal"]
    assert bad.objective.isna().all() and bad.b.isna().all() and (bad.w == "").all()
    assert (bad.error != "").all()


@pytest.mark.slow
def test_default_suite_reproduces_the_lecture_numbers(default_run):
    out, df = default_run
    wb = analysis.wb_table(df)
    ex = wb[(wb.dataset == "example_5_1") & (wb.status == "optimal")]
    assert set(ex.formulation) == {"hard_primal", "dual", "kernel_dual"}
    assert len(ex) >= 40  # of 48 (3 formulations x 16 layer/backend pairs)
    assert (ex.w1.round(4) == W_5_1[0]).all()
    assert (ex.w2.round(4) == W_5_1[1]).all()
    assert (ex.b.round(4) == B_5_1).all()
    report = (out / "report.md").read_text()
    assert "(-0.9229, 0.7627) / 1.1976" in report
    # Exercise 5.4 (C = 10): primal and dual agree with each other and with libsvm
    agree = analysis.agreement(df, analysis.sklearn_reference(df, analysis.load_data(out))).set_index("group")
    row = agree.loc["exercise_5_4 | linear | C=10 | high"]
    assert row.objective == pytest.approx(27.0346015, abs=1e-6)
    assert row.w_spread < 1e-5 and row.b_spread < 1e-5
    assert row.max_w_vs_svc < 1e-4 and row.max_b_vs_svc < 1e-4  # libsvm stops near 1e-5


@pytest.mark.slow
def test_default_suite_strong_duality_table(default_run):
    out, df = default_run
    pairs = pd.read_csv(out / "duality.csv")
    assert {"P_star", "D_star", "gap", "primal_backend", "dual_backend"} <= set(pairs.columns)
    ok = df[df.status == "optimal"]
    # every verified primal solve against every verified dual solve of the same problem
    expected = 0
    for _, g in analysis.with_groups(ok).groupby("group"):
        expected += g.formulation.isin(["hard_primal", "soft_primal"]).sum() * g.formulation.isin(
            ["dual", "kernel_dual"]).sum()
    assert len(pairs) == expected > 0
    np.testing.assert_allclose(pairs.gap, pairs.P_star - pairs.D_star, rtol=0, atol=1e-12)
    # both points are within the high profile's 1e-6 of the optimum, so |P* - D*| <= 2e-6 max(1, |P*|)
    assert (pairs.rel_gap <= 2e-6).all()
    ex = pairs[pairs.dataset == "example_5_1"]
    assert ex.P_star.round(4).eq(0.7167).all()


@pytest.mark.slow
def test_default_suite_checks_separability_before_the_hard_margin(default_run):
    out, df = default_run
    rec = json.loads((out / "separability.json").read_text())
    assert set(rec) == {"example_5_1"}  # the only hard-margin data of the default suite
    assert rec["example_5_1"]["separable"] is True and rec["example_5_1"]["status"] == "optimal"
    X, y = analysis.load_data(out)["example_5_1"]
    cert = rec["example_5_1"]["certificate"]
    assert np.min(y * (X @ np.asarray(cert["w"]) + cert["b"])) > 0  # the LP's hyperplane separates the data
    hard = df[np.isinf(df.C)]
    assert len(hard) and (hard.separable == True).all()  # noqa: E712
    assert df[np.isfinite(df.C)].separable.isna().all()
    assert "### example_5_1 (n = 60, d = 2): linearly separable" in (out / "report.md").read_text()


# ------------------------------------------------------------------ failures and timeouts


@pytest.mark.slow  # a whole command line run (10 s or more): with the heavier tests
def test_failed_crashed_and_timed_out_solves_become_rows(tmp_path):
    """A raise, a crash and a solve that never returns (fault hang: killed at --timeout) are rows. The
    timeout is generous: the other solves need a small fraction of it, the hanging one never ends."""
    out = tmp_path / "faults"
    code = main(["--suite", "smoke", "--formulations", "hard_primal,dual", "--backends", "clarabel,osqp,daqp",
                 "--out", str(out), "--workers", "2", "--timeout", "10", "--no-progress", "--no-figures",
                 "--inject-fault", "cvxpy/osqp=raise", "--inject-fault", "pyomo/osqp=crash",
                 "--inject-fault", f"pyomo/daqp=hang:{tmp_path / 'hanging'}"])
    assert code == 0
    df = results_table.load(out).set_index("task_key")
    assert len(df) == 2 * 6  # 2 problems x (3 backends x 2 layers): nothing lost
    raised = df[(df.layer == "cvxpy") & (df.backend == "osqp")]
    crashed = df[(df.layer == "pyomo") & (df.backend == "osqp")]
    hung = df[(df.layer == "pyomo") & (df.backend == "daqp")]
    assert (raised.status == "error").all() and raised.error.str.contains("injected fault: raise").all()
    assert (crashed.status == "error").all() and crashed.error.str.contains("SIGSEGV").all()
    assert (hung.status == "time_limit").all() and hung.error.str.contains("killed after 11.0 s").all()
    others = df[~df.index.isin(raised.index.union(crashed.index).union(hung.index))]
    assert len(others) == 6 and (others.status == "optimal").all()
    np.testing.assert_allclose(others.objective, 0.71672427, atol=1e-6)
    assert "## Failures and rejected solves (6)" in (out / "report.md").read_text()


# ------------------------------------------------------------------ kill midway, then --resume


@pytest.mark.slow  # a whole command line run (10 s or more): with the heavier tests
def test_killed_run_resumes_without_redoing_finished_rows(tmp_path):
    """Kill a run midway, on an event (a solve hangs after touching a marker), never after a guessed delay;
    a second run on the same folder meanwhile is refused by the lock; `--resume --out DIR` alone then
    finishes the run with its recorded options, over the dead run's stale lock."""
    out = tmp_path / "killed"
    marker = tmp_path / "hanging"
    # workers = 1: problem 0 runs on pyomo/clarabel, cvxpy/clarabel, pyomo/daqp (the fastest backends first,
    # sweep.fastest_first), then hangs on cvxpy/daqp
    first_run = [sys.executable, "-m", "experiments.run", "--suite", "smoke", "--backends", "clarabel,daqp",
                 "--out", str(out), "--no-progress", "--no-figures", "--workers", "1",
                 "--inject-fault", f"cvxpy/daqp=hang:{marker}"]
    proc = subprocess.Popen(first_run, cwd=tmp_path, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    journal = results_table.Journal(out)
    try:
        # the three solves before the hanging one are journaled by the parent, which the hang does not block
        while proc.poll() is None and not (marker.exists() and len(journal.rows()) == 3):
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read()[-2000:]
        second = subprocess.run(first_run[:-2], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                                timeout=300)
        assert second.returncode == 2 and f"is in use by another run (pid {proc.pid})" in second.stderr
    finally:
        proc.kill()
        proc.wait(30)
    first = journal.rows()
    assert len(first) == 3
    first_keys = {r["task_key"]: r["run_id"] for r in first}

    done = subprocess.run([sys.executable, "-m", "experiments.run", "--resume", "--out", str(out), "--workers", "2",
                           "--no-progress", "--no-figures"], cwd=tmp_path, env=_env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "16 solves" in done.stderr and "3 already done" in done.stderr
    rows = journal.rows()
    assert len(rows) == 16  # 4 problems x 4 layer/backend pairs, each solved exactly once
    assert len({r["task_key"] for r in rows}) == 16
    df = results_table.load(out)
    assert len(df) == 16 and (df.status == "optimal").all()
    kept = df[df.task_key.isin(first_keys)]
    assert (kept.run_id == kept.task_key.map(first_keys)).all()  # finished rows were not redone
    assert df.run_id.nunique() == 2


# ------------------------------------------------------------------ Dask


@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_table(tmp_path):
    from distributed import LocalCluster

    opts = ["--suite", "smoke", "--backends", "clarabel,osqp", "--no-progress", "--no-figures"]
    assert main(opts + ["--out", str(tmp_path / "local"), "--workers", "2"]) == 0
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster:
        assert main(opts + ["--out", str(tmp_path / "dask"), "--executor", "dask",
                            "--scheduler", cluster.scheduler_address]) == 0
    local = results_table.load(tmp_path / "local").set_index("task_key").sort_index()
    dask = results_table.load(tmp_path / "dask").set_index("task_key").sort_index()
    assert list(local.index) == list(dask.index) and len(local) == 16
    assert (local.status == dask.status).all()
    for col in ("objective", "primal_objective", "dual_objective", "b"):
        np.testing.assert_allclose(dask[col], local[col], rtol=0, atol=1e-6, equal_nan=True)
    assert (local.w == dask.w).all()


# ------------------------------------------------------------------ command line


def test_user_csv_data_with_any_two_labels(tmp_path):
    from experiments.datasets import example_5_1

    ds = example_5_1()
    frame = pd.DataFrame(ds.X, columns=["x1", "x2"]).assign(kind=np.where(ds.y > 0, "A", "B"))
    path = tmp_path / "points.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "csv"
    assert main(["--data", str(path), "--label-column", "kind", "--C", "inf", "--formulations", "hard_primal",
                 "--backends", "clarabel", "--layers", "pyomo", "--profile", "high", "--out", str(out),
                 "--no-progress", "--no-figures"]) == 0
    df = results_table.load(out)
    assert list(df.dataset) == ["points.csv"] and df.status[0] == "optimal"
    assert json.loads(df.label_map[0]) == {"A": -1, "B": 1}  # sorted labels: first -> -1
    w = json.loads(df.w[0])
    # A -> -1 flips the notes' signs (the notes give A = +1)
    np.testing.assert_allclose(w, [-W_5_1[0], -W_5_1[1]], atol=5e-5)
    assert df.b[0] == pytest.approx(-B_5_1, abs=5e-5)


def test_method_is_an_axis_with_its_own_column_and_the_same_optimum(tmp_path):
    """--method full,working_set,auto: each QP once per method that applies (the hard margin has no
    working set), the asked and the used method in the table, the report's solver names the working
    set, and every verified row has the one optimum."""
    out = tmp_path / "methods"
    assert main(["--datasets", "nonlinear(n=120,seed=2)", "--kernel", "rbf", "--gamma", "1", "--C", "10,inf",
                 "--formulations", "kernel_dual", "--method", "full,working_set,auto", "--backends", "piqp",
                 "--profile", "high", "--out", str(out), "--no-progress", "--no-figures"]) == 0
    df = results_table.load(out)
    soft = df[df.C == 10]
    assert sorted(soft.solve_method) == sorted(["full", "working_set", "auto"] * 2)  # both layers
    assert sorted(df[df.C == math.inf].solve_method) == ["auto", "auto", "full", "full"]  # no working set at C = inf
    used = dict(zip(soft.solve_method, soft.method_used))
    assert used["working_set"] == "working_set" and used["full"] == "full" and used["auto"] == "full"  # n < 500
    assert (soft.status == "optimal").all()
    np.testing.assert_allclose(soft.objective, soft.objective.iloc[0], rtol=1e-7)
    assert "(working set)" in (out / "report.md").read_text()
    assert main(["--datasets", "example_5_1", "--C", "inf", "--method", "working_set", "--out",
                 str(tmp_path / "none"), "--no-progress"]) == 2  # no QP has a working set at C = inf


def test_default_out_dir_and_latest_pointer(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["--suite", "smoke", "--formulations", "dual", "--backends", "daqp", "--layers", "pyomo",
                 "--no-progress", "--no-figures"]) == 0
    runs = [p for p in (tmp_path / "results").iterdir() if p.name != "latest"]
    assert len(runs) == 1
    assert (tmp_path / "results" / "latest").resolve() == runs[0].resolve()
    assert (runs[0] / "results.parquet").exists()


def test_list_and_bad_input(capsys):
    assert main(["--list"]) == 0
    listing = capsys.readouterr().out
    for word in ("example_5_1", "default", "smoke", "kernel_dual", "clarabel", "installed"):
        assert word in listing
    assert main(["--datasets", "nosuch"]) == 2
    assert "unknown dataset 'nosuch'" in capsys.readouterr().err
    assert main(["--C", "1"]) == 2
    assert "--C applies to a grid of your own" in capsys.readouterr().err
    assert main(["--suite", "nosuch"]) == 2
    assert "unknown suite" in capsys.readouterr().err
    assert main(["--datasets", "example_5_1", "--backends", "gurobi"]) == 2
    assert "unknown backend 'gurobi'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "--executor" in capsys.readouterr().out


def test_dataset_spec_parsing():
    assert split_top("a(n=1,seed=2),b") == ["a(n=1,seed=2)", "b"]
    assert parse_dataset("overlapping(n=200,seed=3)") == ("overlapping", {"n": 200, "seed": 3})
    assert parse_dataset("example_5_1") == ("example_5_1", {})


def test_grid_applies_the_formulations_that_fit():
    from experiments.runner.suites import applicable, grid
    from formulations.kernels import Kernel

    assert applicable(math.inf, Kernel("linear")) == ("hard_primal", "dual", "kernel_dual")
    assert applicable(1.0, Kernel("linear")) == ("soft_primal", "dual", "kernel_dual")
    assert applicable(1.0, Kernel("rbf", gamma=1.0)) == ("kernel_dual",)
    probs = grid([("example_5_1", {})], Cs=[math.inf, 1.0], kernels=[Kernel("linear"), Kernel("rbf")])
    assert len(probs) == 3 + 3 + 1 + 1


@pytest.mark.slow
def test_a_dask_workers_solve_is_killed_at_the_timeout_too(tmp_path):
    """A cluster's workers are daemonic processes by default: their solves ran in the worker itself, past --timeout
    (a solve sleeping 30 s answered after 30 s); now each worker has its solve server, and the solve is killed."""
    import dataclasses

    from distributed import LocalCluster

    from experiments.runner import sweep
    from experiments.runner.suites import Problem

    from experiments.datasets import example_5_1

    ds = example_5_1()
    problem = Problem(dataset="example_5_1", params={}, formulation="soft_primal", C=1.0)
    (task,) = sweep.make_tasks([problem], {sweep.dataset_key("example_5_1", {}): ds}, [("cvxpy", "clarabel")],
                               suite="custom", timeout=1.0)
    rows = []
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        sweep.run_dask([dataclasses.replace(task, fault="sleep:30")], rows.append, scheduler=cluster.scheduler_address)
    assert [(row["status"], row["error"]) for row in rows] == [("time_limit", "killed after 1.6 s (--timeout 1 s)")]
