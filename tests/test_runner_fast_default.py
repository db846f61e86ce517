"""The runner's default on large data: a solve far slower than its problem's fastest is
stopped as a recorded `time_limit` row (sweep.SlowStop, --stop-slow), and the report's SVC
reference neither forms an n x n matrix nor runs libsvm on data too large for it."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from experiments.datasets import Dataset, example_5_1, nonlinear
from experiments.runner import analysis, sweep
from experiments.runner.cli import build_datasets, build_parser, main, problems_from
from formulations.kernels import Kernel, gram
from solvers import isolation

TWO_PAIRS = [("cvxpy", "clarabel"), ("pyomo", "clarabel")]


def _tasks(argv: list[str], pairs=TWO_PAIRS, faults=None, timeout=None):
    args = build_parser().parse_args(argv)
    _, problems = problems_from(args)
    datasets, maps = build_datasets(problems, args)
    return sweep.make_tasks(problems, datasets, pairs, suite="custom", label_maps=maps, faults=faults,
                            timeout=timeout)


def test_the_pairs_of_one_problem_share_its_key_and_another_C_is_another_problem():
    tasks = _tasks(["--datasets", "example_5_1", "--C", "1,10", "--formulations", "soft_primal"])
    keys = {(t.C, t.layer): t.problem_key for t in tasks}
    assert keys[(1.0, "cvxpy")] == keys[(1.0, "pyomo")] != keys[(10.0, "cvxpy")] == keys[(10.0, "pyomo")]
    assert all("*/*" in t.problem_key and t.problem_key != t.key for t in tasks)


def test_slow_stop_counts_only_answered_rows_and_keeps_the_fastest():
    fast, slow_task = _tasks(["--datasets", "example_5_1", "--C", "1", "--formulations", "soft_primal"])
    stop = sweep.SlowStop(factor=20, floor_s=30)
    assert stop.limit(slow_task) is None  # nothing answered yet: --timeout alone
    stop.record(fast, {"status": "error", "wall_s": 0.01})
    stop.record(fast, {"status": "iteration_limit", "wall_s": 0.02})
    stop.record(fast, {"status": "time_limit", "wall_s": math.nan})
    assert stop.limit(slow_task) is None
    stop.record(fast, {"status": "optimal", "wall_s": 2.0})
    stop.record(slow_task, {"status": "optimal", "wall_s": 3.0})  # slower: not the fastest
    seconds, why = stop.limit(slow_task)
    assert seconds == 40.0 and "(2.00 s, cvxpy/clarabel, optimal)" in why and "--stop-slow 0" in why
    stop.record(fast, {"status": "optimal_inaccurate", "wall_s": 0.5})  # a point the checks did not verify
    seconds, why = stop.limit(slow_task)
    assert seconds == 30.0 and "optimal_inaccurate" in why  # 20 x 0.5 s is below the floor


def test_a_solve_far_slower_than_its_problems_fastest_is_a_recorded_time_limit_row(tmp_path):
    """pyomo/clarabel sleeps 600 s (fault), under a timeout of 600 s: the slow stop (2 x the fastest,
    at least 1 s) ends it once cvxpy/clarabel has verified the optimum; both rows are recorded."""
    tasks = _tasks(["--datasets", "example_5_1", "--C", "1", "--formulations", "soft_primal"],
                   faults={("pyomo", "clarabel"): "sleep:600"}, timeout=600.0)
    rows = {}
    sweep.run_local(tasks, lambda row: rows.__setitem__((row["layer"], row["backend"]), row), workers=1,
                    log_dir=str(tmp_path / "logs"), slow=sweep.SlowStop(factor=2, floor_s=1.0))
    assert rows[("cvxpy", "clarabel")]["status"] == "optimal"
    stopped = rows[("pyomo", "clarabel")]
    assert stopped["status"] == "time_limit"
    assert stopped["error"].startswith("stopped after 1.0 s: 2 x the fastest solve of this problem")
    assert "cvxpy/clarabel" in stopped["error"] and stopped["task_key"] == tasks[1].key


def test_the_command_line_stops_a_slow_solve_and_records_it(tmp_path, monkeypatch):
    """--stop-slow reaches the sweep: the sleeping pair is a time_limit row in the table and the report."""
    from experiments.runner import results_table

    monkeypatch.setattr(sweep, "STOP_SLOW_FLOOR_S", 1.0)  # the floor a real run keeps is 30 s
    out = tmp_path / "run"
    # workers = 1 runs the pairs in the registry's order, pyomo first: cvxpy/clarabel sleeps once pyomo has
    # answered (a timeout of 60 s bounds the test if the stop failed; the error would then say "killed after")
    assert main(["--datasets", "example_5_1", "--C", "1", "--formulations", "soft_primal", "--backends", "clarabel",
                 "--workers", "1", "--timeout", "60", "--stop-slow", "2", "--inject-fault", "cvxpy/clarabel=sleep:600",
                 "--out", str(out), "--no-progress", "--no-figures", "-q"]) == 0
    df = results_table.load(out).set_index("layer")
    assert list(df.index) == ["pyomo", "cvxpy"]
    assert df.loc["pyomo", "status"] == "optimal" and df.loc["cvxpy", "status"] == "time_limit"
    assert df.loc["cvxpy", "error"].startswith("stopped after 1.0 s: 2 x the fastest solve of this problem")
    assert "stopped after 1.0 s" in (out / "report.md").read_text()


@pytest.mark.parametrize("argv, words", [
    (["--stop-slow", "0.5"], "--stop-slow must be 0 (off) or a factor >= 1"),
    (["--stop-slow", "nan"], "--stop-slow must be 0 (off) or a factor >= 1"),
])
def test_bad_stop_slow_is_one_line_and_exit_code_2(argv, words, capsys, tmp_path):
    assert main(["--datasets", "example_5_1", "--out", str(tmp_path / "x"), *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "x").exists()


def test_svc_reference_objective_without_the_n_by_n_matrix():
    """The blockwise u'Ku equals the whole Gram matrix's, across block boundaries (n > the block)."""
    rng = np.random.default_rng(0)
    X, u = rng.normal(size=(2_345, 3)), rng.normal(size=2_345)
    for kernel in (Kernel("rbf", gamma=0.5), Kernel("linear"), Kernel("poly", gamma=1, degree=2, coef0=1)):
        whole = u @ gram(kernel, X) @ u
        assert analysis._quadratic_form(kernel, X, u) == pytest.approx(whole, rel=1e-12)


def _frame(ds: Dataset, C: float, kernel: str, gamma=math.nan):
    import pandas as pd

    return pd.DataFrame([{"dataset": ds.name, "formulation": "kernel_dual", "kernel": kernel, "C": C,
                          "profile": "default", "gamma": gamma, "degree": None, "coef0": math.nan,
                          "layer": "cvxpy", "backend": "clarabel", "order": 0}])


def test_svc_reference_on_small_data_and_a_note_above_its_size():
    ds = nonlinear(n=200, seed=1)
    ref = analysis.sklearn_reference(_frame(ds, 1.0, "rbf(gamma=0.5)", 0.5), {ds.name: (ds.X, ds.y)}).iloc[0]
    from sklearn.svm import SVC

    svc = SVC(C=1.0, kernel="rbf", gamma=0.5, tol=1e-10).fit(ds.X, ds.y)
    u = np.zeros(len(ds.y))
    u[svc.support_] = svc.dual_coef_[0]
    expected = np.abs(u).sum() - 0.5 * u @ gram(Kernel("rbf", gamma=0.5), ds.X) @ u
    assert ref.svc_objective == pytest.approx(expected, rel=1e-12) and ref.svc_note == ""

    big = example_5_1()
    n = analysis.SVC_REFERENCE_MAX_N + 1
    X, y = np.resize(big.X, (n, 2)), np.resize(big.y, n)  # never fitted: the note comes first
    ref = analysis.sklearn_reference(_frame(big, 1.0, "linear"), {big.name: (X, y)}).iloc[0]
    assert f"n = {n:,} > {analysis.SVC_REFERENCE_MAX_N:,}: no SVC reference" in ref.svc_note
    assert "svc_objective" not in ref.index


def test_blas_threads_share_the_cores_among_the_workers(monkeypatch):
    monkeypatch.setattr(sweep.os, "cpu_count", lambda: 4)
    assert [sweep.blas_threads(w) for w in (1, 2, 3, 4, 8)] == [4, 2, 1, 1, 1]


def _environment_of(pid: int) -> dict:
    """A running process's environment, as Linux shows it."""
    with open(f"/proc/{pid}/environ", "rb") as f:
        pairs = [item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item]
    return {name.decode(): value.decode() for name, value in pairs}


