"""The runner's default timed as the benchmark times it: its solves run on the CPU cores idle
when it starts (sweep.idle_cores, workers_for; --workers overrides), and a working-set row computes
kernel rows on demand, never the n x n Gram matrix."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from experiments.runner import cli, sweep
from solvers.algorithms import kernel_rows
from solvers.solution import OPTIMAL


@pytest.mark.parametrize("idle, workers", [(0.0, 1), (0.4, 1), (0.96, 1), (1.6, 2), (2.0, 2), (7.3, 7)])
def test_workers_are_the_idle_cores_rounded_and_at_least_one(idle, workers):
    assert sweep.workers_for(idle) == workers


def test_idle_cores_are_the_cores_times_the_idle_share(monkeypatch):
    import psutil

    asked = []
    monkeypatch.setattr(psutil, "cpu_percent", lambda interval: asked.append(interval) or 75.0)
    monkeypatch.setattr(sweep.os, "cpu_count", lambda: 4)
    assert sweep.idle_cores() == pytest.approx(1.0, rel=1e-12)
    assert asked == [sweep.IDLE_SAMPLE_S]  # measured over an interval, not since the last call


def test_no_workers_given_runs_on_the_idle_cores_and_says_so(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(sweep, "idle_cores", lambda: 0.3)  # a busy machine
    monkeypatch.setattr(cli.os, "cpu_count", lambda: 2)
    out = tmp_path / "run"
    assert cli.main(["--datasets", "example_5_1", "--formulations", "soft_primal", "--layers", "cvxpy",
                     "--backends", "clarabel", "--out", str(out), "--no-figures", "--no-progress"]) == 0
    assert json.loads((out / "run.json").read_text())["workers"] == 1
    assert "1 solve at a time: the machine is busy (0.3 of 2 CPU cores idle; --workers N to choose)" in \
        capsys.readouterr().err


def test_a_bad_input_on_a_busy_machine_is_still_one_line(monkeypatch, tmp_path, capsys):
    """The busy line waits for the run to start: before, a bad --degree on a loaded machine printed it
    first, and the CLI's one-line error became two (tests/test_cli_boundary.py failed under load)."""
    monkeypatch.setattr(sweep, "idle_cores", lambda: 0.0)
    monkeypatch.setattr(cli.os, "cpu_count", lambda: 2)
    assert cli.main(["--datasets", "example_5_1", "--degree", "2.5", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --degree: '2.5' is not a whole number"]


def test_workers_given_are_kept_without_measuring(monkeypatch, tmp_path, capsys):
    def measured():
        raise AssertionError("idle_cores measured although --workers was given")

    monkeypatch.setattr(sweep, "idle_cores", measured)
    assert cli.build_parser().parse_args([]).workers is None
    out = tmp_path / "run"
    assert cli.main(["--datasets", "example_5_1", "--formulations", "soft_primal", "--layers", "cvxpy",
                     "--backends", "clarabel", "--out", str(out), "--no-figures", "--no-progress",
                     "--workers", "3"]) == 0
    assert json.loads((out / "run.json").read_text())["workers"] == 3
    assert "the machine is busy" not in capsys.readouterr().err


def test_a_working_set_row_never_forms_the_n_by_n_gram_matrix(monkeypatch):
    """The runner's kernel_dual row at n = ROWS_FROM_N with kernel rows on demand (the Gram matrix's bytes above
    GRAM_BYTES): no kernel
    block it computes (the loop's rows, K u in the checks, the kernel audit's sample) is n x n, the row is
    verified optimal by the working set, and the full Gram matrix's builder in solvers.api is not called."""
    n = kernel_rows.ROWS_FROM_N
    blocks = []
    real_gram, real_rbf = kernel_rows.gram, kernel_rows.rbf_values

    def counted_gram(kernel, X, Z=None):
        block = real_gram(kernel, X, Z)
        blocks.append(block.shape)
        return block

    def counted_rbf(gamma, X, Z):  # the rbf's rows: from the points centered once (formulations.kernels.Points)
        block = real_rbf(gamma, X, Z)
        blocks.append(block.shape)
        return block

    def no_full_gram(*args, **kwargs):
        raise AssertionError("solvers.api._gram (the n x n Gram matrix) called by a working-set row")

    from solvers import api

    monkeypatch.setattr(kernel_rows, "GRAM_BYTES", 8.0 * n * n - 1)  # rows on demand from n (else formed up to 1 GiB)
    monkeypatch.setattr(kernel_rows, "gram", counted_gram)
    monkeypatch.setattr(kernel_rows, "rbf_values", counted_rbf)
    monkeypatch.setattr(api, "_gram", no_full_gram)
    args = cli.build_parser().parse_args(["--datasets", f"nonlinear(n={n})", "--formulations", "kernel_dual",
                                          "--kernel", "rbf", "--gamma", "1"])
    _, problems = cli.problems_from(args)
    datasets, maps = cli.build_datasets(problems, args)
    (task,) = sweep.make_tasks(problems, datasets, [("cvxpy", "piqp")], suite="custom", label_maps=maps)
    row = sweep.execute_task(task)  # in this process, so that the patches see the solve
    assert (row["status"], row["method_used"], row["n"]) == (OPTIMAL, "working_set", n), row.get("error")
    # never n x n: rows of the loop, and the checks' kernel audit (every row against the support vectors' columns)
    assert blocks and all(min(shape) < n for shape in blocks), blocks
    assert np.isfinite(row["objective"])


def test_a_solve_server_makes_the_blas_controller_once_for_every_solve(monkeypatch):
    """isolation.prepare_to_fork, which a server runs after its imports, leaves solvers.blas's controller made on
    the libraries loaded by then (a forked solve finds it there instead of scanning them again), and the objects
    made so far frozen (gc.freeze); importing the runner's modules freezes nothing."""
    import gc

    from solvers import blas, isolation

    script = "import gc, experiments.runner.sweep, experiments.bench.scaling; print(gc.get_freeze_count())"
    frozen = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert frozen.split() == ["0"]  # a caller's process collects as before
    monkeypatch.setattr(blas, "_controller", None)
    gc.unfreeze()
    try:
        isolation.prepare_to_fork()
        assert blas._controller is not None and blas._controller.select(user_api="blas").lib_controllers
        # the imports' objects out of the collector's reach: no full collection walks them in a solve process
        assert gc.get_freeze_count() > 10_000 and len(gc.get_objects(generation=2)) < gc.get_freeze_count()
    finally:
        gc.unfreeze()  # this test process collects as before
    assert "solvers.api" in isolation.PRELOAD and "experiments.runner.sweep" in sweep.TASK_MODULES


def test_the_fastest_backends_run_first_and_the_table_keeps_the_grid_order():
    """With one worker and HiGHS first, HiGHS ran alone to --timeout before any solve could set the slow
    stop (the linear runner command: 626 s); PIQP, fastest in all four runner_default measurements, goes first."""
    from solvers.backends import ranked

    tasks = [sweep.SolveTask(key=f"p|soft_primal|{layer}/{backend}", order=i, suite="s", dataset="p",
                        formulation="soft_primal", layer=layer, backend=backend, C=1.0, kernel=None,
                        profile="default", kernel_form="dense", X=np.zeros((2, 1)), y=np.array([-1.0, 1.0]))
             for i, (layer, backend) in enumerate((layer, b) for layer in ("pyomo", "cvxpy") for b in ranked("pyomo"))]
    run = sweep.fastest_first(tasks)
    assert [t.backend for t in run[:2]] == ["piqp", "piqp"] and [t.backend for t in run[-2:]] == ["highs", "highs"]
    assert [t.layer for t in run[:2]] == ["pyomo", "cvxpy"]  # the grid's order among equals
    assert sorted(run, key=lambda t: t.order) == tasks