@pytest.mark.slow  # a solve server started per case (3-7 s): with the heavier tests
@pytest.mark.skipif(not isolation.ISOLATE, reason="solve servers run on Linux only")
@pytest.mark.parametrize("user_value", [None, "20"])
def test_every_solve_server_starts_with_the_solve_process_variables(monkeypatch, user_value):
    """The solve servers (the runner's, with the BLAS threads of warm_up, and a solve entry point's) and so their
    children start with isolation.SOLVE_PROCESS_VARIABLES (OpenBLAS's idle threads asleep at once, glibc's malloc
    keeping freed blocks), unless the user set them; this process keeps its own environment."""
    variables = {"OPENBLAS_THREAD_TIMEOUT": "4", "MALLOC_MMAP_THRESHOLD_": str(2**25),
                 "MALLOC_TRIM_THRESHOLD_": str(2**30)}
    assert isolation.SOLVE_PROCESS_VARIABLES == variables
    for name in (*variables, *sweep.BLAS_THREAD_VARIABLES):
        if user_value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, user_value)
    monkeypatch.setattr(isolation.Server, "_running", {})  # new servers, this test's environment
    monkeypatch.setattr(sweep.os, "cpu_count", lambda: 2)
    sweep.warm_up(1)
    runner, _ = isolation.Server.running(isolation.PRELOAD + sweep.TASK_MODULES, sweep._SERVER_VARIABLES)
    solve, _ = isolation.Server.running()
    try:
        blas = dict.fromkeys(sweep.BLAS_THREAD_VARIABLES, user_value or "2")
        for server, added in ((runner, {**variables, **blas}), (solve, variables)):
            seen = _environment_of(server.process.pid)
            assert {name: seen.get(name) for name in added} == {name: user_value or value for name, value in added.items()}
        assert "OPENBLAS_NUM_THREADS" not in _environment_of(solve.process.pid) or user_value
    finally:
        runner.close()
        solve.close()
    assert {name: os.environ.get(name) for name in variables} == dict.fromkeys(variables, user_value)


def test_warm_up_leaves_this_process_environment_as_it_was(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the user's setting is kept, the others are not added here
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    sweep.warm_up(2)
    assert sweep.os.environ["OMP_NUM_THREADS"] == "3" and "OPENBLAS_NUM_THREADS" not in sweep.os.environ


def test_a_user_csv_leaves_out_the_backends_that_stall_at_its_size(tmp_path, capsys):
    """A CSV of 1,500 points: HiGHS's QP solver stalls on SVM QPs from n = 1,000 (its record's
    stalls_from), so its QP rows are left out with a note that says how to include them; the other
    pairs run. The pairs that HiGHS's record does not name stay."""
    import json

    import pandas as pd

    from experiments.datasets import hard
    from experiments.runner import results_table
    from solvers.backends import RECORDS

    assert RECORDS["highs"].stalls_from("soft_primal") == 1_000
    ds = hard(1_500, d=5, seed=1)
    path = tmp_path / "user.csv"
    pd.DataFrame(ds.X, columns=[f"x{k}" for k in range(5)]).assign(label=ds.y).to_csv(path, index=False)
    out = tmp_path / "run"
    assert main(["--data", str(path), "--label-column", "label", "--formulations", "soft_primal", "--layers", "cvxpy",
                 "--out", str(out), "--no-progress", "--no-figures",
                 "--workers", "1"]) == 0
    err = capsys.readouterr().err
    note = [line for line in err.splitlines() if line.startswith("note: left out cvxpy/highs")]
    assert len(note) == 1 and "n = 1,500" in note[0] and "--backends highs" in note[0], err
    assert "1 pair(s) left out (the notes above)" in err
    df = results_table.load(out)
    assert "highs" not in set(df.backend) and {"clarabel", "piqp"} <= set(df.backend)
    assert set(df.status[df.backend.isin(["clarabel", "piqp"])]) == {"optimal"}
    assert json.loads((out / "run.json").read_text())["left_out"] == note


def test_a_stalling_backend_named_on_the_command_line_is_kept_and_the_lecture_sweep_keeps_every_pair():
    """--backends highs keeps HiGHS's tasks at any n; the default suite (the notes' data, n <= 100) loses no
    pair; LP tasks (HiGHS's simplex and ipm) are never left out."""
    pairs = [("cvxpy", "highs"), ("pyomo", "highs"), ("cvxpy", "piqp")]
    big = _tasks(["--datasets", "overlapping(n=1200,d=3)", "--C", "1", "--formulations", "soft_primal,l1_primal"],
                 pairs=pairs)
    kept, notes = sweep.leave_out_stalls(big, None)
    assert {(t.layer, t.backend) for t in kept if t.formulation == "soft_primal"} == {("cvxpy", "piqp")}
    assert {t.backend for t in kept if t.formulation == "l1_primal"} >= {"highs"}
    assert len(notes) == 2 and all("include it with --backends highs" in note for note in notes)
    assert sweep.leave_out_stalls(big, ["highs", "piqp"]) == (big, [])
    args = build_parser().parse_args([])
    _, problems = problems_from(args)
    datasets, maps = build_datasets(problems, args)
    lecture = sweep.make_tasks(problems, datasets, pairs, suite="default", label_maps=maps)
    assert sweep.leave_out_stalls(lecture, None) == (lecture, [])


def test_a_stall_named_for_one_formulation_leaves_out_that_formulation_only():
    """ProxQP's record names the linear dual's whole QP (from 1,500 points): at n = 1,600 its dual tasks are left out,
    with a note naming the dual, and its soft primal and kernel dual tasks stay; below 1,500 every task stays."""
    from solvers.backends import RECORDS

    assert RECORDS["proxqp"].stalls_from("dual") == 1_500 and RECORDS["proxqp"].stalls_from("soft_primal") is None
    pairs = [("pyomo", "proxqp"), ("cvxpy", "proxqp"), ("pyomo", "piqp")]
    args = ["--C", "1", "--formulations", "soft_primal,dual,kernel_dual"]
    big = _tasks(["--datasets", "overlapping(n=1600,d=3)", *args], pairs=pairs)
    kept, notes = sweep.leave_out_stalls(big, None)
    assert {(t.layer, t.formulation) for t in big} - {(t.layer, t.formulation) for t in kept if t.backend == "proxqp"} \
        == {("pyomo", "dual"), ("cvxpy", "dual")}
    assert len(notes) == 2 and all("on dual" in note and "stalls on SVM dual problems from n = 1,500" in note
                                   and "--backends proxqp" in note for note in notes), notes
    small = _tasks(["--datasets", "overlapping(n=1400,d=3)", *args], pairs=pairs)
    assert sweep.leave_out_stalls(small, None) == (small, [])
    by_set = _tasks(["--datasets", "overlapping(n=1600,d=3)", *args, "--method", "working_set"], pairs=pairs)
    assert sweep.leave_out_stalls(by_set, None) == (by_set, [])  # its stall is the whole QP's: small QPs stay


def test_the_dask_executor_stops_a_solve_far_slower_than_its_problems_fastest(tmp_path):
    """The same stop rules as the local executor: the sleeping pair is stopped once the other has answered (a Dask
    worker's solve ran to --timeout), and both rows are recorded."""
    from distributed import LocalCluster

    tasks = _tasks(["--datasets", "example_5_1", "--C", "1", "--formulations", "soft_primal"],
                   faults={("pyomo", "clarabel"): "sleep:600"}, timeout=600.0)
    rows = {}
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        sweep.run_dask(tasks, lambda row: rows.__setitem__((row["layer"], row["backend"]), row),
                       scheduler=cluster.scheduler_address, log_dir=str(tmp_path / "logs"),
                       slow=sweep.SlowStop(factor=2, floor_s=1.0))
    assert rows[("cvxpy", "clarabel")]["status"] == "optimal"
    stopped = rows[("pyomo", "clarabel")]
    assert stopped["status"] == "time_limit" and "cvxpy/clarabel" in stopped["error"]
    assert stopped["error"].startswith("stopped after 1.0 s: 2 x the fastest solve of this problem")
